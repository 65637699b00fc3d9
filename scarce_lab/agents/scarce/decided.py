"""SCARCE agents use the package-wide decision type (kept importable from here)."""

from ...runtime import derive_seed
from ..decided import Decided

__all__ = ["Decided", "derive_seed"]
