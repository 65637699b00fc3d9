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
