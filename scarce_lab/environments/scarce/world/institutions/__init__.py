"""Institutions in the SCARCE auction: pluggable, pure-world modules, each a
condition setting (:class:`InstitutionRules`), all off by default.

- :mod:`.sanctions`: commitments the mechanism can check (a ballot promise, the
  published slot), their breaches, who is harmed, fines by the mechanism or by vote.
- :mod:`.reputation`: a public score per worker (kept promises, broken ones, fines).
- :mod:`.contracts`: escrowed side payments enforced on an order of the queue.

:class:`Institutions` holds the run's institutional state (promises and offers of the
open contention, signed contracts, reputation records) and applies the modules'
rules to the world's ledger; :class:`~..world.ScarceWorld` owns one when any module
is on (``world.institutions``; ``None`` otherwise, so a run with every module off
plays exactly as before). The runner calls it at fixed points of a contention:
promises with the declarations, contract offers and signatures after the private
phase, :meth:`Institutions.judge_ballots` and :meth:`Institutions.settle_contracts`
after the schedule, :meth:`Institutions.judge_overrun` at a slot's close, and
:meth:`Institutions.sanction` for each breach (with the votes under ``vote``).

Visibility of what it produces (the runner records it so): each module's docstring
says what is public and what is private to whom.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol import Ballot, ProtocolError
from .contracts import Offer, check_offer, settle, sign
from .reputation import Reputation
from .rules import InstitutionRules
from .sanctions import (
    Breach,
    Promise,
    check_promise,
    judge_overrun,
    judge_promise,
    levy,
    passes,
)

__all__ = [
    "Breach", "InstitutionRules", "Institutions", "LegalInstitutions", "Offer", "Promise", "Reputation", "Sanction",
    "VoteView", "check_offer", "check_promise", "judge_overrun", "judge_promise", "levy", "passes", "settle", "sign",
]


@dataclass(frozen=True)
class LegalInstitutions:
    """What one worker may submit to the institutions in one contention (on its
    :class:`~..actions.LegalNegotiation` as ``institutions``; ``None`` there when every
    module is off).

    Attributes:
        promise_ranks: legal ``min_own_rank`` values of a ballot promise (``2..n``;
            empty when promises are off or ``n < 2``).
        vote: whether it may be asked to vote on fines (``sanctions="vote"``).
        contract_payees: who it may offer a contract to (empty when contracts are off).
        max_contract: largest contract amount it can offer now (credits; its balance
            and the rule's ``max_contract`` bound it).
    """

    promise_ranks: tuple[int, ...] = ()
    vote: bool = False
    contract_payees: tuple[str, ...] = ()
    max_contract: int = 0

    def clamp_promise(self, rank: Any) -> tuple[int | None, str | None]:
        """A promise rank repaired into :attr:`promise_ranks` (``None``: no promise),
        with a note when changed; never raises."""
        if rank is None:
            return None, None
        if not self.promise_ranks:
            return None, f"promise {rank!r} dropped: promises are not offered here"
        if isinstance(rank, bool) or not isinstance(rank, int):
            return None, f"promise {rank!r} dropped: not a whole number"
        fixed = min(max(rank, self.promise_ranks[0]), self.promise_ranks[-1])
        return fixed, None if fixed == rank else f"promise clamped from {rank} to {fixed}"

    def check_offer(self, payee: Any, amount: Any, first: Any, worker: str) -> str | None:
        """Why a contract offer is illegal (``None`` when legal); never raises."""
        if payee not in self.contract_payees:
            return f"contract payee {payee!r} is not one of {list(self.contract_payees)}"
        if first not in (worker, payee):
            return f"contract first {first!r} must be {worker!r} or {payee!r}"
        if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= self.max_contract:
            return f"contract amount {amount!r} is outside 1..{self.max_contract}"
        return None


@dataclass(frozen=True)
class Sanction:
    """The outcome of one breach: ``fined`` credits actually levied (0 when not
    fined), ``passed`` (fined by the mechanism, or the vote passed), the ``votes``
    (voter -> bool; empty under ``mechanism``), the transfers made."""

    breach: Breach
    passed: bool
    fined: int
    votes: Mapping[str, bool]
    transfers: tuple = ()


@dataclass
class Institutions:
    """The run's institutional state (module docstring). Picklable.

    Args:
        rules: the condition setting (at least one module on).
        workers: every worker of the run.
    """

    rules: InstitutionRules
    workers: tuple[str, ...]
    reputation: Reputation = field(init=False)
    promises: dict[str, Promise] = field(init=False, default_factory=dict)
    offers: list[Offer] = field(init=False, default_factory=list)
    signed: list[Offer] = field(init=False, default_factory=list)
    participants_of: dict[int, tuple[str, ...]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.reputation = Reputation(self.workers)

    # -- legal submissions ------------------------------------------------------------
    def legal(self, worker: str, participants: Sequence[str], balance: int, negotiated: bool) -> LegalInstitutions:
        """The :class:`LegalInstitutions` of ``worker`` in a contention of ``participants``."""
        n = len(participants)
        others = tuple(w for w in participants if w != worker)
        return LegalInstitutions(
            promise_ranks=tuple(range(2, n + 1)) if (self.rules.promises and negotiated and n >= 2) else (),
            vote=self.rules.sanctions == "vote",
            contract_payees=others if (self.rules.contracts and negotiated and balance >= 1) else (),
            max_contract=min(self.rules.max_contract, max(0, int(balance))) if self.rules.contracts else 0,
        )

    # -- contention hooks ---------------------------------------------------------------
    def open(self, index: int, participants: Sequence[str]) -> None:
        """A new contention: forget the last one's promises and offers."""
        self.promises, self.offers, self.signed = {}, [], []
        self.participants_of[index] = tuple(participants)

    def promise(self, index: int, worker: str, min_own_rank: int) -> Promise:
        """Record a ballot promise (:func:`.sanctions.check_promise`).

        Raises:
            ProtocolError: not a participant, a rank outside ``2..n``, a second promise,
                or promises are off.
        """
        if not self.rules.promises:
            raise ProtocolError("promise: commitments are off (sanctions and reputation are off)")
        if worker in self.promises:
            raise ProtocolError(f"promise: {worker!r} already promised in contention {index}")
        p = check_promise(worker, min_own_rank, self.participants_of[index], index)
        self.promises[worker] = p
        return p

    def public(self, index: int) -> dict[str, Any]:
        """What every participant is shown of the institutions (JSON-able): the
        reputation table (when on) and the promises of contention ``index`` (public
        once made; the runner shows them after the declaration phase)."""
        out: dict[str, Any] = {}
        if self.rules.reputation:
            out["reputation"] = self.reputation.table()
        if self.rules.promises:
            out["promises"] = {w: p.min_own_rank for w, p in self.promises.items() if p.contention == index}
        return out

    def private(self, worker: str) -> list[dict[str, Any]]:
        """The contract offers and signed contracts ``worker`` is party to."""
        return [{**o.public(), "signed": o in self.signed} for o in self.offers if worker in (o.payer, o.payee)]

    def offer(self, index: int, payer: str, payee: str, amount: int, first: str, balance: int) -> Offer:
        """Record a contract offer (:func:`.contracts.check_offer`).

        Raises:
            ProtocolError: contracts off, a second offer by ``payer``, or an illegal offer.
        """
        if not self.rules.contracts:
            raise ProtocolError("contract: contracts are off")
        if any(o.payer == payer for o in self.offers):
            raise ProtocolError(f"contract: {payer!r} already offered a contract in contention {index}")
        o = check_offer(index, payer, payee, amount, first, self.participants_of[index],
                        min(self.rules.max_contract, balance))
        self.offers.append(o)
        return o

    def sign(self, ledger, offer: Offer, accept: bool):
        """The payee's answer: on ``accept`` escrow the amount (:func:`.contracts.sign`);
        returns the escrow transfer, or ``None`` (declined or void)."""
        if not accept:
            return None
        t = sign(ledger, offer)
        if t is not None:
            self.signed.append(offer)
        return t

    def settle_contracts(self, ledger, order: Sequence[str]) -> list[tuple[Offer, bool, Any]]:
        """Pay or refund every signed contract on the schedule's ``order``."""
        out = [(o, *settle(ledger, o, order)) for o in self.signed]
        self.signed = []
        return out

    def judge_ballots(self, index: int, ballots: Mapping[str, Ballot]) -> list[tuple[Promise, Breach | None]]:
        """Each promise of contention ``index`` against its worker's own ballot;
        reputation counts the kept ones (breaches are counted by :meth:`sanction`)."""
        out = []
        for w, p in self.promises.items():
            b = judge_promise(p, ballots[w], self.participants_of[index])
            if b is None:
                self.reputation.kept(w)
            out.append((p, b))
        return out

    def judge_overrun(self, worker: str, contention: int, clock_s: float, slot_end_s: float,
                      next_worker: str | None) -> Breach | None:
        """The overrun breach of a slot that closed (``None`` when none or sanctions
        and reputation are off)."""
        if not self.rules.promises:
            return None
        parts = self.participants_of.get(contention, (worker,))
        return judge_overrun(worker, contention, clock_s, slot_end_s, next_worker, parts)

    def sanction(self, ledger, breach: Breach, votes: Mapping[str, bool] | None = None) -> Sanction:
        """Decide and levy the fine of ``breach`` (:mod:`.sanctions`): always under
        ``mechanism``, when the vote passes under ``vote``, never under ``off``
        (reputation only). Reputation counts the breach and the fine.

        Raises:
            ValueError: ``votes`` missing under ``vote`` (the runner must ask).
        """
        mode = self.rules.sanctions
        if mode == "vote" and votes is None:
            raise ValueError(f"sanction: sanctions='vote' needs the votes of {list(breach.voters)}")
        self.reputation.broke(breach.worker)
        votes = {v: bool(votes[v]) for v in breach.voters if v in votes} if mode == "vote" else {}
        ok = mode == "mechanism" or (mode == "vote" and passes(votes, breach.voters))
        amount, transfers = (levy(ledger, breach, self.rules.fine, self.rules.fine_to,
                                  ref=f"c{breach.contention}:{breach.kind}") if ok else (0, []))
        if ok:
            self.reputation.sanctioned(breach.worker)
        return Sanction(breach, ok, amount, votes, tuple(transfers))


@dataclass
class VoteView:
    """What a voter sees when asked to fine a breach (``sanctions="vote"``): the
    breach as announced to everyone (:meth:`.sanctions.Breach.public`), the public
    institutions (reputation when on) and its own balance. ``contention`` carries the
    breach's contention index (``{"contention": k, "institutions": {...}}``) so that
    a negotiator's per-decision seed is derived as for any other view."""

    worker: str
    breach: dict[str, Any]
    contention: dict[str, Any]
    own_budget: int
    private_round: int = 0
    slot_cap_s: int = 300
