"""SovSim pool dynamics and KCPR-M misreports, round by round (for Figures 3 and 5).

Input: the agent-round table of :func:`scarce_lab.environments.sovsim.tables.load_agent_rounds`.
Units: pool units; rounds are 1-based.
"""

from __future__ import annotations

import polars as pl

from scarce_lab.analysis import stats


def pool_dynamics(df: pl.DataFrame) -> pl.DataFrame:
    """Pool at the start of each round, per simulation: ``model, condition, run_id,
    round, pool_before, remaining`` (one row per simulation-round); a simulation that
    collapsed in round k gets rows for rounds k+1 .. R (R = the last round in the data)
    with pool 0 (why: :func:`~.paper.pool_dynamics`)."""
    played = (
        df.group_by("model", "condition", "run_id", "round")
        .agg(pl.col("pool_before").first(), pl.col("remaining").first(), pl.col("collapsed").first())
        .sort("model", "condition", "run_id", "round")
    )
    if played.height == 0:
        return played.drop("collapsed")
    horizon = int(played["round"].max())
    after = (
        played.filter(pl.col("collapsed"))
        .select("model", "condition", "run_id", pl.int_ranges(pl.col("round") + 1, horizon + 1).alias("round"))
        .explode("round")
        .drop_nulls("round")
        .with_columns(pool_before=pl.lit(0), remaining=pl.lit(0))
    )
    out = played.drop("collapsed")
    if after.height:
        out = pl.concat([out, after.select([pl.col(c).cast(t) for c, t in out.schema.items()])])
    return out.sort("model", "condition", "run_id", "round")


def pool_band(df: pl.DataFrame) -> pl.DataFrame:
    """Mean pool per (model, condition, round) with a 95% t-band over all simulations
    (a collapsed pool counts as 0): ``model, condition, round, n, mean, ci_low, ci_high``
    (the :func:`stats.mean_ci` interval, computed for all groups at once)."""
    band = stats.grouped_mean_ci(pool_dynamics(df), ["model", "condition", "round"], "pool_before")
    return band.rename({"low": "ci_low", "high": "ci_high"}).sort("model", "condition", "round")


def misreports(df: pl.DataFrame) -> pl.DataFrame:
    """Per-round misreports (kcpr_m): ``model, run_id, round, announced_pool,
    pool_before, misreport`` (announced - true, pool units)."""
    return (
        df.filter(pl.col("is_leader") & pl.col("announced_pool").is_not_null())
        .select("model", "condition", "run_id", "round", "announced_pool", "pool_before")
        .with_columns(misreport=pl.col("announced_pool") - pl.col("pool_before"))
        .sort("model", "run_id", "round")
    )
