"""Economy of Minds' metrics for a study report (:mod:`scarce_lab.studies.report`), per
model and condition, from the ablation table (:func:`~.metrics.ablation_table`: its
values and t intervals over seeds), never recomputed here. Names:
``eval`` (the frozen-evaluation solve rate: the paper's per-task accuracy),
``last_fifth`` and ``first_fifth`` (the solve rate over that fifth of training). A task is a
setting (``task``), so a paper number names its task with ``where``. Every interval is the
bounded interval over seeds of a rate in [0, 1] (kind ``bounded``, :data:`INTERVALS`:
:func:`~.metrics.clipped_mean_ci`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

COLUMNS = {"metric": pl.String, "model": pl.String, "condition": pl.String, "estimate": pl.Float64,
           "ci_low": pl.Float64, "ci_high": pl.Float64, "n_runs": pl.Int64, "why": pl.String,
           "interval": pl.String}
PARTS = {"eval": "eval", "last_fifth": "last_fifth", "first_fifth": "first_fifth"}
METRICS = tuple(PARTS.values())
#: ``{metric: interval kind}`` (:data:`scarce_lab.analysis.stats.INTERVAL_KINDS`).
INTERVALS: dict[str, str] = dict.fromkeys(METRICS, "bounded")


def study_metrics(ds: Any, *, labels: Any = None) -> pl.DataFrame | dict[str, str]:
    """The report rows of ``ds`` (``metric, model, condition, estimate, ci_low,
    ci_high, n_runs, why, interval, run_id``: one run of the condition, for its settings; complete runs only, as the ablation table); with
    ``ds=None`` the names it computes with their interval kinds (:data:`INTERVALS`). ``labels`` is not used.

    Raises:
        ValueError: no Economy of Minds episode or no complete run in ``ds``.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    if ds is None:
        return dict(INTERVALS)
    from . import _complete_episodes
    from .metrics import ablation_table

    eps = _complete_episodes(ds)
    table = ablation_table(eps)
    models = eps.group_by("task", "condition").agg(pl.col("model").first())
    rows = []
    for r in table.join(models, on=["task", "condition"], how="left").iter_rows(named=True):
        for part, name in PARTS.items():
            if r[part] is None:
                continue
            why = "" if r[f"{part}_lo"] is not None else "no 95% interval: none from one run (bounded interval over seeds)"
            rows.append({"metric": name, "model": r["model"], "condition": r["condition"], "estimate": r[part],
                         "ci_low": r[f"{part}_lo"], "ci_high": r[f"{part}_hi"], "n_runs": r["n_runs"], "why": why,
                         "interval": INTERVALS[name]})
    first = eps.select("condition", "run_id").unique(subset=["condition"], keep="first")
    return pl.DataFrame(rows, schema=COLUMNS, orient="row").join(first, on="condition", how="left")
