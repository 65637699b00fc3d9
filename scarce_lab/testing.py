"""Conformance suite that every environment runs (``tests/test_conformance.py``), and
that a new environment should pass before it ships.

Three properties, checked by playing each pure world with one generic policy that
chooses only from the legal actions each observation carries
(:class:`~scarce_lab.legal_policy.LegalPolicy`: random values and the edges of each
legal range; no model, no sandbox, no files):

- **legality**: at every decision an action just outside the legal set is tried and
  the world must refuse it (the trace fails naming the action when it is accepted),
  and every action the policy draws from the legal set is accepted;

- **determinism**: the same seed gives the same trajectory (every observation and every
  outcome, compared as JSON);
- **privacy**: no observation of one agent holds another agent's private fields. Each
  harness plants distinctive *canaries* in the private state (budgets, deadlines,
  private messages, a king's true pool) and reports, per observation, which other
  agents' canaries it contains; the suite fails on any. Positive controls check that
  every agent does see its own private state, so a check that cannot fail fails.

Use::

    from scarce_lab.testing import HARNESSES, check_environment
    check_environment(HARNESSES["scarce"])          # raises AssertionError on a breach

A new environment's spec names its play (``EnvironmentSpec.harness``);
:data:`HARNESSES` lists every registered environment's.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .envs.scarce import (
    ActionRefused,
    Ballot,
    ClockConfig,
    Declaration,
    EventKind,
    ProtocolError,
    ScarceWorld,
    WorldError,
    WorldRules,
)
from .envs.scarce import Phase as ContentionPhase
from .envs.scarce.actions import LegalNegotiation
from .envs.sovsim import CommonsGame, InvalidActionError
from .legal_policy import LegalPolicy, refused

__all__ = ["HARNESSES", "LegalPolicy", "Observation", "Trace", "check_determinism", "check_environment", "check_privacy"]


@dataclass(frozen=True)
class Observation:
    """What ``agent`` was shown (as JSON text), with the canaries of other agents found
    in it (``leaks``) and whether its own private state was visible (``own``; ``None``
    when the agent has no private state in this observation)."""

    agent: str
    text: str
    leaks: tuple[str, ...] = ()
    own: bool | None = None


@dataclass
class Trace:
    """One played game: every observation in order and a log of outcomes."""

    observations: list[Observation] = field(default_factory=list)
    outcomes: list[Any] = field(default_factory=list)

    def fingerprint(self) -> str:
        """JSON of everything that must be equal for equal seeds."""
        return json.dumps([[o.agent, o.text] for o in self.observations] + [self.outcomes], default=str)


def _numbers(obj: Any) -> Iterator[float]:
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _numbers(v)
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield obj


# -- SovSim ------------------------------------------------------------------------------
def sovsim_trace(seed: int, condition: str = "kcpr_m") -> Trace:
    """A game (KCPR-M by default: the king may announce a false pool) played by
    :class:`LegalPolicy` from each observation's legal actions, with an illegal value
    probed (and refused) at every decision. Subordinates must never see the true pool
    before the round is settled (SovSim sec. 3.4)."""
    policy = LegalPolicy(seed)
    game = CommonsGame(condition)
    trace = Trace()
    while not game.over:
        actions = {}
        for a in game.acting_agents():
            obs = game.observe(a)
            view = dataclasses.asdict(obs)
            view.pop("config")
            true_now = game.pool
            leaks = []
            if not obs.is_leader and condition == "kcpr_m":
                if obs.pool is not None:
                    leaks.append(f"true pool {true_now} of round {obs.round}")
                if any(r["round"] >= obs.round for r in view["history"]):
                    leaks.append("an unsettled round in the history")
            own = (obs.pool == true_now) if obs.is_leader and condition == "kcpr_m" else None
            trace.observations.append(Observation(a, json.dumps(view, default=str), tuple(leaks), own))
            key = (obs.round, obs.phase.value, a)
            actions[a] = policy.sovsim(obs.legal, *key)
            bad = policy.sovsim_illegal(obs.legal, *key)
            trace.outcomes.append(["refused", a, bad, refused(
                (InvalidActionError,), f"{a} chose {bad} in {obs.legal}", lambda b=bad, a=a: game.act({**{
                    x: game.legal_actions(x).low for x in game.acting_agents()}, a: b}))])
        rec = game.act(actions)
        if rec is not None:
            trace.outcomes.append([rec.round, list(rec.extractions), rec.remaining])
    return trace


# -- SCARCE ------------------------------------------------------------------------------
SCARCE_WORKERS = ("w0", "w1", "w2")
#: Canaries: budgets and deadlines no other quantity of the game takes.
SCARCE_BUDGETS = {"w0": 11111, "w1": 22222, "w2": 33333}
SCARCE_DEADLINES = {"w0": 691.5, "w1": 767.25, "w2": 839.75}  # distinct fractions
#: Bids and prices of the harness stay below 100 credits: no 3-4 digit canary is hit by chance.
SCARCE_MAX_MONEY = 99
#: Solver tool weights of the harness: slot requests and commands often, so that three
#: workers meet in contentions and hold slots.
SCARCE_WEIGHTS = {"request_execution_slot": 6.0, "run_command": 3.0}


def scarce_rules(memory: str = "subrun", **kw: Any) -> WorldRules:
    """Rules of the conformance SCARCE world (three workers, canary budgets/deadlines;
    a 60 s slot cap so that random slot lengths leave room for many contentions)."""
    kw.setdefault("scheduler", "ballots")
    kw.setdefault("private_rounds", 2)
    kw.setdefault("mechanism", "revisable")
    kw.setdefault("slot_cap_s", 60)
    kw.setdefault("clock", ClockConfig(scripted_call_s=2.0, command_s=5.0))
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


def scarce_step(wd: ScarceWorld, log: list, seen: list, policy: LegalPolicy | None = None) -> bool:
    """Handle one world event the way the runner would, every choice made by
    ``policy`` (default: :class:`LegalPolicy` of the world's seed) from the legal
    actions the observation carries, and an illegal action probed at every solver
    step and every negotiation phase; ``seen`` gets ``(worker, observation dict,
    everyone's balance then)``. Returns False at the end of the subrun."""
    policy = policy or LegalPolicy(wd.rules.seed, _scarce_text(wd), max_money=SCARCE_MAX_MONEY,
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
        wd.close_slot(ev.worker)
    elif ev.kind in (EventKind.deadline_miss, EventKind.step_limit):
        wd.finish(ev.worker, missed=ev.kind == EventKind.deadline_miss, at=ev.t)
    else:
        for m in ev.missed:
            wd.finish(m, missed=True, at=wd.worker(m).deadline_s)
        if ev.participants:
            _scarce_contention(wd, ev, log, seen, policy)
    return True


def _contention_probe(c: Any, w: str, legal: LegalNegotiation, policy: LegalPolicy,
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


def _scarce_contention(wd: ScarceWorld, ev: Any, log: list, seen: list, policy: LegalPolicy) -> None:
    c, t = wd.open_contention(ev.participants), ev.t
    while c.phase != ContentionPhase.closed:
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


def scarce_play(wd: ScarceWorld, subruns: int, log: list, seen: list) -> None:
    """Play ``subruns`` subruns of ``wd`` with :func:`scarce_step`."""
    for k in range(subruns):
        if wd.subrun < k:
            wd.start_subrun({w: _Task(f"t{k}", f"task {k}", f"prog{k}") for w in wd.rules.workers})
        while scarce_step(wd, log, seen):
            pass


def _scarce_leaks(me: str, view: dict, text: str, balances: dict, secrets: list) -> list[str]:
    leaks = []
    for other in SCARCE_WORKERS:
        if other == me:
            continue
        checks = {
            f"{other}'s budget": str(SCARCE_BUDGETS[other]) in text,
            f"{other}'s balance": str(balances[other]) in text,
            f"{other}'s deadline": str(SCARCE_DEADLINES[other]) in text,
            f"{other}'s files": f"{other}-private-file" in text,
            f"{other}'s notes": f"note of {other}" in text,
            # every time is a whole second except deadline-derived ones
            f"{other}'s deadline-derived time": any(x % 1 == SCARCE_DEADLINES[other] % 1 for x in _numbers(view)),
        }
        leaks += [k for k, v in checks.items() if v]
    leaks += [f"private message {s}" for s, parties in secrets if s in text and me not in parties]
    return leaks


def scarce_trace(seed: int, memory: str = "subrun") -> Trace:
    """Three subruns of the SCARCE world with canary budgets, deadlines, files, notes
    and private messages, played by :class:`LegalPolicy`. A canary that was never
    planted would prove nothing, so the trace fails when no private message was sent
    or no note saved."""
    wd = ScarceWorld(scarce_rules(memory, seed=seed))
    log: list = []
    seen: list = []
    scarce_play(wd, 3, log, seen)
    secrets = [(f"SECRET-{a}-{b}-{k}-{r}", {a, b}) for k in range(wd.k) for a in SCARCE_WORKERS
               for b in SCARCE_WORKERS for r in (1, 2)]
    trace = Trace(outcomes=log)
    texts = []
    for me, view, balances in seen:
        text = json.dumps(view, default=str)
        texts.append(text)
        own = view.get("own_budget") == balances[me] and (
            str(SCARCE_DEADLINES[me]) in text or any(x % 1 == SCARCE_DEADLINES[me] % 1 for x in _numbers(view)))
        trace.observations.append(Observation(me, text, tuple(_scarce_leaks(me, view, text, balances, secrets)), own))
    assert any("SECRET-" in t for t in texts), f"seed {seed}: no private message was sent (an untested canary)"
    assert any("note of " in t for t in texts), f"seed {seed}: no note was saved (an untested canary)"
    return trace


# -- Economy of Minds ----------------------------------------------------------------------
def economy_trace(seed: int) -> Trace:
    """Twenty Blocks World episodes of the Hayek machine; the winner's move is chosen
    by :class:`LegalPolicy` from the legal moves its observation carries, and an
    illegal action (not a move) is probed, and must be refused, at every step. An
    agent's policy is shown only the task's state (EoM sec. 3.2), never another
    agent's identity, bid or wealth: canary bids (7001, 7002, ...) must not appear in
    any observation. The economy gives agents no private state to see, so there is no
    positive control of their own."""
    from .envs.economy import Economy, EconomyConfig, run_episode
    from .envs.economy.blocksworld import BlocksWorld, make_instance

    policy = LegalPolicy(seed)
    economy = Economy(EconomyConfig(explore_interval=1, bid_scheme="fixed"))
    rng = random.Random(f"{seed}:founders")
    for i in range(6):
        economy.add_agent((1 + rng.randrange(3), 1 + rng.randrange(3)), episode=0, bid=7001 + i)
    trace = Trace()
    for e in range(20):
        erng = random.Random(f"{seed}:ep:{e}")
        target, stacks = make_instance(3, 3, erng)
        env = BlocksWorld(target, stacks, reward_per_block=10, max_steps=16)

        def act(record, obs, env=env, e=e):
            view = dataclasses.asdict(obs)
            text = json.dumps(view, default=str)
            others = [a for a in economy.agents if a != record.agent_id]
            leaks = [f"{a}'s id" for a in others if f'"{a}"' in text]
            leaks += [f"{a}'s bid" for a in others if str(economy.agents[a].bid) in text]
            trace.observations.append(Observation(record.agent_id, text, tuple(leaks)))
            bad = (1, 2)  # a pair, not a Move
            trace.outcomes.append(["refused", refused((TypeError,), f"{bad!r} as a move", lambda: env.apply(bad))])
            return policy.move(obs.legal, e, len(trace.observations))

        res = run_episode(economy, env, trigger=lambda a, o: True, act=act, training=True, rng=erng,
                          emit=lambda *a: None)
        economy.end_episode(e, random.Random(f"{seed}:evo:{e}"), lambda g, r: (1 + r.randrange(3), g[1]),
                            lambda r: (1 + r.randrange(3), 1 + r.randrange(3)))
        trace.outcomes.append([e, res.solved, res.steps, res.winners, economy.ledger.balances()])
    return trace


class _Harnesses(Mapping[str, Callable[[int], Trace]]):
    """Environment name -> its conformance play ``seed -> Trace``: a live view of the
    registry (:func:`scarce_lab.environments.get`, each spec's ``harness``), so an
    environment registered later is checked too."""

    def __getitem__(self, name: str) -> Callable[[int], Trace]:
        from .environments import UnknownEnvironmentError, get

        try:
            return get(name).harness
        except UnknownEnvironmentError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        from .environments import names

        return iter(names())

    def __len__(self) -> int:
        from .environments import names

        return len(names())


#: Environment name -> a function ``seed -> Trace`` (every registered environment).
HARNESSES: Mapping[str, Callable[[int], Trace]] = _Harnesses()


# -- the checks ---------------------------------------------------------------------------
def check_determinism(play: Callable[[int], Trace], seeds: tuple[int, ...] = (0, 1)) -> None:
    """The same seed gives the same trajectory.

    Raises:
        AssertionError: two plays of one seed differ (the first differing seed named).
    """
    for s in seeds:
        a, b = play(s), play(s)
        assert a.fingerprint() == b.fingerprint(), f"seed {s}: two plays differ"
        assert a.observations, f"seed {s}: the harness showed no observation (a check that cannot fail)"


def check_privacy(play: Callable[[int], Trace], seed: int = 0) -> None:
    """No observation of one agent holds another agent's private fields.

    Raises:
        AssertionError: the first leak (agent, what leaked), or an agent with private
            state never saw it (the canaries would then prove nothing).
    """
    trace = play(seed)
    assert trace.observations, "the harness showed no observation"
    for o in trace.observations:
        assert not o.leaks, f"{o.agent} sees {', '.join(o.leaks)}"
    holders = {o.agent for o in trace.observations if o.own is not None}
    seen_own = {o.agent for o in trace.observations if o.own}
    assert seen_own == holders, f"agents {sorted(holders - seen_own)} never saw their own private state"


def check_environment(play: Callable[[int], Trace]) -> None:
    """Run every conformance check on ``play`` (see the module docstring)."""
    check_determinism(play)
    check_privacy(play)
