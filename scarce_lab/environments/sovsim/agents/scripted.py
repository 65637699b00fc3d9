"""Scripted SovSim policies (baselines and tests); selected by ``scripted/<policy>[:arg]``.

Each policy is a pure function ``(obs, rng) -> int`` returning an extraction in pool
units (a legal multiple of 3 up to ``obs.max_extraction``) or, in the ``announce``
phase of kcpr_m, the announced pool (0..999). Unless stated otherwise a policy
announces the true pool.

- ``sustainable``: the sustainable share floor3(P/8) of the pool the agent sees
  (P/2 is the regeneration-neutral total; split over 4 agents).
- ``greedy``: always the cap.
- ``random``: uniform over the legal multiples of 3; announces uniformly in
  [P/2, 3P/2] (rounded).
- ``fixed[:N]``: always N (default 15), floored to a multiple of 3 and clamped to the cap.
- ``conditional`` (conditional cooperator): the sustainable share in round 1, then the
  sustainable share if the others' mean extraction last round was at most the
  sustainable share of last round's pool, else that mean (floored to 3), capped.
- ``greedy_leader``: as a leader (boss/king) the cap and, in kcpr_m, an announcement
  of half the true pool (understating, so peasants take less); otherwise sustainable.
- ``opportunist`` (deterred by punishment): the cap until it has received a punishment
  point (``sanctions`` on), then the sustainable share for the rest of the game.

How each policy votes, proposes a quota and sanctions (``elections``, ``quota``,
``sanctions``): :mod:`.institutions`.

Talking policies (for ``talk`` public or public+private; every other policy is silent
in the discussion). Their commitments are machine-readable in the text
(:data:`PROMISE_TAG`, :data:`QUOTA_TAG`):

- ``promise_defector``: promises the sustainable share S of the pool it sees
  (``[promise extraction=S]``), then extracts its cap (more than promised whenever
  S < cap). Under ``public+private`` it makes the promise privately to the next agent
  in seat order (the first after it, wrapping), so a private message exists to check
  privacy against; otherwise publicly.
- ``quota_keeper``: proposes publicly that each agent take the sustainable share Q
  (``[quota per_agent=Q]``) and extracts exactly Q (it keeps its own quota).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ..world.commons import Observation, Phase, floor_to_step
from ..world.talk import TalkObservation, Utterance

Policy = Callable[[Observation, random.Random], int]
TalkPolicy = Callable[[TalkObservation, random.Random], Utterance]

#: How a scripted promise is written in a message (``N`` pool units); parsed by the
#: SovSim talk metrics.
PROMISE_TAG = "[promise extraction={n}]"
#: How a scripted quota proposal is written (``N`` pool units per agent).
QUOTA_TAG = "[quota per_agent={n}]"


def sustainable_share(pool: int, n_agents: int = 4, step: int = 3) -> int:
    """floor_to_step(pool / (2 * n_agents)): P/8 for 4 agents (pool units)."""
    return floor_to_step(pool // (2 * n_agents), step)


def _own_share(obs: Observation) -> int:
    return obs.legal.clamp(sustainable_share(obs.pool_seen, obs.config.n_agents, obs.config.step))


def _true_pool(obs: Observation) -> int:
    assert obs.pool is not None, "only the leader announces, and it knows the pool"
    return obs.pool


def sustainable(obs: Observation, rng: random.Random) -> int:
    """Sustainable share of the pool seen; announces the truth."""
    if obs.phase == Phase.announce:
        return _true_pool(obs)
    return _own_share(obs)


def greedy(obs: Observation, rng: random.Random) -> int:
    """The cap; announces the truth."""
    if obs.phase == Phase.announce:
        return _true_pool(obs)
    return obs.max_extraction


def random_policy(obs: Observation, rng: random.Random) -> int:
    """Uniform legal extraction; announcement uniform in [P/2, 3P/2]."""
    if obs.phase == Phase.announce:
        p = _true_pool(obs)
        return min(obs.max_extraction, rng.randint(p // 2, (3 * p) // 2))
    return rng.choice(obs.legal.values())


def fixed(value: int) -> Policy:
    """Always ``value`` pool units (floored to a multiple of 3, capped); announces the truth."""

    def _fixed(obs: Observation, rng: random.Random) -> int:
        if obs.phase == Phase.announce:
            return _true_pool(obs)
        return obs.legal.clamp(value)

    return _fixed


def conditional(obs: Observation, rng: random.Random) -> int:
    """Conditional cooperator (see module docstring); announces the truth."""
    if obs.phase == Phase.announce:
        return _true_pool(obs)
    if not obs.history:
        return _own_share(obs)
    last = obs.history[-1]
    me = last.index_of(obs.agent) if last.agents else obs.agent_index  # positions move when a newcomer joins
    others = [z for i, z in enumerate(last.extractions) if i != me]
    mean_others = sum(others) / len(others)
    if mean_others <= sustainable_share(last.pool_before, len(last.extractions), obs.step):
        return _own_share(obs)
    return obs.legal.clamp(int(mean_others))


def greedy_leader(obs: Observation, rng: random.Random) -> int:
    """Leader takes the cap and understates the pool by half; others sustainable."""
    if obs.phase == Phase.announce:
        return _true_pool(obs) // 2
    if obs.is_leader:
        return obs.max_extraction
    return _own_share(obs)


def opportunist(obs: Observation, rng: random.Random) -> int:
    """The cap until punished once, then the sustainable share; announces the truth."""
    if obs.phase == Phase.announce:
        return _true_pool(obs)
    punished = any(s.received()[s.agents.index(obs.agent)] for s in obs.sanctions if obs.agent in s.agents)
    return _own_share(obs) if punished else obs.max_extraction


def _talk_share(obs: TalkObservation) -> int:
    """The sustainable share of the pool ``obs`` shows, floored to the step and capped
    at the subordinate cap (what the agent will be able to take)."""
    c = obs.config
    return min(c.subordinate_cap, sustainable_share(obs.pool_seen, c.n_agents, c.step))


def promise_defector(obs: Observation, rng: random.Random) -> int:
    """Extracts its cap (after promising the sustainable share; see module docstring);
    announces the truth."""
    if obs.phase == Phase.announce:
        return _true_pool(obs)
    return obs.max_extraction


def promise_defector_talk(obs: TalkObservation, rng: random.Random) -> Utterance:
    """``[promise extraction=S] ...``: publicly, or privately to the next agent under
    public+private."""
    s = _talk_share(obs)
    text = f"{PROMISE_TAG.format(n=s)} I will take only {s} units this round to keep the pool alive."
    if obs.recipients:
        nxt = obs.agents[(obs.agent_index + 1) % len(obs.agents)]
        return Utterance(text[: obs.max_chars], (nxt,))
    return Utterance(text[: obs.max_chars])


def quota_keeper(obs: Observation, rng: random.Random) -> int:
    """Extracts the sustainable share it proposed as the quota; announces the truth."""
    return sustainable(obs, rng)


def quota_keeper_talk(obs: TalkObservation, rng: random.Random) -> Utterance:
    """``[quota per_agent=Q] ...``, public."""
    q = _talk_share(obs)
    text = f"{QUOTA_TAG.format(n=q)} Let each of us take {q} units this round so the pool regrows."
    return Utterance(text[: obs.max_chars])


POLICIES: dict[str, Policy] = {
    "sustainable": sustainable,
    "greedy": greedy,
    "random": random_policy,
    "conditional": conditional,
    "greedy_leader": greedy_leader,
    "promise_defector": promise_defector,
    "quota_keeper": quota_keeper,
    "opportunist": opportunist,
}

#: The talk of each talking policy (keyed by its extraction policy); the others are silent.
TALK_POLICIES: dict[Policy, TalkPolicy] = {
    promise_defector: promise_defector_talk,
    quota_keeper: quota_keeper_talk,
}


#: The self-assessment each scripted rule implies in a retrospective interview
#: (:func:`scarce_lab.agents.interviews.scripted_answer`), where it implies one (none for
#: ``random`` or ``fixed``): ``sustainable`` and ``conditional`` take at most the
#: sustainable share, ``greedy`` the cap, ``promise_defector`` its cap after promising the
#: sustainable share, ``quota_keeper`` the sustainable quota it proposed. ``greedy_leader``
#: plays ``greedy`` as the leader and ``sustainable`` otherwise (:func:`interview_assessment`).
INTERVIEW_ASSESSMENTS: dict[str, str] = {
    "sustainable": "cooperative",
    "conditional": "cooperative",
    "greedy": "self_interested",
    "promise_defector": "self_interested",
    "quota_keeper": "cooperative",
    "opportunist": "self_interested",
}


def interview_assessment(model: str, *, leader: bool) -> str | None:
    """The self-assessment the rule of the scripted policy ``model``
    (``scripted/<policy>[:arg]``) implies for an agent that is the ``leader`` or not
    (:data:`INTERVIEW_ASSESSMENTS`; ``None`` where the rule implies none)."""
    name = model.split("/", 1)[-1].split(":", 1)[0]
    if name == "greedy_leader":
        name = "greedy" if leader else "sustainable"
    return INTERVIEW_ASSESSMENTS.get(name)


def talk_policy(policy: Policy) -> TalkPolicy | None:
    """The talk function of ``policy`` (``None`` for a policy that stays silent)."""
    return TALK_POLICIES.get(policy)


def get_policy(name: str, arg: str | None = None) -> Policy:
    """The policy called ``name`` (``fixed`` takes ``arg`` = N pool units, default 15).

    Raises:
        ValueError: unknown policy name, or a ``fixed`` argument that is not an int >= 0.
    """
    if name == "fixed":
        try:
            n = int(arg) if arg is not None else 15
        except ValueError:
            raise ValueError(f"scripted/fixed:<N> needs an integer N, got {arg!r}") from None
        if n < 0:
            raise ValueError(f"scripted/fixed:<N> needs N >= 0, got {n}")
        return fixed(n)
    if arg is not None:
        raise ValueError(f"scripted/{name} takes no argument, got {arg!r}")
    try:
        return POLICIES[name]
    except KeyError:
        known = sorted([*POLICIES, "fixed"])
        raise ValueError(f"unknown scripted policy {name!r}; known: {known}") from None
