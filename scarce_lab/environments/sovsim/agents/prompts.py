"""Render a SovSim observation into chat messages (templates in ``prompts/``).

The prompt shows the last :data:`RECENT_ROUNDS` settled rounds in full and one
summary line for older rounds. It shows exactly what the observation holds: a
kcpr_m subordinate's observation has no current true pool, so its prompt has none.

Names: agent ``a<i>`` is ``"<label> <letter i>"`` (``a0`` -> A), its label its role's;
in a game without a newcomer these are the paper's names by position (leader last).
After a join the prompt states who joined and left (the observation's public
``changes``), and a newcomer's history starts at its join (the world gives it no
earlier round).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import yaml

from ....llm.quoting import quote, template_env
from ..world.commons import Observation, Phase, RoundRecord
from ..world.talk import TalkMessage, TalkObservation, TalkRules

PROMPTS = Path(__file__).parent / "prompts"
#: The retrospective interview's questions (:func:`scarce_lab.agents.interviews.interview_messages`).
INTERVIEW_TEMPLATE = PROMPTS / "interview.j2"
RECENT_ROUNDS = 3

_ENV = template_env(PROMPTS, keep_trailing_newline=False, trim_blocks=False)


@lru_cache(maxsize=1)
def _labels() -> dict:
    return yaml.safe_load((PROMPTS / "labels.yaml").read_text())


def agent_names(condition: str, n_agents: int, role_labels: str = "default") -> tuple[list[str], str, str]:
    """``(names, subordinate_label, leader_label)``; names are ``"<label> <letter>"``.

    Raises:
        ValueError: unknown ``role_labels`` set.
    """
    labels = _labels()
    if role_labels not in labels:
        raise ValueError(f"role_labels must be one of {sorted(labels)}, got {role_labels!r}")
    lab = labels[role_labels][str(condition)]
    sub, lead = lab["subordinate"], lab["leader"]
    letters = [chr(ord("A") + i) for i in range(n_agents)]
    names = [f"{sub} {ch}" for ch in letters[:-1]]
    names.append(f"{lead if condition != 'cpr' else sub} {letters[-1]}")
    return names, sub, lead


def _num(x: Fraction | float | int) -> str:
    """Points as a short decimal (2 places at most)."""
    v = round(float(x), 2)
    return f"{v:g}"


def _letter(agent: str) -> str:
    return chr(ord("A") + int(agent[1:]))


def _names_by_agent(obs: Observation, role_labels: str) -> dict[str, str]:
    """Agent id -> prompt name, for every agent present now or in a round the agent saw."""
    _, sub, lead = agent_names(obs.condition.value, 2, role_labels)
    seen = dict.fromkeys(a for r in obs.history for a in (r.agents or ()))
    seen.update(dict.fromkeys(obs.agents))
    seen.update(dict.fromkeys(c.agent for c in obs.changes))
    roles = dict(zip(obs.agents, obs.roles, strict=False)) if obs.roles else {}
    leader_roles = {"boss", "king"}
    out = {}
    for a in seen:
        is_lead = roles.get(a) in leader_roles if roles else False
        out[a] = f"{lead if (is_lead and obs.condition.value != 'cpr') else sub} {_letter(a)}"
    for c in obs.changes:  # an agent who left keeps its last role's name
        if c.kind == "left" and c.agent in out:
            out[c.agent] = f"{lead if c.role in leader_roles else sub} {_letter(c.agent)}"
    return out


def _own(r: RoundRecord, obs: Observation) -> int:
    """The agent's position in a settled round (its position now when the record has no agents)."""
    i = r.index_of(obs.agent) if r.agents else None
    return obs.agent_index if i is None else i


def _round_view(r: RoundRecord, obs: Observation, names: list[str] | dict[str, str]) -> dict:
    if isinstance(names, dict):
        extractions = ", ".join(f"{names[a]} {z}" for a, z in zip(r.agents, r.extractions, strict=True))
    else:
        extractions = ", ".join(f"{names[i]} {z}" for i, z in enumerate(r.extractions))
    return {
        "round": r.round,
        "pool": r.pool_before,
        "announced": r.announced_pool,
        "extractions": extractions,
        "remaining": r.remaining,
        "own_payoff": _num(r.payoffs[_own(r, obs)]),
        "collapsed": r.collapsed,
    }


def _older_summary(rounds: tuple[RoundRecord, ...], obs: Observation) -> dict | None:
    if not rounds:
        return None
    k = len(rounds)
    announced = [r.announced_pool for r in rounds if r.announced_pool is not None]
    return {
        "first": rounds[0].round,
        "last": rounds[-1].round,
        "mean_pool": _num(sum(r.pool_before for r in rounds) / k),
        "mean_announced": _num(sum(announced) / len(announced)) if announced else None,
        "mean_total": _num(sum(sum(r.extractions) for r in rounds) / k),
        "own_total": sum(r.extractions[_own(r, obs)] for r in rounds),
        "own_payoff": _num(sum(r.payoffs[_own(r, obs)] for r in rounds)),
    }


def _talk_rule(rules: TalkRules | None, leader: str, condition: str) -> str | None:
    """The system prompt's line about the discussion (``None`` with talk off)."""
    if rules is None or not rules.on:
        return None
    who = "everyone speaks in turn" if condition == "cpr" else f"the others speak first and {leader} speaks last"
    private = (" A message goes to everyone, or privately to the participants you name (only they and you see it)."
               if rules.private_allowed else " Every message is seen by everyone.")
    return (f"Before the extractions of each round there is a discussion: {who}, "
            f"{rules.turns} time{'s' if rules.turns != 1 else ''} per round, at most {rules.max_chars} characters "
            f"per message.{private} Messages are not binding.")


def talk_line(m: TalkMessage, me: str, agents: tuple[str, ...], names: list[str]) -> str:
    """One message as a speaker sees it: ``'<name> (to everyone | privately to ...): "text"'``
    with the reader called "you", the text quoted (:func:`~scarce_lab.llm.quoting.quote`)."""
    def name(a: str) -> str:
        return "you" if a == me else names[agents.index(a)]
    to = "to everyone" if m.public else "privately to " + ", ".join(name(a) for a in m.to)
    return f"{name(m.speaker)} ({to}, round {m.round}): {quote(m.text)}"


def _system(obs: Observation | TalkObservation, names: list[str], sub_label: str, lead_label: str) -> str:
    cfg = obs.config
    leader = names[-1]
    return _ENV.get_template("system.j2").render(
        me=names[obs.agent_index],
        n=cfg.n_agents,
        names=names,
        subs=names[:-1],
        leader=leader,
        leader_label=lead_label,
        my_label=lead_label if obs.is_leader else sub_label,
        is_leader=obs.is_leader,
        condition=obs.condition.value,
        rounds=obs.rounds_total,
        initial_pool=cfg.initial_pool,
        capacity=cfg.capacity,
        sub_cap=cfg.subordinate_cap,
        step=cfg.step,
        collapse=cfg.collapse_threshold,
        talk_rule=_talk_rule(obs.talk_rules if isinstance(obs, Observation) else
                             TalkRules(obs.mode, obs.turns_total, obs.max_chars), leader, obs.condition.value),
    )


def render_talk_messages(obs: TalkObservation, role_labels: str = "default") -> list[dict[str, str]]:
    """System + user messages of a talk turn (OpenAI chat format): the rules, the
    history, the pool as the speaker sees it and every message it may see (this round
    and the previous one).

    Raises:
        ValueError: unknown ``role_labels``.
    """
    names, sub_label, lead_label = agent_names(obs.condition.value, obs.config.n_agents, role_labels)
    system = _system(obs, names, sub_label, lead_label)
    hist = obs.history
    recent, older = hist[-RECENT_ROUNDS:], hist[:-RECENT_ROUNDS]
    own_total = sum((r.payoffs[obs.agent_index] for r in hist), Fraction(0))
    shown = [m for m in obs.messages if m.round >= obs.round - 1]
    user = _ENV.get_template("talk.j2").render(
        older=_older_summary(older, obs),  # type: ignore[arg-type]
        recent=[_round_view(r, obs, names) for r in recent],  # type: ignore[arg-type]
        own_total=_num(own_total),
        round=obs.round, rounds=obs.rounds_total, turn=obs.turn, turns=obs.turns_total,
        pool=obs.pool, pool_hidden=obs.pool is None, announced=obs.announced_pool, leader=names[-1],
        messages=[talk_line(m, obs.agent, obs.agents, names) for m in shown],
        recipients=[names[obs.agents.index(a)] for a in obs.recipients],
        max_chars=obs.max_chars,
    )
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def render_messages(obs: Observation, role_labels: str = "default") -> list[dict[str, str]]:
    """System + user messages for ``obs`` (OpenAI chat format); with talk on, the user
    message lists this round's messages the agent may see.

    Raises:
        ValueError: unknown ``role_labels``.
    """
    cfg = obs.config
    n = cfg.n_agents
    names, sub_label, lead_label = agent_names(obs.condition.value, n, role_labels)
    by_agent: dict[str, str] | None = None
    if obs.changes:  # a newcomer joined: names by agent id (module docstring)
        by_agent = _names_by_agent(obs, role_labels)
        names = [by_agent[a] for a in obs.agents]
    leader = names[-1]
    system = _system(obs, names, sub_label, lead_label)
    hist = obs.history
    recent, older = hist[-RECENT_ROUNDS:], hist[:-RECENT_ROUNDS]
    own_total = sum((r.payoffs[_own(r, obs)] for r in hist), Fraction(0))
    sub_ex = obs.subordinate_extractions or ()
    user = _ENV.get_template("user.j2").render(
        older=_older_summary(older, obs),
        recent=[_round_view(r, obs, by_agent or names) for r in recent],
        own_total=_num(own_total),
        round=obs.round,
        rounds=obs.rounds_total,
        phase=obs.phase.value,
        pool=obs.pool,
        pool_hidden=obs.pool is None,
        announced=obs.announced_pool,
        announce_max=obs.max_extraction if obs.phase == Phase.announce else cfg.announce_max,
        leader=leader,
        sub_extractions=", ".join(f"{names[i]} {z}" for i, z in enumerate(sub_ex)),
        remainder=obs.remainder,
        step=obs.step,
        cap=obs.max_extraction,
        talk=[talk_line(m, obs.agent, obs.agents, names) for m in obs.talk if m.round == obs.round],
    )
    user = user.strip()
    if by_agent is not None:
        user = _membership_lines(obs, by_agent) + "\n" + user
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user}]


def _membership_lines(obs: Observation, names: dict[str, str]) -> str:
    """The public joins and leaves, one sentence each (a newcomer is told it is new)."""
    lines = []
    for c in obs.changes:
        who = "You" if c.agent == obs.agent else names.get(c.agent, c.agent)
        if c.kind == "joined":
            tail = f", replacing {names.get(c.other, c.other)}" if c.other else ""
            lines.append(f"{who} joined the group in round {c.round}{tail}.")
        else:
            lines.append(f"{who} left the group before round {c.round}.")
    return "\n".join(lines)
