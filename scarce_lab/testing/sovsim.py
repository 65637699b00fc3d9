"""The SovSim conformance play (:func:`sovsim_trace`, the spec's ``harness``); the checks
are in :mod:`.core`."""

from __future__ import annotations

import dataclasses
import json

from ..envs.sovsim import CommonsGame, InvalidActionError
from ..legal_policy import LegalPolicy, refused
from .core import Observation, Trace


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


def sovsim_mixed_trace(seed: int, condition: str = "kcpr_m", mode: str = "extra", join_round: int = 3) -> Trace:
    """A game with mixed seats and a newcomer, played by :class:`LegalPolicy`: every
    seat runs a distinct model string (canaries, :meth:`SovSimConfig.seat_models`) and
    an outsider joins at ``join_round`` (``mode`` ``extra``, or ``replace`` of ``a0``).
    Each observation is recorded with the prompt the agent would be sent
    (:func:`scarce_lab.agents.sovsim.render_messages`). Leaks: another seat's model
    string in an agent's observation or prompt, a round before the newcomer's join in
    its history, and (``kcpr_m``) the current true pool in a subordinate's. Positive
    control: the newcomer sees its own join."""
    from ..agents.sovsim import render_messages
    from ..config.sovsim import SovSimConfig

    nc = {"round": join_round, "mode": mode, **({"replaces": "a0"} if mode == "replace" else {})}
    n = 4
    seats = {f"a{i}": f"openai/canary-seat-{i}" for i in range(n + 1)}
    cfg = SovSimConfig(condition=condition, model="scripted/random", seats=seats, newcomer=nc,
                       game={"rounds": join_round + 2, "collapse_threshold": 0})
    models = cfg.seat_models()
    newcomer = cfg.agent_ids()[-1]
    policy = LegalPolicy(seed)
    game = CommonsGame(cfg.condition, cfg.game, newcomer=cfg.newcomer)
    trace = Trace()
    while not game.over:
        actions = {}
        for a in game.acting_agents():
            obs = game.observe(a)
            view = dataclasses.asdict(obs)
            view.pop("config")
            text = json.dumps(view, default=str) + json.dumps(render_messages(obs, cfg.role_labels))
            leaks = [f"the model of {b}" for b, m in models.items() if b != a and m in text]
            if a == newcomer and any(r.round < join_round for r in obs.history):
                leaks.append("a round before its join")
            if not obs.is_leader and condition == "kcpr_m" and obs.pool is not None:
                leaks.append(f"true pool {game.pool} of round {obs.round}")
            own = any(c.agent == a and c.kind == "joined" for c in obs.changes) if a == newcomer else None
            trace.observations.append(Observation(a, text, tuple(leaks), own))
            actions[a] = policy.sovsim(obs.legal, obs.round, obs.phase.value, a)
        rec = game.act(actions)
        if rec is not None:
            trace.outcomes.append([rec.round, list(rec.agents), list(rec.extractions), rec.remaining])
    assert any(newcomer in o[1] for o in trace.outcomes), "the newcomer never played (the check would prove nothing)"
    return trace
