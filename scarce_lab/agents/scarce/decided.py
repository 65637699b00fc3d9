"""The result of one agent decision, with everything the recorder needs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

V = TypeVar("V")


@dataclass
class Decided(Generic[V]):
    """A decision plus its provenance.

    Attributes:
        value: the decision applied (after repair/clamping, or the fallback).
        calls: LLMCallRecord objects (empty for scripted policies).
        violation: text describing bad model output that was repaired or replaced.
        fallback_used: the documented fallback applied.
        prompt: the rendered chat messages shown to the model (``None`` for scripted).
        latency_s: measured seconds of the decision's model calls (wall clock).
    """

    value: V
    calls: list[Any] = field(default_factory=list)
    violation: str | None = None
    fallback_used: bool = False
    prompt: list[dict[str, Any]] | None = None
    latency_s: float = 0.0


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from ``parts`` (e.g. run seed, subrun, contention, phase, worker)."""
    h = hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()
    return int(h[:8], 16) & 0x7FFFFFFF
