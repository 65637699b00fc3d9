"""Agreement statistics for multi-label judgements (pure functions on plain data).

Between judges, per label (each label is a binary present/absent rating of each unit):
:func:`krippendorff_alpha` (missing ratings allowed) and :func:`fleiss_kappa` (complete
units only), with percentile bootstrap intervals over units (:func:`bootstrap_units`) and
a macro average over the labels (:func:`label_agreement`).

Against experts (validation): :func:`~.scores.score_against_gold`.

A statistic that is undefined (e.g. every rating identical: no variation to agree
on) is ``NaN`` with the reason, never an error: :class:`Stat` (value and reason) from
the functions, ``*_reason`` columns in tables, an ``undefined`` mapping in summaries.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from .stat import (
    FEWER_THAN_2_RATERS,
    NO_COMPLETE_UNITS,
    NO_DEFINED_LABEL,
    NO_LABELS,
    NO_PAIRABLE_UNITS,
    NO_UNITS,
    SINGLE_CATEGORY,
    Interval,
    Stat,
)

Answers = Mapping[str, Sequence[str] | None]  # unit id -> labels (None = no valid answer)


def _undefined(reason: str, n_units: int = 0) -> Stat:
    return Stat(math.nan, reason, n_units)


def _matrix(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"ratings must be a (units, raters) matrix, got shape {m.shape}")
    if np.isinf(m).any():
        raise ValueError("ratings hold an infinite value; use NaN for a missing rating")
    return m


def rating_matrix(
    answers_by_judge: Mapping[str, Answers], label: str, unit_ids: Sequence[str]
) -> np.ndarray:
    """Binary ratings of one label: shape ``(n_units, n_judges)``, 1.0 when the judge gave
    the label, 0.0 when it answered without it, NaN when it has no valid answer."""
    judges = list(answers_by_judge)
    m = np.full((len(unit_ids), len(judges)), np.nan)
    for c, j in enumerate(judges):
        ans = answers_by_judge[j]
        for r, u in enumerate(unit_ids):
            labels = ans.get(u)
            if labels is not None:
                m[r, c] = 1.0 if label in labels else 0.0
    return m


def krippendorff_alpha(matrix: np.ndarray) -> Stat:
    """Nominal Krippendorff's alpha of a ``(n_units, n_raters)`` matrix of category
    codes (any number of categories; NaN = missing rating), from the ``krippendorff``
    package (Krippendorff 2011, "Computing Krippendorff's alpha-reliability").

    Undefined (NaN with a reason): no units, fewer than 2 raters, no unit with 2 or
    more ratings (nothing pairable), or a single category among the pairable ratings.

    Raises:
        ValueError: not a 2-D matrix, or an infinite value.
    """
    import krippendorff

    m = _matrix(matrix)
    if m.shape[0] == 0:
        return _undefined(NO_UNITS)
    if m.shape[1] < 2:
        return _undefined(FEWER_THAN_2_RATERS)
    pairable = m[np.sum(~np.isnan(m), axis=1) >= 2]
    if pairable.shape[0] == 0:
        return _undefined(NO_PAIRABLE_UNITS)
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return _undefined(SINGLE_CATEGORY, pairable.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(krippendorff.alpha(reliability_data=m.T, level_of_measurement="nominal"))
    if not math.isfinite(value):
        raise ArithmeticError(f"krippendorff.alpha returned {value} on a defined case")
    return Stat(value, None, pairable.shape[0])


def fleiss_kappa(matrix: np.ndarray) -> Stat:
    """Fleiss' kappa (Fleiss 1971) of a ``(n_units, n_raters)`` matrix of category codes
    (any number of categories), over the units rated by every rater (rows with a NaN
    are left out); computed by ``statsmodels.stats.inter_rater``.

    Undefined (NaN with a reason): no units, fewer than 2 raters, no complete unit, or
    a single category among the complete units' ratings.

    Raises:
        ValueError: not a 2-D matrix, or an infinite value.
    """
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    m = _matrix(matrix)
    if m.shape[0] == 0:
        return _undefined(NO_UNITS)
    if m.shape[1] < 2:
        return _undefined(FEWER_THAN_2_RATERS)
    m = m[~np.isnan(m).any(axis=1)]
    if m.shape[0] == 0:
        return _undefined(NO_COMPLETE_UNITS)
    if np.unique(m).size < 2:
        return _undefined(SINGLE_CATEGORY, m.shape[0])
    table, _ = aggregate_raters(m, n_cat=None)  # categories as found in the data
    with np.errstate(all="ignore"):
        value = float(_fleiss(table, method="fleiss"))
    if not math.isfinite(value):
        raise ArithmeticError(f"statsmodels fleiss_kappa returned {value} on a defined case")
    return Stat(value, None, m.shape[0])


def _percentile(stats: np.ndarray, n_boot: int, level: float) -> Interval:
    finite = stats[np.isfinite(stats)]
    if finite.size < n_boot / 2:
        return Interval(
            math.nan,
            math.nan,
            f"{n_boot - finite.size} of {n_boot} resamples undefined (more than half)",
        )
    a = (1 - level) / 2
    return Interval(float(np.quantile(finite, a)), float(np.quantile(finite, 1 - a)))


def bootstrap_units(
    matrix: np.ndarray,
    stat: Callable[[np.ndarray], Stat | float],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap CI of ``stat`` with units (rows) resampled with replacement.

    Resamples where the statistic is undefined (NaN) are skipped; when more than half
    are undefined, or there are no units, the interval is ``(NaN, NaN)`` with the
    reason.

    Raises:
        ValueError: ``n_boot`` < 1 or ``level`` not in (0, 1).
    """
    _check_boot(n_boot, level)
    m = _matrix(matrix)
    n = m.shape[0]
    if n == 0:
        return Interval(math.nan, math.nan, NO_UNITS)
    rng = np.random.default_rng(seed)
    stats = np.array([float(stat(m[rng.integers(0, n, n)])) for _ in range(n_boot)])
    return _percentile(stats, n_boot, level)


def _check_boot(n_boot: int, level: float) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _counts(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit (ones, ratings) of a binary matrix with NaN for missing."""
    rated = ~np.isnan(m)
    return np.where(rated, m, 0.0).sum(axis=1), rated.sum(axis=1).astype(float)


def _alpha_counts(ones: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Binary nominal Krippendorff's alpha from per-unit counts (last axis = units).

    With pairable units only (``m_u >= 2``): disagreeing coincidences
    ``D = sum 2 n0 n1 / (m - 1)``, ``n = sum m``; ``alpha = 1 - (n - 1) D / (2 N0 N1)``
    (Krippendorff 2011, "Computing Krippendorff's alpha-reliability", section C).
    """
    pair = cnt >= 2
    zeros = cnt - ones
    with np.errstate(all="ignore"):
        d = np.where(pair, 2 * ones * zeros / np.where(pair, cnt - 1, 1), 0.0).sum(axis=-1)
        n = np.where(pair, cnt, 0.0).sum(axis=-1)
        n1 = np.where(pair, ones, 0.0).sum(axis=-1)
        n0 = n - n1
        alpha = 1 - (n - 1) * d / (2 * n0 * n1)
    return np.where((n0 > 0) & (n1 > 0), alpha, np.nan)


def _fleiss_table(table: np.ndarray, k: int) -> np.ndarray:
    """Fleiss' kappa from category counts ``table`` of shape ``(..., n_units, n_cat)``
    over the units rated by all ``k`` raters (row sum == k), any number of categories
    (Fleiss 1971, eqs. 2-5): ``P_i = (sum_j n_ij^2 - k) / (k (k - 1))``,
    ``p_j = sum_i n_ij / (N k)``, ``P_e = sum_j p_j^2``,
    ``kappa = (mean P_i - P_e) / (1 - P_e)``; NaN where undefined."""
    full = table.sum(axis=-1) == k
    with np.errstate(all="ignore"):
        n_units = full.sum(axis=-1)
        p_i = ((table**2).sum(axis=-1) - k) / (k * (k - 1))
        p_bar = np.where(full, p_i, 0.0).sum(axis=-1) / n_units
        p_j = np.where(full[..., None], table, 0.0).sum(axis=-2) / (n_units[..., None] * k)
        pe = (p_j**2).sum(axis=-1)
        kappa = (p_bar - pe) / (1 - pe)
    return np.where((n_units > 0) & (pe < 1), kappa, np.nan)


def _fleiss_counts(ones: np.ndarray, cnt: np.ndarray, k: int) -> np.ndarray:
    """Binary Fleiss' kappa from per-unit counts (last axis = units); see
    :func:`_fleiss_table`."""
    return _fleiss_table(np.stack([cnt - ones, ones], axis=-1), k)


def _boot_arrays(m: np.ndarray, *, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Alpha and Fleiss' kappa of ``n_boot`` unit resamples of a binary matrix (the
    same resamples for both and, for a given seed and unit count, for every label)."""
    n = m.shape[0]
    if n == 0 or m.shape[1] < 2:
        return {"alpha": np.full(n_boot, np.nan), "fleiss": np.full(n_boot, np.nan)}
    ones, cnt = _counts(m)
    idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))
    return {
        "alpha": _alpha_counts(ones[idx], cnt[idx]),
        "fleiss": _fleiss_counts(ones[idx], cnt[idx], m.shape[1]),
    }


AGREEMENT_SCHEMA = {
    "label": pl.String,
    "n_labels": pl.Int64,
    "n_units": pl.Int64,
    "n_complete": pl.Int64,
    "prevalence": pl.Float64,
    "alpha": pl.Float64,
    "alpha_lo": pl.Float64,
    "alpha_hi": pl.Float64,
    "alpha_reason": pl.String,
    "alpha_labels_defined": pl.Int64,
    "fleiss_kappa": pl.Float64,
    "fleiss_lo": pl.Float64,
    "fleiss_hi": pl.Float64,
    "fleiss_reason": pl.String,
    "fleiss_labels_defined": pl.Int64,
}
#: Fewest units from which :func:`label_agreement` prints a bootstrap interval: with
#: fewer, the percentile bootstrap over units covers well under its nominal level
#: (``benchmarks/bench_coverage.py``). Below it the ends are NaN with the reason.
MIN_UNITS_INTERVAL = 30
POOLED = "(pooled)"
MACRO = "(macro)"


def label_agreement(
    answers_by_judge: Mapping[str, Answers],
    labels: Sequence[str],
    unit_ids: Sequence[str],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    min_units: int | None = None,
) -> pl.DataFrame:
    """Per-label agreement between judges with bootstrap CIs over units.

    Rows: one per label (in ``labels`` order), then ``label="(pooled)"`` (every (unit,
    label) item stacked; its bootstrap resamples items) and ``label="(macro)"`` (the
    mean over the labels whose value is defined; its bootstrap takes, in each unit
    resample, the mean over those labels that are defined in the resample).

    Columns: ``n_labels`` (labels the row covers), ``n_units`` (units with at least one
    rating; items for the pooled row), ``n_complete`` (units rated by every judge;
    Fleiss' kappa uses these), ``prevalence`` (share of ratings giving the label; null
    for the macro row), ``alpha`` / ``alpha_lo`` / ``alpha_hi`` (Krippendorff, nominal)
    and ``fleiss_kappa`` / ``fleiss_lo`` / ``fleiss_hi``; ``alpha_reason`` and
    ``fleiss_reason`` say why a value is NaN (:class:`Stat` reasons), or, when only its
    interval is NaN, ``"interval: ..."``; null when both are defined.
    ``alpha_labels_defined`` / ``fleiss_labels_defined`` (macro row only): how many of
    the ``n_labels`` labels the mean covers (the others are undefined).

    Point estimates come from the ``krippendorff`` and ``statsmodels`` packages; the
    bootstrap uses the same statistics in closed form for binary ratings (vectorised
    over resamples; equal to the packages' values, see the tests). A row with fewer
    than ``min_units`` units (default :data:`MIN_UNITS_INTERVAL`) gets no interval
    (NaN ends, reason ``"interval: fewer than N units ..."``): its bootstrap would not
    keep its coverage.

    Raises:
        ValueError: ``n_boot`` < 1 or ``level`` not in (0, 1).
    """
    _check_boot(n_boot, level)
    rows, mats, boots = [], [], []
    for lab in labels:
        m = rating_matrix(answers_by_judge, lab, unit_ids)
        boot = _boot_arrays(m, n_boot=n_boot, seed=seed)
        mats.append(m)
        boots.append(boot)
        rows.append(_agreement_row(lab, m, boot, n_boot=n_boot, level=level))
    pooled = np.vstack(mats) if mats else np.empty((0, len(answers_by_judge)))
    boot = _boot_arrays(pooled, n_boot=n_boot, seed=seed)
    rows.append(
        _agreement_row(POOLED, pooled, boot, n_boot=n_boot, level=level) | {"n_labels": len(labels)}
    )
    rows.append(_macro_row(rows[: len(labels)], boots, mats, n_boot=n_boot, level=level))
    need = MIN_UNITS_INTERVAL if min_units is None else min_units
    # the pooled row counts (unit, label) items, but its items come from the same units: it
    # is gated on the units, as every other row (3 units x 21 labels are 3 units, not 63)
    units = max((_unit_counts(m)["n_units"] for m in mats), default=0)
    for row in rows:
        n = units if row["label"] == POOLED else row["n_units"]
        if n < need:
            why = (f"fewer than {need} units ({n}): the bootstrap interval would not keep its "
                   "coverage (benchmarks/bench_coverage.py)")
            for stat in ("alpha", "fleiss"):
                row[f"{stat}_lo"] = row[f"{stat}_hi"] = math.nan
                if row[f"{stat}_reason"] is None:
                    row[f"{stat}_reason"] = f"interval: {why}"
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA, orient="row")


def _reason(point: Stat, ci: Interval) -> str | None:
    if point.reason is not None:
        return point.reason
    return None if ci.reason is None else f"interval: {ci.reason}"


def _unit_counts(m: np.ndarray) -> dict[str, int]:
    """``n_units`` (rows with a rating) and ``n_complete`` (rows rated by every rater)."""
    rated = ~np.isnan(m)
    return {"n_units": int(rated.any(axis=1).sum()) if m.size else 0,
            "n_complete": int(rated.all(axis=1).sum()) if m.size else 0}


def _agreement_row(
    label: str, m: np.ndarray, boot: dict[str, np.ndarray], *, n_boot: int, level: float
) -> dict:
    row = {"label": label, "n_labels": 1, **_unit_counts(m),
           "prevalence": float(np.nanmean(m)) if (~np.isnan(m)).any() else math.nan}
    for stat, col, point in (("alpha", "alpha", krippendorff_alpha(m)), ("fleiss", "fleiss_kappa", fleiss_kappa(m))):
        ci = _percentile(boot[stat], n_boot, level) if m.size else Interval(math.nan, math.nan, NO_UNITS)
        row |= {col: point.value, f"{stat}_lo": ci.lo, f"{stat}_hi": ci.hi, f"{stat}_reason": _reason(point, ci),
                f"{stat}_labels_defined": None}
    return row


def _macro_row(
    label_rows: list[dict],
    boots: list[dict[str, np.ndarray]],
    mats: list[np.ndarray],
    *,
    n_boot: int,
    level: float,
) -> dict:
    row: dict = {"label": MACRO, "n_labels": len(label_rows), **_unit_counts(mats[0] if mats else np.empty((0, 0))),
                 "prevalence": None}
    for stat, col in (("alpha", "alpha"), ("fleiss", "fleiss_kappa")):
        defined = [i for i, r in enumerate(label_rows) if not math.isnan(r[col])]
        row[f"{stat}_labels_defined"] = len(defined)
        if not defined:
            row |= {col: math.nan, f"{stat}_lo": math.nan, f"{stat}_hi": math.nan}
            row[f"{stat}_reason"] = NO_LABELS if not label_rows else NO_DEFINED_LABEL
            continue
        value = float(np.mean([label_rows[i][col] for i in defined]))
        stack = np.vstack([boots[i][stat] for i in defined])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples -> NaN
            per_resample = np.nanmean(stack, axis=0)
        ci = _percentile(per_resample, n_boot, level)
        row |= {col: value, f"{stat}_lo": ci.lo, f"{stat}_hi": ci.hi}
        row[f"{stat}_reason"] = _reason(Stat(value), ci)
    return row
