"""SCARCE metrics per tenure: newcomers against incumbents, before and after a join.

Tenures, periods and the metrics (:func:`tenure_metrics`): the method of
:func:`~scarce_lab.environments.scarce.analysis.findings.tenure_outcomes`. Intervals:
:data:`TENURE_INTERVALS`, clipped to ``[0, 1]`` for the rate and the score. Every row
carries ``n`` (worker-subruns or contentions) and ``runs``. Never pooled: :func:`~scarce_lab.analysis.pooling.check_no_pooling`
refuses a group that mixes conditions (two compositions or two joins settings differ in
``seats`` / ``joins``), or models when ``model`` is not in ``by``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl

from scarce_lab.analysis.pooling import check_no_pooling

from .base import NON_NEGATIVE, SHARE, _ci_frame, _groups, _need, cluster_ci

#: Tenure labels: workers in the run's ``joins``, and the others.
TENURES: tuple[str, ...] = ("incumbent", "newcomer")
#: Period labels: subruns before the run's first join, from it on, or a run without joins.
PERIODS: tuple[str, ...] = ("before_join", "after_join", "no_join")
#: The metrics of :func:`tenure_metrics` and whether each is a share (bounds [0, 1]).
TENURE_METRICS: dict[str, bool] = {
    "deadline_miss_rate": True, "mean_partial_score": True, "mean_wait_s": False, "payment_per_subrun": False,
}
#: The interval method the result states.
TENURE_INTERVALS = "95% t interval over run means (runs are the unit); none from one run"


def _joins(settings: str | None) -> dict[str, int]:
    if not settings:
        return {}
    j = json.loads(settings).get("joins") or {}
    return {str(w): int(k) for w, k in j.items()}


def with_tenure(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (rows with ``settings``, ``worker`` and ``subrun``) with ``tenure``
    (:data:`TENURES`) and ``period`` (:data:`PERIODS`) from each run's ``joins``
    condition setting.

    Raises:
        ValueError: a column is missing.
    """
    _need(df, ("settings", "worker", "subrun"), "tenure")
    rows = df.select("settings", "worker", "subrun").unique().rows()
    mapping = []
    for settings, worker, subrun in rows:
        joins = _joins(settings)
        tenure = "newcomer" if worker in joins else "incumbent"
        period = "no_join" if not joins else ("before_join" if subrun < min(joins.values()) else "after_join")
        mapping.append({"settings": settings, "worker": worker, "subrun": subrun, "tenure": tenure, "period": period})
    m = pl.DataFrame(mapping, schema={"settings": pl.String, "worker": pl.String, "subrun": pl.Int64,
                                      "tenure": pl.String, "period": pl.String}, orient="row")
    base = df.drop("tenure", "period", strict=False).with_columns(pl.col("subrun").cast(pl.Int64))
    return base.join(m, on=["settings", "worker", "subrun"], how="left", nulls_equal=True)


def tenure_metrics(submissions: pl.DataFrame, contentions: pl.DataFrame, *,
                   by: Sequence[str] = ("model", "condition"), per_worker: bool = False) -> pl.DataFrame:
    """Deadline misses, partial scores, waiting times and payments per tenure (module
    docstring): one row per group of ``by`` (+ ``worker`` when ``per_worker``) x
    ``tenure`` x ``period`` x ``metric``, with ``value``, ``lo``, ``hi``, ``n``, ``runs``,
    ``se`` and ``ci_method``.

    Args:
        submissions, contentions: the SCARCE tidy tables (``ds.scarce.submissions``,
            ``ds.scarce.contentions``).
        by: grouping columns; keep ``condition`` in it (conditions are never pooled).
        per_worker: one row per worker too.

    Raises:
        ValueError: a column is missing.
        PoolingError: a group mixes conditions or models.
    """
    keys = [*by, *(["worker"] if per_worker else []), "tenure", "period"]
    _need(submissions, ("run_id", "subrun", "worker", "settings", "score", "deadline_missed", *by), "submissions")
    _need(contentions, ("run_id", "subrun", "worker", "settings", "wait_s", "payment", *by), "contentions")
    subs, cons = with_tenure(submissions), with_tenure(contentions)
    check_no_pooling(subs, keys, what="tenure_metrics")
    check_no_pooling(cons, keys, what="tenure_metrics")
    paid = cons.group_by("run_id", "subrun", "worker").agg(pl.col("payment").fill_null(0).sum().alias("_paid"))
    subs = subs.join(paid, on=["run_id", "subrun", "worker"], how="left").with_columns(
        pl.col("deadline_missed").cast(pl.Float64).alias("deadline_miss_rate"),
        pl.col("score").cast(pl.Float64).alias("mean_partial_score"),
        pl.col("_paid").fill_null(0).cast(pl.Float64).alias("payment_per_subrun"),
    )
    cons = cons.with_columns(pl.col("wait_s").cast(pl.Float64).alias("mean_wait_s"))
    rows = []
    for metric, share in TENURE_METRICS.items():
        frame = cons if metric == "mean_wait_s" else subs
        for base, part in _groups(frame, keys):
            rows.append(base | {"metric": metric} | cluster_ci(part, metric, bounds=SHARE if share else NON_NEGATIVE))
    schema = {k: subs.schema[k] for k in keys} | {"metric": pl.String}
    return _ci_frame(rows, schema).with_columns(pl.lit(TENURE_INTERVALS, dtype=pl.String).alias("ci_method"))


__all__ = ["PERIODS", "TENURES", "TENURE_INTERVALS", "TENURE_METRICS", "tenure_metrics", "with_tenure"]
