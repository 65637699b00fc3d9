"""The SovSim conformance play (:func:`sovsim_trace`, the spec's ``harness``) and its
policy's choices (:class:`SovSimLegalPolicy`); the checks are in
:mod:`scarce_lab.testing.core`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ...testing.core import LegalPolicy, Observation, Trace, refused
from .world.commons import INSTITUTION_PHASES, CommonsGame, InvalidActionError, LegalActions, Phase
from .world.institutions import InstitutionRules, InvalidInstitutionError
from .world.talk import InvalidTalkError, TalkMode, TalkRules, Utterance


class SovSimLegalPolicy(LegalPolicy):
    """:class:`~scarce_lab.testing.core.LegalPolicy` on SovSim's legal actions: one
    integer a decision (an extraction, or a king's announced pool)."""

    def action(self, legal: LegalActions, *key: Any) -> int:
        """A legal value of ``legal``: an edge or a uniform one (on its step)."""
        return self.integer(self.rng("sovsim", *key), legal.low, legal.high, legal.step)

    def action_illegal(self, legal: LegalActions, *key: Any) -> int:
        """Above the cap, below zero, or (with a step) between two legal values."""
        options = [legal.high + legal.step, legal.low - 1] + ([legal.low + 1] if legal.step > 1 else [])
        return self.rng("sovsim-illegal", *key).choice(options)


def _as_text(obs: Any) -> str:
    """An observation as the JSON text the leak checks search (its ``config``, the
    game's rules, left out)."""
    view = dataclasses.asdict(obs)
    view.pop("config")
    return json.dumps(view, default=str)


def _talk_leaks(game: CommonsGame, agent: str, text: str) -> tuple[list[str], bool | None]:
    """The private canaries of ``game``'s transcript that ``agent`` may not see but
    ``text`` holds, and whether ``text`` holds every private message ``agent`` may see
    (``None`` when there is none yet)."""
    private = [m for m in game.transcript if not m.public]
    leaks = [f"private message {m.text!r} of {m.speaker} to {list(m.to)}"
             for m in private if agent not in m.visible_to and m.text in text]
    mine = [m for m in private if agent in m.visible_to]
    return leaks, (all(m.text in text for m in mine) if mine else None)


def _talk_turn(game: CommonsGame, policy: SovSimLegalPolicy, trace: Trace) -> None:
    """One talk turn: the speaker's observation is checked for private canaries not
    addressed to it, an illegal message is probed (and must be refused), then a legal
    canary message goes to everyone or privately to random recipients."""
    (a,) = game.acting_agents()
    obs = game.observe_talk(a)
    text = _as_text(obs)
    leaks, own = _talk_leaks(game, a, text)
    trace.observations.append(Observation(a, text, tuple(leaks), own))
    rng = policy.rng("talk", obs.round, obs.turn, a)
    to: tuple[str, ...] = ()
    if obs.recipients and rng.random() < 0.7:
        to = tuple(sorted(rng.sample(obs.recipients, rng.randint(1, len(obs.recipients)))))
    bad = rng.choice([Utterance("x" * (obs.max_chars + 1)), Utterance("x", ("nobody",)), Utterance("x", (a,))])
    trace.outcomes.append(["refused", a, repr(bad), refused(
        (InvalidTalkError,), f"{a} said {bad!r}", lambda: game.speak(a, bad))])
    game.speak(a, Utterance(f"CANARY-{a}>{'+'.join(to) or 'all'}-r{obs.round}t{obs.turn}|", to))


def _institution_phase(game: CommonsGame, policy: SovSimLegalPolicy, trace: Trace) -> None:
    """An election, quota vote or sanction phase: each agent's observation is checked (a
    kcpr_m subordinate sees no true pool before the round is settled), an illegal choice
    is probed (and must be refused, nothing applied), then legal choices are applied."""
    actions: dict[str, Any] = {}
    for a in game.acting_agents():
        obs = game.observe_institution(a)
        hidden = game.condition.value == "kcpr_m" and not obs.is_leader and obs.phase != Phase.sanction
        leaks = [f"true pool {game.pool} of round {obs.round}"] if hidden and obs.pool is not None else []
        trace.observations.append(Observation(a, _as_text(obs), tuple(leaks), None))
        legal, rng = obs.legal, policy.rng("institution", obs.round, obs.phase.value, a)
        if obs.phase == Phase.elect:
            actions[a], bad = rng.choice(legal.candidates), "a99"
        elif obs.phase == Phase.quota:
            actions[a] = policy.integer(rng, 0, legal.high, legal.step)
            bad = rng.choice([legal.high + legal.step, -legal.step, 1])
        else:
            left, pts = legal.max_total, {}
            for t in legal.targets:
                pts[t] = rng.randint(0, min(legal.max_points, left))
                left -= pts[t]
            actions[a] = pts
            bad = rng.choice([{legal.targets[0]: legal.max_points + 1}, {a: 1}, {legal.targets[0]: -1}])
        fallbacks = {x: game.institution_legal(x).fallback for x in game.acting_agents()}
        trace.outcomes.append(["refused", a, repr(bad), refused(
            (InvalidInstitutionError,), f"{a} chose {bad!r} in {obs.phase.value}",
            lambda b=bad, a=a, f=fallbacks: game.institute({**f, a: b}))])
    rec = game.institute(actions)
    trace.outcomes.append([obs.round, obs.phase.value, repr(rec)])


def sovsim_trace(seed: int, condition: str = "kcpr_m", talk: str = "none", institutions: bool = False) -> Trace:
    """A game (KCPR-M by default: the king may announce a false pool) played by
    :class:`SovSimLegalPolicy` from each observation's legal actions, with an illegal value
    probed (and refused) at every decision. Subordinates must never see the true pool
    before the round is settled (SovSim sec. 3.4). With ``talk`` on (two turns a round)
    every message is a canary, private to random recipients most of the time: no talk
    or extraction observation may hold a private message not addressed to or sent by
    its agent, and each agent must see those that are. With ``institutions`` every one
    the condition allows is on (sanctions, a quota on every agent, an election every
    round outside ``cpr``): ballots, proposals and points are probed the same way."""
    trace = Trace()
    rules = InstitutionRules(sanctions=True, quota="all", elections=0 if condition == "cpr" else 1) \
        if institutions else None
    _play(CommonsGame(condition, talk=TalkRules(TalkMode(talk), turns=2, max_chars=60), institutions=rules),
          SovSimLegalPolicy(seed), trace)
    return trace


def _play(game: CommonsGame, policy: SovSimLegalPolicy, trace: Trace, until: int | None = None) -> None:
    """Play ``game`` with ``policy`` into ``trace`` (:func:`sovsim_trace`'s checks) until it
    ends, or until round ``until`` begins."""
    condition = game.condition.value
    while not game.over and (until is None or game.round < until):
        if game.phase == Phase.talk:
            _talk_turn(game, policy, trace)
            continue
        if game.phase in INSTITUTION_PHASES:
            _institution_phase(game, policy, trace)
            continue
        actions = {}
        for a in game.acting_agents():
            obs = game.observe(a)
            true_now = game.pool
            leaks = []
            if not obs.is_leader and condition == "kcpr_m":
                if obs.pool is not None:
                    leaks.append(f"true pool {true_now} of round {obs.round}")
                if any(r.round >= obs.round for r in obs.history):
                    leaks.append("an unsettled round in the history")
            own = (obs.pool == true_now) if obs.is_leader and condition == "kcpr_m" else None
            text = _as_text(obs)
            talk_leaks, talk_own = _talk_leaks(game, a, text)
            own = own if talk_own is None else (talk_own and own is not False)
            trace.observations.append(Observation(a, text, tuple(leaks + talk_leaks), own))
            key = (obs.round, obs.phase.value, a)
            actions[a] = policy.action(obs.legal, *key)
            bad = policy.action_illegal(obs.legal, *key)
            trace.outcomes.append(["refused", a, bad, refused(
                (InvalidActionError,), f"{a} chose {bad} in {obs.legal}", lambda b=bad, a=a: game.act({**{
                    x: game.legal_actions(x).low for x in game.acting_agents()}, a: b}))])
        rec = game.act(actions)
        if rec is not None:
            trace.outcomes.append([rec.round, list(rec.extractions), rec.remaining])


def sovsim_fork_trace(seed: int, condition: str = "kcpr_m", at: int = 3) -> Trace:
    """A parent game and its fork at round ``at`` (:mod:`scarce_lab.forks`), in one trace.

    The parent is :func:`sovsim_trace`'s play with talk off (no collapse, so the fork
    step is reached). The fork replays the same policy up to round ``at``: each of its
    observations must equal the parent's (else it is flagged as a leak: a fork's prefix
    is its parent's). At round ``at`` a fork's rule opens the discussion
    (``public+private``, canaries) and the policy is re-seeded, as a fork seed ``j > 0``
    is: every check of :func:`sovsim_trace` applies to the continuation (no private
    message or true pool reaches an agent it is not for), and nothing tells an agent of
    the fork but what the world shows (the open discussion)."""
    from .world.commons import CommonsConfig

    rules = CommonsConfig(rounds=at + 2, collapse_threshold=0)
    parent, fork = Trace(), Trace()
    _play(CommonsGame(condition, rules), SovSimLegalPolicy(seed), parent)
    game = CommonsGame(condition, rules)
    _play(game, SovSimLegalPolicy(seed), fork, until=at)
    for i, (p, f) in enumerate(zip(parent.observations, fork.observations, strict=False)):
        if p != f:
            fork.observations[i] = Observation(f.agent, f.text, (*f.leaks, f"a prefix observation ({i}) that is not "
                                                                           "the parent's"), f.own)
    assert not game.over and game.round == at, f"the fork never reached round {at} (the check would prove nothing)"
    game.set_talk(TalkRules(TalkMode.public_private, turns=2, max_chars=60))
    _play(game, SovSimLegalPolicy(seed + 7919), fork)
    return Trace(parent.observations + fork.observations, parent.outcomes + ["fork", at] + fork.outcomes)


def sovsim_mixed_trace(seed: int, condition: str = "kcpr_m", mode: str = "extra", join_round: int = 3) -> Trace:
    """A game with mixed seats and a newcomer, played by :class:`SovSimLegalPolicy`: every
    seat runs a distinct model string (canaries, :meth:`SovSimConfig.seat_models`) and
    an outsider joins at ``join_round`` (``mode`` ``extra``, or ``replace`` of ``a0``).
    Each observation is recorded with the prompt the agent would be sent
    (:func:`scarce_lab.environments.sovsim.agents.render_messages`). Leaks: another seat's model
    string in an agent's observation or prompt, a round before the newcomer's join in
    its history, and (``kcpr_m``) the current true pool in a subordinate's. Positive
    control: the newcomer sees its own join."""
    from .agents.prompts import render_messages
    from .config import SovSimConfig

    nc = {"round": join_round, "mode": mode, **({"replaces": "a0"} if mode == "replace" else {})}
    n = 4
    seats = {f"a{i}": f"openai/canary-seat-{i}" for i in range(n + 1)}
    cfg = SovSimConfig(condition=condition, model="scripted/random", seats=seats, newcomer=nc,
                       game={"rounds": join_round + 2, "collapse_threshold": 0})
    models = cfg.seat_models()
    newcomer = cfg.agent_ids()[-1]
    policy = SovSimLegalPolicy(seed)
    game = CommonsGame(cfg.condition, cfg.game, newcomer=cfg.newcomer)
    trace = Trace()
    while not game.over:
        actions = {}
        for a in game.acting_agents():
            obs = game.observe(a)
            text = _as_text(obs) + json.dumps(render_messages(obs, cfg.role_labels))
            leaks = [f"the model of {b}" for b, m in models.items() if b != a and m in text]
            if a == newcomer and any(r.round < join_round for r in obs.history):
                leaks.append("a round before its join")
            if not obs.is_leader and condition == "kcpr_m" and obs.pool is not None:
                leaks.append(f"true pool {game.pool} of round {obs.round}")
            own = any(c.agent == a and c.kind == "joined" for c in obs.changes) if a == newcomer else None
            trace.observations.append(Observation(a, text, tuple(leaks), own))
            actions[a] = policy.action(obs.legal, obs.round, obs.phase.value, a)
        rec = game.act(actions)
        if rec is not None:
            trace.outcomes.append([rec.round, list(rec.agents), list(rec.extractions), rec.remaining])
    assert any(newcomer in o[1] for o in trace.outcomes), "the newcomer never played (the check would prove nothing)"
    return trace
