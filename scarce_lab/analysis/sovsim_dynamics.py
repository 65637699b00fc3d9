"""SovSim pool dynamics and KCPR-M misreports, round by round (for Figures 3 and 5).

Input: the agent-round table of :func:`scarce_lab.data.tables.sovsim.load_agent_rounds`.
Units: pool units; rounds are 1-based.
"""

from __future__ import annotations

import polars as pl

from . import stats


def _mean_ci(values: list[float]) -> tuple[float | None, float | None, float | None]:
    m, lo, hi = stats.mean_ci(values, level=0.95)
    return tuple(None if v != v else float(v) for v in (m, lo, hi))  # nan -> None


def pool_dynamics(df: pl.DataFrame) -> pl.DataFrame:
    """Pool at the start of each round, per simulation: ``model, condition, run_id,
    round, pool_before, remaining`` (one row per simulation-round).

    After a collapse the pool is gone: a simulation that collapsed in round k gets rows
    for rounds k+1 .. R (R = the last round in the data) with pool 0, so that means and
    bands are over every simulation and a collapse pulls them down instead of dropping
    out of the average."""
    played = (
        df.group_by("model", "condition", "run_id", "round")
        .agg(pl.col("pool_before").first(), pl.col("remaining").first(), pl.col("collapsed").first())
        .sort("model", "condition", "run_id", "round")
    )
    if played.height == 0:
        return played.drop("collapsed")
    horizon = int(played["round"].max())
    ends = played.filter(pl.col("collapsed")).select("model", "condition", "run_id", "round")
    after = [
        {"model": m, "condition": c, "run_id": run, "round": k, "pool_before": 0, "remaining": 0}
        for m, c, run, last in ends.iter_rows()
        for k in range(int(last) + 1, horizon + 1)
    ]
    out = played.drop("collapsed")
    if after:
        out = pl.concat([out, pl.DataFrame(after, schema=out.schema, orient="row")])
    return out.sort("model", "condition", "run_id", "round")


def pool_band(df: pl.DataFrame) -> pl.DataFrame:
    """Mean pool per (model, condition, round) with a 95% t-band over all simulations
    (a collapsed pool counts as 0): ``model, condition, round, n, mean, ci_low, ci_high``."""
    dyn = pool_dynamics(df)
    rows = []
    for (model, cond, rnd), g in dyn.group_by("model", "condition", "round"):
        m, lo, hi = _mean_ci(g["pool_before"].to_list())
        rows.append({"model": model, "condition": cond, "round": rnd, "n": g.height, "mean": m, "ci_low": lo, "ci_high": hi})
    schema = {"model": pl.String, "condition": pl.String, "round": pl.Int64, "n": pl.Int64,
              "mean": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort("model", "condition", "round")


def misreports(df: pl.DataFrame) -> pl.DataFrame:
    """Per-round misreports (kcpr_m): ``model, run_id, round, announced_pool,
    pool_before, misreport`` (announced - true, pool units)."""
    return (
        df.filter(pl.col("is_leader") & pl.col("announced_pool").is_not_null())
        .select("model", "condition", "run_id", "round", "announced_pool", "pool_before")
        .with_columns(misreport=pl.col("announced_pool") - pl.col("pool_before"))
        .sort("model", "run_id", "round")
    )
