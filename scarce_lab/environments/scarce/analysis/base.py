"""Shared pieces of the SCARCE experiment metrics (:mod:`.tactics` from judge labels,
:mod:`.dynamics` for communication, outcomes, budgets and auction dynamics, reached as
findings through :mod:`.findings`): constants of the paper's definitions, helpers for
cluster intervals, stages and presentation. Inputs are the tidy tables and the run
settings of :mod:`scarce_lab.environments.scarce.tables` (``ds.scarce``) and the judge
panel's ``labels`` table.

Statistics (docs/design.md): as :data:`~.findings.STATISTICS` states them (runs are the
independent unit; :func:`cluster_ci`, :func:`cluster_bootstrap_median`,
:func:`mean_over_runs`). Every result frame carries ``n`` (rows behind the
estimate) and ``runs`` (clusters).

Never pooled: every metric first runs :func:`scarce_lab.analysis.pooling.check_no_pooling`
on its ``by`` groups and raises :class:`~scarce_lab.analysis.pooling.PoolingError` when a
group would mix runs whose condition settings (or solver model) differ in anything the
``by`` columns do not name; group by ``condition`` (with ``model``) to keep conditions
apart.

Definitions (the SCARCE paper's, sections on Tables 1-10, where it gives them) are
stated once, where they are computed, and in the method of each finding
(:mod:`.findings`): a *stage* (:func:`assign_stages`), a *contested* contention
(two or more participants), the *win rate* (:func:`~.dynamics.win_rates`: over all
rounds), *rule-making* and *rule-invoking* (:data:`RULE_MAKING`,
:data:`RULE_INVOKING`, :func:`~.findings.rule_shares`), the *budget phase*
(:func:`~.dynamics.budget_left`), the *richer worker* (:func:`~.dynamics.richer_worker`),
an *urgent worker* (:func:`~.dynamics.urgency_bids`) and the *reference condition*
(:func:`base_condition`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from scarce_lab.analysis import stats
from scarce_lab.analysis.layout import _need

#: Taxonomy ids (scarce.yaml, "process and governance norms") counted as rule-making.
RULE_MAKING: tuple[str, ...] = ("iterative_bargaining", "negotiation_neutrality", "issue_reduction")
#: Taxonomy ids ("time-urgency" and "classical scheduling" norms) counted as rule-invoking.
RULE_INVOKING: tuple[str, ...] = ("earliest_deadline_first", "sunk_cost_urgency", "first_come_first_served",
                                  "shortest_job_first", "risk_variance_first")
#: Table 2 behaviours (memory horizon) -> the taxonomy ids that count for each.
MEMORY_BEHAVIOURS: dict[str, tuple[str, ...]] = {
    "reciprocity": ("reciprocity",),
    "alliance_formation": ("explicit_coalition", "exclusive_coalition"),
    "alliance_loyalty": ("coalition_loyalty",),
    "reputation": ("reputation_maintenance",),
}
BUDGET_PHASES: tuple[str, ...] = (">66%", "33-66%", "<33%")

_CI = {"value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64, "runs": pl.Int64,
       "se": pl.Float64}
#: Range of a share (rates, fractions of rounds): intervals are clipped to it.
SHARE = (0.0, 1.0)
#: Range of a non-negative measure (credits, seconds, counts without a known cap).
NON_NEGATIVE = (0.0, math.inf)


# -- helpers ---------------------------------------------------------------------------
def _nan_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def cluster_ci(df: pl.DataFrame, value: str, *, bounds: tuple[float, float] = NON_NEGATIVE) -> dict:
    """Mean over runs (``run_id``) of each run's mean of ``value``, with a t interval over
    the run means (:func:`stats.cluster_mean_ci`; the percentile cluster bootstrap it
    replaces covered 58-90% with 2-10 runs, ``benchmarks/bench_coverage.py``).

    ``bounds``: the measure's range (:data:`SHARE` for a rate; default
    :data:`NON_NEGATIVE`); the interval is clipped to it. Returns ``{"value", "lo", "hi",
    "n", "runs", "se"}`` (``se``: standard error of the mean over runs; nulls where
    undefined: no interval from one run or from runs that all give the same value).
    Null values are dropped first.
    """
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0, "se": None}
    d = d.with_columns(pl.col(value).cast(pl.Float64))
    m, lo, hi = stats.cluster_mean_ci(d, cluster="run_id", value=value, bounds=bounds)
    means = stats.cluster_means(d, cluster="run_id", value=value)
    se = float(means.std(ddof=1)) / math.sqrt(len(means)) if len(means) > 1 and not math.isnan(lo) else None
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height,
            "runs": len(means), "se": se}


def cluster_bootstrap_median(df: pl.DataFrame, value: str, *, level: float = 0.95, n_resamples: int = 2000,
                             seed: int = 0) -> dict:
    """Median of ``value`` over rows with a percentile bootstrap that resamples whole
    runs (``run_id``) with replacement (:func:`stats.cluster_bootstrap_median`, all
    resamples at once), given from :data:`stats.MIN_RUNS_MEDIAN` runs on (with fewer
    it undercovers). Same return shape as :func:`cluster_ci` (``se`` null: a median's
    interval is not a t interval)."""
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0, "se": None}
    est, lo, hi, k = stats.cluster_bootstrap_median(d[value].cast(pl.Float64).to_numpy(), d["run_id"].to_numpy(),
                                                    level=level, n_resamples=n_resamples, seed=seed)
    return {"value": est, "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height, "runs": k, "se": None}


def mean_over_runs(values: Sequence[float], bounds: tuple[float, float] | None = None) -> dict:
    """Mean and t interval of one value per run (:func:`stats.mean_ci`); ``n`` = ``runs``.
    ``bounds``: the measure's range (e.g. ``(0, 1)`` for shares, ``(0, workers)`` for a
    count per run): with both finite, :func:`stats.bounded_mean_ci` (an interval that
    keeps 95% at few runs, also when every run gives the same value); otherwise the t
    interval, none when runs all agree (a zero-width interval would claim certainty);
    ``se`` as in :func:`cluster_ci`."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if bounds is not None and math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and vals:
        m, lo, hi = stats.bounded_mean_ci(vals, bounds[0], bounds[1])  # holds at few runs (stats docs)
    else:
        m, lo, hi = stats.mean_ci(vals)
        if len(vals) > 1 and stats.near_constant(vals):
            lo = hi = math.nan
    if bounds is not None and not math.isnan(lo):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    se = float(np.std(vals, ddof=1)) / math.sqrt(len(vals)) if len(vals) > 1 and not math.isnan(lo) else None
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": len(vals), "runs": len(vals),
            "se": se}


def _grouped(df: pl.DataFrame, by: Sequence[str], fn) -> pl.DataFrame:
    """Apply ``fn(sub_frame) -> dict`` (keys of the CI columns) per group of ``by``,
    groups sorted; one row per group, typed (empty frame with the schema when no rows)."""
    return _ci_frame([base | fn(part) for base, part in _groups(df, by)], {b: df.schema[b] for b in by})


def _groups(df: pl.DataFrame, by: Sequence[str]):
    """``(key_dict, part)`` per group of ``by`` in sorted order (one group if no ``by``)."""
    if not by:
        yield {}, df
        return
    for key, part in df.sort(list(by), nulls_last=True).group_by(list(by), maintain_order=True):
        yield dict(zip(by, key, strict=True)), part


def _ci_frame(rows: list[dict], keys: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=keys | _CI, orient="row")


# -- run settings and stages -----------------------------------------------------------
def base_condition(df: pl.DataFrame, *, except_: Sequence[str] = (), memory: str = "cross") -> pl.DataFrame:
    """Rows of runs in the reference condition (negotiated ``ballots`` schedule,
    ``fixed`` bids, ``memory`` horizon (default ``cross``, the paper's baseline), equal
    budgets, equal deadlines, no reasoning effort), optionally not constraining the
    settings named in ``except_`` (e.g. ``("memory",)``). Needs the :func:`run_settings`
    columns. Other settings (workers, deadlines, ...) are not constrained: the metrics
    refuse to pool runs that differ in them (module docstring)."""
    _need(df, ("scheduler", "mechanism", "memory", "rich_worker_budget", "mixed_deadlines", "reasoning_effort"),
          "settings-joined")
    conds = {"scheduler": pl.col("scheduler") == "ballots", "mechanism": pl.col("mechanism") == "fixed",
             "memory": pl.col("memory") == memory, "rich_worker_budget": pl.col("rich_worker_budget").is_null(),
             "mixed_deadlines": ~pl.col("mixed_deadlines"), "reasoning_effort": pl.col("reasoning_effort") == "default"}
    keep = pl.lit(True)
    for k, c in conds.items():
        if k not in except_:
            keep = keep & c
    return df.filter(keep)


def assign_stages(df: pl.DataFrame, n_stages: int = 3, *, col: str = "contention") -> pl.DataFrame:
    """Add ``stage`` (1..``n_stages``): each run's distinct ``col`` values in order,
    cut into equal blocks: ``stage = floor(rank * n_stages / n_distinct) + 1`` with
    ``rank`` 0-based. A run with fewer contentions than stages leaves later stages
    empty.

    Raises:
        ValueError: ``n_stages`` < 1 or a needed column is missing.
    """
    if n_stages < 1:
        raise ValueError(f"n_stages must be >= 1, got {n_stages}")
    _need(df, ("run_id", col), "stages input")
    order = (
        df.select("run_id", col).unique().sort("run_id", col)
        .with_columns(
            pl.col(col).rank("dense").over("run_id").cast(pl.Int64).alias("_rank"),
            pl.col(col).n_unique().over("run_id").cast(pl.Int64).alias("_n"),
        )
        .with_columns((((pl.col("_rank") - 1) * n_stages) // pl.col("_n") + 1).cast(pl.Int64).alias("stage"))
        .select("run_id", col, "stage")
    )
    return df.drop("stage", strict=False).join(order, on=["run_id", col], how="left")


# -- presentation ----------------------------------------------------------------------
def relational_kind(category: str, relational: set[str] | Sequence[str]) -> str:
    """The paper's Table 1 grouping of a taxonomy category: ``relational``,
    ``non-relational``, or ``any relational`` for the ``relational`` summary row."""
    if category == "relational":
        return "any relational"
    return "relational" if category in set(relational) else "non-relational"
