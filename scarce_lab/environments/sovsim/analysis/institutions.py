"""Institutions in the commons as a finding: survival, the pool, payoffs and equality by
institution arm (:func:`institution_outcomes`), from the ``round``, ``game_end``,
``sanctions``, ``quota`` and ``election`` events of a
:class:`~scarce_lab.data.loaders.Dataset` (the institutions:
:mod:`scarce_lab.environments.sovsim.world.institutions`).

A run's institution arm is its recorded settings (:func:`institution_arm`): ``none``
(every institution off: the paper's game) or the ones on, e.g.
``sanctions+quota=leader+elections=1``. Groups are (model, base condition, arm);
an ablation (one institution removed) is its own arm, never pooled with another.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from scarce_lab.analysis.charts import ci_chart
from scarce_lab.analysis.findings import Finding, finding, finding_function
from scarce_lab.analysis.readings import describe_extremes
from scarce_lab.analysis.stats import bounded_mean_ci, gini, mean_ci_cells, proportion_ci
from scarce_lab.undefined import or_none

from .metrics import agent_rounds, require_dataset
from .pooling import PoolingError, differing_settings
from .talk import settings_object

_GROUP = ("model", "base_condition", "institutions")
#: The institution settings and their defaults (the world's INSTITUTION_FIELDS; analysis reads
#: datasets only, so the names are repeated here and checked against the config by a test).
_DEFAULTS = {"sanctions": False, "sanction_cost": 1, "sanction_impact": 3, "sanction_max_points": 10,
             "quota": "off", "elections": 0}
#: The outcomes of :func:`institution_outcomes`, in the layout's column order.
OUTCOMES = ["survival_time", "survival_rate", "mean_pool", "total_payoff", "equality", "punishment",
            "quota", "seat_moves"]
#: Outcomes that cannot be negative: their t interval is cut at 0 (net payoffs can be, under sanctions).
_NON_NEGATIVE = ("mean_pool", "punishment", "quota", "seat_moves")


def institution_arm(settings: str | None) -> str:
    """The institution arm of a run from its condition settings (JSON text): ``none``,
    or the institutions on joined by ``+`` (``sanctions`` with its parameters where they
    differ from 1:3 and 10 points, ``quota=<scope>``, ``elections=<k>``).

    Raises:
        ValueError: ``settings`` is not JSON text of an object (names the value).
    """
    if settings is None:
        return "none"
    d = settings_object(settings)
    s = {k: d.get(k, v) for k, v in _DEFAULTS.items()}
    parts = []
    if s["sanctions"]:
        extra = [f"{k.removeprefix('sanction_')}={s[k]}" for k in ("sanction_cost", "sanction_impact",
                                                                   "sanction_max_points") if s[k] != _DEFAULTS[k]]
        parts.append("sanctions" + (f"({','.join(extra)})" if extra else ""))
    if s["quota"] != "off":
        parts.append(f"quota={s['quota']}")
    if s["elections"]:
        parts.append(f"elections={s['elections']}")
    return "+".join(parts) or "none"


def _payloads(ds: Any, kind: str, cols: list[str]) -> pl.DataFrame:
    """``kind``'s payload columns (empty with those columns when no run has one)."""
    try:
        return ds.payloads(kind, "sovsim").select(["run_id", *cols]).collect()
    except (KeyError, ValueError, pl.exceptions.ColumnNotFoundError):
        return pl.DataFrame(schema={"run_id": pl.String, **dict.fromkeys(cols, pl.Float64)})


def _per_run(ds: Any) -> pl.DataFrame:
    """One row per run: its group, survival, mean pool, net payoffs and institution activity."""
    ar = agent_rounds(ds)
    runs = ar.group_by("run_id").agg(pl.col("model").first(), pl.col("base_condition").first(),
                                     pl.col("settings").first())
    rounds = _payloads(ds, "round", ["pool_before"]).group_by("run_id").agg(mean_pool=pl.col("pool_before").mean())
    end = _payloads(ds, "game_end", ["rounds_played", "collapsed", "total_payoffs"])
    sanc = _payloads(ds, "sanctions", ["received"]).group_by("run_id").agg(
        points=pl.col("received").list.sum().sum())
    quota = _payloads(ds, "quota", ["quota"]).group_by("run_id").agg(quota=pl.col("quota").mean())
    moves = _payloads(ds, "election", ["moved"]).group_by("run_id").agg(seat_moves=pl.col("moved").sum())
    df = (runs.join(end, on="run_id", how="inner").join(rounds, on="run_id", how="left")
          .join(sanc, on="run_id", how="left").join(quota, on="run_id", how="left")
          .join(moves, on="run_id", how="left"))
    rows = []
    for r in df.iter_rows(named=True):
        arm = institution_arm(r["settings"])
        settings = json.loads(r["settings"]) if r["settings"] else {}
        totals = [float(x) for x in r["total_payoffs"]]
        last = int(settings.get("game.rounds", 12))
        rows.append({
            **{k: r[k] for k in ("run_id", "model", "base_condition", "settings")}, "institutions": arm,
            "rounds": last, "survival_time": float(r["rounds_played"]),
            "survived": bool(r["rounds_played"] == last and not r["collapsed"]),
            "mean_pool": r["mean_pool"], "total_payoff": sum(totals),
            # 1 - Gini needs non-negative totals: a run where sanctions left an agent below 0 has none
            "equality": 1 - gini(totals) if min(totals) >= 0 else None,
            "punishment": r["points"] / r["rounds_played"] if "sanctions" in arm else None,
            "quota": r["quota"] if "quota=" in arm else None,
            "seat_moves": float(r["seat_moves"]) if "elections=" in arm and r["seat_moves"] is not None else None,
        })
    return pl.DataFrame(rows, infer_schema_length=None)


@finding_function("sovsim", "t interval over simulations (runs) for means, the bounded t/score hull for survival "
                             "time and equality; Clopper-Pearson for the survival rate")
def institution_outcomes(ds: Any) -> Finding:
    """Do sanctions, a voted quota and elected leaders change how long the commons lasts,
    how full the pool stays and how payoffs are split, each on its own and ablated?

    Per (model, base condition, institution arm; :func:`institution_arm`), mean and 95%
    interval over simulations (t, cut at 0 for a measure that cannot be negative;
    survival time and equality, bounded and piled at a bound, get
    :func:`~scarce_lab.analysis.stats.bounded_mean_ci` on ``[1, rounds]`` and ``[0, 1]``,
    as Table 1 does: the t interval undercovers there and ran past the last round) of: ``survival_time`` (rounds played), ``mean_pool`` (the
    pool at the start of a round, averaged over the rounds played), ``total_payoff`` (the
    agents' payoffs summed, net of sanctions: the ``game_end`` totals), ``equality``
    (1 - Gini of the agents' net totals; undefined in a run where sanctions left a total
    below 0, so its ``n`` counts the runs where it is defined), ``punishment``
    (punishment points assigned per round; sanctions arms only), ``quota`` (the mean
    voted quota, pool units; quota arms only), ``seat_moves`` (elections that moved the
    leader seat; elections arms only); and ``survival_rate`` (the game reached its last
    round without a collapse) with its Clopper-Pearson interval. ``none`` is the paper's
    game. An institution's metric is n/a in an arm without it, never 0.

    The finding's ``frame``: one row per group and ``metric``: ``value, lo, hi, se, n,
    runs, estimate``; its layout one column per metric; its chart the survival time by
    arm with its interval, a panel per base condition.

    Raises:
        PoolingError: a group holds runs whose condition settings differ (e.g. two
            populations of seats): compare them as separate conditions.
    """
    per = _per_run(require_dataset(ds))
    out = []
    for key, g in per.sort("run_id").group_by(list(_GROUP), maintain_order=True):
        settings = g["settings"].unique().to_list()
        if len(settings) > 1:
            raise PoolingError(f"group {dict(zip(_GROUP, key, strict=True))} would pool runs whose settings "
                               f"differ: {differing_settings(settings)}; compare them as separate conditions")
        group = dict(zip(_GROUP, key, strict=True)) | {"settings": settings[0], "runs": g.height}
        for m in ("survival_time", "mean_pool", "total_payoff", "equality", "punishment", "quota", "seat_moves"):
            vals = [v for v in g[m].to_list() if v is not None]
            if not vals:
                continue
            bounds = {"survival_time": (1.0, float(g["rounds"][0])), "equality": (0.0, 1.0)}.get(m)
            if bounds and bounds[0] < bounds[1]:  # bounded and piled at a bound: the t interval undercovers
                mean, lo, hi = (or_none(v) for v in bounded_mean_ci(vals, *bounds))
            else:
                mean, lo, hi = mean_ci_cells(vals)
            if m in _NON_NEGATIVE and lo is not None:
                lo = max(lo, 0.0)
            sd = pl.Series(vals).std() if len(vals) > 1 else None
            out.append(group | {"metric": m, "value": mean, "lo": lo, "hi": hi, "n": len(vals),
                                "se": sd / len(vals) ** 0.5 if sd is not None else None})
        rate, lo, hi = proportion_ci(int(g["survived"].sum()), g.height)
        out.append(group | {"metric": "survival_rate", "value": or_none(rate), "lo": or_none(lo), "hi": or_none(hi),
                            "n": g.height, "se": None})
    schema = {**{c: pl.String for c in _GROUP}, "settings": pl.String, "runs": pl.Int64, "metric": pl.String,
              "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64, "se": pl.Float64}
    values = pl.DataFrame(out, schema=schema).sort(*_GROUP)
    time = values.filter(pl.col("metric") == "survival_time")
    chart = None
    if time.height:  # "none" spelled out: the shared label book reads a bare "none" as SCARCE's memory setting
        arm = pl.when(pl.col("institutions") == "none").then(pl.lit("no institution")).otherwise(pl.col("institutions"))
        chart = ci_chart(time.with_columns(arm=arm, condition=pl.col("base_condition").str.to_uppercase()), "arm",
                         color="model" if time["model"].n_unique() > 1 else None, column="condition",
                         title="survival time by institution arm (no institution: the paper's game)",
                         y_title="survival time (rounds)", x_title="institution arm",
                         ci="95% bounded t/score hull over simulations", y_domain=(0.0, float(per["rounds"].max())),
                         x_sort=sorted({"no institution", *time["institutions"]} - {"none"},
                                       key=lambda a: (a != "no institution", a.count("+"), a)))
        chart = chart.resolve_scale(x="independent") if chart else chart  # each condition its own arms
    return finding("institution_outcomes", values, index=list(_GROUP), columns="metric", column_order=OUTCOMES,
                   chart=chart, reading=describe_extremes(time, list(_GROUP), "the survival time (rounds)") if time.height else "",
                   convention={"unit": "run (groups: model x base condition x institution arm, never pooled)",
                               "measure": "survival time and rate, mean pool, net total payoff, equality (1 - Gini "
                                          "of net totals), punishment points per round, voted quota, seat moves",
                               "intervals": "t over simulations, cut at 0 where a measure cannot be negative; "
                                            "bounded t/score hull for survival time and equality; Clopper-Pearson "
                                            "for the survival rate"})
