"""SCARCE negotiators: scripted policies and the LLM negotiator (four phases).

A negotiator is called when its solver requests a slot. For each phase it returns a
:class:`~.decided.Decided` value; the runner submits it to the contention.

Scripted policies (``scripted/<policy>``; none sends a message unless stated):

- ``fifo`` (truthful FIFO): declares its request-time position, its requested
  duration and a bid of 0; ballots rank by request time, give each participant its
  declared duration and its public bid as price.
- ``sjf``: declares the position of its requested duration among the queue's
  requested durations (shortest first), bid 0; ballots rank by declared duration,
  then request time.
- ``edf``: urgency-revealing (others' deadlines are private): declares position 1
  when less than 10 minutes remain, else its request-time position; bids
  ``min(budget // 5, 6000 // max(minutes left, 1))`` credits (more when urgent);
  ballots rank by declared position, then request time.
- ``bid-first`` (``highest-bid``): declares position 1 and bids a fifth of its
  budget; ballots rank by public bid (highest first), price = that bid.
- ``random``: uniform random position, duration in [30, requested] seconds and bid
  in [0, budget // 4]; random ballot; in the private phase it messages a random
  participant half of the time ("may I go first? I need N s", no private data);
  under revisable bids it revises its bid by a random -20..+20 (floored at 0).

LLM negotiator masks: each phase's schema admits only legal values given the
contention (:mod:`.schemas`).

LLM negotiator fallbacks (documented, applied when the model answered but no answer
is usable after the client's second call; never when the decision is missing, i.e.
no call got an answer: then :class:`~scarce_lab.llm.MissingDecisionError` is raised
and the run stops): declaration = truthful FIFO (request-time position,
requested duration, bid 0); reasoning = empty; private message = none; revision =
keep the current bid; ballot = FIFO ranking with declared durations and public bids.
Valid answers are clamped (position to 1..n, duration to 1..cap, prices to
0..budget for its own bid, 0..1000000 otherwise) and ballots are completed into a
permutation (duplicates dropped, missing participants appended in FIFO order); each
such repair is reported as a ``violation``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.llm.model import ModelHolder
from scarce_lab.llm.models import is_embedded
from scarce_lab.llm.outcomes import MissingDecisionError
from scarce_lab.runtime import derive_seed

from ..world import Ballot, Declaration
from ..world.observations import NegotiationView
from .prompts import render
from .schemas import (
    ContractAnswer,
    FineVote,
    ReasoningText,
    ballot_schema,
    contract_offer_schema,
    declaration_schema,
    private_schema,
    promise_schema,
    revision_schema,
)

SCRIPTED_NEGOTIATORS = ("fifo", "sjf", "edf", "bid-first", "highest-bid", "random")


# -- repairs shared by all negotiators: the environment's (world.actions.LegalNegotiation) --
def complete_ballot(entries: list[tuple[str, int, int]], view: NegotiationView) -> tuple[Ballot, str | None]:
    """Make a legal ballot from raw ``(worker, seconds, price)`` rows
    (:meth:`scarce_lab.environments.scarce.world.LegalNegotiation.complete_ballot` of ``view.legal``);
    a missing participant gets its declared duration (the slot cap if undeclared) and
    its public bid."""
    return view.legal.complete_ballot(entries, {w: _declared_row(view, w)[1:] for w in view.participants})


def _declared_row(view: NegotiationView, w: str) -> tuple[str, int, int]:
    """``(w, declared duration or the slot cap if undeclared, public bid)``: a ballot row."""
    d = view.declared(w)
    return w, d["desired_duration_seconds"] if d else view.slot_cap_s, view.public_bid(w)


def fifo_declaration(view: NegotiationView) -> Declaration:
    """Truthful FIFO declaration (also the LLM fallback)."""
    return Declaration(
        desired_position=view.fifo_position(),
        desired_duration_seconds=min(view.requested_duration_s, view.slot_cap_s),
        bid_price=0,
    )


def ranked_ballot(view: NegotiationView, order: list[str]) -> Ballot:
    """Ballot with ``order``, declared durations and public bids as prices."""
    return complete_ballot([_declared_row(view, w) for w in order], view)[0]


def fifo_ballot(view: NegotiationView) -> Ballot:
    """FIFO ranking (also the LLM fallback)."""
    return ranked_ballot(view, view.participants)


class Negotiator:
    """Base class: the five decisions of a contention (async)."""

    model: str = ""
    scripted: bool = True

    async def declare(self, view: NegotiationView) -> Decided[Declaration]:
        raise NotImplementedError

    async def reason(self, view: NegotiationView) -> Decided[str]:
        raise NotImplementedError

    async def message(self, view: NegotiationView) -> Decided[tuple[str, str] | None]:
        raise NotImplementedError

    async def revise(self, view: NegotiationView) -> Decided[int]:
        raise NotImplementedError

    async def ballot(self, view: NegotiationView) -> Decided[Ballot]:
        raise NotImplementedError

    # -- institutions (asked only when a module is on; scarce_lab.environments.scarce.world.institutions)
    async def promise(self, view: NegotiationView) -> Decided[int | None]:
        """A ballot promise: rank itself ``p`` or later on its own ballot (``p`` in
        ``view.legal.institutions.promise_ranks``), or ``None``. Default: none."""
        return Decided(None)

    async def offer_contract(self, view: NegotiationView) -> Decided[tuple[str, int, str] | None]:
        """A contract offer ``(payee, amount, first)`` or ``None``. Default: none."""
        return Decided(None)

    async def answer_contract(self, view: NegotiationView, offer: dict) -> Decided[bool]:
        """Accept (``True``) or decline a contract ``offer`` (its public dict). Default: decline."""
        return Decided(False)

    async def vote_fine(self, view: Any, breach: dict) -> Decided[bool]:
        """Vote to fine a ``breach`` (``view`` a :class:`~scarce_lab.environments.scarce.world.institutions.VoteView`).
        Default: no."""
        return Decided(False)


# -- scripted policies behind the model interface ------------------------------------
#: phase name (as in the call records' ``negotiation:<phase>`` purposes) -> method
PHASE_METHODS = {"declaration": "declare", "reasoning": "reason", "private": "message", "revision": "revise",
                 "ballots": "ballot", "promise": "promise", "contract_offer": "offer_contract",
                 "contract_answer": "answer_contract", "fine_vote": "vote_fine"}


@dataclass(frozen=True)
class NegotiationTurn:
    """What a scripted negotiator policy decides from (the request's observation):
    the phase (a key of :data:`PHASE_METHODS`), the worker's view and, for an
    institution's question, what it is about (a contract offer or a breach)."""

    phase: str
    view: Any
    item: Any = None


class ScriptedNegotiatorPolicy(Negotiator):
    """Base of the scripted negotiators: the five decisions are the policy, and the
    policy is also callable as a :class:`~scarce_lab.llm.model.ScriptedModel` policy
    ``(turn, rng) -> awaitable Decided`` (randomness comes from the policy's own seed,
    not from ``rng``), so :class:`ModelNegotiator` decides through it like through a model."""

    scripted = True

    def __call__(self, turn: NegotiationTurn, rng: random.Random) -> Any:
        method = getattr(self, PHASE_METHODS[turn.phase])
        return method(turn.view) if turn.item is None else method(turn.view, turn.item)


class ScriptedNegotiator(ScriptedNegotiatorPolicy):
    """A scripted policy (see module docstring); randomness from ``seed``.

    Raises:
        ValueError: unknown policy name.
    """

    def __init__(self, policy: str, seed: int = 0):
        if policy not in SCRIPTED_NEGOTIATORS:
            raise ValueError(f"negotiator policy must be one of {SCRIPTED_NEGOTIATORS}, got {policy!r}")
        self.policy = "bid-first" if policy == "highest-bid" else policy
        self.model = f"scripted/{policy}"
        self.seed = seed

    def _rng(self, view: NegotiationView, phase: str) -> random.Random:
        return random.Random(f"{self.seed}:{view.contention['contention']}:{phase}:{view.worker}")

    async def declare(self, view):
        p, req, budget = self.policy, view.requested_duration_s, view.own_budget
        if p == "fifo":
            return Decided(fifo_declaration(view))
        if p == "sjf":
            durs = sorted((q["requested_duration_s"], q["request_time_s"], q["worker"]) for q in view.contention["queue"])
            pos = [x[2] for x in durs].index(view.worker) + 1
            return Decided(view.legal.clamp_declaration(pos, req, 0)[0])
        if p == "edf":
            minutes = max(1, int(view.own_remaining_s // 60))
            pos = 1 if view.own_remaining_s < 600 else view.fifo_position()
            bid = min(budget // 5, 6000 // minutes)
            return Decided(view.legal.clamp_declaration(pos, req, bid)[0])
        if p == "bid-first":
            return Decided(view.legal.clamp_declaration(1, req, budget // 5)[0])
        rng = self._rng(view, "declaration")
        n = len(view.participants)
        return Decided(view.legal.clamp_declaration(rng.randint(1, n), rng.randint(min(30, req), req),
                                                    rng.randint(0, budget // 4))[0])

    async def reason(self, view):
        d = view.declared(view.worker)
        return Decided(
            f"[{self.policy}] I ask for position {d['desired_position']} and "
            f"{d['desired_duration_seconds']} s at a bid of {d['bid_price']}."
        )

    async def message(self, view):
        if self.policy != "random" or not view.others:
            return Decided(None)
        rng = self._rng(view, f"private{view.private_round}")
        received = [m for m in view.contention["private_messages"] if m["recipient"] == view.worker
                    and m["round"] == view.private_round - 1]
        if received:
            return Decided((received[0]["sender"], "Noted. Let us follow the ballots."))
        if rng.random() < 0.5:
            return Decided((rng.choice(view.others), f"May I go first? I need {view.requested_duration_s} s."))
        return Decided(None)

    async def revise(self, view):
        bid = view.public_bid(view.worker)
        if self.policy == "random":
            bid = view.legal.clamp_bid(bid + self._rng(view, "revision").randint(-20, 20))[0]
        return Decided(bid)

    async def ballot(self, view):
        parts = view.participants
        if self.policy == "fifo":
            return Decided(fifo_ballot(view))
        if self.policy == "sjf":
            order = sorted(parts, key=lambda w: (view.declared(w)["desired_duration_seconds"], parts.index(w)))
        elif self.policy == "edf":
            order = sorted(parts, key=lambda w: (view.declared(w)["desired_position"], parts.index(w)))
        elif self.policy == "bid-first":
            order = sorted(parts, key=lambda w: (-view.public_bid(w), parts.index(w)))
        else:
            order = list(parts)
            self._rng(view, "ballot").shuffle(order)
        return Decided(ranked_ballot(view, order))


# -- the negotiator over a Model ---------------------------------------------------
class ModelNegotiator(ModelHolder, Negotiator):
    """The negotiator of a run: plays the four phases through a
    :class:`~scarce_lab.llm.model.Model` (``lm``, from
    :func:`~scarce_lab.llm.model.model_for`). A model gets the phase's prompt, masked
    schema and documented fallback (module docstring) and its answer is clamped and
    completed; a scripted policy (:class:`ScriptedNegotiatorPolicy` behind a
    :class:`~scarce_lab.llm.model.ScriptedModel`) gets the :class:`NegotiationTurn`
    and its :class:`~.decided.Decided` is the decision.

    Args:
        lm: the model (``lm.name`` is the model string of the records).
        seed: the run seed (per-call seeds are derived from it).
        mechanism: ``fixed`` or ``revisable`` (shown in the system prompt).
        max_tokens: answer tokens of every phase (``None``: each phase's own).

    Raises (from the phases):
        MissingDecisionError: no call got an answer (the records are attached).
    """

    def __init__(self, lm: Any, seed: int = 0, *, mechanism: str = "fixed", max_tokens: int | None = None):
        self.lm = lm
        self.model = lm.name
        self.seed = seed
        self.mechanism = mechanism
        self.max_tokens = max_tokens
        #: compact masks (enum grids, short strings) for the embedded model's grammar
        self.compact = is_embedded(self.model)

    def _messages(self, view: NegotiationView, template: str, **extra: Any) -> list[dict[str, str]]:
        ctx = {"worker": view.worker, "c": view.contention, "history": view.history, "own_history": view.own_history,
               "memories": view.memories, "own_budget": view.own_budget, "own_remaining_s": view.own_remaining_s,
               "task_summary": view.task_summary, "n": len(view.participants), "participants": view.participants,
               "others": view.others, "round": view.private_round, **extra}
        return [{"role": "system", "content": self._system(view)}, {"role": "user", "content": render(template, **ctx)}]

    def _system(self, view: Any) -> str:
        return render("negotiator_system.j2", worker=view.worker, mechanism=self.mechanism, slot_cap_s=view.slot_cap_s)

    def _seed(self, view: NegotiationView, phase: str) -> int:
        return derive_seed(self.seed, view.contention["contention"], phase, view.private_round, view.worker)

    async def _policy(self, view: NegotiationView, phase: str, item: Any = None) -> Decided:
        """A scripted policy's decision of ``phase`` (its own :class:`Decided`)."""
        from scarce_lab.llm.model import DecisionRequest

        out = await self.lm.adecide(DecisionRequest(
            schema=Decided, fallback=None, seed=self._seed(view, phase),
            observation=NegotiationTurn(phase, view, item),
            purpose=f"negotiation:{phase}", agent=view.worker, round=view.contention["contention"]))
        return out.decision

    async def _ask(self, view, phase: str, template: str, schema, fallback, max_tokens: int, *,
                   messages: list | None = None, **extra):
        from scarce_lab.llm.model import DecisionRequest

        messages = messages or self._messages(view, template, **extra)
        t0 = time.perf_counter()
        out = await self.lm.adecide(DecisionRequest(
            schema=schema, fallback=fallback, seed=self._seed(view, phase), messages=messages,
            purpose=f"negotiation:{phase}", agent=view.worker, round=view.contention["contention"],
            max_tokens=self.max_tokens or max_tokens))
        if out.missing:
            raise MissingDecisionError.from_calls(out.calls)
        return out, messages, time.perf_counter() - t0

    @staticmethod
    def _decided(value, out, messages, latency, extra_violation=None):
        violation = "; ".join(v for v in (out.violation, extra_violation) if v) or None
        return Decided(value, calls=list(out.calls), violation=violation, valid=out.valid, repaired=out.repaired,
                       fallback_used=out.fallback_used, outcome=out.outcome, prompt=messages, latency_s=latency)

    async def declare(self, view):
        if self.lm.scripted:
            return await self._policy(view, "declaration")
        fb = fifo_declaration(view)
        legal = view.legal
        schema = declaration_schema(legal.max_position, cap=legal.max_duration_s, budget=legal.max_bid,
                                    requested=fb.desired_duration_seconds, compact=self.compact)
        fallback = schema(desired_position=fb.desired_position,
                          desired_duration_seconds=fb.desired_duration_seconds, bid_price=0)
        out, msgs, lat = await self._ask(view, "declaration", "declaration.j2", schema, fallback, 60)
        d = out.decision
        value, note = view.legal.clamp_declaration(d.desired_position, d.desired_duration_seconds, d.bid_price)
        return self._decided(value, out, msgs, lat, note)

    async def reason(self, view):
        if self.lm.scripted:
            return await self._policy(view, "reasoning")
        out, msgs, lat = await self._ask(view, "reasoning", "reasoning.j2", ReasoningText,
                                         ReasoningText(reasoning=""), 280)
        return self._decided(out.decision.reasoning, out, msgs, lat)

    async def message(self, view):
        if self.lm.scripted:
            return await self._policy(view, "private")
        schema = private_schema(list(view.legal.recipients))
        out, msgs, lat = await self._ask(view, "private", "private.j2", schema, schema(to="nobody", text=""), 260)
        d = out.decision
        value = None if d.to == "nobody" or not d.text.strip() else (d.to, d.text)
        return self._decided(value, out, msgs, lat)

    async def revise(self, view):
        if self.lm.scripted:
            return await self._policy(view, "revision")
        cur = view.public_bid(view.worker)
        bound = max(view.own_budget, cur)
        schema = revision_schema(bound, current=cur, compact=self.compact)
        out, msgs, lat = await self._ask(view, "revision", "revision.j2", schema, schema(bid_price=cur), 30,
                                         current_bid=cur)
        bid, note = view.legal.clamp_bid(out.decision.bid_price)
        return self._decided(bid, out, msgs, lat, note)

    async def ballot(self, view):
        if self.lm.scripted:
            return await self._policy(view, "ballots")
        names = view.participants
        decl = [view.declared(w) for w in names]
        bids = tuple(view.public_bid(w) for w in names)
        schema = ballot_schema(names, cap=view.slot_cap_s, bound=max(view.own_budget, *bids), compact=self.compact,
                               durations=tuple(d["desired_duration_seconds"] for d in decl if d), prices=bids)
        fb = fifo_ballot(view)
        fallback = schema(entries=[e.model_dump() for e in fb.entries])
        out, msgs, lat = await self._ask(view, "ballots", "ballot.j2", schema, fallback, 40 + 35 * len(names))
        rows = [(e.worker, e.duration_seconds, e.price) for e in out.decision.entries]
        value, note = complete_ballot(rows, view)
        return self._decided(value, out, msgs, lat, note)

    # -- institutions (only asked when a module is on) -------------------------------
    async def promise(self, view):
        if self.lm.scripted:
            return await self._policy(view, "promise")
        ranks = view.legal.institutions.promise_ranks
        schema = promise_schema(ranks)
        out, msgs, lat = await self._ask(view, "promise", "promise.j2", schema, schema(min_own_rank=0), 30,
                                         ranks=list(ranks))
        rank = out.decision.min_own_rank
        value, note = view.legal.institutions.clamp_promise(None if rank == 0 else rank)
        return self._decided(value, out, msgs, lat, note)

    async def offer_contract(self, view):
        if self.lm.scripted:
            return await self._policy(view, "contract_offer")
        li = view.legal.institutions
        schema = contract_offer_schema(view.worker, li.contract_payees, li.max_contract, compact=self.compact)
        fallback = schema(payee="nobody", amount=1, first=view.worker)
        out, msgs, lat = await self._ask(view, "contract_offer", "contract_offer.j2", schema, fallback, 60,
                                         max_contract=li.max_contract)
        d = out.decision
        value = None if d.payee == "nobody" else (d.payee, d.amount, d.first)
        return self._decided(value, out, msgs, lat)

    async def answer_contract(self, view, offer):
        if self.lm.scripted:
            return await self._policy(view, "contract_answer", offer)
        out, msgs, lat = await self._ask(view, "contract_answer", "contract_answer.j2", ContractAnswer,
                                         ContractAnswer(accept=False), 20, offer=offer)
        return self._decided(bool(out.decision.accept), out, msgs, lat)

    async def vote_fine(self, view, breach):
        if self.lm.scripted:
            return await self._policy(view, "fine_vote", breach)
        user = render("fine_vote.j2", worker=view.worker, breach=breach, own_budget=view.own_budget,
                      institutions=view.contention.get("institutions", {}))
        messages = [{"role": "system", "content": self._system(view)}, {"role": "user", "content": user}]
        out, msgs, lat = await self._ask(view, "fine_vote", "fine_vote.j2", FineVote, FineVote(fine=False), 20,
                                         messages=messages)
        return self._decided(bool(out.decision.fine), out, msgs, lat)


class LLMNegotiator(ModelNegotiator):
    """A :class:`ModelNegotiator` over ``model`` through ``client`` (a
    :class:`~scarce_lab.llm.model.ClientModel`).

    Args:
        model: litellm model string (e.g. ``embedded/smollm2``).
        client: an ``LLMClient`` (anything with ``adecide(...)`` of that signature).
        seed, mechanism, max_tokens: as :class:`ModelNegotiator`.
        reasoning_effort: passed through to litellm (``low``/``high``) or ``None``.
    """

    def __init__(self, model: str, client: Any, seed: int = 0, *, reasoning_effort: str | None = None,
                 mechanism: str = "fixed", max_tokens: int | None = None):
        from scarce_lab.llm.model import ClientModel, Generation

        super().__init__(ClientModel(model, client, Generation(reasoning_effort=reasoning_effort)), seed,
                         mechanism=mechanism, max_tokens=max_tokens)
