"""The trajectory contract: one typed event model per environment.

Every event of a run is an :class:`~.base.EventEnvelope` whose ``payload`` is the
tagged union of its environment's payload models (tag: ``kind``). Environments
register their payload models here (:func:`~.registry.register_payloads`); the three
shipped ones do so from their payload modules in this package (:mod:`.sovsim`,
:mod:`.scarce`, :mod:`.economy`, each imported below without being named), any other
through :func:`scarce_lab.registry.register`. :class:`~.base.RoundCommitted`
belongs to every environment.

Use :func:`event_model` to validate a line, :func:`payload_types` to list the kinds.
The format's version is :data:`SCHEMA_VERSION`; older files are migrated on read by
:mod:`.migrations`.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import MappingProxyType
from typing import Annotated, Union

from pydantic import Field, create_model

from .base import (
    SCHEMA_VERSION,
    DecisionFields,
    EventEnvelope,
    Payload,
    RoundCommitted,
    Visibility,
)
from .registry import (
    _REGISTERED,
    PayloadRegistration,
    UnknownEnvironmentError,
    register_payloads,
    registered,
    registration,
    unregister_payloads,
)

#: Environment name -> its :class:`~.registry.PayloadRegistration` (a live read-only
#: view of the registry: an environment registered later appears here).
ENVIRONMENTS = MappingProxyType(_REGISTERED)

# The payload modules of this package register themselves on import.
for _m in pkgutil.iter_modules(__path__):
    if _m.name not in ("base", "registry", "migrations"):
        importlib.import_module(f"{__name__}.{_m.name}")


def payload_types(environment: str) -> dict[str, type[Payload]]:
    """``kind -> payload model`` for ``environment`` (``round_committed`` included).

    Raises:
        UnknownEnvironmentError: no environment of that name is registered.
    """
    return _kinds(registration(environment))


@cache
def _kinds(reg: PayloadRegistration) -> dict[str, type[Payload]]:
    return reg.kinds()


def final_counts(environment: str, config: dict) -> dict[str, int]:
    """``kind -> count`` that a complete run of ``environment`` with ``config`` (its
    manifest's config) holds, e.g. one ``game_end`` per SovSim game: the check on
    complete runs recorded before manifests counted their events.

    Raises:
        UnknownEnvironmentError: no environment of that name is registered.
    """
    return registration(environment).final_counts(config)


def event_model(environment: str) -> type[EventEnvelope]:
    """The envelope whose ``payload`` is ``environment``'s tagged union.

    ``event_model("sovsim").model_validate_json(line)`` validates one line of a
    SovSim ``events.jsonl``.

    Raises:
        UnknownEnvironmentError: no environment of that name is registered.
    """
    return _event_model(registration(environment))


@cache
def _event_model(reg: PayloadRegistration) -> type[EventEnvelope]:
    union = Annotated[Union[tuple(_kinds(reg).values())], Field(discriminator="kind")]  # noqa: UP007
    name = "".join(p.capitalize() for p in reg.environment.split("_")) + "Event"
    return create_model(name, __base__=EventEnvelope, __module__=__name__, payload=(union, ...))


def round_meaning(environment: str) -> str:
    """What ``Event.round`` counts in ``environment`` (one sentence)."""
    return registration(environment).round_meaning


__all__ = [
    "ENVIRONMENTS",
    "SCHEMA_VERSION",
    "DecisionFields",
    "EventEnvelope",
    "Payload",
    "PayloadRegistration",
    "RoundCommitted",
    "UnknownEnvironmentError",
    "Visibility",
    "event_model",
    "final_counts",
    "payload_types",
    "register_payloads",
    "registered",
    "registration",
    "round_meaning",
    "unregister_payloads",
]
