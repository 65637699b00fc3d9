"""Families of comparisons: multiple-comparison adjustment and the two-sample test the
notebook sentences use (a sentence that names the highest of many groups, or
calls several per-model correlations non-zero, makes a family of claims; each family is
adjusted together and the sentence says which correction over how many comparisons)."""

from __future__ import annotations

import math

import numpy as np

NAN = float("nan")


#: Multiple-comparison corrections a family of claims may carry, and their names in
#: sentences (``statsmodels.stats.multitest.multipletests`` methods).
CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}


def adjust_pvalues(pvalues, method: str = "holm", alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted p-values of one family of comparisons and which are rejected at
    ``alpha``: ``(reject, p_adjusted)``, arrays of the input's shape (``nan`` p-values
    stay ``nan`` and are never rejected; the family is the non-``nan`` ones).

    ``method``: ``"holm"`` (Holm 1979, family-wise error rate: the i-th smallest of m
    p-values times ``m - i + 1``, made monotone, capped at 1) or ``"fdr_bh"``
    (Benjamini-Hochberg 1995, false discovery rate: the i-th smallest times ``m / i``,
    made monotone from the largest down, capped at 1). The same numbers as
    ``statsmodels.stats.multitest.multipletests`` (tested); computed here because that
    function runs a full ``gc.collect()`` on every call (0.15 s each in a notebook with
    dozens of sentences).

    Raises:
        ValueError: an unknown ``method`` (the message lists :data:`CORRECTIONS`).
    """
    if method not in CORRECTIONS:
        raise ValueError(f"adjust_pvalues: method must be one of {sorted(CORRECTIONS)}, got {method!r}")
    p = np.asarray(pvalues, dtype=float)
    adj = np.full(p.shape, NAN)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m:
        order = np.argsort(q, kind="stable")
        ranked = q[order]
        if method == "holm":
            stepped = np.maximum.accumulate(ranked * (m - np.arange(m)))
        else:
            stepped = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
        out = np.empty(m)
        out[order] = np.minimum(stepped, 1.0)
        adj[ok] = out
    reject = np.zeros(p.shape, dtype=bool)
    reject[ok] = adj[ok] <= alpha
    return reject, adj


def welch_p(mean1: float, se1: float, n1: int, mean2: float, se2: float, n2: int) -> float:
    """Two-sided p-value of Welch's t-test for two means from their standard errors and
    sample sizes (runs): ``t = (m1 - m2) / sqrt(se1^2 + se2^2)`` with Welch-Satterthwaite
    degrees of freedom ``(se1^2 + se2^2)^2 / (se1^4 / (n1 - 1) + se2^4 / (n2 - 1))``
    (scipy's ``ttest_ind_from_stats(equal_var=False)``). ``nan`` when a group has fewer
    than 2 runs or both standard errors are 0 or missing."""
    from scipy import stats as sps
    vals = (mean1, se1, mean2, se2)
    if n1 < 2 or n2 < 2 or any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals):
        return NAN
    if se1 == 0 and se2 == 0:
        return NAN
    res = sps.ttest_ind_from_stats(mean1, se1 * math.sqrt(n1), n1, mean2, se2 * math.sqrt(n2), n2, equal_var=False)
    return float(res.pvalue)
