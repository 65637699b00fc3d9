"""The SovSim agent-round table's definition, shared by our runs and the published
layouts' adapters (columns documented in :mod:`scarce_lab.environments.sovsim.tables`)."""

from __future__ import annotations

import polars as pl

AGENT_ROUND_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String,
    "run_id": pl.String,
    "model": pl.String,
    "condition": pl.String,
    "base_condition": pl.String,
    "settings": pl.String,
    "simulation": pl.Int64,
    "round": pl.Int64,
    "agent": pl.String,
    "agent_index": pl.Int64,
    "role": pl.String,
    "is_leader": pl.Boolean,
    "n_agents": pl.Int64,
    "pool_before": pl.Float64,
    "announced_pool": pl.Float64,
    "pool_seen": pl.Float64,
    "remainder_seen": pl.Float64,
    "extraction": pl.Float64,
    "payoff": pl.Float64,
    "remaining": pl.Float64,
    "collapsed": pl.Boolean,
    "reasoning": pl.String,
    "valid": pl.Boolean,
    "fallback_used": pl.Boolean,
}

SORT_KEYS = ("source", "model", "condition", "run_id", "round", "agent_index")

#: Canonical SovSim roles per condition: (subordinate, leader); the leader is the last agent.
SOVSIM_ROLES = {
    "cpr": ("citizen", "citizen"),
    "bcpr": ("worker", "boss"),
    "kcpr": ("peasant", "king"),
    "kcpr_m": ("peasant", "king"),
}


def agent_round_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows (dicts) -> a DataFrame with exactly :data:`AGENT_ROUND_SCHEMA`, sorted."""
    df = pl.DataFrame(
        [{k: r.get(k) for k in AGENT_ROUND_SCHEMA} for r in rows],
        schema=AGENT_ROUND_SCHEMA,
        orient="row",
    )
    return df.sort(*SORT_KEYS)
