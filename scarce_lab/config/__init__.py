"""Settings shared by every environment (:mod:`.base`: :class:`ExperimentConfig`,
``build_config``; :mod:`.seats`; :mod:`.migrate`), and each registered environment's
config class by its name (``scarce_lab.config.SovSimConfig``), looked up in the
registry (:mod:`scarce_lab.registry`): an environment's config lives in its own
package (``scarce_lab.environments.<name>.config``)."""

from __future__ import annotations

from typing import Any

from .base import ExperimentConfig, build_config

__all__ = ["ExperimentConfig", "build_config"]


def _configs() -> dict[str, type]:
    from ..registry import specs

    return {s.config.__name__: s.config for s in specs()}


def __getattr__(name: str) -> Any:
    configs = _configs()
    if name in configs:
        return configs[name]
    raise AttributeError(f"module 'scarce_lab.config' has no attribute {name!r} "
                         f"(environment configs: {sorted(configs)})")


def __dir__() -> list[str]:
    return sorted([*__all__, *_configs()])
