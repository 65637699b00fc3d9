"""Which model calls produced an event: the calls an agent's policy recorded since the
last engine event, taken by the event they led to (its ``call_ids``, schema 4).

Used where the engine, not the agent, writes the decision's event (Economy of Minds:
the reference preset's wake-up questions lead to an ``auction``, the winner's ``act:``
call to a ``step``); SovSim and SCARCE agents return their calls with the decision.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["CallTap"]


class CallTap:
    """The model calls recorded since the last event that took calls.

    :meth:`take` for an ``auction`` returns the ids of the pending ``wakeup`` calls,
    for a ``step`` those of the ``act:...`` calls, and forgets every pending call;
    other kinds take none. Calls no event takes (mutations, repairs) age out: at most
    :attr:`KEEP` are held (they stay in ``llm_calls.jsonl``).
    """

    KEEP = 256

    def __init__(self) -> None:
        self.pending: deque[Any] = deque(maxlen=self.KEEP)

    def add(self, calls: list[Any]) -> None:
        """Note ``calls`` (LLMCallRecord objects) as they are recorded."""
        self.pending.extend(calls)

    def take(self, kind: str) -> list[str]:
        """The ``call_id`` of each pending call behind an event of ``kind``, in order."""
        if kind == "auction":
            ids = [c.call_id for c in self.pending if c.purpose == "wakeup"]
        elif kind == "step":
            ids = [c.call_id for c in self.pending if c.purpose.startswith("act:")]
        else:
            return []
        self.pending.clear()
        return ids
