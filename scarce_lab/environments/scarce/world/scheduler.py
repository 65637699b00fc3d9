"""Turn a contention into a schedule: ballot aggregation and centralised baselines.

Ballot rule (``scheduler="ballots"``; the rule of this package, documented here
because the SCARCE paper leaves aggregation to the implementation):

* Order: **Borda count** over the ballots' rankings. With ``n`` participants a
  ballot gives ``n - 1 - k`` points to the participant it ranks at 0-based place
  ``k``. Higher total first. Tie-breaks, in order: (1) more first-place votes,
  (2) earlier request time, (3) a seeded random draw (``random.Random(seed_key)``).
  (With complete rankings a lower mean position is the same as a higher Borda
  total, so it is not a separate tie-break.)
* Duration of each participant: the **lower median** of the durations the
  ballots allocate to it, capped at the slot cap and at its own declared
  ``desired_duration_seconds``, and at least 1 second.
* Payment price of each participant (credits): under ``fixed`` bids its declared
  ``bid_price`` (the declared price binds); under ``revisable`` bids the lower
  median of the ballots' prices for it, capped at its final (possibly revised)
  bid, so nobody is charged more than it offered. The ledger then caps the
  payment at the budget (:meth:`scarce_lab.environments.scarce.world.budgets.Ledger.charge_capped`).

Baselines (no negotiation; only declarations are used; duration =
``min(desired, cap)``):

* ``fifo``: earlier request time first.
* ``sjf``: shorter declared duration first; ties by request time.
* ``edf``: earlier absolute deadline first (the scheduler is a trusted party that
  knows deadlines; no agent sees them); ties by request time.
* ``highest-bid``: larger declared bid first; ties by request time. Each pays its
  declared bid (first-price).
FIFO, SJF and EDF charge nothing (there is no market). Remaining ties (equal
request times) fall back to the worker name, then nothing is random.
"""

from __future__ import annotations

import random
from statistics import median_low
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .protocol import Ballot, Declaration, Mechanism, ProtocolError

SchedulerName = Literal["ballots", "fifo", "sjf", "edf", "highest-bid"]
SCHEDULERS: tuple[str, ...] = ("ballots", "fifo", "sjf", "edf", "highest-bid")


class Allocation(BaseModel):
    """One place in the schedule: 1-based ``position``, seconds, price in credits.

    ``borda`` and ``first_votes`` are set by the ballot rule (``None`` for baselines).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker: str
    position: int = Field(ge=1)
    duration_s: int = Field(ge=1)
    price: int = Field(ge=0)
    borda: int | None = None
    first_votes: int | None = None


class Schedule(BaseModel):
    """The outcome of a contention: allocations in execution order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    allocations: list[Allocation]
    random_tiebreak: bool = False

    def order(self) -> list[str]:
        return [a.worker for a in self.allocations]


def _check_inputs(participants: list[str], declarations: dict[str, Declaration], request_times: dict[str, float]) -> None:
    if not participants:
        raise ProtocolError("participants: empty")
    for w in participants:
        if w not in declarations:
            raise ProtocolError(f"declarations: no declaration from {w!r}")
        if w not in request_times:
            raise ProtocolError(f"request_times: no request time for {w!r}")


def aggregate_ballots(participants: list[str], ballots: dict[str, Ballot], declarations: dict[str, Declaration],
                      request_times: dict[str, float], *, mechanism: Mechanism = Mechanism.fixed,
                      final_bids: dict[str, int] | None = None, slot_cap_s: int = 300, seed_key: str = "0") -> Schedule:
    """Aggregate complete ballots into a schedule by the rule in the module docstring.

    Args:
        participants: worker names.
        ballots: voter -> ballot; every ballot must rank every participant once.
        declarations: worker -> declaration (desired seconds cap the allocation;
            the bid is the fixed price).
        request_times: worker -> request time in seconds (tie-break 2).
        mechanism: ``fixed`` or ``revisable`` (payment rule).
        final_bids: worker -> bid after revision (revisable); defaults to declared.
        slot_cap_s: longest slot in seconds.
        seed_key: seeds the last-resort random tie-break.

    Raises:
        ProtocolError: no ballots, a ballot that is not a permutation of the
            participants, or a missing declaration or request time.
    """
    _check_inputs(participants, declarations, request_times)
    if not ballots:
        raise ProtocolError("ballots: none submitted")
    n = len(participants)
    borda = dict.fromkeys(participants, 0)
    firsts = dict.fromkeys(participants, 0)
    durations: dict[str, list[int]] = {w: [] for w in participants}
    prices: dict[str, list[int]] = {w: [] for w in participants}
    for voter, b in ballots.items():
        ranking = b.ranking()
        if sorted(ranking) != sorted(participants):
            raise ProtocolError(f"ballot of {voter!r}: ranking {ranking} is not a permutation of {participants}")
        for k, e in enumerate(b.entries):
            borda[e.worker] += n - 1 - k
            durations[e.worker].append(e.duration_seconds)
            prices[e.worker].append(e.price)
        firsts[ranking[0]] += 1
    rng = random.Random(f"ballots:{seed_key}")
    draw = {w: rng.random() for w in sorted(participants)}
    key = {w: (-borda[w], -firsts[w], request_times[w], draw[w]) for w in participants}
    order = sorted(participants, key=lambda w: key[w])
    random_used = any(key[a][:3] == key[b][:3] for a, b in zip(order, order[1:], strict=False))
    bids = {w: declarations[w].bid_price for w in participants}
    if mechanism == Mechanism.revisable and final_bids:
        bids.update({w: final_bids[w] for w in participants if w in final_bids})
    allocs = []
    for pos, w in enumerate(order, start=1):
        d = max(1, min(median_low(durations[w]), slot_cap_s, declarations[w].desired_duration_seconds))
        if mechanism == Mechanism.fixed:
            price = declarations[w].bid_price
        else:
            price = min(median_low(prices[w]), bids[w])
        allocs.append(Allocation(worker=w, position=pos, duration_s=d, price=price, borda=borda[w],
                                 first_votes=firsts[w]))
    return Schedule(rule="ballots", allocations=allocs, random_tiebreak=random_used)


def baseline_schedule(rule: SchedulerName, participants: list[str], declarations: dict[str, Declaration],
                      request_times: dict[str, float], *, deadlines: dict[str, float] | None = None,
                      slot_cap_s: int = 300) -> Schedule:
    """A centralised schedule without negotiation (see module docstring).

    Args:
        rule: ``fifo``, ``sjf``, ``edf`` or ``highest-bid``.
        deadlines: worker -> absolute deadline in seconds (required for ``edf``).

    Raises:
        ProtocolError: unknown rule, missing inputs, or ``edf`` without deadlines.
    """
    _check_inputs(participants, declarations, request_times)

    def tail(w: str) -> tuple[float, str]:
        return (request_times[w], w)

    if rule == "fifo":
        order = sorted(participants, key=tail)
    elif rule == "sjf":
        order = sorted(participants, key=lambda w: (declarations[w].desired_duration_seconds, *tail(w)))
    elif rule == "edf":
        if deadlines is None or any(w not in deadlines for w in participants):
            raise ProtocolError(f"deadlines: edf needs a deadline for every participant, got {deadlines}")
        order = sorted(participants, key=lambda w: (deadlines[w], *tail(w)))
    elif rule == "highest-bid":
        order = sorted(participants, key=lambda w: (-declarations[w].bid_price, *tail(w)))
    else:
        raise ProtocolError(f"scheduler must be one of {SCHEDULERS[1:]}, got {rule!r}")
    allocs = [Allocation(worker=w, position=pos, duration_s=max(1, min(declarations[w].desired_duration_seconds,
                                                                      slot_cap_s)),
                         price=declarations[w].bid_price if rule == "highest-bid" else 0)
              for pos, w in enumerate(order, start=1)]
    return Schedule(rule=rule, allocations=allocs)
