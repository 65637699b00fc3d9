"""Scores of predicted label sets against expert label sets (validation of a judge):
:func:`score_against_gold` (scikit-learn). A value that is undefined is NaN with the
reason, never an error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from .stat import NO_DEFINED_LABEL, NO_UNITS, SINGLE_CATEGORY, Stat

SCORE_SCHEMA = {
    "label": pl.String,
    "support": pl.Int64,
    "predicted": pl.Int64,
    "precision": pl.Float64,
    "recall": pl.Float64,
    "f1": pl.Float64,
    "cohen_kappa": pl.Float64,
    "cohen_kappa_reason": pl.String,
}


def _binarize(sets: Sequence[Sequence[str]], labels: Sequence[str]) -> np.ndarray:
    idx = {lab: i for i, lab in enumerate(labels)}
    y = np.zeros((len(sets), len(labels)), dtype=int)
    for r, s in enumerate(sets):
        for lab in s:
            if lab in idx:
                y[r, idx[lab]] = 1
    return y


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> Stat:
    """Cohen's kappa (Cohen 1960) of two binary rating vectors (scikit-learn).

    Undefined (NaN with a reason): no units, or a single category (both sides give
    the same one value everywhere: chance agreement is 1, nothing to agree on).
    """
    from sklearn.metrics import cohen_kappa_score

    if a.size == 0:
        return Stat(math.nan, NO_UNITS)
    if np.unique(np.concatenate([a, b])).size < 2:
        return Stat(math.nan, SINGLE_CATEGORY, int(a.size))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score(a, b))
    if not math.isfinite(k):
        raise ArithmeticError(f"cohen_kappa_score returned {k} on a defined case")
    return Stat(k, None, int(a.size))


def score_against_gold(
    gold: Sequence[Sequence[str]],
    predicted: Sequence[Sequence[str] | None],
    labels: Sequence[str],
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per-label and overall scores of predicted label sets against expert label sets.

    A prediction of ``None`` (no valid answer) counts as predicting no label, and is
    counted in ``n_no_answer``. Labels outside ``labels`` are ignored.

    Returns:
        ``(per_label, summary)``: ``per_label`` has :data:`SCORE_SCHEMA` columns (one row
        per label; precision is NaN (undefined) for a label never predicted, recall
        for a label without support, F1 for a label with neither: never 0, which
        would read as a wrong judge; ``cohen_kappa`` is NaN when undefined, with
        ``cohen_kappa_reason``: see :func:`cohen_kappa`); ``summary`` has ``n_units``,
        ``n_no_answer``, ``micro_precision``, ``micro_recall``, ``micro_f1``,
        ``macro_f1`` (mean over the labels where F1 is defined: support or
        predictions), ``macro_f1_all`` (scikit-learn's mean over every label, an
        undefined F1 counted as 0), ``kappa_macro`` (mean of the defined per-label kappas),
        ``kappa_labels_defined`` (how many of ``len(labels)`` it covers),
        ``kappa_pooled`` (Cohen's kappa on every (unit, label) decision stacked),
        ``exact_match`` (share of units with the exact set) and ``undefined`` (summary
        key -> reason, for every NaN value of the summary).

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
    rows = []
    for i, lab in enumerate(labels):
        k = cohen_kappa(y_true[:, i], y_pred[:, i])
        n_pred = int(y_pred[:, i].sum())
        # 0/0 is undefined, not 0: precision without predictions, recall without support,
        # F1 without either (scikit-learn's zero_division=0 would print 0.00 for them)
        rows.append({"label": lab, "support": int(s[i]), "predicted": n_pred,
                     "precision": float(p[i]) if n_pred else math.nan,
                     "recall": float(r[i]) if s[i] else math.nan,
                     "f1": float(f[i]) if n_pred or s[i] else math.nan,
                     "cohen_kappa": k.value, "cohen_kappa_reason": k.reason})
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
    pooled = cohen_kappa(y_true.ravel(), y_pred.ravel())
    summary: dict[str, Any] = {
        "n_units": n,
        "n_no_answer": n_none,
        "micro_precision": float(mp),
        "micro_recall": float(mr),
        "micro_f1": float(mf),
        "macro_f1": float(np.mean(f[active])) if active else math.nan,
        "macro_f1_all": macro_all,
        "kappa_macro": float(np.mean(kappas)) if kappas else math.nan,
        "kappa_labels_defined": len(kappas),
        "kappa_pooled": pooled.value,
        "exact_match": float(np.mean((y_true == y_pred).all(axis=1))) if n else math.nan,
    }
    reasons = {
        "micro_precision": NO_UNITS,
        "micro_recall": NO_UNITS,
        "micro_f1": NO_UNITS,
        "macro_f1": NO_UNITS if not n else "no label with support or predictions",
        "macro_f1_all": NO_UNITS,
        "kappa_macro": NO_UNITS if not n else NO_DEFINED_LABEL,
        "kappa_pooled": pooled.reason,
        "exact_match": NO_UNITS,
    }
    summary["undefined"] = {
        k: reasons[k] for k, v in summary.items() if isinstance(v, float) and math.isnan(v)
    }
    return per_label, summary
