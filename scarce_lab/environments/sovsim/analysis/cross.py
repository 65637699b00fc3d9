"""SovSim cross-model results: the frames of the finding
:func:`~.paper.cross_model_results` (its docstring holds the method) and of ``sl.table``
/ ``scarce-lab table sovsim PATH --format json`` (``sovsim_cross_<name>``), from the
per-simulation frame of :func:`~.metrics.simulation_metrics`.

Every function first checks, like Table 1, that it pools only runs of one condition
(:func:`~.pooling.pool_groups` per model, then :func:`~.pooling.cross_model_groups`
across models: models may differ only in their model settings, ``llm.*``) unless
``force``. Means over models are over :func:`models_under_study`; the bootstraps (one
model's drop, the correlation's over models) are seeded (``seed``), 95% percentile
intervals.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from scarce_lab.analysis import stats
from scarce_lab.data.schema import calls_no_model
from scarce_lab.undefined import or_none

from .drops import baseline_pair, condition_key
from .metrics import leader_rate_vs_survival
from .pooling import Grouping, check_same_settings, cross_model_groups, pool_groups

#: Per-simulation column of each metric whose relative drop is reported, and its name.
DROP_METRICS = {"survival_rate": "survived", "total_gain": "total_payoff"}

_Q = (0.025, 0.975)


def cross_model_drops(
    per_sim: pl.DataFrame, *, baseline: str = "cpr", n_boot: int = 2000, seed: int = 0,
    by: Grouping = "condition", force: bool = False,
) -> pl.DataFrame:
    """Mean over models of the relative drop from ``baseline``, per condition and metric
    (method: :func:`~.paper.cross_model_results`). CI: t over the models' drops (a
    bootstrap over 2-6 models undercovers); one model: :func:`stats.relative_drop_ci`.

    Returns one row per (metric, condition): ``metric`` (``survival_rate`` |
    ``total_gain``), ``condition``, ``base_condition``, ``baseline_condition``, ``mean``
    (mean over the models with a drop, as a fraction: 0.867 = 86.7%), ``ci_low``,
    ``ci_high``, ``n_models``, ``models``, ``drops`` (per-model drops, in ``models``
    order), ``models_undefined`` (models without a drop: zero CPR mean or no CPR run with
    the same settings).

    Raises:
        PoolingError: the runs of one condition differ in settings across models (not ``force``).
    """
    d = pool_groups(per_sim, by, keys=("model",), force=force, what="cross-model mean")
    d = cross_model_groups(d, by, force=force, what="cross-model mean")
    rng = np.random.default_rng(seed)
    rows = []
    cross = d.filter(pl.col("base_condition") != baseline).select("cross_condition", "base_condition").unique().rows()
    for metric, col in DROP_METRICS.items():
        for xcond, base in sorted(cross, key=lambda p: (condition_key(p[1]), p[0])):
            models, drops, undefined, base_lab = [], [], [], None
            b_one = o_one = np.array([])
            units = d.filter(pl.col("cross_condition") == xcond).select("model", "condition").unique().sort("model", "condition")
            several = units["model"].is_duplicated()
            for (model, cond), dup in zip(units.rows(), several, strict=True):
                name = f"{model} ({cond})" if dup else model
                lab, b, other = baseline_pair(d.filter(pl.col("model") == model), cond, base, baseline, col)
                if not b.size or not other.size or b.mean() == 0:
                    undefined.append(name)
                    continue
                base_lab = base_lab or d.filter(pl.col("condition") == lab)["cross_condition"][0]
                models.append(name)
                drops.append(float((b.mean() - other.mean()) / b.mean()))
                b_one, o_one = b, other
            mean = lo = hi = None
            if len(drops) == 1:
                mean = drops[0]
                _, blo, bhi = stats.relative_drop_ci(b_one, o_one, n_resamples=n_boot, rng=rng)
                lo, hi = or_none(blo), or_none(bhi)
            elif drops:
                # t over the models' drops (each model counts once, like runs in the SCARCE tables)
                mean, tlo, thi = stats.mean_ci(drops)
                if not stats.near_constant(drops):
                    lo, hi = or_none(tlo), min(1.0, thi)  # a drop of a non-negative mean is at most 1
            rows.append({"metric": metric, "condition": xcond, "base_condition": base, "baseline_condition": base_lab,
                         "mean": mean, "ci_low": lo, "ci_high": hi, "n_models": len(models), "models": models,
                         "drops": drops, "models_undefined": undefined})
    schema = {"metric": pl.String, "condition": pl.String, "base_condition": pl.String,
              "baseline_condition": pl.String, "mean": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "n_models": pl.Int64, "models": pl.List(pl.String), "drops": pl.List(pl.Float64),
              "models_undefined": pl.List(pl.String)}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _role_frame(per_sim: pl.DataFrame) -> pl.DataFrame:
    """Long frame: one row per simulation and role with its over-usage share."""
    keys = ("model", "condition", "cross_condition", "base_condition", "run_id")
    parts = [(~pl.col("has_leader"), "symmetric", "overuse_subordinates"),
             (pl.col("has_leader"), "subordinate", "overuse_subordinates"),
             (pl.col("has_leader"), "leader", "overuse_leader")]
    return pl.concat([per_sim.filter(where).select(*keys, pl.lit(role).alias("role"), pl.col(col).alias("overuse"))
                      for where, role, col in parts]).drop_nulls("overuse")


def overuse_by_role(
    per_sim: pl.DataFrame, *, n_boot: int = 2000, seed: int = 0, by: Grouping = "condition", force: bool = False
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Over-usage split by role (the SovSim paper: "8.9% for symmetric agents vs up to
    100% for dominant agents").

    Returns ``(per_model, across)``. ``per_model``: ``model, condition, cross_condition,
    base_condition, role, n, mean, ci_low, ci_high`` (role ``symmetric`` in conditions without a leader; ``subordinate``
    and ``leader`` otherwise; mean over simulations of each simulation's share of that
    role's agent-rounds above ``P_t / (g n)``; t CI). ``across`` (per cross-model
    condition, i.e. without model settings): ``condition, role,
    n_models, mean`` (mean over models), ``ci_low, ci_high`` (t interval over the
    models' means, clipped to [0, 1]; none from one model or models that all agree),
    ``min``, ``max``, ``max_model``.

    Raises:
        PoolingError: as :func:`cross_model_drops`.
    """
    d = pool_groups(per_sim, by, keys=("model",), force=force, what="cross-model over-usage")
    d = cross_model_groups(d, by, force=force, what="cross-model over-usage")
    long = _role_frame(d)
    order = {"symmetric": 0, "subordinate": 1, "leader": 2}
    rows = []
    for (model, cond, xcond, base, role), g in long.group_by("model", "condition", "cross_condition", "base_condition",
                                                              "role"):
        m, lo, hi = stats.mean_ci_cells(g["overuse"].to_list())
        rows.append({"model": model, "condition": cond, "cross_condition": xcond, "base_condition": base, "role": role,
                     "n": g.height,
                     "mean": m, "ci_low": None if lo is None else max(0.0, lo), "ci_high": None if hi is None else min(1.0, hi)})
    schema = {"model": pl.String, "condition": pl.String, "cross_condition": pl.String, "base_condition": pl.String,
              "role": pl.String, "n": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    per_model = pl.DataFrame(rows, schema=schema, orient="row")
    per_model = per_model.sort(
        pl.col("base_condition").map_elements(lambda c: condition_key(c)[0], return_dtype=pl.Int64), "cross_condition",
        pl.col("role").replace_strict(order, return_dtype=pl.Int64), "model")
    across = []
    for (cond, role), g in per_model.group_by("cross_condition", "role", maintain_order=True):
        v = g["mean"].to_numpy()
        _, lo, hi = stats.mean_ci(v)  # t over the models' means (a bootstrap over 2-6 models undercovers)
        lo, hi = (None, None) if math.isnan(lo) or stats.near_constant(v) else (max(0.0, lo), min(1.0, hi))
        top = g.sort("mean", descending=True).row(0, named=True)
        across.append({"condition": cond, "role": role, "n_models": v.size, "mean": float(v.mean()), "ci_low": lo,
                       "ci_high": hi, "min": float(v.min()), "max": float(v.max()), "max_model": top["model"]})
    schema = {"condition": pl.String, "role": pl.String, "n_models": pl.Int64, "mean": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "min": pl.Float64, "max": pl.Float64,
              "max_model": pl.String}
    return per_model, pl.DataFrame(across, schema=schema, orient="row")


def _pearson_with_model_boot(x: np.ndarray, y: np.ndarray, model: np.ndarray, n_boot: int,
                             rng: np.random.Generator) -> dict:
    r, lo, hi, p = (or_none(v) for v in stats.pearson_ci(x, y))
    out = {"n": int(x.size), "n_models": int(np.unique(model).size), "r": r, "r2": None if r is None else r * r,
           "ci_low": lo, "ci_high": hi, "p": p, "boot_ci_low": None, "boot_ci_high": None}
    models = np.unique(model)
    # a bootstrap that resamples whole models is a cluster bootstrap: with fewer than
    # MIN_RUNS_CLUSTER_BOOTSTRAP clusters it undercovers (benchmarks/bench_coverage.py)
    if r is None or models.size < max(3, stats.MIN_RUNS_CLUSTER_BOOTSTRAP):
        return out
    idx = [np.flatnonzero(model == m) for m in models]
    reps = []
    for pick in rng.integers(0, models.size, (n_boot, models.size)):
        rows = np.concatenate([idx[i] for i in pick])
        a, b = x[rows], y[rows]
        if a.size >= 3 and np.ptp(a) > 0 and np.ptp(b) > 0:
            reps.append(np.corrcoef(a, b)[0, 1])
    if reps:
        out["boot_ci_low"], out["boot_ci_high"] = (float(q) for q in np.quantile(reps, _Q))
    return out


def leader_survival_across_models(
    per_sim: pl.DataFrame, *, n_boot: int = 2000, seed: int = 0, by: Grouping = "condition", force: bool = False
) -> pl.DataFrame:
    """Pearson r, R^2 (Fisher-z 95% CI, p) and a bootstrap CI over models, between
    leader extraction rate and survival, pooling every model and leader condition.

    Two rows, one per unit: ``cells`` (one point per model x condition with a leader:
    x = mean leader extraction rate over its simulations, y = its survival rate) and
    ``simulations`` (x = the simulation's leader extraction rate, y = its survival time
    in rounds). Columns ``unit, x, y, n, n_models, r, r2, ci_low, ci_high, p,
    boot_ci_low, boot_ci_high`` (the bootstrap resamples whole models with their
    points; null with fewer than :data:`stats.MIN_RUNS_CLUSTER_BOOTSTRAP` models: a
    cluster bootstrap over fewer clusters undercovers). Per-model values:
    :func:`~scarce_lab.environments.sovsim.analysis.metrics.leader_rate_vs_survival`.

    Raises:
        PoolingError: as :func:`cross_model_drops`.
    """
    d = pool_groups(per_sim, by, keys=("model",), force=force, what="cross-model correlation")
    sims = d.filter(pl.col("leader_extraction_rate").is_not_null())
    check_same_settings(sims, force=force, what="cross-model correlation")
    cells = sims.group_by("model", "condition").agg(
        pl.col("leader_extraction_rate").mean(), pl.col("survived").cast(pl.Float64).mean().alias("survival_rate")
    ).sort("model", "condition")
    rng = np.random.default_rng(seed)
    rows = [
        {"unit": "cells", "x": "mean leader extraction rate of a model x condition cell",
         "y": "survival rate of the cell"}
        | _pearson_with_model_boot(cells["leader_extraction_rate"].to_numpy(), cells["survival_rate"].to_numpy(),
                                   cells["model"].to_numpy(), n_boot, rng),
        {"unit": "simulations", "x": "leader extraction rate of a simulation", "y": "survival time (rounds)"}
        | _pearson_with_model_boot(sims["leader_extraction_rate"].cast(pl.Float64).to_numpy(),
                                   sims["survival_time"].cast(pl.Float64).to_numpy(), sims["model"].to_numpy(),
                                   n_boot, rng),
    ]
    schema = {"unit": pl.String, "x": pl.String, "y": pl.String, "n": pl.Int64, "n_models": pl.Int64,
              "r": pl.Float64, "r2": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "p": pl.Float64,
              "boot_ci_low": pl.Float64, "boot_ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def models_under_study(per_sim: pl.DataFrame, models=None) -> tuple[list[str], list[str]]:
    """``(models, baselines)``: the models a cross-model mean is over, and the scripted
    baselines and people (``human/<name>``) left out of it (rows of their own in Table
    1, never members of the mean).

    ``models``: the user's list; when given it is used as it is (a baseline the user
    names is included). When None, every model of ``per_sim`` that calls a model (not a
    scripted policy nor a person: :func:`~scarce_lab.data.schema.calls_no_model`).

    Raises:
        ValueError: a named model is not in ``per_sim``.
    """
    present = sorted(set(per_sim["model"].to_list()))
    if models is not None:
        missing = sorted(set(models) - set(present))
        if missing:
            raise ValueError(f"cross-model results: models {missing} are not in the data (present: {present})")
        return sorted(set(models)), []
    return [m for m in present if not calls_no_model(m)], [m for m in present if calls_no_model(m)]


def cross_model_results(
    per_sim: pl.DataFrame, *, baseline: str = "cpr", n_boot: int = 2000, seed: int = 0,
    by: Grouping = "condition", force: bool = False, models=None,
) -> dict[str, pl.DataFrame]:
    """All cross-model results: ``relative_drop``, ``overuse_by_role`` (across models),
    ``overuse_by_role_per_model``, ``leader_rate_vs_survival`` (across models),
    ``leader_rate_vs_survival_per_model`` (frames of the functions above) and
    ``models`` (one row per model of the data: ``model``, ``in_mean`` (bool),
    ``why``); the means are over :func:`models_under_study` (module docstring).
    """
    kw = {"n_boot": n_boot, "seed": seed, "by": by, "force": force}
    used, baselines = models_under_study(per_sim, models)
    studied = per_sim.filter(pl.col("model").is_in(used))
    per_model, across = overuse_by_role(studied, **kw)
    present = sorted(set(per_sim["model"].to_list()))
    why = {m: ("in the mean" if m in used else
               "scripted baseline: a row of its own, not a model under study" if m in baselines else
               "not named in models") for m in present}
    return {
        "relative_drop": cross_model_drops(studied, baseline=baseline, **kw),
        "overuse_by_role": across,
        "overuse_by_role_per_model": per_model,
        "leader_rate_vs_survival": leader_survival_across_models(studied, **kw),
        "leader_rate_vs_survival_per_model": leader_rate_vs_survival(per_sim),
        "models": pl.DataFrame({"model": present, "in_mean": [m in used for m in present],
                                "why": [why[m] for m in present]},
                               schema={"model": pl.String, "in_mean": pl.Boolean, "why": pl.String}),
    }


# -- markdown ---------------------------------------------------------------------------
def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _ci(lo: float | None, hi: float | None, pct: bool = True) -> str:
    if lo is None or hi is None:
        return ""
    return f" [{_pct(lo)}, {_pct(hi)}]" if pct else f" [{lo:.2f}, {hi:.2f}]"


def format_cross(cross: dict[str, pl.DataFrame]) -> str:
    """Markdown of :func:`cross_model_results`: three small tables with their units."""
    out = []
    if "models" in cross:
        mods = cross["models"]
        used = mods.filter(pl.col("in_mean"))["model"].to_list()
        left = mods.filter(~pl.col("in_mean"))
        out += [f"Means across models are over {len(used)} model(s): {', '.join(used) or 'none'}."
                + ("" if left.height == 0 else " Left out: " + "; ".join(
                    f"{r['model']} ({r['why']})" for r in left.iter_rows(named=True)) + "."), ""]
    out += ["### Cross-model: relative drop from CPR (mean over models)", "",
           "| Metric | Condition | Mean drop [95% CI] | Models | Per model | No drop (CPR mean 0 or absent) |",
           "|---|---|---|---|---|---|"]
    for r in cross["relative_drop"].iter_rows(named=True):
        per = ", ".join(f"{m} {_pct(v)}" for m, v in zip(r["models"], r["drops"], strict=True))
        out.append(f"| {r['metric']} | {r['condition']} | {_pct(r['mean'])}{_ci(r['ci_low'], r['ci_high'])} | "
                   f"{r['n_models']} | {per} | {', '.join(r['models_undefined']) or '–'} |")
    out += ["", "Drop = (CPR mean - condition mean) / CPR mean per model, CPR run with the same settings; "
            "CI: t interval over the models' drops (one model: percentile bootstrap over simulations, given from "
            f"{stats.MIN_RUNS_DROP} simulations per condition on).", "",
            "### Cross-model: over-usage by role", "",
            "| Condition | Role | Mean over models [95% CI] | Min | Max (model) | Models |", "|---|---|---|---|---|---|"]
    for r in cross["overuse_by_role"].iter_rows(named=True):
        out.append(f"| {r['condition']} | {r['role']} | {_pct(r['mean'])}{_ci(r['ci_low'], r['ci_high'])} | "
                   f"{_pct(r['min'])} | {_pct(r['max'])} ({r['max_model']}) | {r['n_models']} |")
    out += ["", "Share of a role's agent-rounds with z > P/(g n); symmetric = agents of a condition without a "
            "leader. CI: t interval over the models' means.", "",
            "### Cross-model: leader extraction rate vs survival", "",
            "| Unit | x | y | n (models) | r [Fisher 95% CI] | R^2 | p | r bootstrap CI over models |",
            "|---|---|---|---|---|---|---|---|"]
    for r in cross["leader_rate_vs_survival"].iter_rows(named=True):
        rv = "undefined" if r["r"] is None else f"{r['r']:.2f}{_ci(r['ci_low'], r['ci_high'], pct=False)}"
        r2 = "–" if r["r2"] is None else f"{r['r2']:.2f}"
        p = "–" if r["p"] is None else f"{r['p']:.3g}"
        out.append(f"| {r['unit']} | {r['x']} | {r['y']} | {r['n']} ({r['n_models']}) | {rv} | {r2} | {p} | "
                   f"{_ci(r['boot_ci_low'], r['boot_ci_high'], pct=False).strip() or '–'} |")
    return "\n".join(out) + "\n"
