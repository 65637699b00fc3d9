"""scarce_lab.environments.sovsim.world."""
