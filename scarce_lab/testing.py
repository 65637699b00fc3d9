"""Conformance suite that every environment runs (``tests/test_conformance.py``), and
that a new environment should pass before it ships.

Two properties, checked by playing each pure world with fixed scripted policies (no
model, no sandbox, no files):

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

from .envs.commons import CommonsGame, Phase
from .envs.slots import (
    Ballot,
    BallotEntry,
    ClockConfig,
    Declaration,
    EventKind,
    ScarceWorld,
    Status,
    WorldRules,
)
from .envs.slots import Phase as ContentionPhase

__all__ = ["HARNESSES", "Observation", "Trace", "check_determinism", "check_environment", "check_privacy"]


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
def sovsim_trace(seed: int) -> Trace:
    """A KCPR-M game: the king announces a false pool every round; subordinates must
    never see the true pool before the round is settled (SovSim sec. 3.4)."""
    rng = random.Random(seed)
    game = CommonsGame("kcpr_m")
    trace = Trace()
    while not game.over:
        acting = game.acting_agents()
        actions = {}
        for a in acting:
            obs = game.observe(a)
            view = dataclasses.asdict(obs)
            view.pop("config")
            text = json.dumps(view, default=str)
            true_now = game.pool
            leaks = []
            if not obs.is_leader:
                if obs.pool is not None:
                    leaks.append(f"true pool {true_now} of round {obs.round}")
                if any(r["round"] >= obs.round for r in view["history"]):
                    leaks.append("an unsettled round in the history")
            trace.observations.append(Observation(a, text, tuple(leaks), own=(obs.pool == true_now) if obs.is_leader else None))
            if obs.phase == Phase.announce:
                actions[a] = min(obs.max_extraction, true_now + 37)  # a lie: a canary value
            else:
                actions[a] = rng.randrange(0, obs.max_extraction + 1, obs.step)
        rec = game.act(actions)
        if rec is not None:
            trace.outcomes.append([rec.round, list(rec.extractions), rec.remaining])
    return trace


# -- SCARCE ------------------------------------------------------------------------------
SCARCE_WORKERS = ("w0", "w1", "w2")
#: Canaries: budgets and deadlines no other quantity of the game takes.
SCARCE_BUDGETS = {"w0": 1111, "w1": 2222, "w2": 3333}
SCARCE_DEADLINES = {"w0": 691.5, "w1": 767.25, "w2": 839.75}  # distinct fractions


def scarce_rules(memory: str = "subrun", **kw: Any) -> WorldRules:
    """Rules of the conformance SCARCE world (three workers, canary budgets/deadlines)."""
    kw.setdefault("scheduler", "ballots")
    kw.setdefault("private_rounds", 2)
    kw.setdefault("mechanism", "revisable")
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


def scarce_step(wd: ScarceWorld, log: list, seen: list) -> bool:
    """Handle one world event the way the runner would, with a fixed scripted policy;
    ``seen`` gets ``(worker, observation dict, everyone's balance then)``. Returns False
    at the end of the subrun."""
    ev = wd.next_event()
    log.append((ev.kind.value, ev.worker, ev.t, ev.participants, ev.missed))
    if ev.kind == EventKind.subrun_end:
        return False
    if ev.kind == EventKind.solver_step:
        w = ev.worker
        obs = wd.solver_observation(w, [f"{w}-private-file.c", "docs.txt"])
        seen.append((w, dataclasses.asdict(obs), dict(wd.ledger.balances)))
        s = wd.worker(w)
        wd.begin_step(w, wd.decision_cost(True))
        last = s.transcript[-1]["action"] if s.transcript else ""
        if s.status == Status.in_slot:
            wd.command_done(w, 0.0)
            wd.record_result(w, "cmd", "ok")
        elif s.contentions == 0 and s.steps <= 1:  # all three meet in the first contention
            wd.record_result(w, "read", "docs")
        elif s.contentions == 0:
            dur = 15 + 10 * int(w[1:])
            wd.request_slot(w, dur, f"need {dur} s")
        elif last != "save" and s.contentions < 2:
            wd.save_memory(w, f"note of {w} in subrun {wd.subrun}")
            wd.record_result(w, "save", "saved")
        elif s.contentions < 2:
            wd.request_slot(w, 10, "build")
        else:
            wd.finish(w, missed=False, at=s.t, reason="submit")
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
            _scarce_contention(wd, ev, log, seen)
    return True


def _scarce_contention(wd: ScarceWorld, ev: Any, log: list, seen: list) -> None:
    c, t = wd.open_contention(ev.participants), ev.t
    n = len(c.participants)
    while c.phase != ContentionPhase.closed:
        for w in c.participants:
            seen.append((w, dataclasses.asdict(wd.negotiation_view(c, w, t)), dict(wd.ledger.balances)))
        for j, w in enumerate(c.participants):
            if c.phase == ContentionPhase.declaration:
                c.declare(w, Declaration(desired_position=j + 1, bid_price=7 + j,
                                         desired_duration_seconds=c.requests[w].duration_s))
            elif c.phase == ContentionPhase.reasoning:
                c.reason(w, f"{w} reasons")
            elif c.phase == ContentionPhase.private:
                to = c.participants[(j + 1) % n]
                c.send(w, to, f"SECRET-{w}-{to}-{c.index}-{c.private_round}")
            elif c.phase == ContentionPhase.revision:
                c.revise(w, c.current_bid(w) + 1)
            else:
                order = sorted(c.participants, key=lambda x: -c.current_bid(x))
                c.ballot(w, Ballot(entries=[BallotEntry(worker=x, duration_seconds=c.requests[x].duration_s,
                                                        price=c.current_bid(x)) for x in order]))
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
    and private messages."""
    wd = ScarceWorld(scarce_rules(memory, seed=seed))
    log: list = []
    seen: list = []
    scarce_play(wd, 3, log, seen)
    secrets = [(f"SECRET-{a}-{b}-{k}-{r}", {a, b}) for k in range(wd.k) for a in SCARCE_WORKERS
               for b in SCARCE_WORKERS for r in (1, 2)]
    trace = Trace(outcomes=log)
    for me, view, balances in seen:
        text = json.dumps(view, default=str)
        own = view.get("own_budget") == balances[me] and (
            str(SCARCE_DEADLINES[me]) in text or any(x % 1 == SCARCE_DEADLINES[me] % 1 for x in _numbers(view)))
        trace.observations.append(Observation(me, text, tuple(_scarce_leaks(me, view, text, balances, secrets)), own))
    return trace


# -- Economy of Minds ----------------------------------------------------------------------
def economy_trace(seed: int) -> Trace:
    """Twenty Blocks World episodes of the Hayek machine with fixed rule agents. An
    agent's policy is shown only the task's state (EoM sec. 3.2), never another agent's
    identity, bid or wealth: canary bids (7001, 7002, ...) must not appear in any
    observation. The economy gives agents no private state to see, so there is no
    positive control of their own."""
    from .envs.economy import Economy, EconomyConfig, run_episode
    from .envs.economy.blocksworld import BlocksWorld, Move, make_instance

    economy = Economy(EconomyConfig(explore_interval=1, bid_scheme="fixed"))
    rng = random.Random(f"{seed}:founders")
    for i in range(6):
        economy.add_agent((1 + rng.randrange(3), 1 + rng.randrange(3)), episode=0, bid=7001 + i)
    trace = Trace()

    def act(record, obs):
        view = dataclasses.asdict(obs)
        text = json.dumps(view, default=str)
        others = [a for a in economy.agents if a != record.agent_id]
        leaks = [f"{a}'s id" for a in others if f'"{a}"' in text]
        leaks += [f"{a}'s bid" for a in others if str(economy.agents[a].bid) in text]
        trace.observations.append(Observation(record.agent_id, text, tuple(leaks)))
        return Move(*record.genome)

    for e in range(20):
        erng = random.Random(f"{seed}:ep:{e}")
        target, stacks = make_instance(3, 3, erng)
        env = BlocksWorld(target, stacks, reward_per_block=10, max_steps=16)
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
