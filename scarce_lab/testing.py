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
    check_environment(HARNESSES["scarce"]())        # raises AssertionError on a breach
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .envs.commons import CommonsGame, InvalidActionError
from .envs.commons import LegalActions as CommonsLegal
from .envs.slots import (
    BUILD_SCRIPT,
    SOLVER_TOOLS,
    ActionRefused,
    Ballot,
    BallotEntry,
    ClockConfig,
    Declaration,
    EventKind,
    ProtocolError,
    ScarceWorld,
    WorldError,
    WorldRules,
)
from .envs.slots import LegalActions as SolverLegal
from .envs.slots import Phase as ContentionPhase
from .envs.slots.actions import LegalNegotiation

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


# -- the legal-action policy ----------------------------------------------------------------
class LegalPolicy:
    """A random and adversarial policy driven only by the legal actions an observation
    carries (PettingZoo's action mask), the same for every environment.

    Each choice draws from a generator seeded by ``seed`` and the decision point's
    ``key`` (so a replay, or a pickled world continued, chooses alike). Bounded
    integers are the lowest value, the highest value or a uniform one (a third each:
    the adversarial edges are played as often as the middle). Free text (notes,
    messages) comes from ``text(kind, key)``, where a harness plants its canaries.

    ``weights`` weighs the solver's legal tools (default 1 each; a harness favours
    slot requests so that contentions are frequent). ``max_money`` narrows bids and prices to ``0..min(legal bound, max_money)``
    credits (a subset of a legal set is legal): a bid equal to an agent's budget or
    balance would publish it by the agent's own choice, which a canary cannot tell
    from a leak.

    The ``*_illegal`` methods give, for the same legal set, a value just outside it
    (the illegal-action probe): the harness checks that the world refuses it.
    """

    def __init__(self, seed: int, text: Callable[[str, tuple], str] | None = None, *, max_money: int | None = None,
                 weights: dict[str, float] | None = None):
        self.seed = seed
        self.text = text or (lambda kind, key: f"{kind} {key}")
        self.max_money = max_money
        self.weights = dict(weights or {})

    def _money(self, bound: int) -> int:
        return bound if self.max_money is None else min(bound, self.max_money)

    def rng(self, *key: Any) -> random.Random:
        """The generator of decision point ``key``."""
        return random.Random(f"{self.seed}:{key!r}")

    def integer(self, rng: random.Random, low: int, high: int, step: int = 1) -> int:
        """One of ``low, low + step, ..., high``: an edge or a uniform value."""
        pick = rng.randrange(3)
        if pick == 0 or high <= low:
            return low
        if pick == 1:
            return low + (high - low) // step * step
        return rng.randrange(low, high + 1, step)

    # SovSim: one integer (an extraction or an announced pool)
    def sovsim(self, legal: CommonsLegal, *key: Any) -> int:
        return self.integer(self.rng("sovsim", *key), legal.low, legal.high, legal.step)

    def sovsim_illegal(self, legal: CommonsLegal, *key: Any) -> int:
        """Above the cap, below zero, or (with a step) between two legal values."""
        options = [legal.high + legal.step, legal.low - 1] + ([legal.low + 1] if legal.step > 1 else [])
        return self.rng("sovsim-illegal", *key).choice(options)

    # SCARCE: a solver tool call, negotiation submissions
    def solver(self, legal: SolverLegal, *key: Any) -> dict[str, Any]:
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

    def solver_illegal(self, legal: SolverLegal, *key: Any) -> dict[str, Any]:
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
        rng = self.rng("declaration", *key)
        return Declaration(desired_position=self.integer(rng, 1, legal.max_position),
                           desired_duration_seconds=self.integer(rng, 1, min(requested_s, legal.max_duration_s)),
                           bid_price=self.integer(rng, 0, self._money(legal.max_bid)))

    def message(self, legal: LegalNegotiation, *key: Any) -> tuple[str, str] | None:
        rng = self.rng("message", *key)
        if not legal.recipients or rng.random() < 0.3:
            return None
        to = rng.choice(legal.recipients)
        return to, self.text("message", (*key, to))

    def revision(self, legal: LegalNegotiation, *key: Any) -> int:
        return self.integer(self.rng("revision", *key), 0, self._money(legal.max_bid))

    def ballot(self, legal: LegalNegotiation, *key: Any) -> Ballot:
        rng = self.rng("ballot", *key)
        order = list(legal.participants)
        rng.shuffle(order)
        return Ballot(entries=[BallotEntry(worker=w, duration_seconds=self.integer(rng, 0, legal.max_duration_s),
                                           price=self.integer(rng, 0, self._money(legal.max_price)))
                            for w in order])


def _refused(errors: tuple[type[BaseException], ...], what: str, attempt: Callable[[], Any]) -> str:
    """Run ``attempt`` (an illegal action); return the world's refusal. Raises
    AssertionError when the world accepted it."""
    try:
        attempt()
    except errors as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"the world accepted an illegal action: {what}")


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
            trace.outcomes.append(["refused", a, bad, _refused(
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
        if bad["tool"] == "request_execution_slot" and not obs.legal.in_slot:  # the world clamps it
            pass
        elif bad["tool"] == "request_execution_slot":
            _refused((ActionRefused,), f"{w} requested a slot inside its slot", lambda: wd.request_slot(w, 10, ""))
        elif bad["tool"] == "run_command":
            _refused((WorldError,), f"{w} ran a command outside a slot", lambda: wd.command_done(w, 0.0))
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
            log.append(("refused", w0, _refused((ProtocolError,), probe[0], probe[1])))
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


#: Environment name -> a function ``seed -> Trace``.
HARNESSES: dict[str, Callable[[int], Trace]] = {
    "sovsim": sovsim_trace,
    "scarce": scarce_trace,
    "economy": economy_trace,
}


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
