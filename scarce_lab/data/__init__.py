"""Trajectory schema, the append-only recorder, loaders and adapters for published layouts."""
