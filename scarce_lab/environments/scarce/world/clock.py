"""Time accounting for SCARCE runs: a virtual discrete-event clock or wall time.

Each worker lives on its own timeline (seconds since its subrun started); the shared
sandbox is one resource that is busy while a slot is open. The runner asks this
module what each action costs:

- ``virtual`` (default, reproducible from the seed): a model call costs
  ``model_call_s`` (scripted policies ``scripted_call_s``), a command costs
  ``command_s``, a slot occupies the sandbox for exactly its allocated seconds.
- ``wall``: a model call or command costs its measured duration (seconds, as in
  the SCARCE paper's real-time runs); slots still occupy their allocated seconds
  on the one discrete-event timeline (not a concurrent real-time execution). Runs
  are then not bit-reproducible.

Waiting in the queue is the gap between a worker's request and its slot start; it
counts against the worker's deadline like any other time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ClockKind = Literal["virtual", "wall"]


@dataclass(frozen=True)
class ClockConfig:
    """Costs in seconds. ``kind`` is ``"virtual"`` or ``"wall"``.

    Raises:
        ValueError: unknown kind or a negative cost.
    """

    kind: ClockKind = "virtual"
    model_call_s: float = 20.0
    scripted_call_s: float = 2.0
    command_s: float = 5.0

    def __post_init__(self) -> None:
        if self.kind not in ("virtual", "wall"):
            raise ValueError(f"clock kind must be 'virtual' or 'wall', got {self.kind!r}")
        for name in ("model_call_s", "scripted_call_s", "command_s"):
            v = getattr(self, name)
            if v < 0:
                raise ValueError(f"clock {name} must be >= 0 seconds, got {v!r}")

    def call_cost(self, *, scripted: bool, measured_s: float = 0.0) -> float:
        """Seconds one decision (model call or scripted step) takes on the timeline."""
        if self.kind == "wall":
            return max(0.0, measured_s)
        return self.scripted_call_s if scripted else self.model_call_s

    def command_cost(self, measured_s: float = 0.0) -> float:
        """Seconds one sandbox command takes on the timeline."""
        return max(0.0, measured_s) if self.kind == "wall" else self.command_s


@dataclass
class SandboxTimeline:
    """When the shared sandbox is free again (seconds on the run's timeline)."""

    free_at: float = 0.0

    def book(self, start: float, duration_s: float) -> tuple[float, float]:
        """Book ``duration_s`` seconds starting no earlier than ``start``.

        Returns ``(slot_start, slot_end)``; the sandbox is then busy until
        ``slot_end``.

        Raises:
            ValueError: negative duration.
        """
        if duration_s < 0:
            raise ValueError(f"slot duration must be >= 0 seconds, got {duration_s!r}")
        s = max(start, self.free_at)
        self.free_at = s + duration_s
        return s, self.free_at


def remaining_s(now: float, deadline_s: float) -> float:
    """Seconds left before ``deadline_s`` at time ``now`` (never negative)."""
    return max(0.0, deadline_s - now)
