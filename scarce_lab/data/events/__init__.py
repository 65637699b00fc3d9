"""The trajectory contract: one typed event model per environment.

Every event of a run is an :class:`~.base.EventEnvelope` whose ``payload`` is the
tagged union of its environment's payload models (tag: ``kind``):

- :mod:`.sovsim` (SovSim commons), :mod:`.scarce` (SCARCE slot auctions),
  :mod:`.economy` (Economy of Minds), plus :class:`~.base.RoundCommitted` everywhere.

Use :func:`event_model` to validate a line, :func:`payload_types` to list the kinds.
The format's version is :data:`SCHEMA_VERSION`; older files are migrated on read by
:mod:`.migrations`.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Union

from pydantic import Field, create_model

from . import economy, scarce, sovsim
from .base import (
    SCHEMA_VERSION,
    DecisionFields,
    EventEnvelope,
    Payload,
    RoundCommitted,
    Visibility,
)

#: Environment name -> the module declaring its payloads (``PAYLOADS``, ``ROUND_MEANING``).
ENVIRONMENTS = {"sovsim": sovsim, "scarce": scarce, "economy": economy}


class UnknownEnvironmentError(ValueError):
    """A manifest names an environment this version does not know."""


def _module(environment: str):
    try:
        return ENVIRONMENTS[environment]
    except KeyError:
        raise UnknownEnvironmentError(
            f"unknown environment {environment!r} (known: {sorted(ENVIRONMENTS)})"
        ) from None


@cache
def payload_types(environment: str) -> dict[str, type[Payload]]:
    """``kind -> payload model`` for ``environment`` (``round_committed`` included).

    Raises:
        UnknownEnvironmentError: not one of :data:`ENVIRONMENTS`.
    """
    models = (*_module(environment).PAYLOADS, RoundCommitted)
    out: dict[str, type[Payload]] = {}
    for m in models:
        kind = m.model_fields["kind"].default
        if kind in out:
            raise TypeError(f"{environment}: two payload models use kind {kind!r}")
        out[kind] = m
    return out


def final_counts(environment: str, config: dict) -> dict[str, int]:
    """``kind -> count`` that a complete run of ``environment`` with ``config`` (its
    manifest's config) holds, e.g. one ``game_end`` per SovSim game: the check on
    complete runs recorded before manifests counted their events.

    Raises:
        UnknownEnvironmentError: not one of :data:`ENVIRONMENTS`.
    """
    return _module(environment).final_counts(config)


@cache
def event_model(environment: str) -> type[EventEnvelope]:
    """The envelope whose ``payload`` is ``environment``'s tagged union.

    ``event_model("sovsim").model_validate_json(line)`` validates one line of a
    SovSim ``events.jsonl``.

    Raises:
        UnknownEnvironmentError: not one of :data:`ENVIRONMENTS`.
    """
    union = Annotated[Union[tuple(payload_types(environment).values())], Field(discriminator="kind")]  # noqa: UP007
    name = "".join(p.capitalize() for p in environment.split("_")) + "Event"
    return create_model(name, __base__=EventEnvelope, __module__=__name__, payload=(union, ...))


def round_meaning(environment: str) -> str:
    """What ``Event.round`` counts in ``environment`` (one sentence)."""
    return _module(environment).ROUND_MEANING


__all__ = [
    "ENVIRONMENTS",
    "SCHEMA_VERSION",
    "DecisionFields",
    "EventEnvelope",
    "Payload",
    "RoundCommitted",
    "UnknownEnvironmentError",
    "Visibility",
    "event_model",
    "final_counts",
    "payload_types",
    "round_meaning",
]
