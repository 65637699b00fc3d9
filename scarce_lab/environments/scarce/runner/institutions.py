"""The runner's side of the auction's institutions (sanctions, public reputation,
contracts; rules in :mod:`scarce_lab.environments.scarce.world.institutions`): asks the negotiators
the institutions' questions, feeds their answers to the world and records the events
(:data:`scarce_lab.environments.scarce.events.INSTITUTION_PAYLOADS`). Called by
:class:`~.runner.ScarceRunner` only when ``world.institutions`` is set (a module is on),
so a run with every module off asks, records and charges nothing more.

Timing: the promises are asked right after the declarations, the contract offers and
answers right before the ballots; each of those steps costs the slowest decision on
the timeline, like a phase. Votes on fines are asked when the breach is judged (after
the schedule is fixed, or at a slot's close) and cost no deadline time (the schedule
is already fixed when they are asked).

Bad answers: a promise outside the legal ranks is clamped into them (or dropped), an
illegal contract offer is refused; both are recorded (the decision's ``violation`` or
a ``protocol_violation`` event), as every other repair or refusal of a negotiation.
"""

from __future__ import annotations

from typing import Any

from .. import events as ev
from ..world import Contention, ProtocolError
from ..world.institutions import Breach


def contention_start(runner, c: Contention, t: float) -> None:
    """Record the public reputation table shown in this contention (reputation on)."""
    ins = runner.world.institutions
    if ins.rules.reputation:
        runner.emit(ev.Reputation, phase="declaration", t=t, event_round=c.index,
                    workers=[ev.ReputationEntry(worker=w, **r) for w, r in ins.reputation.table().items()])


async def promises(runner, c: Contention, t: float) -> float:
    """Ask each participant for a ballot promise (when promises are offered); returns
    the step's cost (s)."""
    ins = runner.world.institutions
    if not (ins.rules.promises and c.config.negotiate and len(c.participants) >= 2):
        return 0.0
    decs, cost = await runner.phase(c, t, "promise")
    for w, d, view in decs:
        rank, note = view.legal.institutions.clamp_promise(d.value)
        if note:
            d.violation = "; ".join(x for x in (d.violation, note) if x)[:500]
        if rank is None:
            continue
        try:
            p = ins.promise(c.index, w, rank)
        except ProtocolError as exc:
            runner.emit(ev.ProtocolViolation, phase="declaration", agent=w, t=t, event_round=c.index, error=str(exc))
            continue
        runner.emit(ev.Promise, phase="declaration", agent=w, t=t, event_round=c.index, contention=c.index,
                    min_own_rank=p.min_own_rank, **d.decision_fields())
    return cost


async def contracts(runner, c: Contention, t: float) -> float:
    """Contract offers and answers before the ballots (contracts on, 2+ participants);
    returns the step's cost (s)."""
    world, ins = runner.world, runner.world.institutions
    if not (ins.rules.contracts and c.config.negotiate and len(c.participants) >= 2):
        return 0.0
    k = c.index
    decs, cost = await runner.phase(c, t, "offer_contract")
    for w, d, view in decs:
        if d.value is None:
            continue
        try:
            payee, amount, first = d.value
        except (TypeError, ValueError):
            runner.emit(ev.ProtocolViolation, phase="contracts", agent=w, t=t, event_round=k,
                        error=f"contract offer must be (payee, amount, first), got {d.value!r}"[:500])
            continue
        why = view.legal.institutions.check_offer(payee, amount, first, w)
        try:
            if why is not None:
                raise ProtocolError(why)
            o = ins.offer(k, w, payee, amount, first, world.ledger.balance(w))
        except ProtocolError as exc:
            runner.emit(ev.ProtocolViolation, phase="contracts", agent=w, t=t, event_round=k, error=str(exc)[:500])
            continue
        runner.emit(ev.ContractOffer, phase="contracts", agent=w, t=t, event_round=k, visible_to=[o.payer, o.payee],
                    contention=k, payer=o.payer, payee=o.payee, amount=o.amount, first=o.first, second=o.second,
                    **d.decision_fields())
    if not ins.offers:
        return cost
    offers = list(ins.offers)
    answers, cost2 = await runner.decide(k, [
        (o.payee, runner.negotiators[o.payee].answer_contract(world.negotiation_view(c, o.payee, t), o.public()))
        for o in offers])
    for o, (w, d) in zip(offers, answers, strict=True):
        accepted = d.value is True
        signed = ins.sign(world.ledger, o, accepted) is not None
        runner.emit(ev.ContractAnswer, phase="contracts", agent=w, t=t, event_round=k, visible_to=[o.payer, o.payee],
                    contention=k, payer=o.payer, payee=o.payee, amount=o.amount, accepted=accepted, signed=signed,
                    **d.decision_fields())
    return cost + cost2


async def after_settle(runner, c: Contention, order: list[str], t: float) -> None:
    """Judge the promises against the ballots, settle the contracts on the schedule's
    ``order``, and sanction every breach."""
    world, ins = runner.world, runner.world.institutions
    k = c.index
    for o, held, tr in ins.settle_contracts(world.ledger, order):
        runner.emit(ev.ContractSettlement, phase="contracts", agent=o.payer, t=t, event_round=k,
                    visible_to=[o.payer, o.payee], contention=k, payer=o.payer, payee=o.payee, amount=o.amount,
                    held=held, paid_to=tr.payee)
    if not c.ballots:
        return
    for p, breach in ins.judge_ballots(k, c.ballots):
        own = c.ballots[p.worker].ranking().index(p.worker) + 1
        runner.emit(ev.PromiseJudged, phase="sanctions", agent=p.worker, t=t, event_round=k, contention=k,
                    kept=breach is None, min_own_rank=p.min_own_rank, own_rank=own)
        if breach is not None:
            await sanction(runner, breach, t, k)


async def slot_closed(runner, w: str, slot: Any, t: float) -> None:
    """Judge a closed slot for an overrun and sanction it."""
    world = runner.world
    breach = world.institutions.judge_overrun(w, slot.contention, world.worker(w).t, slot.end,
                                              world.next_booking(slot.end))
    if breach is not None:
        await sanction(runner, breach, t, world.k)


async def sanction(runner, breach: Breach, t: float, k: int) -> None:
    """Announce ``breach`` (public), ask the voters under ``vote``, levy the fine."""
    world, ins = runner.world, runner.world.institutions
    runner.emit(ev.Breach, phase="sanctions", agent=breach.worker, t=t, event_round=k, breach_kind=breach.kind,
                contention=breach.contention, detail=breach.detail, harmed=list(breach.harmed),
                voters=list(breach.voters), overrun_s=breach.overrun_s)
    votes = None
    mode = ins.rules.sanctions
    if mode == "vote":
        voters = [v for v in breach.voters if v in runner.negotiators]
        decs, _ = await runner.decide(k, [
            (v, runner.negotiators[v].vote_fine(world.vote_view(v, breach), breach.public())) for v in voters])
        votes = {}
        for v, d in decs:
            votes[v] = d.value is True
            runner.emit(ev.FineVote, phase="sanctions", agent=v, t=t, event_round=k, contention=breach.contention,
                        offender=breach.worker, breach_kind=breach.kind, fine=votes[v], **d.decision_fields())
    s = ins.sanction(world.ledger, breach, votes)
    yes = sum(1 for x in s.votes.values() if x)
    runner.emit(ev.Sanction, phase="sanctions", agent=breach.worker, t=t, event_round=k, contention=breach.contention,
                breach_kind=breach.kind, mode=mode, passed=s.passed, fine=ins.rules.fine, votes_yes=yes,
                votes_no=len(breach.voters) - yes if mode == "vote" else 0)
    if s.passed:  # the levied amount is private: capped at the balance, it would reveal it
        paid = [x.payee for x in s.transfers if x.payee in world.ledger.balances]
        runner.emit(ev.FinePayment, phase="sanctions", agent=breach.worker, t=t, event_round=k,
                    visible_to=list(dict.fromkeys([breach.worker, *paid])), contention=breach.contention,
                    breach_kind=breach.kind, amount=s.fined,
                    transfers=[ev.TransferEntry(payer=x.payer, payee=x.payee, amount=x.amount, purpose=x.purpose)
                               for x in s.transfers])
