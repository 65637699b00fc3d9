"""Sanctions: commitments the mechanism can check, their breaches, and fines
(pure; no I/O). The rule's source: the SCARCE paper asks whether agents develop
sanctions against defectors; the commitment, breach, harm and fine rules here are
this project's design.

**Commitment** (exactly two kinds, both checkable by the mechanism alone):

1. *Ballot promise* (:class:`Promise`): in the declaration phase of a negotiated
   contention (``scheduler="ballots"``) a participant may declare
   ``min_own_rank = p`` with ``2 <= p <= n`` (``n`` participants): "on my own ballot I
   will rank myself at position ``p`` or later" (``p = 2``: "I will not rank myself
   first"). Promises are public once the declarations are unsealed. The promise is
   *broken* when the worker's own submitted ballot (after any repair) ranks it at a
   position ``r < p``; otherwise it is *kept*.
2. *Published schedule* (every scheduler): a granted slot ``[start, end)`` is a
   commitment to leave the sandbox at ``end``. It is *broken* (an *overrun*) when the
   worker's clock at its slot's close is past ``end`` (a decision begun inside the
   slot finished after it; commands are already cut at the slot end).

**Harmed workers**: of a broken ballot promise, the participants the breaker placed
at positions ``r+1 .. p`` of its own ballot (those it displaced by ranking itself
above its promise); of an overrun, the worker whose slot starts at the overrun slot's
end on the sandbox timeline (the next booking), if any: none otherwise.

**Announcement**: a breach is public (the mechanism announces it, with its harmed
workers: by design this reveals the breaker's own rank on its ballot and whom it
placed below itself within its promise; nothing else of any ballot).

**Fine**: ``min(fine, balance)`` credits (nobody pays more than it has). To the bank
(the auctioneer's sink) or, with ``fine_to="harmed"``, ``amount // h`` to each of the
``h`` harmed workers in order with the remainder ``amount % h`` to the bank; with no
harmed worker all of it goes to the bank. Every transfer goes through
:meth:`~..budgets.Ledger.transfer`, so money is conserved.

**What is public**: the breach, the votes and whether the fine passed with its
nominal amount; the credits actually levied (capped at the balance, so they would
reveal it) and their transfers are private to the breaker and the receiving workers
(who, being paid, learn what reached them, by design).

**Who decides**: ``sanctions="mechanism"`` fines every breach; ``sanctions="vote"``
asks the *voters* (the other participants of the breach's contention) to vote, and
fines when strictly more than half of the voters vote to fine (no voters: no fine).
A voter that gives no usable vote counts as a vote against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..budgets import ESCROW, Ledger, Transfer
from ..protocol import Ballot, ProtocolError

BREACH_KINDS = ("promise", "overrun")


@dataclass(frozen=True)
class Promise:
    """A ballot promise: ``worker`` will rank itself at position ``min_own_rank`` or
    later (1-based) on its own ballot in contention ``contention``."""

    worker: str
    contention: int
    min_own_rank: int


def check_promise(worker: str, min_own_rank: int, participants: Sequence[str], contention: int) -> Promise:
    """A validated :class:`Promise`.

    Raises:
        ProtocolError: ``worker`` is not a participant, or ``min_own_rank`` is not an
            integer in ``2..n`` (naming the value).
    """
    n = len(participants)
    if worker not in participants:
        raise ProtocolError(f"promise: {worker!r} is not a participant ({list(participants)})")
    if isinstance(min_own_rank, bool) or not isinstance(min_own_rank, int) or not 2 <= min_own_rank <= n:
        raise ProtocolError(f"promise: min_own_rank must be an integer in 2..{n}, got {min_own_rank!r}")
    return Promise(worker, contention, min_own_rank)


@dataclass(frozen=True)
class Breach:
    """A broken commitment: ``kind`` (``promise`` or ``overrun``), the breaker, the
    contention it belongs to, the ``harmed`` workers (module docstring), the
    ``voters`` (the other participants of that contention) and what was broken
    (``detail``: ``promised p, ranked itself r`` or ``overran by x s``)."""

    kind: str
    worker: str
    contention: int
    harmed: tuple[str, ...]
    voters: tuple[str, ...]
    detail: str
    promised_rank: int | None = None
    own_rank: int | None = None
    overrun_s: float | None = None

    def public(self) -> dict:
        """What every worker is told of the breach. By design a broken promise
        reveals the breaker's own rank on its ballot and the workers it placed below
        itself within its promise (``harmed``); nothing else of any ballot."""
        return {"kind": self.kind, "worker": self.worker, "contention": self.contention, "detail": self.detail,
                "harmed": list(self.harmed)}


def judge_promise(p: Promise, ballot: Ballot, participants: Sequence[str]) -> Breach | None:
    """The breach of ``p`` by its worker's own ``ballot`` (``None``: kept)."""
    ranking = ballot.ranking()
    r = ranking.index(p.worker) + 1
    if r >= p.min_own_rank:
        return None
    harmed = tuple(ranking[r:p.min_own_rank])
    return Breach("promise", p.worker, p.contention, harmed,
                  tuple(w for w in participants if w != p.worker),
                  f"promised to rank itself {p.min_own_rank} or later, ranked itself {r}",
                  promised_rank=p.min_own_rank, own_rank=r)


def judge_overrun(worker: str, contention: int, clock_s: float, slot_end_s: float, next_worker: str | None,
                  participants: Sequence[str]) -> Breach | None:
    """The overrun breach of a slot closed at ``clock_s`` seconds whose end was
    ``slot_end_s`` (``None`` when ``clock_s <= slot_end_s``); ``next_worker`` is the
    worker whose slot starts at that end, if any."""
    over = float(clock_s) - float(slot_end_s)
    if over <= 0:
        return None
    return Breach("overrun", worker, contention, (next_worker,) if next_worker else (),
                  tuple(w for w in participants if w != worker), f"overran its slot by {over:.3f} s",
                  overrun_s=round(over, 3))


def passes(votes: Mapping[str, bool], voters: Sequence[str]) -> bool:
    """Whether a fine passes: strictly more than half of ``voters`` voted ``True``
    (a voter missing from ``votes`` counts as against)."""
    yes = sum(1 for v in voters if votes.get(v) is True)
    return bool(voters) and 2 * yes > len(voters)


def levy(ledger: Ledger, breach: Breach, fine: int, fine_to: str, ref: str) -> tuple[int, list[Transfer]]:
    """Charge the fine of ``breach`` (module docstring): returns ``(amount, transfers)``;
    ``amount = min(fine, balance)``.

    Raises:
        ValueError: ``fine_to`` is not ``bank`` or ``harmed``.
    """
    if fine_to not in ("bank", "harmed"):
        raise ValueError(f"fine_to must be 'bank' or 'harmed', got {fine_to!r}")
    amount = min(int(fine), ledger.balance(breach.worker))
    out: list[Transfer] = []
    if amount == 0:
        return 0, out
    harmed = [h for h in breach.harmed if h != breach.worker and h not in (ledger.sink, ESCROW)]
    if fine_to == "harmed" and harmed:
        share, rest = divmod(amount, len(harmed))
        for h in harmed:
            if share:
                out.append(ledger.transfer(breach.worker, h, share, purpose="fine", ref=ref))
        if rest:
            out.append(ledger.transfer(breach.worker, ledger.sink, rest, purpose="fine", ref=ref))
    else:
        out.append(ledger.transfer(breach.worker, ledger.sink, amount, purpose="fine", ref=ref))
    return amount, out
