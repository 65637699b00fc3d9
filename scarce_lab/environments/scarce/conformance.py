"""The SCARCE conformance play (:func:`scarce_trace`, the spec's ``harness``), with its
canary rules, its policy's choices (:class:`ScarceLegalPolicy`) and the runner-like driver
(:func:`scarce_step`) that tests of the world reuse; the checks are in
:mod:`scarce_lab.testing.core`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...testing.core import LegalPolicy, Observation, Trace, refused
from .world import (
    BUILD_SCRIPT,
    SOLVER_TOOLS,
    ActionRefused,
    Ballot,
    BallotEntry,
    ClockConfig,
    Declaration,
    EventKind,
    LegalActions,
    ProtocolError,
    ScarceWorld,
    WorldError,
    WorldRules,
)
from .world import Phase as ContentionPhase
from .world.actions import LegalNegotiation

SCARCE_WORKERS = ("w0", "w1", "w2")
#: Canaries: budgets and deadlines no other quantity of the game takes.
SCARCE_BUDGETS = {"w0": 11111, "w1": 22222, "w2": 33333}
SCARCE_DEADLINES = {"w0": 691.5, "w1": 767.25, "w2": 839.75}  # distinct fractions
#: Bids and prices of the harness stay below 100 credits: no 3-4 digit canary is hit by chance.
SCARCE_MAX_MONEY = 99
#: Solver tool weights of the harness: slot requests and commands often, so that three
#: workers meet in contentions and hold slots.
SCARCE_WEIGHTS = {"request_execution_slot": 6.0, "run_command": 3.0}


class ScarceLegalPolicy(LegalPolicy):
    """:class:`~scarce_lab.testing.core.LegalPolicy` on SCARCE's legal actions: a
    solver's tool call (``weights`` weigh its legal tools) and the negotiation's
    submissions (``max_money`` bounds its bids and prices)."""

    def solver(self, legal: LegalActions, *key: Any) -> dict[str, Any]:
        """``{"tool": ..., <its arguments>}`` drawn from ``legal``: a legal tool (by
        ``weights``), then its arguments inside their legal ranges."""
        rng = self.rng("solver", *key)
        tool = rng.choices(legal.tools, [self.weights.get(t, 1.0) for t in legal.tools])[0]
        call: dict[str, Any] = {"tool": tool}
        if tool == "read_file":
            call["path"] = rng.choice(legal.read_paths)
        elif tool == "write_file":
            call["path"] = rng.choice((BUILD_SCRIPT, f"src/{legal.worker}.c", "notes.txt"))
            call["content"] = self.text("file", key)
        elif tool == "request_execution_slot":
            call["duration_seconds"] = self.integer(rng, 1, legal.max_duration_s)
        elif tool == "run_command":
            call["command"] = "./executable"
        elif tool == "save_persistent_memory":
            call["text"] = self.text("note", key)
        return call

    def solver_illegal(self, legal: LegalActions, *key: Any) -> dict[str, Any]:
        """A tool the mask forbids now, or a legal tool with an argument outside it."""
        rng = self.rng("solver-illegal", *key)
        banned = [t for t in SOLVER_TOOLS if t not in legal.tools]
        if banned and rng.random() < 0.5:
            return {"tool": rng.choice(banned)}
        if "request_execution_slot" in legal.tools:
            return {"tool": "request_execution_slot",
                    "duration_seconds": rng.choice((0, legal.max_duration_s + 1))}
        return {"tool": "read_file", "path": f"../{legal.worker}-nowhere"}

    def declaration(self, legal: LegalNegotiation, requested_s: int, *key: Any) -> Declaration:
        """A declaration inside ``legal``: a position, a duration up to ``requested_s``, a bid."""
        rng = self.rng("declaration", *key)
        return Declaration(desired_position=self.integer(rng, 1, legal.max_position),
                           desired_duration_seconds=self.integer(rng, 1, min(requested_s, legal.max_duration_s)),
                           bid_price=self.integer(rng, 0, self.money(legal.max_bid)))

    def message(self, legal: LegalNegotiation, *key: Any) -> tuple[str, str] | None:
        """``(recipient, text)`` of a private message, or ``None`` (no recipient, or 30% of the time)."""
        rng = self.rng("message", *key)
        if not legal.recipients or rng.random() < 0.3:
            return None
        to = rng.choice(legal.recipients)
        return to, self.text("message", (*key, to))

    def revision(self, legal: LegalNegotiation, *key: Any) -> int:
        """A revised bid inside ``legal``."""
        return self.integer(self.rng("revision", *key), 0, self.money(legal.max_bid))

    def ballot(self, legal: LegalNegotiation, *key: Any) -> Ballot:
        """A ballot ranking every participant in a random order, durations and prices inside ``legal``."""
        rng = self.rng("ballot", *key)
        order = list(legal.participants)
        rng.shuffle(order)
        return Ballot(entries=[BallotEntry(worker=w, duration_seconds=self.integer(rng, 0, legal.max_duration_s),
                                           price=self.integer(rng, 0, self.money(legal.max_price)))
                            for w in order])


def _numbers(obj: Any) -> Iterator[float]:
    if isinstance(obj, dict | list | tuple):
        for v in obj.values() if isinstance(obj, dict) else obj:
            yield from _numbers(v)
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield obj


def scarce_rules(memory: str = "subrun", **kw: Any) -> WorldRules:
    """Rules of the conformance SCARCE world (three workers, canary budgets/deadlines;
    a 60 s slot cap so that random slot lengths leave room for many contentions)."""
    kw = {"scheduler": "ballots", "private_rounds": 2, "mechanism": "revisable", "slot_cap_s": 60,
          "clock": ClockConfig(scripted_call_s=2.0, command_s=5.0)} | kw
    return WorldRules(workers=SCARCE_WORKERS, budgets=dict(SCARCE_BUDGETS), deadlines_s=dict(SCARCE_DEADLINES),
                      subruns=3, history_k=2, memory=memory, **kw)


@dataclass
class _Task:
    id: str
    name: str
    program: str
    documentation: str = "prints its input"

    def agent_view(self) -> dict:
        return {"id": self.id, "name": self.name, "program": self.program, "documentation": self.documentation}


def _scarce_text(wd: ScarceWorld) -> Callable[[str, tuple], str]:
    """Free text of the SCARCE harness: canary notes and private messages."""
    def text(kind: str, key: tuple) -> str:
        if kind == "note":
            return f"note of {key[0]} in subrun {wd.subrun}"
        if kind == "message":  # key: (contention, phase, private round, sender, recipient)
            return f"SECRET-{key[3]}-{key[4]}-{key[0]}-{key[2]}"
        return f"content by {key[0]}"
    return text


def scarce_step(wd: ScarceWorld, log: list, seen: list, policy: ScarceLegalPolicy | None = None) -> bool:
    """Handle one world event the way the runner would, every choice made by
    ``policy`` (default: :class:`ScarceLegalPolicy` of the world's seed) from the legal
    actions the observation carries, and an illegal action probed at every solver
    step and every negotiation phase; ``seen`` gets ``(worker, observation dict,
    everyone's balance then)``. Returns False at the end of the subrun."""
    policy = policy or ScarceLegalPolicy(wd.rules.seed, _scarce_text(wd), max_money=SCARCE_MAX_MONEY,
                                   weights=SCARCE_WEIGHTS)
    files = wd.__dict__.setdefault("_conformance_files", {})  # the harness's stand-in work folders
    ev = wd.next_event()
    log.append((ev.kind.value, ev.worker, ev.t, ev.participants, ev.missed))
    if ev.kind == EventKind.subrun_end:
        return False
    if ev.kind == EventKind.solver_step:
        w = ev.worker
        folder = files.setdefault((wd.subrun, w), [f"{w}-private-file.c", "docs.txt"])
        obs = wd.solver_observation(w, sorted(folder))
        seen.append((w, {k: v for k, v in dataclasses.asdict(obs).items() if k != "legal"},
                     dict(wd.ledger.balances)))
        s = wd.worker(w)
        key = (w, wd.subrun, s.steps)
        bad = policy.solver_illegal(obs.legal, *key)
        reason = obs.legal.check(bad["tool"], path=bad.get("path", ""), command=bad.get("command", ""),
                                 duration_seconds=bad.get("duration_seconds"))
        assert reason is not None, f"the legal actions of {w} accept an illegal call {bad}"
        # where the world holds the rule it must refuse too (an out-of-range duration it clamps)
        if bad["tool"] == "request_execution_slot" and obs.legal.in_slot:
            refused((ActionRefused,), f"{w} requested a slot inside its slot", lambda: wd.request_slot(w, 10, ""))
        elif bad["tool"] == "run_command":
            refused((WorldError,), f"{w} ran a command outside a slot", lambda: wd.command_done(w, 0.0))
        log.append(("refused", w, bad["tool"], reason))
        call = policy.solver(obs.legal, *key)
        tool = call["tool"]
        wd.begin_step(w, wd.decision_cost(True, tool=tool))
        if tool == "request_execution_slot":
            wd.request_slot(w, call["duration_seconds"], "conformance")
        elif tool == "run_command":
            wd.command_done(w, 0.0)
        elif tool == "save_persistent_memory":
            wd.save_memory(w, call["text"])
        elif tool == "write_file" and call["path"] not in folder:
            folder.append(call["path"])
        elif tool == "submit":
            wd.finish(w, missed=False, at=s.t, reason="submit")
            return True
        wd.record_result(w, tool, "ok")
    elif ev.kind == EventKind.slot_open:
        wd.open_slot(ev.worker)
    elif ev.kind == EventKind.slot_close:
        slot = wd.close_slot(ev.worker)
        if wd.institutions is not None and (b := wd.institutions.judge_overrun(
                ev.worker, slot.contention, wd.worker(ev.worker).t, slot.end, wd.next_booking(slot.end))):
            _institutions_sanction(wd, b, log, seen)
    elif ev.kind in (EventKind.deadline_miss, EventKind.step_limit):
        wd.finish(ev.worker, missed=ev.kind == EventKind.deadline_miss, at=ev.t)
    else:
        for m in ev.missed:
            wd.finish(m, missed=True, at=wd.worker(m).deadline_s)
        if ev.participants:
            _scarce_contention(wd, ev, log, seen, policy)
    return True


def _contention_probe(c: Any, w: str, legal: LegalNegotiation, policy: ScarceLegalPolicy,
                      key: tuple) -> tuple[str, Callable[[], Any]] | None:
    """An illegal submission of ``w`` in the current phase (what, how), if the phase has one."""
    if c.phase == ContentionPhase.declaration:
        bad = Declaration(desired_position=legal.max_position + 1, desired_duration_seconds=1, bid_price=0)
        return "a position past the queue", lambda: c.declare(w, bad)
    if c.phase == ContentionPhase.private:
        return "a message to oneself", lambda: c.send(w, w, "to me")
    if c.phase == ContentionPhase.ballots:
        short = Ballot(entries=policy.ballot(legal, *key, w).entries[:-1])
        return "a ballot missing a participant", lambda: c.ballot(w, short)
    return None


def _institutions_step(wd: ScarceWorld, c: Any, t: float, log: list) -> None:
    """The institutions' submissions of a contention, as the runner asks them
    (:mod:`scarce_lab.environments.scarce.runner.institutions`): after the declarations each
    participant promises its latest legal rank; before the ballots each offers the next
    participant a contract of ``3 + contention`` credits (it goes first) and every
    offer is accepted. An illegal promise is probed and must be refused."""
    ins = wd.institutions
    if c.phase == ContentionPhase.reasoning and not ins.promises and ins.rules.promises and len(c.participants) > 1:
        w0 = c.participants[0]
        log.append(("refused", w0, refused((ProtocolError,), "a promise to rank itself first",
                                           lambda: ins.promise(c.index, w0, 1))))
        for w in c.participants:
            ranks = wd.negotiation_view(c, w, t).legal.institutions.promise_ranks
            ins.promise(c.index, w, ranks[-1])
    if c.phase == ContentionPhase.ballots and ins.rules.contracts and not ins.offers and len(c.participants) > 1:
        parts = c.participants
        for i, w in enumerate(parts):
            legal = wd.negotiation_view(c, w, t).legal.institutions
            amount = min(3 + c.index, legal.max_contract)
            if amount >= 1:
                ins.offer(c.index, w, parts[(i + 1) % len(parts)], amount, w, wd.ledger.balance(w))
        for o in list(ins.offers):
            ins.sign(wd.ledger, o, True)


def _institutions_settle(wd: ScarceWorld, c: Any, order: list[str], log: list, seen: list) -> None:
    """Judge promises, settle contracts, sanction breaches (voters shown a
    :class:`~scarce_lab.environments.scarce.world.institutions.VoteView`, all vote to fine)."""
    ins = wd.institutions
    settled = ins.settle_contracts(wd.ledger, order)
    log.append(("contracts", [(o.payer, o.payee, o.amount, held) for o, held, _ in settled]))
    for _, b in ins.judge_ballots(c.index, c.ballots):
        if b is not None:
            _institutions_sanction(wd, b, log, seen)
    assert wd.ledger.conserved(), f"contention {c.index}: money not conserved under {ins.rules}"


def _institutions_sanction(wd: ScarceWorld, b: Any, log: list, seen: list) -> None:
    ins, votes = wd.institutions, None
    if ins.rules.sanctions == "vote":
        for v in b.voters:
            seen.append((v, dataclasses.asdict(wd.vote_view(v, b)), dict(wd.ledger.balances)))
        votes = dict.fromkeys(b.voters, True)
    s = ins.sanction(wd.ledger, b, votes)
    log.append(("sanction", b.kind, b.worker, b.harmed, s.passed, s.fined))


def _scarce_contention(wd: ScarceWorld, ev: Any, log: list, seen: list, policy: ScarceLegalPolicy) -> None:
    c, t = wd.open_contention(ev.participants), ev.t
    while c.phase != ContentionPhase.closed:
        if wd.institutions is not None:
            _institutions_step(wd, c, t, log)
        views = {w: wd.negotiation_view(c, w, t) for w in c.participants}
        for w, v in views.items():
            seen.append((w, {k: x for k, x in dataclasses.asdict(v).items() if k != "legal"},
                         dict(wd.ledger.balances)))
        key = (c.index, c.phase.value, c.private_round)
        w0 = c.participants[0]
        if (probe := _contention_probe(c, w0, views[w0].legal, policy, key)) is not None:
            log.append(("refused", w0, refused((ProtocolError,), probe[0], probe[1])))
        for w in c.participants:
            legal = views[w].legal
            if c.phase == ContentionPhase.declaration:
                c.declare(w, policy.declaration(legal, c.requests[w].duration_s, *key, w))
            elif c.phase == ContentionPhase.reasoning:
                c.reason(w, f"{w} reasons")
            elif c.phase == ContentionPhase.private:
                if (m := policy.message(legal, *key, w)) is not None:
                    c.send(w, *m)
            elif c.phase == ContentionPhase.revision:
                c.revise(w, policy.revision(legal, *key, w))
            else:
                c.ballot(w, policy.ballot(legal, *key, w))
        t += wd.decision_cost(True)
        c.advance()
    st = wd.settle(c, t)
    log.append(("settled", st.index, [(b.allocation.worker, b.slot.start, b.payment.amount) for b in st.bookings]))
    if wd.institutions is not None:
        _institutions_settle(wd, c, st.schedule.order(), log, seen)


def scarce_play(wd: ScarceWorld, subruns: int, log: list, seen: list) -> None:
    """Play ``subruns`` subruns of ``wd`` with :func:`scarce_step`."""
    for k in range(subruns):
        if wd.subrun < k:
            wd.start_subrun({w: _Task(f"t{k}", f"task {k}", f"prog{k}") for w in wd.rules.workers})
        while scarce_step(wd, log, seen):
            pass


def _without_institutions(view: dict) -> dict:
    """The view without its public institutions (reputation scores such as 0.5 or
    0.75 are public by design and would match the deadlines' fractions)."""
    c = view.get("contention")
    if isinstance(c, dict) and "institutions" in c:
        view = {**view, "contention": {k: v for k, v in c.items() if k != "institutions"}}
    return view


def _scarce_leaks(me: str, view: dict, text: str, balances: dict, secrets: list, joined: int = 0) -> list[str]:
    leaks = []
    before = sorted({r.get("subrun") for r in view.get("history") or [] if r.get("subrun", 0) < joined})
    if before:  # a newcomer remembers nothing of the subruns before it joined
        leaks.append(f"public history of subrun(s) {before}, before {me} joined at {joined}")
    contracts = (view.get("contention") or {}).get("your_contracts", [])
    leaks += [f"contract {k['payer']}->{k['payee']}" for k in contracts if me not in (k["payer"], k["payee"])]
    view = _without_institutions(view)
    for other in SCARCE_WORKERS:
        if other == me:
            continue
        checks = {
            f"{other}'s budget": str(SCARCE_BUDGETS[other]) in text,
            f"{other}'s balance": other in balances and str(balances[other]) in text,
            f"{other}'s deadline": str(SCARCE_DEADLINES[other]) in text,
            f"{other}'s files": f"{other}-private-file" in text,
            f"{other}'s notes": f"note of {other}" in text,
            # every time is a whole second except deadline-derived ones
            f"{other}'s deadline-derived time": any(x % 1 == SCARCE_DEADLINES[other] % 1 for x in _numbers(view)),
        }
        leaks += [k for k, v in checks.items() if v]
    leaks += [f"private message {s}" for s, parties in secrets if s in text and me not in parties]
    return leaks


def scarce_trace(seed: int, memory: str = "subrun", institutions: Any = None, **rules: Any) -> Trace:
    """Three subruns of the SCARCE world with canary budgets, deadlines, files, notes
    and private messages, played by :class:`ScarceLegalPolicy`. A canary that was never
    planted would prove nothing, so the trace fails when no private message was sent
    or no note saved. ``institutions`` (an
    :class:`~scarce_lab.environments.scarce.world.InstitutionRules`): the auction's institutions,
    exercised by :func:`_institutions_step` (promises, contracts, sanctions, votes);
    contracts must then reach only their parties' views, and the public reputation is
    public by design. ``rules`` go to :func:`scarce_rules` (e.g. ``worker_memory``,
    ``joins``, ``leaves``: :func:`scarce_mixed_trace`); a newcomer's view that shows
    public history from before it joined counts as a leak."""
    wd = ScarceWorld(scarce_rules(memory, seed=seed, institutions=institutions, **rules))
    log: list = []
    seen: list = []
    scarce_play(wd, 3, log, seen)
    return _scarce_observed(wd, seed, log, seen, dict(wd.rules.joins))


def _scarce_observed(wd: ScarceWorld, seed: int, log: list, seen: list, joins: dict) -> Trace:
    """The trace of a play: each view in ``seen`` with its leaks and whether it shows
    its worker's own private state; fails when a canary was never planted."""
    secrets = [(f"SECRET-{a}-{b}-{k}-{r}", {a, b}) for k in range(wd.k) for a in SCARCE_WORKERS
               for b in SCARCE_WORKERS for r in (1, 2)]
    trace = Trace(outcomes=log)
    for me, view, balances in seen:
        text = json.dumps(view, default=str)
        own = view.get("own_budget") == balances[me] and (
            str(SCARCE_DEADLINES[me]) in text or any(x % 1 == SCARCE_DEADLINES[me] % 1 for x in _numbers(view)))
        if "breach" in view:  # a voter's view holds its balance, never a deadline
            own = None
        trace.observations.append(Observation(me, text, tuple(_scarce_leaks(me, view, text, balances, secrets,
                                                                             joins.get(me, 0))), own))
    texts = [o.text for o in trace.observations]
    assert any("SECRET-" in t for t in texts), f"seed {seed}: no private message was sent (an untested canary)"
    assert any("note of " in t for t in texts), f"seed {seed}: no note was saved (an untested canary)"
    return trace


def scarce_fork_trace(seed: int, at: int = 3, institutions: Any = None) -> Trace:
    """A parent play (:func:`scarce_trace`, no institutions) and its fork before
    contention ``at``, in one trace (:mod:`scarce_lab.forks`). The fork's world replays
    the parent's policy until ``at`` contentions are settled: each of its observations
    must be the parent's (else it is flagged as a leak: a fork's prefix is its
    parent's). Then, as the runner's fork switch does (``runner/fork.py`` ``start``,
    ``runner/play.py`` ``retarget``), the world takes the rules after the intervention
    (``institutions``, default: sanctions by vote, promises and contracts) and a
    re-seeded policy plays on (a fork seed ``j > 0``). The privacy checks hold across the
    switch: no worker learns of the fork but what the world shows it."""
    from .world import InstitutionRules
    from .world.institutions import Institutions

    parent = scarce_trace(seed)
    wd = ScarceWorld(scarce_rules(seed=seed))
    log: list = []
    seen: list = []
    policy = ScarceLegalPolicy(seed, _scarce_text(wd), max_money=SCARCE_MAX_MONEY, weights=SCARCE_WEIGHTS)
    switched = False
    for k in range(3):
        if wd.subrun < k:
            wd.start_subrun({w: _Task(f"t{k}", f"task {k}", f"prog{k}") for w in wd.rules.workers})
        while scarce_step(wd, log, seen, policy):
            if not switched and wd.k >= at:
                ins = institutions or InstitutionRules(sanctions="vote", reputation=True, contracts=True)
                wd.rules = dataclasses.replace(wd.rules, institutions=ins, seed=seed + 7919)
                wd.mechanism, wd.institutions = wd.rules.mechanism_config(), Institutions(ins, wd.rules.workers)
                policy = ScarceLegalPolicy(seed + 7919, _scarce_text(wd), max_money=SCARCE_MAX_MONEY,
                                           weights=SCARCE_WEIGHTS)
                cut, switched = len(seen), True
                log.append(("fork", at))
    assert switched, f"seed {seed}: the play never reached contention {at} (the check would prove nothing)"
    fork = _scarce_observed(wd, seed, log, seen, {})
    for i, (p, f) in enumerate(zip(parent.observations[:cut], fork.observations[:cut], strict=True)):
        if p.text != f.text:
            fork.observations[i] = Observation(f.agent, f.text, (*f.leaks, f"a prefix observation ({i}) that is "
                                               "not the parent's"), f.own)
    return Trace(parent.observations + fork.observations, parent.outcomes + fork.outcomes)


#: The mixed play's seats as the world sees them: w0 remembers across subruns, w1
#: nothing, w2 (a newcomer from subrun 1) the run's ``subrun`` horizon -- under ``cross``
#: for w2 too in :func:`scarce_newcomer_cross_trace`.
MIXED_RULES: dict[str, Any] = {"worker_memory": {"w0": "cross", "w1": "none"}, "joins": {"w2": 1}}


def scarce_mixed_trace(seed: int) -> Trace:
    """:func:`scarce_trace` with per-worker memory horizons and a newcomer
    (:data:`MIXED_RULES`): the determinism and privacy checks of :mod:`.core` hold for
    it as for the uniform play."""
    return scarce_trace(seed, "subrun", **MIXED_RULES)


def scarce_newcomer_cross_trace(seed: int) -> Trace:
    """A newcomer (w2, from subrun 1) and a leaver (w0, after subrun 1) under the
    paper's ``cross`` memory: the newcomer must still see no history from before it
    joined."""
    return scarce_trace(seed, "cross", joins={"w2": 1}, leaves={"w0": 1})
