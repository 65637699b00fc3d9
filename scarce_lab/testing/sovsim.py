"""The SovSim conformance play (:func:`sovsim_trace`, the spec's ``harness``); the checks
are in :mod:`.core`."""

from __future__ import annotations

import dataclasses
import json

from ..envs.sovsim import CommonsGame, InvalidActionError, Phase
from ..envs.sovsim_talk import InvalidTalkError, TalkMode, TalkRules, Utterance
from ..legal_policy import LegalPolicy, refused
from .core import Observation, Trace


def _talk_leaks(game: CommonsGame, agent: str, text: str) -> tuple[list[str], bool | None]:
    """The private canaries of ``game``'s transcript that ``agent`` may not see but
    ``text`` holds, and whether ``text`` holds every private message ``agent`` may see
    (``None`` when there is none yet)."""
    private = [m for m in game.transcript if not m.public]
    leaks = [f"private message {m.text!r} of {m.speaker} to {list(m.to)}"
             for m in private if agent not in m.visible_to and m.text in text]
    mine = [m for m in private if agent in m.visible_to]
    return leaks, (all(m.text in text for m in mine) if mine else None)


def _talk_turn(game: CommonsGame, policy: LegalPolicy, trace: Trace) -> None:
    """One talk turn: the speaker's observation is checked for private canaries not
    addressed to it, an illegal message is probed (and must be refused), then a legal
    canary message goes to everyone or privately to random recipients."""
    (a,) = game.acting_agents()
    obs = game.observe_talk(a)
    view = dataclasses.asdict(obs)
    view.pop("config")
    text = json.dumps(view, default=str)
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


def sovsim_trace(seed: int, condition: str = "kcpr_m", talk: str = "none") -> Trace:
    """A game (KCPR-M by default: the king may announce a false pool) played by
    :class:`LegalPolicy` from each observation's legal actions, with an illegal value
    probed (and refused) at every decision. Subordinates must never see the true pool
    before the round is settled (SovSim sec. 3.4). With ``talk`` on (two turns a round)
    every message is a canary, private to random recipients most of the time: no talk
    or extraction observation may hold a private message not addressed to or sent by
    its agent, and each agent must see those that are."""
    policy = LegalPolicy(seed)
    game = CommonsGame(condition, talk=TalkRules(TalkMode(talk), turns=2, max_chars=60))
    trace = Trace()
    while not game.over:
        if game.phase == Phase.talk:
            _talk_turn(game, policy, trace)
            continue
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
            text = json.dumps(view, default=str)
            talk_leaks, talk_own = _talk_leaks(game, a, text)
            own = own if talk_own is None else (talk_own and own is not False)
            trace.observations.append(Observation(a, text, tuple(leaks + talk_leaks), own))
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
