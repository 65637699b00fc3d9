"""scarce_lab.environments.sovsim.runner."""
