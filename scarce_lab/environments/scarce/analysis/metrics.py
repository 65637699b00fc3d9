"""SCARCE metrics per model and condition, with 95 % CIs clustered by run.

Input: the tidy tables of :mod:`scarce_lab.environments.scarce.tables` (polars frames only;
this module never imports environments or agents).

:func:`summary` returns one row per (model, solver model, condition) with, for each
metric, the mean over runs of each run's mean and a 95 % t interval over the run means
(:func:`~.base.cluster_ci`: runs are the independent unit), clipped to the metric's
range (:data:`BOUNDS`). ``model`` is the negotiator's model, ``condition`` the label
unique per condition settings; a group that would still mix settings (tables labelled
separately and concatenated) raises :class:`~scarce_lab.analysis.pooling.PoolingError`.

- ``win_rate``, ``win_rate_contested``: as :func:`~.findings.win_rates` (an uncontested
  request is first by itself).
- ``mean_bid``: declared bid (credits), all participations.
- ``mean_requested_duration_s``: declared desired duration (seconds).
- ``private_chat_use``: as :func:`~.findings.private_chat_use`, every subrun.
- ``deadline_miss_rate``, ``mean_partial_score``: as :func:`~.findings.task_outcomes`.
- ``stuck_rate``: share of (worker, subrun) submissions ended as ``stuck`` (a model
  solver repeated the same failing action ``stuck_repeats`` times).
"""

from __future__ import annotations

import math

import polars as pl

from .base import _need, cluster_ci

GROUP = ("model", "solver_model", "condition")
METRICS = ("win_rate", "win_rate_contested", "mean_bid", "mean_requested_duration_s", "private_chat_use",
           "deadline_miss_rate", "mean_partial_score", "stuck_rate")


#: Range of each metric (intervals are clipped to it): shares in [0, 1], the rest >= 0.
BOUNDS = {m: (0.0, 1.0) for m in METRICS} | {"mean_bid": (0.0, math.inf),
                                             "mean_requested_duration_s": (0.0, math.inf)}


def metric_rows(contentions: pl.DataFrame, submissions: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The per-observation frames each metric averages (``run_id``, group keys, ``value``)."""
    keys = ["run_id", *GROUP]
    contested = contentions.filter(pl.col("n_participants") >= 2)
    return {
        "win_rate": contentions.select(*keys, pl.col("won").cast(pl.Float64).alias("value")),
        "win_rate_contested": contested.select(*keys, pl.col("won").cast(pl.Float64).alias("value")),
        "mean_bid": contentions.select(*keys, pl.col("declared_bid").cast(pl.Float64).alias("value")),
        "mean_requested_duration_s": contentions.select(*keys, pl.col("desired_duration_s").cast(pl.Float64)
                                                        .alias("value")),
        "private_chat_use": contested.select(*keys, (pl.col("private_sent") > 0).cast(pl.Float64).alias("value")),
        "deadline_miss_rate": submissions.select(*keys, pl.col("deadline_missed").cast(pl.Float64).alias("value")),
        "mean_partial_score": submissions.select(*keys, pl.col("score").cast(pl.Float64).alias("value")),
        "stuck_rate": submissions.select(*keys, (pl.col("reason") == "stuck").cast(pl.Float64).alias("value")),
    }


def summary(contentions: pl.DataFrame, submissions: pl.DataFrame) -> pl.DataFrame:
    """One row per (model, solver_model, condition): ``runs``, ``contentions``,
    ``submissions`` and for each metric in :data:`METRICS` the columns ``<metric>``,
    ``<metric>_lo``, ``<metric>_hi``.

    Raises:
        ValueError: a frame lacks a needed column.
        PoolingError: a group mixes runs whose condition settings differ.
    """
    from scarce_lab.analysis.pooling import check_no_pooling

    for name, df, cols in (
        ("contentions", contentions, ("run_id", *GROUP, "won", "declared_bid", "desired_duration_s",
                                      "private_sent", "n_participants")),
        ("submissions", submissions, ("run_id", *GROUP, "deadline_missed", "score", "reason")),
    ):
        _need(df, cols, name)
        check_no_pooling(df, GROUP, what=f"summary ({name})")
    per_metric = metric_rows(contentions, submissions)
    groups = pl.concat([contentions.select(*GROUP), submissions.select(*GROUP)]).unique().sort(list(GROUP)).rows()
    out = []
    for model, solver, cond in groups:
        sel = (pl.col("model").eq_missing(model) & pl.col("solver_model").eq_missing(solver)
               & (pl.col("condition") == cond))
        row = {"model": model, "solver_model": solver, "condition": cond,
               "runs": pl.concat([contentions.filter(sel).select("run_id"),
                                  submissions.filter(sel).select("run_id")]).n_unique(),
               "contentions": contentions.filter(sel).select(pl.struct("run_id", "contention")).n_unique(),
               "submissions": submissions.filter(sel).height}
        for m in METRICS:
            ci = cluster_ci(per_metric[m].filter(sel), "value", bounds=BOUNDS[m])
            row[m], row[f"{m}_lo"], row[f"{m}_hi"] = ci["value"], ci["lo"], ci["hi"]
        out.append(row)
    schema = {"model": pl.String, "solver_model": pl.String, "condition": pl.String, "runs": pl.Int64,
              "contentions": pl.Int64, "submissions": pl.Int64}
    for m in METRICS:
        schema |= {m: pl.Float64, f"{m}_lo": pl.Float64, f"{m}_hi": pl.Float64}
    return pl.DataFrame(out, schema=schema, orient="row")


def format_summary(df: pl.DataFrame, digits: int = 2) -> pl.DataFrame:
    """``summary`` with each metric as text ``mean [lo, hi]`` (for printing)."""
    def cell(m, lo, hi):
        if m is None:
            return "n/a"
        return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" if lo is not None else f"{m:.{digits}f}"

    cols = [pl.col(c) for c in ("model", "solver_model", "condition", "runs", "contentions", "submissions")]
    rows = [{m: cell(r[m], r[f"{m}_lo"], r[f"{m}_hi"]) for m in METRICS} for r in df.iter_rows(named=True)]
    return pl.concat([df.select(cols), pl.DataFrame(rows, schema=dict.fromkeys(METRICS, pl.String))],
                     how="horizontal")
