"""How SovSim agents vote, propose a quota and sanction (``elections``, ``quota``, ``sanctions``).

A model is asked with a prompt (``prompts/institution.j2``) and a schema per phase:
``{"reasoning", "vote": <name>}``, ``{"reasoning", "quota": <multiple of the step>}``,
``{"reasoning", "punish": [{"name", "points"}]}`` (names as in its prompt). An unusable
answer takes the phase's documented fallback (:mod:`..world.institutions`): a vote for
the incumbent, no restriction (the largest proposal), no punishment.

Scripted policies follow stated rules, by policy name (:data:`RESTRAINED`,
:data:`SELF_SEEKING`; ``greedy_leader`` is self-seeking while it leads and restrained
otherwise, as it extracts):

- ballot: a restrained policy (``sustainable``, ``conditional``, ``quota_keeper``) votes
  for the agent who extracted least over the settled rounds (ties: the incumbent if tied,
  else the lowest id); a self-seeking one (``greedy``, ``greedy_leader``,
  ``promise_defector``, ``opportunist``) votes for itself; ``random`` uniformly;
  ``fixed`` for the incumbent.
- quota proposal: restrained: the sustainable share of the pool it sees,
  floor_to_step(P / 2n); self-seeking: the largest (no restriction); ``random``
  uniformly; ``fixed:N``: N (floored to the step, capped).
- sanctions: ``conditional`` and ``quota_keeper`` (reciprocators) give each agent who
  took more than the sustainable share of the round's pool one point per step above
  it (at most ``sanction_max_points``), in id order while the budget lasts; every other
  policy punishes nobody.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from scarce_lab.agents.decided import Decided
from scarce_lab.llm.decisions import DecisionModel, int_choice, register_decision_family

from ..world.commons import Phase, floor_to_step
from ..world.institutions import InstitutionObservation
from .schemas import REASONING_MAX_CHARS
from .scripted import sustainable_share

#: Scripted policies that vote for restraint and punish excess (the reciprocators punish).
RESTRAINED = frozenset({"sustainable", "conditional", "quota_keeper"})
RECIPROCATORS = frozenset({"conditional", "quota_keeper"})
#: Scripted policies that vote for themselves and against any restriction.
SELF_SEEKING = frozenset({"greedy", "greedy_leader", "promise_defector", "opportunist"})


# -- schemas ----------------------------------------------------------------------------
class BallotDecision(DecisionModel):
    """Base of the ballot schemas: ``vote`` is a candidate's name."""

    model_config = ConfigDict(extra="forbid")
    reasoning: str = Field(..., max_length=REASONING_MAX_CHARS)
    vote: str


class ProposalDecision(DecisionModel):
    """Base of the quota proposal schemas: ``quota`` in pool units."""

    model_config = ConfigDict(extra="forbid")
    reasoning: str = Field(..., max_length=REASONING_MAX_CHARS)
    quota: int


class SanctionDecision(DecisionModel):
    """Base of the sanction schemas: ``punish`` lists ``{"name", "points"}``."""

    model_config = ConfigDict(extra="forbid")
    reasoning: str = Field(..., max_length=REASONING_MAX_CHARS)
    punish: list[Any]


@lru_cache(maxsize=64)
def ballot_schema(names: tuple[str, ...]) -> type[BallotDecision]:
    """``vote`` one of ``names`` (the candidates as the prompt names them)."""
    return create_model(f"Ballot{len(names)}", __base__=BallotDecision,  # type: ignore[call-overload]
                        vote=(Literal[names], Field(..., description="the candidate you vote for")))


@lru_cache(maxsize=64)
def proposal_schema(high: int, step: int) -> type[ProposalDecision]:
    """``quota`` one of ``0, step, ..., high`` (pool units)."""
    return create_model(f"Quota0to{high}", __base__=ProposalDecision,  # type: ignore[call-overload]
                        quota=(int_choice(tuple(range(0, high + 1, step))),
                               Field(..., description=f"the cap you propose, a multiple of {step} from 0 to {high}")))


@lru_cache(maxsize=64)
def sanction_schema(names: tuple[str, ...], max_points: int, max_total: int | None = None) -> type[SanctionDecision]:
    """``punish`` a list of ``{"name": one of names, "points": 1..max_points}`` ([] for nobody),
    at most ``max_total`` points in all (what the round payoff affords:
    :attr:`~..world.institutions.SanctionLegal.max_total`; ``None``: unchecked), so an
    answer over the budget is asked again (a person) or repaired (a model) like any answer
    the schema refuses, instead of silently becoming no punishment."""
    total = "" if max_total is None else f" (at most {max_total} points in all)"
    item = create_model(f"Punish{len(names)}", __config__=ConfigDict(extra="forbid"),  # type: ignore[call-overload]
                        name=(Literal[names], ...), points=(int_choice(tuple(range(1, max_points + 1))),
                                                            Field(..., description=f"points{total}")))

    def within_budget(d: SanctionDecision) -> SanctionDecision:
        spent = sum(int(x.points) for x in d.punish)
        if max_total is not None and spent > max_total:
            raise ValueError(f"{spent} points in all; your round payoff affords at most {max_total}")
        return d

    return create_model(f"Sanction{len(names)}x{max_points}", __base__=SanctionDecision,  # type: ignore[call-overload]
                        __validators__={"within_budget": model_validator(mode="after")(within_budget)},
                        punish=(list[item], Field(..., description="whom you punish and how many points; [] for nobody")))


register_decision_family("sovsim.ballot", BallotDecision, {"reasoning": "r", "vote": "citizen A"},
                         lambda: ballot_schema(("citizen A", "citizen B")))
register_decision_family("sovsim.quota", ProposalDecision, {"reasoning": "r", "quota": 15},
                         lambda: proposal_schema(120, 3))
register_decision_family("sovsim.sanction", SanctionDecision,
                         {"reasoning": "r", "punish": [{"name": "citizen B", "points": 2}]},
                         lambda: sanction_schema(("citizen B",), 10))


# -- the fallback and the legal value ---------------------------------------------------
def institution_fallback(obs: InstitutionObservation) -> Any:
    """The phase's documented fallback (a ballot for the incumbent, the largest
    proposal, no punishment)."""
    return obs.legal.fallback


def legal_choice(obs: InstitutionObservation, d: Decided) -> tuple[Any, Decided]:
    """``d``'s value when the world allows it, else the fallback with the reason
    recorded as the violation (legality is the world's: ``obs.legal``)."""
    reason = obs.legal.why_not(d.value)
    if reason is None:
        return d.value, d
    d.violation = d.violation or reason
    d.valid, d.fallback_used = False, True
    return institution_fallback(obs), d


# -- scripted rules (module docstring) --------------------------------------------------
def _policy_name(model: str) -> str:
    return model.split("/", 1)[-1].split(":", 1)[0]


def _restrained_candidate(obs: InstitutionObservation) -> str:
    taken = dict.fromkeys(obs.agents, 0)
    for r in obs.history:
        for a, z in zip(r.agents, r.extractions, strict=True):
            if a in taken:
                taken[a] += z
    least = min(taken.values())
    tied = [a for a, z in taken.items() if z == least]
    return obs.leader if obs.leader in tied else min(tied, key=lambda a: int(a[1:]))  # type: ignore[return-value]


def _reciprocal_points(obs: InstitutionObservation) -> dict[str, int]:
    r, legal = obs.last_round, obs.legal
    share = sustainable_share(r.pool_before, len(r.agents), obs.config.step)
    out: dict[str, int] = {}
    left = legal.max_total
    for a in sorted(legal.targets, key=lambda a: int(a[1:])):
        over = r.extractions[r.agents.index(a)] - share
        pts = min(legal.max_points, left, -(-over // obs.config.step)) if over > 0 else 0
        if pts > 0:
            out[a] = pts
            left -= pts
    return out


def scripted_institution(model: str, obs: InstitutionObservation, rng: random.Random) -> Any:
    """The scripted policy ``model``'s ballot, proposal or points (module docstring).

    Raises:
        ValueError: the phase is not an institution phase.
    """
    name = _policy_name(model)
    if name == "greedy_leader":  # greedy as the leader, sustainable otherwise (its extraction rule)
        name = "greedy" if obs.is_leader else "sustainable"
    legal = obs.legal
    if obs.phase == Phase.elect:
        if name in RESTRAINED:
            return _restrained_candidate(obs)
        if name in SELF_SEEKING:
            return obs.agent
        return rng.choice(legal.candidates) if name == "random" else legal.incumbent
    if obs.phase == Phase.quota:
        if name in RESTRAINED:
            return min(legal.high, sustainable_share(obs.pool_seen, len(obs.agents), legal.step))
        if name == "random":
            return rng.choice(legal.values())
        if name == "fixed":
            n = int(model.split(":", 1)[1]) if ":" in model else 15
            return min(legal.high, floor_to_step(n, legal.step))
        return legal.high
    if obs.phase == Phase.sanction:
        return _reciprocal_points(obs) if name in RECIPROCATORS else {}
    raise ValueError(f"scripted_institution: phase {obs.phase!r} is not elect, quota or sanction")


# -- a model's decision -----------------------------------------------------------------
async def model_institution(agent: Any, obs: InstitutionObservation, seed: int) -> Decided:
    """Ask ``agent``'s model (a :class:`~.agent.ModelAgent`) for the phase's decision;
    names in its answer become agent ids here."""
    from .prompts import current_names, render_institution_messages

    names = current_names(obs, agent.role_labels)
    by_name = {names[a]: a for a in obs.agents}
    legal = obs.legal
    fallback_value = institution_fallback(obs)
    schema: type[BaseModel]
    if obs.phase == Phase.elect:
        schema = ballot_schema(tuple(names[a] for a in legal.candidates))
        fallback: Any = schema(reasoning="fallback: the incumbent", vote=names[legal.incumbent])
        purpose = "ballot"
    elif obs.phase == Phase.quota:
        schema = proposal_schema(legal.high, legal.step)
        fallback = schema(reasoning="fallback: no restriction", quota=legal.high)
        purpose = "quota"
    else:
        schema = sanction_schema(tuple(names[a] for a in legal.targets), legal.max_points, legal.max_total)
        fallback = schema(reasoning="fallback: no punishment", punish=[])
        purpose = "sanction"
    out = await agent._ask(obs, seed, schema, fallback, purpose,
                           lambda: render_institution_messages(obs, agent.role_labels))
    dec = out.decision
    if obs.phase == Phase.elect:
        value: Any = by_name.get(dec.vote, fallback_value)
    elif obs.phase == Phase.quota:
        value = int(dec.quota)
    else:
        value = {}
        for item in dec.punish:
            a = by_name[item.name]
            value[a] = value.get(a, 0) + int(item.points)
    return Decided.from_outcome(out, value, dec.reasoning)
