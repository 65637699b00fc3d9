"""Public reputation: one score per worker, shown to every participant in the
declaration phase (pure; no I/O). Source: the SCARCE paper's open question on
whether agents build institutions; the formula is this project's design.

A worker's record over the whole run (all subruns; reputation is the institution's
memory, not the worker's, so it is shown under every memory horizon):

- ``kept``: ballot promises it kept (:mod:`.sanctions`);
- ``broken``: commitments it broke (broken promises and slot overruns);
- ``fined``: breaches it was sanctioned for (the fine passed). Counts only: the credits
  actually levied are capped at the breaker's balance, so publishing them would reveal
  that private balance (as a capped slot payment would; :class:`~..protocol.AuctionHistory`).

Score (a number in ``[0, 1]``; 0.5 with no record)::

    score = (kept + 1 + 0.25 * fined) / (kept + broken + 2)

the Laplace-smoothed share of kept commitments, where a breach that was fined (the
fine passed) counts a quarter as kept (so a fined breaker still scores below 0.5). Rounded to 3 decimals.
Public by design: every field here is derived from public events (promises are
public once unsealed, breaches and fines are announced).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Record:
    """One worker's reputation record (counts)."""

    kept: int = 0
    broken: int = 0
    fined: int = 0

    @property
    def score(self) -> float:
        """``(kept + 1 + 0.25 fined) / (kept + broken + 2)`` (module docstring)."""
        return round((self.kept + 1 + 0.25 * self.fined) / (self.kept + self.broken + 2), 3)

    def public(self) -> dict:
        return {"score": self.score, "kept": self.kept, "broken": self.broken, "fined": self.fined}


class Reputation:
    """The run's reputation records (``worker -> Record``)."""

    def __init__(self, workers) -> None:
        self.records: dict[str, Record] = {w: Record() for w in workers}

    def kept(self, worker: str) -> None:
        self.records[worker].kept += 1

    def broke(self, worker: str) -> None:
        self.records[worker].broken += 1

    def sanctioned(self, worker: str) -> None:
        """A fine on ``worker`` passed (whatever its balance let it pay)."""
        self.records[worker].fined += 1

    def table(self) -> dict[str, dict]:
        """``worker -> {score, kept, broken, fined}`` for every worker."""
        return {w: r.public() for w, r in self.records.items()}
