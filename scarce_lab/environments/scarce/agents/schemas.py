"""Typed decisions of the SCARCE agents: the negotiator's four phases (declaration,
public reasoning, private message, bid revision, ballot) and the solver's actions
(a JSON action, or the arguments of a native tool call).

Every schema derives from :class:`~scarce_lab.llm.decisions.DecisionModel`: strict
JSON types (no booleans as numbers, no numeric strings, no ``15.0`` for 15), the one
policy of every decision schema. Extra keys are ignored (only the fields below are
read). Enumerated integers use :func:`~scarce_lab.llm.decisions.int_choice`.

Masks: given the contention's facts, the negotiator schemas
admit only legal values: positions ``1..n``, durations ``1..slot cap``, own bids
``0..remaining budget``, ballot prices ``0..max(own budget, highest public bid)``
(others' budgets are private), recipients among the other participants or
``nobody``. In the compact form (the embedded model, whose grammar converter ignores
``minimum``/``maximum``) a bounded integer is an ``enum`` of a small grid inside its
range (:func:`duration_choices`, :func:`price_choices`, plus the values already on
the table: the requested duration, declared durations, public bids); the full form
(hosted models) uses ``minimum``/``maximum``. Pydantic validates every value in both
forms. Without the facts (``cap=None`` etc.) a field is a plain integer and the
negotiator's documented clamps apply (see :mod:`.negotiators`).

Units: ``*_seconds`` seconds; ``bid_price`` and ``price`` credits.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, create_model

from scarce_lab.llm.decisions import (
    DecisionModel,
    DecisionPart,
    int_choice,
    register_decision_family,
)

Tool = Literal[
    "list_files", "read_file", "write_file", "request_execution_slot",
    "run_command", "save_persistent_memory", "submit",
]

#: Slot durations offered in the compact form (seconds), cut to the slot cap.
DURATION_GRID: tuple[int, ...] = (10, 20, 30, 45, 60, 90, 120, 180, 240, 300)
#: Steps of the compact form's price grid over ``0..bound``.
PRICE_STEPS = 20


def _lit(values: list | tuple) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


def duration_choices(cap: int, extra: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Durations (s) of the compact form: the grid values up to ``cap``, ``cap`` itself
    and the ``extra`` values inside ``1..cap``.

    Raises:
        ValueError: ``cap`` < 1.
    """
    if cap < 1:
        raise ValueError(f"slot cap must be >= 1 second, got {cap!r}")
    vals = {d for d in DURATION_GRID if d <= cap} | {int(cap)} | {int(e) for e in extra if 1 <= e <= cap}
    return tuple(sorted(vals))


def price_choices(bound: int, extra: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Prices (credits) of the compact form: every integer of ``0..bound`` when
    ``bound <= PRICE_STEPS``, else ``PRICE_STEPS + 1`` evenly spaced values from 0 to
    ``bound`` (rounded); plus the ``extra`` values inside ``0..bound``.

    Raises:
        ValueError: ``bound`` < 0.
    """
    if bound < 0:
        raise ValueError(f"price bound must be >= 0 credits, got {bound!r}")
    if bound <= PRICE_STEPS:
        vals = set(range(bound + 1))
    else:
        vals = {round(bound * i / PRICE_STEPS) for i in range(PRICE_STEPS + 1)}
    vals |= {int(e) for e in extra if 0 <= e <= bound}
    return tuple(sorted(vals))


def bounded_int(lo: int, hi: int, *, compact: bool, choices: tuple[int, ...] | None = None) -> Any:
    """An integer in ``lo..hi``: an ``enum`` of ``choices`` (default every integer of
    the range) in the compact form, else ``minimum``/``maximum``.

    Raises:
        ValueError: ``hi < lo``, or a choice outside the range.
    """
    if hi < lo:
        raise ValueError(f"empty integer range {lo}..{hi}")
    if compact:
        vals = tuple(choices) if choices is not None else tuple(range(lo, hi + 1))
        bad = [v for v in vals if not lo <= v <= hi]
        if bad:
            raise ValueError(f"choices {bad} lie outside {lo}..{hi}")
        return int_choice(vals)
    return Annotated[int, Field(ge=lo, le=hi)]


# -- negotiator ---------------------------------------------------------------------
class SlotDeclarationBase(DecisionModel):
    """Root of the declaration schemas (phase 1): desired position (1..n), desired
    duration (seconds) and bid price (credits)."""


@lru_cache(maxsize=256)
def _declaration_schema(n: int, cap: int | None, budget: int | None, requested: int | None,
                        compact: bool) -> type[SlotDeclarationBase]:
    extra = (requested,) if requested is not None else ()
    dur = int if cap is None else bounded_int(1, cap, compact=compact, choices=duration_choices(cap, extra))
    bid = int if budget is None else bounded_int(0, budget, compact=compact, choices=price_choices(budget))
    return create_model(
        "SlotDeclaration",
        __base__=SlotDeclarationBase,
        desired_position=(int_choice(list(range(1, n + 1))), ...),
        desired_duration_seconds=(dur, ...),
        bid_price=(bid, ...),
    )


def declaration_schema(n: int, *, cap: int | None = None, budget: int | None = None, requested: int | None = None,
                       compact: bool = False) -> type[SlotDeclarationBase]:
    """Declaration schema for ``n`` participants: ``desired_position`` in 1..n,
    ``desired_duration_seconds`` in 1..``cap`` (s; the ``requested`` duration is
    one of the compact choices), ``bid_price`` in 0..``budget`` (credits); a bound
    left ``None`` leaves a plain integer.

    Raises:
        ValueError: ``n`` < 1, ``cap`` < 1 or ``budget`` < 0.
    """
    if n < 1:
        raise ValueError(f"a declaration needs at least one participant, got n={n!r}")
    if cap is not None and cap < 1:
        raise ValueError(f"declaration: slot cap must be >= 1 second, got {cap!r}")
    if budget is not None and budget < 0:
        raise ValueError(f"declaration: budget must be >= 0 credits, got {budget!r}")
    return _declaration_schema(int(n), cap, budget, requested, bool(compact))


class ReasoningText(DecisionModel):
    """Phase 2 answer. ``max_tokens`` leaves room beyond ``max_length`` (digits are
    one token each for the embedded model)."""

    reasoning: str = Field(max_length=240)


class PrivateMessageBase(DecisionModel):
    """Root of the private-message schemas (phase 3): a recipient or ``nobody``,
    and the text."""


@lru_cache(maxsize=256)
def _private_schema(others: tuple[str, ...]) -> type[PrivateMessageBase]:
    return create_model(
        "PrivateMessageChoice",
        __base__=PrivateMessageBase,
        to=(_lit([*others, "nobody"]), ...),
        text=(str, Field(max_length=200)),
    )


def private_schema(others: list[str]) -> type[PrivateMessageBase]:
    """Private-message schema whose recipient is one of ``others`` or ``nobody``."""
    return _private_schema(tuple(others))


class Revision(DecisionModel):
    """Bid revision (revisable-bid mechanism): the new bid in credits (root of the
    revision schemas; unbounded)."""

    bid_price: int


@lru_cache(maxsize=256)
def _revision_schema(budget: int, current: int | None, compact: bool) -> type[Revision]:
    extra = (current,) if current is not None else ()
    return create_model("BidRevision", __base__=Revision,
                        bid_price=(bounded_int(0, budget, compact=compact, choices=price_choices(budget, extra)), ...))


def revision_schema(budget: int, *, current: int | None = None, compact: bool = False) -> type[Revision]:
    """Revision schema with ``bid_price`` in 0..``budget`` credits (the ``current``
    bid is one of the compact choices).

    Raises:
        ValueError: ``budget`` < 0.
    """
    if budget < 0:
        raise ValueError(f"revision: budget must be >= 0 credits, got {budget!r}")
    return _revision_schema(int(budget), current, bool(compact))


# -- institutions (scarce_lab.environments.scarce.world.institutions; offered only when a module is on)
class PromiseBase(DecisionModel):
    """Root of the promise schemas: ``min_own_rank`` 0 (no promise) or a legal rank."""


@lru_cache(maxsize=256)
def _promise_schema(ranks: tuple[int, ...]) -> type[PromiseBase]:
    return create_model("BallotPromise", __base__=PromiseBase, min_own_rank=(int_choice([0, *ranks]), ...))


def promise_schema(ranks: tuple[int, ...] | list[int]) -> type[PromiseBase]:
    """Promise schema: ``min_own_rank`` is 0 (no promise) or one of ``ranks`` (2..n)."""
    return _promise_schema(tuple(int(r) for r in ranks))


class ContractOfferBase(DecisionModel):
    """Root of the contract-offer schemas: a payee (or ``nobody``), an amount in
    credits, and who must come first (the proposer or the payee)."""


@lru_cache(maxsize=256)
def _contract_offer_schema(worker: str, payees: tuple[str, ...], max_amount: int,
                           compact: bool) -> type[ContractOfferBase]:
    hi = max(1, max_amount)
    return create_model(
        "ContractOffer", __base__=ContractOfferBase,
        payee=(_lit([*payees, "nobody"]), ...),
        amount=(bounded_int(1, hi, compact=compact, choices=tuple(sorted({max(1, c) for c in price_choices(hi)}))),
                ...),
        first=(_lit([worker, *payees]), ...),
    )


def contract_offer_schema(worker: str, payees: tuple[str, ...] | list[str], max_amount: int, *,
                          compact: bool = False) -> type[ContractOfferBase]:
    """Contract-offer schema: ``payee`` one of ``payees`` or ``nobody``, ``amount`` in
    ``1..max_amount`` credits, ``first`` the proposer or a payee (the runner checks
    it names one of the two parties)."""
    return _contract_offer_schema(worker, tuple(payees), int(max_amount), bool(compact))


class ContractAnswer(DecisionModel):
    """Accept (``true``) or decline a contract offer."""

    accept: bool


class FineVote(DecisionModel):
    """Vote to fine (``true``) or not a broken commitment."""

    fine: bool


class SlotBallotBase(DecisionModel):
    """Root of the ballot schemas (phase 4): one line per participant."""


@lru_cache(maxsize=256)
def _ballot_schema(names: tuple[str, ...], cap: int | None, bound: int | None, durations: tuple[int, ...],
                   prices: tuple[int, ...], compact: bool) -> type[SlotBallotBase]:
    dur = int if cap is None else bounded_int(0, cap, compact=compact, choices=duration_choices(cap, durations))
    price = int if bound is None else bounded_int(0, bound, compact=compact, choices=price_choices(bound, prices))
    entry = create_model(
        "BallotLine", __base__=DecisionPart, worker=(_lit(names), ...), duration_seconds=(dur, ...), price=(price, ...)
    )
    return create_model(
        "SlotBallot",
        __base__=SlotBallotBase,
        entries=(list[entry], Field(min_length=len(names), max_length=len(names))),
    )


def ballot_schema(names: list[str], *, cap: int | None = None, bound: int | None = None,
                  durations: tuple[int, ...] = (), prices: tuple[int, ...] = (),
                  compact: bool = False) -> type[SlotBallotBase]:
    """Ballot schema over the participants ``names`` (exactly one line each):
    ``duration_seconds`` in 0..``cap`` (s; 0 = no slot; the declared ``durations``
    are compact choices), ``price`` in 0..``bound`` (credits; the public bids
    ``prices`` are compact choices); a bound left ``None`` leaves a plain integer.

    Raises:
        ValueError: ``cap`` < 1 or ``bound`` < 0.
    """
    if cap is not None and cap < 1:
        raise ValueError(f"ballot: slot cap must be >= 1 second, got {cap!r}")
    if bound is not None and bound < 0:
        raise ValueError(f"ballot: price bound must be >= 0 credits, got {bound!r}")
    return _ballot_schema(tuple(names), cap, bound, tuple(sorted(set(durations))), tuple(sorted(set(prices))),
                          bool(compact))


# -- solver ---------------------------------------------------------------------------
class SolverAction(DecisionModel):
    """One tool call. Only the fields the tool needs are read; also the schema of a
    native tool call's arguments (``tool`` is the call's name).

    Units: ``duration_seconds`` seconds (clamped by the runner to 1..slot cap).

    Bounds: every solver, a model's answer or a policy written in code, returns this
    type. Texts are bounded where they cross: the tools and the sandbox refuse what is
    too long (a tool error or a refused command shown to the solver; the run goes on)
    and the record cuts them (``runners.scarce.runner._action_args``); the duration is
    bounded here to a 32-bit integer (a 10**30-second request made the run's dataset
    unloadable): a value outside is a ``ValidationError`` naming the field.
    """

    tool: Tool
    path: str = ""
    content: str = ""
    command: str = ""
    duration_seconds: int = Field(60, ge=-(2**31), le=2**31 - 1)
    reason: str = ""
    text: str = ""

    def describe(self) -> str:
        """Short text of the call for transcripts."""
        if self.tool in ("read_file", "write_file"):
            return f"{self.tool}({self.path!r})"
        if self.tool == "run_command":
            return f"run_command({self.command[:120]!r})"
        if self.tool == "request_execution_slot":
            return f"request_execution_slot({self.duration_seconds}, {self.reason[:80]!r})"
        if self.tool == "save_persistent_memory":
            return f"save_persistent_memory({self.text[:80]!r})"
        return f"{self.tool}()"


register_decision_family(
    "scarce.declaration", SlotDeclarationBase,
    {"desired_position": 2, "desired_duration_seconds": 60, "bid_price": 10}, lambda: declaration_schema(3),
)
register_decision_family("scarce.reasoning", ReasoningText, {"reasoning": "I need 60 s soon."})
register_decision_family(
    "scarce.private_message", PrivateMessageBase, {"to": "w1", "text": "may I go first?"},
    lambda: private_schema(["w1", "w2"]),
)
register_decision_family("scarce.revision", Revision, {"bid_price": 25})
register_decision_family(
    "scarce.ballot", SlotBallotBase,
    {"entries": [{"worker": "w0", "duration_seconds": 60, "price": 5},
                 {"worker": "w1", "duration_seconds": 30, "price": 0}]},
    lambda: ballot_schema(["w0", "w1"]),
)
register_decision_family(
    "scarce.solver_action", SolverAction, {"tool": "request_execution_slot", "duration_seconds": 30, "reason": "run"}
)
register_decision_family("scarce.promise", PromiseBase, {"min_own_rank": 2}, lambda: promise_schema((2, 3)))
register_decision_family(
    "scarce.contract_offer", ContractOfferBase, {"payee": "w1", "amount": 10, "first": "w0"},
    lambda: contract_offer_schema("w0", ["w1", "w2"], 100),
)
register_decision_family("scarce.contract_answer", ContractAnswer, {"accept": True})
register_decision_family("scarce.fine_vote", FineVote, {"fine": True})
