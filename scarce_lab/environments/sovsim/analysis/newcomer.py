"""A newcomer in SovSim: metrics per tenure, before and after the newcomer joins,
incumbents vs the newcomer (the finding :func:`tenure`, whose docstring holds the
method; its frame :func:`tenure_metrics`). ``status``: ``newcomer`` (the agent who
joined in the join round ``k``) or ``incumbent`` (every agent present in round 1, the
one who left included); ``period``: ``before`` (rounds ``< k``) or ``after`` (rounds
``>= k``); runs without a join are left out.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import polars as pl

from scarce_lab.analysis.findings import Finding, finding, finding_function
from scarce_lab.analysis.stats import mean_ci_cells

from .metrics import agent_rounds, require_dataset
from .pooling import pool_groups

#: The interval method of every tenure table.
TENURE_INTERVALS = ("Student t over runs (stats.mean_ci; the run is the unit: each run's mean over the rounds of "
                    "the period); null with one run or no spread; 95%")


def join_rounds(rounds: pl.DataFrame) -> pl.DataFrame:
    """``run_id``, ``join_round`` (the newcomer's first round), ``newcomer`` (its agent
    id) and ``joined`` (whether the game reached that round), one row per run with a
    newcomer, by the rule of :func:`tenure`: from the run's ``newcomer.round`` and
    ``game.n_agents`` (the newcomer is ``a{n}``), else (a layout without settings) the
    latest first round of any agent, when later than the run's first round.

    Raises:
        ValueError: a column of the agent-round table is missing.
    """
    missing = {"run_id", "agent", "round"} - set(rounds.columns)
    if missing:
        raise ValueError(f"tenure: the agent-round table lacks {sorted(missing)}")
    last = rounds.group_by("run_id").agg(pl.col("round").max().alias("_last"))
    declared = []
    if "settings" in rounds.columns:
        for run_id, s in rounds.select("run_id", "settings").unique().iter_rows():
            st = json.loads(s) if s else {}
            if st.get("newcomer.round") is not None:
                declared.append({"run_id": run_id, "join_round": int(st["newcomer.round"]),
                                 "newcomer": f"a{int(st.get('game.n_agents', 4))}"})
    first = rounds.group_by("run_id", "agent").agg(pl.col("round").min().alias("first_round"))
    start = rounds.group_by("run_id").agg(pl.col("round").min().alias("start"))
    late = first.join(start, on="run_id").filter(pl.col("first_round") > pl.col("start"))
    found = (late.sort("run_id", "first_round", "agent")
             .group_by("run_id", maintain_order=True)
             .agg(pl.col("first_round").max().alias("join_round"),
                  pl.col("agent").filter(pl.col("first_round") == pl.col("first_round").max()).first()
                  .alias("newcomer")))
    schema = {"run_id": pl.String, "join_round": pl.Int64, "newcomer": pl.String}
    known = pl.DataFrame(declared, schema=schema)
    found = found.select(list(schema)).cast(schema).filter(~pl.col("run_id").is_in(known["run_id"].implode()))
    return (pl.concat([known, found]).join(last, on="run_id")
            .with_columns(joined=pl.col("_last") >= pl.col("join_round")).drop("_last").sort("run_id"))


def tenure_metrics(data: Any, *, by: Literal["agent", "status"] = "status", force: bool = False,
                   level: float = 0.95) -> pl.DataFrame:
    """The frame of :func:`tenure` (whose docstring holds the method): mean extraction
    and payoff per tenure period, with t intervals over runs at ``level``.

    Args:
        data: a Dataset or an agent-round frame (:func:`~.metrics.agent_rounds`).
        by, force: as :func:`tenure`.

    Returns:
        One row per ``(model, condition, [agent, role,] status, period)``:
        ``n_runs`` (runs with rows in the group: a run that ended, by collapse, before
        the join has a ``before`` period only, so ``after`` rows can count fewer runs),
        ``runs_ended_before_join`` (of the model and condition),
        ``extraction_mean/low/high`` (pool units per round),
        ``payoff_mean/low/high`` (points per round), ``interval`` (the method). Empty
        (same columns) when no run has a join.

    Raises:
        ValueError: ``by`` unknown or a table column missing.
        PoolingError: a group mixes runs of different conditions (unless ``force``).
    """
    if by not in ("agent", "status"):
        raise ValueError(f"tenure: by must be 'agent' or 'status', got {by!r}")
    df = agent_rounds(data)
    joins = join_rounds(df)
    keys = ["agent", "role"] if by == "agent" else []
    out_cols = ["model", "condition", *keys, "status", "period", "n_runs", "runs_ended_before_join",
                *(f"{m}_{s}" for m in ("extraction", "payoff") for s in ("mean", "low", "high")), "interval"]
    d = df.join(joins, on="run_id", how="inner")
    if d.height == 0:
        return pl.DataFrame(schema={c: (pl.Int64 if c.startswith(("n_runs", "runs_")) else pl.Float64 if c.endswith(
            ("_mean", "_low", "_high")) else pl.String) for c in out_cols})
    d = d.with_columns(
        status=pl.when(pl.col("agent") == pl.col("newcomer")).then(pl.lit("newcomer")).otherwise(pl.lit("incumbent")),
        period=pl.when(pl.col("round") < pl.col("join_round")).then(pl.lit("before")).otherwise(pl.lit("after")),
    )
    ident = [c for c in ("settings", "source", "base_condition") if c in d.columns]
    per_run = (d.group_by("model", "condition", *ident, "run_id", *(["agent"] if by == "agent" else []),
                          "status", "period")
               .agg(pl.col("extraction").mean(), pl.col("payoff").mean(),
                    *([pl.col("role").first()] if by == "agent" else [])))
    per_run = pool_groups(per_run, "condition", keys=("model",), force=force, what="tenure table")
    ended = (d.filter(~pl.col("joined")).group_by("model", "condition")
             .agg(pl.col("run_id").n_unique().alias("runs_ended_before_join")))
    rows = []
    group = ["model", "condition", *keys, "status", "period"]
    for key, part in per_run.sort(*group, "run_id").group_by(group, maintain_order=True):
        cells = {f"{m}_{s}": v for m in ("extraction", "payoff")
                 for s, v in zip(("mean", "low", "high"), mean_ci_cells(part[m].to_list(), level=level), strict=True)}
        rows.append({**dict(zip(group, key, strict=True)), "n_runs": part["run_id"].n_unique(), **cells,
                     "interval": TENURE_INTERVALS})
    order = {"before": 0, "after": 1}
    return (pl.DataFrame(rows, schema_overrides={"n_runs": pl.Int64})
            .join(ended, on=["model", "condition"], how="left")
            .with_columns(pl.col("runs_ended_before_join").fill_null(0).cast(pl.Int64))
            .with_columns(pl.col("period").replace_strict(order, return_dtype=pl.Int64).alias("_p"))
            .sort("model", "condition", *keys, "status", "_p").drop("_p").select(out_cols))


@finding_function("sovsim")
def tenure(ds: Any, *, by: Literal["agent", "status"] = "status", force: bool = False,
           models: list[str] | None = None) -> Finding:
    """What changes when a newcomer joins (GovSim's perturbation,
    ``config.newcomer``)? Mean extraction (pool units per round) and payoff (points per
    round) of the incumbents and of the newcomer, before and after the join round.

    The join round of a run is the newcomer's first round (from the run's settings, so
    a run that collapsed before the join is known and counted in
    ``runs_ended_before_join``; otherwise the latest first round of any agent). The
    run is the unit: a run's value is the mean over the rounds of the period (of one
    agent, or of the agents of one status), and the interval is Student's t over runs
    (none with one run or no spread). Runs of different conditions (a composition, a
    newcomer setting) are never pooled.

    The finding's ``frame``: one row per ``model, condition, [agent, role,] status,
    metric`` (``extraction``, ``payoff``) and ``period`` (``before``, ``after``):
    ``value, lo, hi, n, runs, runs_ended_before_join, estimate``; its layout one
    column per period. A dataset without a newcomer gives the sentence that says so.

    Args:
        by: ``"status"`` (incumbents together vs the newcomer) or ``"agent"`` (each
            agent id, with its role in the period).
        force: pool groups that mix settings (labelled ``[pooled: ...]``, with a
            warning) instead of refusing.
        models: keep only these models.

    Raises:
        PoolingError: a group mixes runs of different conditions (unless ``force``).
        ValueError: ``by`` unknown, or a model of ``models`` not in the data.
    """
    t = tenure_metrics(agent_rounds(require_dataset(ds), models=models), by=by, force=force)
    keys = ["model", "condition", *(["agent", "role"] if by == "agent" else []), "status"]
    values = pl.concat([t.select(*keys, "period", pl.lit(m).alias("metric"), pl.col(f"{m}_mean").alias("value"),
                                 pl.col(f"{m}_low").alias("lo"), pl.col(f"{m}_high").alias("hi"),
                                 pl.col("n_runs").alias("n"), pl.col("n_runs").alias("runs"),
                                 "runs_ended_before_join") for m in ("extraction", "payoff")])
    values = values.sort(*keys, "metric", pl.col("period") == "after")
    after = values.filter((pl.col("period") == "after") & (pl.col("metric") == "extraction"))
    parts = [f"{r['model']} ({r['condition']}) {r['status']} {r['value']:.1f}" for r in after.iter_rows(named=True)
             if r["value"] is not None]
    reading = ("Mean extraction per round after the join (pool units): " + "; ".join(parts) + ".") if parts else ""
    return finding("sovsim_tenure", values, index=[*keys, "metric"], columns="period", column_order=["before", "after"],
                   reading=reading, convention={"unit": "run", "intervals": TENURE_INTERVALS, "by": by})
