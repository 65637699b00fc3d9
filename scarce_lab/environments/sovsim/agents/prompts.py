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
from ..world.institutions import InstitutionObservation, InstitutionRules
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


def _moved(obs: Observation | TalkObservation | InstitutionObservation) -> bool:
    """True when an election has moved the leader role (seats no longer in id order)."""
    return list(obs.agents) != sorted(obs.agents, key=lambda a: int(a[1:]))


def current_names(obs: Observation | TalkObservation | InstitutionObservation,
                  role_labels: str = "default") -> dict[str, str]:
    """Agent id -> prompt name by its role *now* and the letter of its id (``a1`` ->
    B), for every agent now and in the rounds the observation holds: after an election
    the new leader is named by the leader's label and the former leader by the
    subordinates'. Without a move these are :func:`agent_names`' names."""
    _, sub, lead = agent_names(obs.condition.value, 2, role_labels)
    leader = obs.agents[-1] if obs.condition.value != "cpr" else None
    seen = dict.fromkeys(a for r in obs.history for a in (r.agents or ()))
    seen.update(dict.fromkeys(obs.agents))
    return {a: f"{lead if a == leader else sub} {_letter(a)}" for a in seen}


def institution_lines(rules: InstitutionRules | None, leader: str, leader_label: str, step: int,
                      capacity: int) -> list[str]:
    """The system prompt's lines about the institutions that are on (none with all off)."""
    if rules is None or not rules.on:
        return []
    out = []
    if rules.elections:
        out.append(f"Every {rules.elections} round{'s' if rules.elections != 1 else ''}, before the round, everyone "
                   f"votes in secret for who is the {leader_label} from then on (now {leader}); the most votes win, a "
                   f"tie keeps the {leader_label} in place if tied, else goes to the earliest letter. Only the tally "
                   "is announced.")
    if rules.quota != "off":
        whom = "every participant's extraction" if rules.quota == "all" else f"the {leader_label}'s extraction"
        out.append(f"Each round, before the extractions, everyone proposes in secret a cap on {whom} (a multiple of "
                   f"{step} from 0 to {capacity}); the lower middle proposal (the median) binds that round.")
    if rules.sanctions:
        out.append(f"After each round's extractions are revealed, everyone may assign punishment points to others "
                   f"(0 to {rules.sanction_max_points} per person): each point costs its sender "
                   f"{rules.sanction_cost} point{'s' if rules.sanction_cost != 1 else ''} and removes "
                   f"{rules.sanction_impact} points from its target; nobody may spend more than that round's points. "
                   "Everyone learns how many points each person received and spent, not who punished whom.")
    return out


def institution_news(obs: Observation, names: dict[str, str]) -> list[str]:
    """The extraction prompt's lines about the institutions (none with all off): the
    election that opened this round, the last round's punishment (public parts only) and
    this round's voted quota, whom it binds said in words."""
    out = []
    if obs.elections and obs.elections[-1].round == obs.round:
        e = obs.elections[-1]
        out.append(f"Election before this round: votes {', '.join(f'{names.get(c, c)} {k}' for c, k in e.tally)}; "
                   f"{names.get(e.elected, e.elected)} leads.")
    if obs.sanctions:
        s = obs.sanctions[-1]
        out.append(f"Punishment after round {s.round}: " + ", ".join(
            f"{names.get(a, a)} received {r} and spent {_num(sp)}"
            for a, r, sp in zip(s.agents, s.received(), s.spent, strict=True)) + ".")
    if obs.quota is not None and obs.institutions is not None:
        whom = ("each participant's extraction" if obs.institutions.quota == "all"
                else f"{names[obs.agents[-1]]}'s extraction")
        out.append(f"The group voted a cap of {obs.quota} units on {whom} this round.")
    return out


def _system(obs: Observation | TalkObservation | InstitutionObservation, names: list[str], sub_label: str,
            lead_label: str) -> str:
    cfg = obs.config
    leader = names[-1]
    if isinstance(obs, InstitutionObservation):
        talk_rules, rules = None, obs.rules
    elif isinstance(obs, Observation):
        talk_rules, rules = obs.talk_rules, obs.institutions
    else:
        talk_rules, rules = TalkRules(obs.mode, obs.turns_total, obs.max_chars), None
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
        talk_rule=_talk_rule(talk_rules, leader, obs.condition.value),
        institution_rules=institution_lines(rules, leader, lead_label, cfg.step, cfg.capacity),
    )


def render_talk_messages(obs: TalkObservation, role_labels: str = "default") -> list[dict[str, str]]:
    """System + user messages of a talk turn (OpenAI chat format): the rules, the
    history, the pool as the speaker sees it and every message it may see (this round
    and the previous one).

    Raises:
        ValueError: unknown ``role_labels``.
    """
    names, sub_label, lead_label = agent_names(obs.condition.value, obs.config.n_agents, role_labels)
    by_agent = current_names(obs, role_labels) if _moved(obs) else None  # after an election
    if by_agent is not None:
        names = [by_agent[a] for a in obs.agents]
    system = _system(obs, names, sub_label, lead_label)
    hist = obs.history
    recent, older = hist[-RECENT_ROUNDS:], hist[:-RECENT_ROUNDS]
    own_total = sum((r.payoffs[_own(r, obs)] for r in hist), Fraction(0))
    shown = [m for m in obs.messages if m.round >= obs.round - 1]
    user = _ENV.get_template("talk.j2").render(
        older=_older_summary(older, obs),  # type: ignore[arg-type]
        recent=[_round_view(r, obs, by_agent or names) for r in recent],  # type: ignore[arg-type]
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
    elif _moved(obs):  # an election moved the leader role
        by_agent = current_names(obs, role_labels)
        names = [by_agent[a] for a in obs.agents]
    leader = names[-1]
    system = _system(obs, names, sub_label, lead_label)
    hist = obs.history
    recent, older = hist[-RECENT_ROUNDS:], hist[:-RECENT_ROUNDS]
    own_total = sum((r.payoffs[_own(r, obs)] for r in hist), Fraction(0)) + sum(
        (s.net[s.agents.index(obs.agent)] for s in obs.sanctions if obs.agent in s.agents), Fraction(0))
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
        institution_news=institution_news(obs, by_agent or dict(zip(obs.agents, names, strict=True))),
    )
    user = user.strip()
    if obs.changes:
        user = _membership_lines(obs, by_agent or {}) + "\n" + user
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


def render_institution_messages(obs: InstitutionObservation, role_labels: str = "default") -> list[dict[str, str]]:
    """System + user messages of a ballot, a quota proposal or a sanction (OpenAI chat
    format): the rules, the recent rounds, the public records of the institutions and the
    question of the phase. Agent-written text (talk) is quoted
    (:func:`~scarce_lab.llm.quoting.quote` through :func:`talk_line`).

    Raises:
        ValueError: unknown ``role_labels``.
    """
    _, sub_label, lead_label = agent_names(obs.condition.value, len(obs.agents), role_labels)
    by_agent = current_names(obs, role_labels)
    names = [by_agent[a] for a in obs.agents]
    system = _system(obs, names, sub_label, lead_label)
    recent = obs.history[-RECENT_ROUNDS:]
    legal = obs.legal
    last_sanctions = obs.sanctions[-1] if obs.sanctions else None
    user = _ENV.get_template("institution.j2").render(
        recent=[_round_view(r, obs, by_agent) for r in recent],  # type: ignore[arg-type]
        own_total=_num(sum((r.payoffs[_own(r, obs)] for r in obs.history), Fraction(0))
                       + sum((s.net[s.agents.index(obs.agent)] for s in obs.sanctions), Fraction(0))),
        round=obs.round, rounds=obs.rounds_total, phase=obs.phase.value, pool=obs.pool, pool_hidden=obs.pool is None,
        announced=obs.announced_pool, leader_label=lead_label,
        elections=[{"round": e.round, "tally": ", ".join(f"{by_agent.get(c, c)} {k}" for c, k in e.tally),
                    "elected": by_agent.get(e.elected, e.elected)} for e in obs.elections[-RECENT_ROUNDS:]],
        quotas=[{"round": q.round, "quota": q.quota} for q in obs.quotas[-RECENT_ROUNDS:]],
        sanctions=None if last_sanctions is None else ", ".join(
            f"{by_agent.get(a, a)} received {r} and spent {_num(sp)}"
            for a, r, sp in zip(last_sanctions.agents, last_sanctions.received(), last_sanctions.spent, strict=True)),
        sanctions_round=last_sanctions.round if last_sanctions is not None else None,
        talk=[talk_line(m, obs.agent, obs.agents, names) for m in obs.talk if m.round == obs.round],
        incumbent=by_agent.get(obs.leader or "", ""),
        candidates=[by_agent[a] for a in getattr(legal, "candidates", ())],
        high=getattr(legal, "high", 0), step=getattr(legal, "step", obs.config.step),
        quota_scope=obs.rules.quota,
        targets=[by_agent[a] for a in getattr(legal, "targets", ())],
        max_points=getattr(legal, "max_points", 0), max_total=getattr(legal, "max_total", 0),
    )
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]
