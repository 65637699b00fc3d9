"""Adapters from published trajectory layouts (SovSim release, GovSim runs) to our tidy tables."""
