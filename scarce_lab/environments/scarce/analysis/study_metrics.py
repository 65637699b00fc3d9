"""SCARCE's metrics for a study report (:mod:`scarce_lab.studies.report`): every number
the paper publishes that our runs can estimate, by name, per negotiator model and
condition, each from the frame function of the finding that shows it (the same
values and intervals: :mod:`.tactics`, :mod:`.dynamics`), never recomputed here.

Names (``@`` qualifies a stage, a budget phase or a subrun; stages are those of the
finding: 3 for Tables 4 and 10, 4 for Table 8):

- judge labels needed: ``reciprocity``, ``alliance_formation``, ``alliance_loyalty``,
  ``reputation`` (Table 2, every subrun); ``relational_share`` (Table 1: any relational
  category, first subrun); ``relational_share@all`` and ``<category>_share@all`` for
  ``bid_priority`` and ``shortest_job_first`` (Table 9, every subrun);
  ``rule_share@S1..S3`` (Table 10);
- from the runs alone: ``private_chat_use`` (Figure 6, first subrun); ``win_rate``
  (share of a worker's rounds first in the queue);
  ``richer_win_rate@<phase>`` and ``richer_mean_bid@<phase>`` (Tables 5 and 7; phases
  ``>66%``, ``33-66%``, ``<33%``, ``all``); ``urgent_mean_bid@S1..S3`` and
  ``other_mean_bid@S1..S3`` (Table 4); ``win_continuity`` (Table 8: next contested
  participation won after a win); ``median_winning_bid@S1..S4`` (Table 8);
  ``full_resolution_rate``, ``mean_partial_score``, ``deadline_miss_rate`` (Figure 14,
  first subrun); ``duration_growth`` (Figure 10: last over first subrun's mean
  requested slot).

Shares are fractions in [0, 1] (the report divides a paper's percentages by 100).

Each row states its interval's kind (``interval``, :data:`INTERVALS`:
:data:`scarce_lab.analysis.stats.INTERVAL_KINDS`): shares and rates ``bounded`` (the
frame functions pass the range 0-1), mean bids and the duration growth ``t`` (no upper
bound), the median winning bids ``median_bootstrap``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from . import dynamics, tactics
from .base import BUDGET_PHASES, MEMORY_BEHAVIOURS

BY = ("model", "condition")
_STAGES3 = [f"S{i}" for i in (1, 2, 3)]
_STAGES4 = [f"S{i}" for i in (1, 2, 3, 4)]
#: Every metric name :func:`study_metrics` computes, with what it needs.
METRICS: dict[str, str] = {
    **{b: "labels" for b in MEMORY_BEHAVIOURS},
    "relational_share": "labels",
    "relational_share@all": "labels",
    "bid_priority_share@all": "labels",
    "shortest_job_first_share@all": "labels",
    **{f"rule_share@{s}": "labels" for s in _STAGES3},
    "private_chat_use": "runs", "win_rate": "runs",
    **{f"richer_{m}@{p}": "runs" for m in ("win_rate", "mean_bid") for p in (*BUDGET_PHASES, "all")},
    **{f"{w}_mean_bid@{s}": "runs" for w in ("urgent", "other") for s in _STAGES3},
    "win_continuity": "runs",
    **{f"median_winning_bid@{s}": "runs" for s in _STAGES4},
    "full_resolution_rate": "runs", "mean_partial_score": "runs", "deadline_miss_rate": "runs",
    "duration_growth": "runs",
}
#: ``{metric: interval kind}``: the kind each frame function prints for it (the bounds it passes).
INTERVALS: dict[str, str] = {
    m: ("t" if m.startswith(("richer_mean_bid", "urgent_mean_bid", "other_mean_bid")) or m == "duration_growth"
        else "median_bootstrap" if m.startswith("median_winning_bid") else "bounded") for m in METRICS}
COLUMNS = {"metric": pl.String, "model": pl.String, "condition": pl.String, "estimate": pl.Float64,
           "ci_low": pl.Float64, "ci_high": pl.Float64, "n_runs": pl.Int64, "why": pl.String, "interval": pl.String}
NO_INTERVAL = ("no 95% interval: the table prints none from one run or when every run gives the same value "
               "(t over run means; bench_coverage.py)")
NO_MEDIAN_INTERVAL = "no 95% interval: a median's cluster bootstrap is printed from 30 runs on (bench_coverage.py)"


def _long(frame: pl.DataFrame, name: pl.Expr, why: str = NO_INTERVAL) -> pl.DataFrame:
    """A frame function's rows (``model, condition, value, lo, hi, runs``) as report
    rows named by ``name``."""
    if frame.height == 0:
        return pl.DataFrame(schema=COLUMNS)
    return frame.select(
        name.alias("metric"), "model", "condition", pl.col("value").cast(pl.Float64).alias("estimate"),
        pl.col("lo").cast(pl.Float64).alias("ci_low"), pl.col("hi").cast(pl.Float64).alias("ci_high"),
        pl.col("runs").cast(pl.Int64).alias("n_runs"),
        pl.when(pl.col("lo").is_null()).then(pl.lit(why)).otherwise(pl.lit("")).alias("why"),
        pl.lit(None, pl.String).alias("interval"))


def _stage(prefix: str) -> pl.Expr:
    return pl.lit(prefix) + pl.lit("@S") + pl.col("stage").cast(pl.String)


def _from_runs(ds: Any) -> list[pl.DataFrame]:
    c = ds.scarce.contentions
    out = [_long(dynamics.private_chat_use(c, by=BY, subrun=0), pl.lit("private_chat_use")),
           _long(dynamics.win_rates(c, by=BY).filter(pl.col("metric") == "win_rate"), pl.lit("win_rate"))]
    phases = dynamics.budget_phase_bids(c, by=BY).filter(
        (pl.col("who") == "richer") & pl.col("metric").is_in(["win_rate", "mean_bid"]))
    out.append(_long(phases, pl.lit("richer_") + pl.col("metric") + pl.lit("@") + pl.col("budget_phase")))
    urg = dynamics.urgency_bids(c, n_stages=3, by=BY)
    out.append(_long(urg, pl.when(pl.col("urgent")).then(pl.lit("urgent")).otherwise(pl.lit("other"))
                     + pl.lit("_mean_bid@S") + pl.col("stage").cast(pl.String)))
    out.append(_long(dynamics.win_continuity(c, by=BY).filter(pl.col("given") == "won"), pl.lit("win_continuity")))
    out.append(_long(dynamics.winning_bid_by_stage(c, n_stages=4, by=BY), _stage("median_winning_bid"),
                     NO_MEDIAN_INTERVAL))
    first = ds.scarce.submissions.filter(pl.col("subrun") == 0)
    out.append(_long(dynamics.task_outcomes(first, by=BY), pl.col("metric")))
    out.append(_long(dynamics.requested_duration_by_subrun(c, by=BY)[1], pl.lit("duration_growth")))
    return out


def _from_labels(ds: Any, labels: pl.DataFrame) -> list[pl.DataFrame]:
    from scarce_lab.judge.taxonomy import load_taxonomy

    tax = load_taxonomy("scarce")
    rounds = tactics.labelled_rounds(labels, ds.scarce.contentions).filter(pl.col("model").is_not_null())
    out = [_long(tactics.behaviour_shares(rounds, by=BY), pl.col("behaviour"))]
    first = tactics.tactic_shares(rounds, tax.ids, tax.relational_ids, by=BY, subrun=0)
    out.append(_long(first.filter(pl.col("category") == "relational"), pl.lit("relational_share")))
    every = tactics.tactic_shares(rounds, tax.ids, tax.relational_ids, by=BY, subrun=None).filter(
        pl.col("category").is_in(["relational", "bid_priority", "shortest_job_first"]))
    out.append(_long(every, pl.col("category") + pl.lit("_share@all")))
    rules = tactics.rule_shares_by_stage(rounds, n_stages=3, by=BY).filter(pl.col("kind") == "rules")
    out.append(_long(rules, _stage("rule_share")))
    return out


def study_metrics(ds: Any, *, labels: str | pl.DataFrame | None = None) -> pl.DataFrame | dict[str, str]:
    """The report rows of ``ds`` (``metric, model, condition, estimate, ci_low, ci_high,
    n_runs, why, interval, run_id``; ``model`` the negotiator model, ``condition`` the tidy
    tables' condition label, ``run_id`` one run of it, whose manifest gives the report
    the condition's settings; ``interval`` the kind of its interval); with ``ds=None`` the names it computes
    with their interval kinds (:data:`INTERVALS`), which the report checks a paper-numbers file against.

    ``labels``: the judge panel's ``labels.parquet`` (path or table); without it each
    label metric's row has no estimate and says it needs labels.

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a model x condition group mixes conditions (never pooled).
    """
    if ds is None:
        return dict(INTERVALS)
    parts: list[Callable[[], list[pl.DataFrame]]] = [lambda: _from_runs(ds)]
    if labels is not None:
        table = labels if isinstance(labels, pl.DataFrame) else _read_labels(labels)
        parts.append(lambda: _from_labels(ds, table))
    else:
        parts.append(lambda: [_needs_labels(ds)])
    frames = [f for part in parts for f in part() if f.height]
    out = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=COLUMNS)
    first = ds.scarce.contentions.select("condition", "run_id").unique(subset=["condition"], keep="first")
    return (out.filter(pl.col("metric").is_in(list(METRICS)))
            .with_columns(interval=pl.col("metric").replace_strict(INTERVALS, return_dtype=pl.String))
            .join(first, on="condition", how="left"))


def _needs_labels(ds: Any) -> pl.DataFrame:
    """A row per label metric, model and condition saying it needs judge labels."""
    groups = ds.scarce.contentions.select(*BY).unique().sort(*BY)
    names = pl.DataFrame({"metric": [m for m, need in METRICS.items() if need == "labels"]})
    return groups.join(names, how="cross").with_columns(
        estimate=pl.lit(None, pl.Float64), ci_low=pl.lit(None, pl.Float64), ci_high=pl.lit(None, pl.Float64),
        n_runs=pl.lit(0, pl.Int64), why=pl.lit("needs judge labels (none given: scarce-lab judge label)"),
        interval=pl.lit(None, pl.String),
    ).select(list(COLUMNS))


def _read_labels(path: Any) -> pl.DataFrame:
    from scarce_lab.datasets import resolve_path

    p = resolve_path(path)
    if not p.exists():
        raise FileNotFoundError(f"no judge label table at {p} (scarce-lab judge label writes labels.parquet)")
    return pl.read_parquet(p)
