"""One config model per environment: every setting declared once (see :mod:`.base`)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["EconomyRunConfig", "ExperimentConfig", "ScarceConfig", "SovSimConfig", "build_config"]

_WHERE = {
    "SovSimConfig": ".sovsim", "EconomyRunConfig": ".economy", "ScarceConfig": ".scarce",
    "ExperimentConfig": ".base", "build_config": ".base",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module 'scarce_lab.config' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
