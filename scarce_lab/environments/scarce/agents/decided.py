"""SCARCE agents use the package-wide decision type (kept importable from here)."""

from scarce_lab.agents.decided import Decided
from scarce_lab.runtime import derive_seed

__all__ = ["Decided", "derive_seed"]
