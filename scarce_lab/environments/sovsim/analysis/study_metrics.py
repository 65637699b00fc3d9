"""SovSim's metrics for a study report (:mod:`scarce_lab.studies.report`), per model and
condition, from Table 1's summary (:func:`~.metrics.summarize`, its values and
intervals) and the over-usage by role (:func:`~.cross.cross_model_results`), never
recomputed here. Names: the Table 1 metrics (``survival_time``, ``survival_rate``,
``total_payoff``, ``efficiency``, ``equality``, ``overuse``, ``leader_extraction_rate``,
``defection_onset``, ``misreport``, ``survival_drop``) and ``overuse_symmetric`` / ``overuse_leader`` /
``overuse_subordinate`` (share of a role's agent-rounds above the sustainable share).
Works on our runs and on the published layouts (the authors' trajectories, GovSim logs:
their preset is fitted to the data, :func:`~.conventions.resolve_convention`).

Each row states its interval's kind (``interval``: :data:`scarce_lab.analysis.stats.INTERVAL_KINDS`,
:func:`~.metrics.interval_kind`); :data:`INTERVALS` is the kind under the SovSim preset
(our runs), what ``study_metrics(None)`` declares.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

TABLE1 = ("survival_time", "survival_rate", "total_payoff", "efficiency", "equality", "overuse",
          "leader_extraction_rate", "defection_onset", "misreport", "survival_drop")
ROLES = {"symmetric": "overuse_symmetric", "leader": "overuse_leader", "subordinate": "overuse_subordinate"}
METRICS = (*TABLE1, *ROLES.values())
COLUMNS = {"metric": pl.String, "model": pl.String, "condition": pl.String, "settings": pl.String,
           "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n_runs": pl.Int64, "why": pl.String,
           "interval": pl.String}


def _intervals() -> dict[str, str]:
    from .conventions import PRESETS
    from .metrics import interval_kind

    return {m: interval_kind(m, PRESETS["sovsim"]) for m in TABLE1} | dict.fromkeys(ROLES.values(), "t")


#: ``{metric: interval kind}`` under the SovSim preset (the over-usage by role: t over simulations).
INTERVALS: dict[str, str] = _intervals()


def _settings(row: dict[str, Any]) -> str:
    s = json.loads(row["settings"]) if row.get("settings") else {}
    return json.dumps({"condition": row["condition"], "model": row["model"], **s}, sort_keys=True)


def study_metrics(ds: Any, *, labels: Any = None, preset: str | None = None) -> pl.DataFrame | dict[str, str]:
    """The report rows of ``ds`` (``metric, model, condition, settings, estimate,
    ci_low, ci_high, n_runs, why, interval``; ``n_runs`` the finished simulations; ``settings``
    the condition's settings as JSON, ``condition`` among them; ``interval`` the kind of
    the printed interval); with ``ds=None`` the names it computes with their interval
    kinds (:data:`INTERVALS`). ``labels`` is not used (SovSim's numbers need none).
    ``preset``: ``sovsim`` or ``govsim`` (default: ``govsim`` for a GovSim log layout,
    else ``sovsim``).

    Raises:
        PresetMismatchError, EmptyTableError, PoolingError: as Table 1
            (:func:`~.paper.table`).
    """
    if ds is None:
        return dict(INTERVALS)
    from scarce_lab.analysis.pooling import PoolingError

    from .cross import cross_model_results
    from .metrics import interval_kind, summarize
    from .paper import _study

    preset = preset or ("govsim" if "govsim" in (getattr(ds, "layout", "") or "") else "sovsim")
    _, conv, per_sim, _ = _study(ds, preset, False, False, None)
    summary = summarize(per_sim, conv=conv)
    rows = []
    for r in summary.iter_rows(named=True):
        for m in TABLE1:
            if f"{m}_mean" not in r:
                continue
            lo, status = r[f"{m}_ci_low"], r.get(f"{m}_status") or ""
            why = "" if lo is not None else f"no 95% interval ({status or 'the table prints none at this count'})"
            rows.append({"metric": m, "model": r["model"], "condition": r["condition"], "settings": _settings(r),
                         "estimate": r[f"{m}_mean"], "ci_low": lo, "ci_high": r[f"{m}_ci_high"],
                         "n_runs": r.get(f"{m}_n") or r["n"], "why": why, "interval": interval_kind(m, conv)})
    settings = {(r["model"], r["condition"]): _settings(r) for r in summary.iter_rows(named=True)}
    every = sorted(per_sim["model"].unique().to_list())  # scripted baselines too: each model is its own row
    try:
        roles = cross_model_results(per_sim, models=every)["overuse_by_role_per_model"]
    except PoolingError as exc:  # e.g. cross-play compositions: the by-role figures would pool them
        for (model, condition), s in settings.items():
            rows += [{"metric": m, "model": model, "condition": condition, "settings": s, "estimate": None,
                      "ci_low": None, "ci_high": None, "n_runs": 0, "why": f"not computed here: {exc}"[:400],
                      "interval": INTERVALS[m]}
                     for m in ROLES.values()]
        return pl.DataFrame(rows, schema=COLUMNS, orient="row")
    for r in roles.iter_rows(named=True):
        if r["role"] in ROLES and (r["model"], r["condition"]) in settings:
            rows.append({"metric": ROLES[r["role"]], "model": r["model"], "condition": r["condition"],
                         "settings": settings[(r["model"], r["condition"])], "estimate": r["mean"],
                         "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n_runs": r["n"],
                         "why": "" if r["ci_low"] is not None else "no 95% interval at this count",
                         "interval": INTERVALS[ROLES[r["role"]]]})
    return pl.DataFrame(rows, schema=COLUMNS, orient="row")
