"""scarce_lab.environments.economy.runner."""
