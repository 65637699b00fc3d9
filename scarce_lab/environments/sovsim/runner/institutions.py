"""The institution phases of a SovSim round (``elections``, ``quota``, ``sanctions``):
ask every agent at once, keep a legal choice, apply it to the world and record it.

Each decision's seed derives from ``(run seed, round, agent, phase)``
(:func:`~scarce_lab.runtime.step_seed`), so a resumed run asks the same questions with
the same seeds. A choice the world refuses (:mod:`..world.institutions`: a ballot for
nobody in the game, a proposal off the step, points beyond the cap or the budget) is
replaced by the phase's documented fallback and recorded as a violation. The decisions
are private events (a ballot, a proposal, who punished whom); the outcome is public.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scarce_lab.runtime import record_calls_of, step_seed

from .. import events as ev
from ..agents.institutions import legal_choice
from ..world.commons import INSTITUTION_PHASES, CommonsGame, Phase
from ..world.institutions import ElectionRecord, QuotaRecord, SanctionRecord


def _decision_payload(obs: Any, d: Any, value: Any) -> Any:
    common = {"reasoning": d.reasoning, **d.decision_fields()}
    legal = obs.legal
    if obs.phase == Phase.elect:
        return ev.Ballot(candidate=value, incumbent=legal.incumbent, **common)
    if obs.phase == Phase.quota:
        return ev.QuotaProposal(proposal=value, max_proposal=legal.high, **common)
    return ev.Sanction(targets=list(legal.targets), points=[value.get(t, 0) for t in legal.targets],
                       budget=float(legal.budget), **common)


def _outcome_payload(game: CommonsGame, rec: Any) -> Any:
    if isinstance(rec, ElectionRecord):
        return ev.Election(candidates=[c for c, _ in rec.tally], votes=[k for _, k in rec.tally],
                           incumbent=rec.incumbent, elected=rec.elected, moved=rec.moved, agents=list(game.agents),
                           roles=[game.roles[a] for a in game.agents])
    if isinstance(rec, QuotaRecord):
        return ev.Quota(proposals=sorted(rec.proposals), quota=rec.quota, scope=rec.scope)
    assert isinstance(rec, SanctionRecord)
    return ev.Sanctions(agents=list(rec.agents), received=list(rec.received()), sent=list(rec.sent()),
                        spent=[float(x) for x in rec.spent], lost=[float(x) for x in rec.lost],
                        net=[float(x) for x in rec.net], net_exact=[str(x) for x in rec.net])


async def play_institutions(game: CommonsGame, cfg: Any, rec: Any, agents: dict[str, Any]) -> bool:
    """Play the election, quota vote or sanction phase the game is in (every agent
    decides, the world applies); ``False`` (nothing played) in any other phase.

    Raises:
        TypeError: an agent has no ``ainstitute`` (a custom agent made for games without
            institutions).
        Exception: whatever an agent raised (the model calls of every decision are
            recorded first).
    """
    phase, r = game.phase, game.round
    if phase not in INSTITUTION_PHASES:
        return False
    for a in game.acting_agents():
        if not callable(getattr(agents[a], "ainstitute", None)):
            raise TypeError(f"agent {a} ({getattr(agents[a], 'model', type(agents[a]).__name__)}) has no "
                            f"ainstitute(obs, seed): it cannot take part in the {phase.value} phase")
    obs = {a: game.observe_institution(a) for a in game.acting_agents()}
    results = await asyncio.gather(*(agents[a].ainstitute(o, seed=step_seed(cfg, r, a, phase.value))
                                     for a, o in obs.items()), return_exceptions=True)
    record_calls_of(rec, *results)
    if (err := next((x for x in results if isinstance(x, BaseException)), None)) is not None:
        raise err
    actions = {}
    for (a, o), d in zip(obs.items(), results, strict=True):
        value, d = legal_choice(o, d)
        actions[a] = value
        rec.emit(_decision_payload(o, d, value), round=r, phase=phase.value, agent=a)
    outcome = game.institute(actions)
    rec.emit(_outcome_payload(game, outcome), round=r, phase=phase.value)
    return True
