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
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ...envs.sovsim import Observation, Phase, floor_to_step

Policy = Callable[[Observation, random.Random], int]


def sustainable_share(pool: int, n_agents: int = 4, step: int = 3) -> int:
    """floor_to_step(pool / (2 * n_agents)): P/8 for 4 agents (pool units)."""
    return floor_to_step(pool // (2 * n_agents), step)


def _clamp(obs: Observation, value: int) -> int:
    return obs.legal.clamp(value)


def _own_share(obs: Observation) -> int:
    return _clamp(obs, sustainable_share(obs.pool_seen, obs.config.n_agents, obs.config.step))


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
        return _clamp(obs, value)

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
    return _clamp(obs, int(mean_others))


def greedy_leader(obs: Observation, rng: random.Random) -> int:
    """Leader takes the cap and understates the pool by half; others sustainable."""
    if obs.phase == Phase.announce:
        return _true_pool(obs) // 2
    if obs.is_leader:
        return obs.max_extraction
    return _own_share(obs)


POLICIES: dict[str, Policy] = {
    "sustainable": sustainable,
    "greedy": greedy,
    "random": random_policy,
    "conditional": conditional,
    "greedy_leader": greedy_leader,
}


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
