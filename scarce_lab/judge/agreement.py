"""Agreement statistics for multi-label judgements (pure functions on plain data).

Between judges, per label (each label is a binary present/absent rating of each unit):

- Krippendorff's alpha (nominal; the ``krippendorff`` package): missing ratings
  (an unparseable judge) are allowed.
- Fleiss' kappa (``statsmodels.stats.inter_rater``): needs every judge on every unit,
  so units with a missing rating are left out of it.
- Percentile bootstrap confidence intervals over units (units resampled with
  replacement; ``n_boot`` resamples; seeded).

Against experts (validation): per-label precision, recall, F1 and Cohen's kappa, micro
and macro F1 (scikit-learn).

A statistic that is undefined (e.g. every rating identical: no variation to agree
on) is ``NaN``, never an error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

Answers = Mapping[str, Sequence[str] | None]  # unit id -> labels (None = no valid answer)


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


def krippendorff_alpha(matrix: np.ndarray) -> float:
    """Nominal Krippendorff's alpha of a ``(n_units, n_judges)`` matrix (NaN = missing).

    Returns NaN when fewer than two pairable ratings exist or all ratings are equal.
    """
    import krippendorff

    m = np.asarray(matrix, dtype=float)
    if m.size == 0 or np.sum(np.sum(~np.isnan(m), axis=1) >= 2) == 0:
        return math.nan
    values = m[~np.isnan(m)]
    if np.unique(values).size < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(krippendorff.alpha(reliability_data=m.T, level_of_measurement="nominal"))
        except (ValueError, ZeroDivisionError):
            return math.nan


def fleiss_kappa(matrix: np.ndarray) -> float:
    """Fleiss' kappa over the units rated by every judge (rows with a NaN are dropped).

    Returns NaN with fewer than two judges, no complete unit, or no variation.
    """
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[1] < 2:
        return math.nan
    m = m[~np.isnan(m).any(axis=1)]
    if m.shape[0] == 0:
        return math.nan
    table, _ = aggregate_raters(m.astype(int), n_cat=2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(_fleiss(table, method="fleiss"))
    return k if math.isfinite(k) else math.nan


def bootstrap_units(
    matrix: np.ndarray,
    stat: Callable[[np.ndarray], float],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of ``stat`` with units (rows) resampled with replacement.

    Resamples where the statistic is undefined (NaN) are skipped; when more than half
    are undefined the interval is ``(NaN, NaN)``.

    Raises:
        ValueError: ``n_boot`` < 1 or ``level`` not in (0, 1).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    m = np.asarray(matrix, dtype=float)
    n = m.shape[0]
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats = np.array([stat(m[rng.integers(0, n, n)]) for _ in range(n_boot)])
    stats = stats[np.isfinite(stats)]
    if stats.size < n_boot / 2:
        return math.nan, math.nan
    a = (1 - level) / 2
    return float(np.quantile(stats, a)), float(np.quantile(stats, 1 - a))


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


def _fleiss_counts(ones: np.ndarray, cnt: np.ndarray, k: int) -> np.ndarray:
    """Binary Fleiss' kappa from per-unit counts over units rated by all ``k`` judges
    (Fleiss 1971, eqs. 2-5): ``(P - Pe) / (1 - Pe)``."""
    full = cnt == k
    zeros = cnt - ones
    with np.errstate(all="ignore"):
        n_units = full.sum(axis=-1)
        p_i = (ones**2 + zeros**2 - k) / (k * (k - 1))
        p_bar = np.where(full, p_i, 0.0).sum(axis=-1) / n_units
        p1 = np.where(full, ones, 0.0).sum(axis=-1) / (n_units * k)
        pe = p1**2 + (1 - p1) ** 2
        kappa = (p_bar - pe) / (1 - pe)
    return np.where((n_units > 0) & (pe < 1), kappa, np.nan)


def _bootstrap_fast(
    m: np.ndarray, *, n_boot: int, level: float, seed: int
) -> dict[str, tuple[float, float]]:
    """Percentile CIs of alpha and Fleiss' kappa, units resampled (same resamples for
    both; same rule as :func:`bootstrap_units` for undefined resamples)."""
    n = m.shape[0]
    if n == 0 or m.shape[1] < 2:
        return {"alpha": (math.nan, math.nan), "fleiss": (math.nan, math.nan)}
    ones, cnt = _counts(m)
    idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))
    out = {}
    a = (1 - level) / 2
    for name, stats in (
        ("alpha", _alpha_counts(ones[idx], cnt[idx])),
        ("fleiss", _fleiss_counts(ones[idx], cnt[idx], m.shape[1])),
    ):
        stats = stats[np.isfinite(stats)]
        if stats.size < n_boot / 2:
            out[name] = (math.nan, math.nan)
        else:
            out[name] = (float(np.quantile(stats, a)), float(np.quantile(stats, 1 - a)))
    return out


AGREEMENT_SCHEMA = {
    "label": pl.String,
    "n_units": pl.Int64,
    "n_complete": pl.Int64,
    "prevalence": pl.Float64,
    "alpha": pl.Float64,
    "alpha_lo": pl.Float64,
    "alpha_hi": pl.Float64,
    "fleiss_kappa": pl.Float64,
    "fleiss_lo": pl.Float64,
    "fleiss_hi": pl.Float64,
}


def label_agreement(
    answers_by_judge: Mapping[str, Answers],
    labels: Sequence[str],
    unit_ids: Sequence[str],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Per-label agreement between judges with bootstrap CIs over units.

    Columns: ``label``, ``n_units`` (units with at least one rating), ``n_complete``
    (units rated by every judge; Fleiss' kappa uses these), ``prevalence`` (share of
    ratings that give the label), ``alpha`` / ``alpha_lo`` / ``alpha_hi`` (Krippendorff,
    nominal), ``fleiss_kappa`` / ``fleiss_lo`` / ``fleiss_hi``. Rows follow ``labels``;
    a last row ``label="(pooled)"`` stacks every (unit, label) item (its bootstrap
    resamples (unit, label) items).

    Point estimates come from the ``krippendorff`` and ``statsmodels`` packages; the
    bootstrap uses the same statistics in closed form for binary ratings (vectorised
    over resamples; equal to the packages' values, see the tests).

    Raises:
        ValueError: ``n_boot`` < 1 or ``level`` not in (0, 1).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rows = []
    mats = []
    for lab in labels:
        m = rating_matrix(answers_by_judge, lab, unit_ids)
        mats.append(m)
        rows.append(_agreement_row(lab, m, n_boot=n_boot, level=level, seed=seed))
    pooled = np.vstack(mats) if mats else np.empty((0, len(answers_by_judge)))
    rows.append(_agreement_row("(pooled)", pooled, n_boot=n_boot, level=level, seed=seed))
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA, orient="row")


def _agreement_row(label: str, m: np.ndarray, *, n_boot: int, level: float, seed: int) -> dict:
    rated = ~np.isnan(m)
    ci = _bootstrap_fast(m, n_boot=n_boot, level=level, seed=seed)
    return {
        "label": label,
        "n_units": int(rated.any(axis=1).sum()) if m.size else 0,
        "n_complete": int(rated.all(axis=1).sum()) if m.size else 0,
        "prevalence": float(np.nanmean(m)) if rated.any() else math.nan,
        "alpha": krippendorff_alpha(m),
        "alpha_lo": ci["alpha"][0],
        "alpha_hi": ci["alpha"][1],
        "fleiss_kappa": fleiss_kappa(m),
        "fleiss_lo": ci["fleiss"][0],
        "fleiss_hi": ci["fleiss"][1],
    }


# -- validation against experts ----------------------------------------------------------
SCORE_SCHEMA = {
    "label": pl.String,
    "support": pl.Int64,
    "predicted": pl.Int64,
    "precision": pl.Float64,
    "recall": pl.Float64,
    "f1": pl.Float64,
    "cohen_kappa": pl.Float64,
}


def _binarize(sets: Sequence[Sequence[str]], labels: Sequence[str]) -> np.ndarray:
    idx = {lab: i for i, lab in enumerate(labels)}
    y = np.zeros((len(sets), len(labels)), dtype=int)
    for r, s in enumerate(sets):
        for lab in s:
            if lab in idx:
                y[r, idx[lab]] = 1
    return y


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score

    if a.size == 0 or (np.unique(a).size < 2 and np.unique(b).size < 2):
        return math.nan  # no variation in either: kappa undefined
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score(a, b))
    return k if math.isfinite(k) else math.nan


def score_against_gold(
    gold: Sequence[Sequence[str]],
    predicted: Sequence[Sequence[str] | None],
    labels: Sequence[str],
) -> tuple[pl.DataFrame, dict[str, float]]:
    """Per-label and overall scores of predicted label sets against expert label sets.

    A prediction of ``None`` (no valid answer) counts as predicting no label, and is
    counted in ``n_no_answer``. Labels outside ``labels`` are ignored.

    Returns:
        ``(per_label, summary)``: ``per_label`` has :data:`SCORE_SCHEMA` columns (one row
        per label; precision/recall/F1 are 0 when undefined, as scikit-learn's
        ``zero_division=0``; ``cohen_kappa`` is NaN when both sides are constant);
        ``summary`` has ``n_units``, ``n_no_answer``, ``micro_precision``,
        ``micro_recall``, ``micro_f1``, ``macro_f1`` (mean over labels with support or
        predictions), ``macro_f1_all`` (mean over every label), ``kappa_macro`` (mean of
        the defined per-label kappas), ``kappa_pooled`` (Cohen's kappa on every (unit,
        label) decision stacked) and ``exact_match`` (share of units with the exact set).

    Raises:
        ValueError: ``gold`` and ``predicted`` differ in length, or ``labels`` is empty.
    """
    from sklearn.metrics import f1_score, precision_recall_fscore_support

    if len(gold) != len(predicted):
        raise ValueError(f"gold has {len(gold)} units but predicted has {len(predicted)}")
    if not labels:
        raise ValueError("labels must not be empty")
    n_none = sum(p is None for p in predicted)
    y_true = _binarize(gold, labels)
    y_pred = _binarize([p or [] for p in predicted], labels)
    n = len(gold)
    if n:
        p, r, f, s = precision_recall_fscore_support(y_true, y_pred, average=None, zero_division=0)
    else:
        p = r = f = np.zeros(len(labels))
        s = np.zeros(len(labels), dtype=int)
    rows = [
        {
            "label": lab,
            "support": int(s[i]),
            "predicted": int(y_pred[:, i].sum()),
            "precision": float(p[i]),
            "recall": float(r[i]),
            "f1": float(f[i]),
            "cohen_kappa": _kappa(y_true[:, i], y_pred[:, i]),
        }
        for i, lab in enumerate(labels)
    ]
    per_label = pl.DataFrame(rows, schema=SCORE_SCHEMA, orient="row")
    active = [i for i in range(len(labels)) if s[i] > 0 or y_pred[:, i].sum() > 0]
    kappas = [x["cohen_kappa"] for x in rows if not math.isnan(x["cohen_kappa"])]
    if n:
        mp, mr, mf, _ = precision_recall_fscore_support(
            y_true, y_pred, average="micro", zero_division=0
        )
        macro_all = float(f1_score(y_true, y_pred, average="macro", zero_division=0))
    else:
        mp = mr = mf = macro_all = math.nan
    summary = {
        "n_units": n,
        "n_no_answer": n_none,
        "micro_precision": float(mp),
        "micro_recall": float(mr),
        "micro_f1": float(mf),
        "macro_f1": float(np.mean(f[active])) if active else math.nan,
        "macro_f1_all": macro_all,
        "kappa_macro": float(np.mean(kappas)) if kappas else math.nan,
        "kappa_pooled": _kappa(y_true.ravel(), y_pred.ravel()),
        "exact_match": float(np.mean((y_true == y_pred).all(axis=1))) if n else math.nan,
    }
    return per_label, summary
