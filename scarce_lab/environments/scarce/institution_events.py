"""SCARCE event payloads of the auction's institutions (sanctions, public reputation,
contracts; :mod:`scarce_lab.environments.scarce.world.institutions`), recorded only when a module is
on; registered with the other SCARCE kinds (:mod:`.scarce`). Money in integer credits.
Visibility: everything is public (reputation, promises, their judgement, breaches,
votes, sanctions) except the contract kinds, private to their payer and payee.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from ...data.events.base import DecisionFields, Payload, Visibility


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Scarce(Payload):
    subrun: int


class _ScarceDecision(DecisionFields):
    subrun: int


class ReputationEntry(_Record):
    """One worker's public reputation (:mod:`scarce_lab.environments.scarce.world.institutions.reputation`)."""

    worker: str
    score: float
    kept: int
    broken: int
    fined: int


class Reputation(_Scarce):
    """The public reputation table as shown at a contention's declaration phase."""

    kind: Literal["reputation"] = "reputation"
    workers: list[ReputationEntry]


class Promise(_ScarceDecision):
    """A ballot promise: the worker will rank itself ``min_own_rank`` or later on its
    own ballot (public once declarations are unsealed)."""

    kind: Literal["promise"] = "promise"
    contention: int
    min_own_rank: int


class PromiseJudged(_Scarce):
    """A promise against the worker's own ballot: ``kept``, its promised and own rank."""

    kind: Literal["promise_judged"] = "promise_judged"
    contention: int
    kept: bool
    min_own_rank: int
    own_rank: int


class Breach(_Scarce):
    """A broken commitment (``breach_kind``: ``promise`` or ``overrun``), who it
    harmed and who may vote on a fine."""

    kind: Literal["breach"] = "breach"
    breach_kind: str
    contention: int
    detail: str
    harmed: list[str]
    voters: list[str]
    overrun_s: float | None = None


class FineVote(_ScarceDecision):
    """One voter's vote on fining ``offender``'s breach (``sanctions="vote"``)."""

    kind: Literal["fine_vote"] = "fine_vote"
    contention: int
    offender: str
    breach_kind: str
    fine: bool


class TransferEntry(_Record):
    """One ledger transfer (credits) of an institution."""

    payer: str
    payee: str
    amount: int
    purpose: str


class Sanction(_Scarce):
    """The public outcome of a breach: ``passed`` (fined by the mechanism or the vote),
    the nominal ``fine`` (credits; what was levied is in :class:`FinePayment`), yes/no votes."""

    kind: Literal["sanction"] = "sanction"
    contention: int
    breach_kind: str
    mode: str
    passed: bool
    fine: int
    votes_yes: int
    votes_no: int


class FinePayment(_Scarce):
    """What a passed fine levied (``amount`` credits, capped at the breaker's balance) and
    where it went; private to the breaker and the workers paid (the amount would reveal
    a capped balance)."""

    kind: Literal["fine_payment"] = "fine_payment"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    breach_kind: str
    amount: int
    transfers: list[TransferEntry]


class ContractOffer(_ScarceDecision):
    """``payer`` offers ``payee`` ``amount`` credits if ``first`` is placed before ``second``."""

    kind: Literal["contract_offer"] = "contract_offer"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    first: str
    second: str


class ContractAnswer(_ScarceDecision):
    """The payee's answer; ``signed``: accepted and escrowed (false when void)."""

    kind: Literal["contract_answer"] = "contract_answer"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    accepted: bool
    signed: bool


class ContractSettlement(_Scarce):
    """A signed contract settled on the schedule: ``held`` (paid to the payee) or refunded."""

    kind: Literal["contract_settlement"] = "contract_settlement"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    held: bool
    paid_to: str


#: The institutions' payload kinds (recorded only when a module is on).
INSTITUTION_PAYLOADS: tuple[type[Payload], ...] = (
    Reputation, Promise, PromiseJudged, Breach, FineVote, Sanction, FinePayment, ContractOffer, ContractAnswer,
    ContractSettlement,
)
