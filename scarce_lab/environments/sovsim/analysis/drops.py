"""Relative drops from the CPR baseline, per model (SovSim: survival rate and total
gain; the paper's degradation "relative to symmetric settings"): :func:`relative_drops`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from scarce_lab.analysis import stats

CONDITION_ORDER = ("cpr", "bcpr", "kcpr", "kcpr_m")


def condition_key(c: str) -> tuple[int, str]:
    """Sort key: the paper's condition order, then other labels alphabetically."""
    return (CONDITION_ORDER.index(c) if c in CONDITION_ORDER else len(CONDITION_ORDER), c)


def baseline_label(condition: str, base: str, baseline: str, labels: set[str]) -> str | None:
    """The baseline condition with the same other settings among ``labels``:
    ``kcpr,rounds=2`` -> ``cpr,rounds=2``; a pooled ``kcpr [pooled: ...]`` -> the CPR
    group of the same grouping. None when there is no such baseline."""
    if " [pooled" not in condition:
        target = baseline + condition[len(base):] if condition.startswith(base) else baseline
        if target in labels:
            return target
        if condition != base:
            return None
    same = [lab for lab in labels if lab == baseline or lab.startswith(baseline + " [pooled")]
    return same[0] if len(same) == 1 else None


def condition_values(m: pl.DataFrame, condition: str, value: str) -> np.ndarray:
    """The non-null ``value`` of every simulation of ``condition`` in ``m`` (one model's rows)."""
    return m.filter(pl.col("condition") == condition)[value].cast(pl.Float64).drop_nulls().to_numpy()


def baseline_pair(m: pl.DataFrame, condition: str, base: str, baseline: str,
                  value: str) -> tuple[str | None, np.ndarray, np.ndarray]:
    """One model's baseline run for ``condition`` (:func:`baseline_label`) and the
    :func:`condition_values` of both: ``(label, baseline values, condition values)``,
    the baseline's empty when there is no such run."""
    label = baseline_label(condition, base, baseline, set(m["condition"].to_list()))
    return label, condition_values(m, label, value) if label else np.array([]), condition_values(m, condition, value)


def relative_drops(
    per_sim: pl.DataFrame, value: str = "survived", baseline: str = "cpr", n_boot: int = 2000, seed: int = 0
) -> pl.DataFrame:
    """Relative drop of the mean of ``value`` from ``baseline`` to every other
    condition, per model: ``(mean_base - mean_c) / mean_base``.

    ``value``: ``survived`` (the survival rate) or ``total_payoff`` (total gain) or any
    numeric per-simulation column. Each condition is compared with the baseline run
    under the *same* other settings (:func:`baseline_label`: ``kcpr,rounds=2`` with
    ``cpr,rounds=2``, never a baseline of other settings); a condition without one gets
    status ``undefined``. Returns ``model, condition, base_condition,
    baseline_condition, baseline_mean, mean, drop, ci_low, ci_high, n_baseline, n,
    status`` (``ok`` | ``undefined``: zero baseline or none). The CI is a percentile
    bootstrap (:func:`stats.relative_drop_ci`: ``n_boot`` resamples of simulations
    within each condition from ``seed``; resamples with a zero baseline mean are left
    out); null when either condition has fewer than :data:`stats.MIN_RUNS_DROP`
    simulations (with fewer the interval undercovers, ``benchmarks/bench_coverage.py``).
    """
    rng = np.random.default_rng(seed)
    if "base_condition" not in per_sim.columns:
        per_sim = per_sim.with_columns(base_condition=pl.col("condition"))
    rows = []
    values: dict[str, dict[str, list]] = {}  # model -> condition -> values; one pass over the rows
    pairs: dict[str, set[tuple[str, str]]] = {}
    for model, cond, cbase, v in per_sim.select("model", "condition", "base_condition",
                                                pl.col(value).cast(pl.Float64)).iter_rows():
        values.setdefault(model, {}).setdefault(cond, []).append(v)
        pairs.setdefault(model, set()).add((cond, cbase))
    for model in sorted(values):
        got = {c: np.array([v for v in vs if v is not None], dtype=np.float64)
               for c, vs in values[model].items() if c is not None}
        for cond, cbase in sorted(pairs[model], key=lambda p: (condition_key(p[1]), p[0])):
            if cbase == baseline:
                continue
            base_label = baseline_label(cond, cbase, baseline, set(got))
            base, other = got[base_label] if base_label else np.array([]), got.get(cond, np.array([]))
            row = {"model": model, "condition": cond, "base_condition": cbase, "baseline_condition": base_label,
                   "baseline_mean": None, "mean": float(other.mean()) if other.size else None, "drop": None,
                   "ci_low": None, "ci_high": None, "n_baseline": int(base.size), "n": int(other.size),
                   "status": "undefined"}
            if base.size and other.size:
                b = float(base.mean())
                row["baseline_mean"] = b
                if b != 0:
                    row["drop"], row["status"] = (b - row["mean"]) / b, "ok"
                    _, lo, hi = stats.relative_drop_ci(base, other, n_resamples=n_boot, rng=rng)
                    row["ci_low"], row["ci_high"] = (None if np.isnan(v) else v for v in (lo, hi))
            rows.append(row)
    schema = {"model": pl.String, "condition": pl.String, "base_condition": pl.String,
              "baseline_condition": pl.String, "baseline_mean": pl.Float64, "mean": pl.Float64, "drop": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "n_baseline": pl.Int64, "n": pl.Int64, "status": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")

