"""Confidence intervals and small statistics shared by every metric module.

Conventions (see DESIGN.md): runs are the independent unit. Means over runs use a
t interval; proportions over independent trials use a Wilson interval; anything
computed over rounds inside runs uses a cluster bootstrap with the run as the cluster.
Every function returns plain floats; ``nan`` where the sample is too small to say.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from scipy import stats as sps

NAN = float("nan")


def _clean(values: Sequence[float] | np.ndarray | pl.Series) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    return arr[~np.isnan(arr)]


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval ``(mean, low, high)``.

    ``nan`` values are dropped. With one value the interval is ``(nan, nan)``; with zero
    variance it collapses to the mean.
    """
    x = _clean(values)
    n = len(x)
    if n == 0:
        return NAN, NAN, NAN
    m = float(x.mean())
    if n == 1:
        return m, NAN, NAN
    se = float(x.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        return m, m, m
    h = float(sps.t.ppf(0.5 + level / 2, df=n - 1)) * se
    return m, m - h, m + h


def wilson_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Proportion and Wilson score interval ``(p, low, high)`` (statsmodels).

    Raises:
        ValueError: ``successes`` outside ``0..n`` or negative ``n``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson_ci: successes={successes} must lie in 0..n (n={n})")
    if n == 0:
        return NAN, NAN, NAN
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(successes, n, alpha=1 - level, method="wilson")
    return successes / n, float(lo), float(hi)


def bootstrap_ci(
    values,
    stat: Callable[[np.ndarray], float] = np.mean,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Statistic and percentile bootstrap interval over independent values (scipy)."""
    x = _clean(values)
    if len(x) == 0:
        return NAN, NAN, NAN
    est = float(stat(x))
    if len(x) < 2 or np.all(x == x[0]):
        return est, (NAN if len(x) < 2 else est), (NAN if len(x) < 2 else est)
    res = sps.bootstrap(
        (x,),
        lambda s, axis=-1: np.apply_along_axis(stat, axis, s),
        confidence_level=level,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return est, float(res.confidence_interval.low), float(res.confidence_interval.high)


def cluster_bootstrap_ci(
    df: pl.DataFrame,
    *,
    cluster: str,
    value: str,
    weight: str | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Pooled mean of ``value`` with a cluster (run-level) percentile bootstrap interval.

    The estimate is the ratio of sums ``sum(w * value) / sum(w)`` over all rows (rows
    with null ``value`` are dropped). Resampling draws whole clusters with replacement,
    so rounds inside a run stay together (DESIGN.md: runs are the independent unit).
    With a single cluster the interval is ``(nan, nan)``.

    Raises:
        KeyError: ``cluster``, ``value`` or ``weight`` is not a column of ``df``.
    """
    for col in [cluster, value] + ([weight] if weight else []):
        if col not in df.columns:
            raise KeyError(f"cluster_bootstrap_ci: column {col!r} not in frame {df.columns}")
    d = df.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
    if d.height == 0:
        return NAN, NAN, NAN
    if weight is None:
        d = d.with_columns(pl.lit(1.0).alias("__w"))
        weight = "__w"
    w = pl.col(weight).cast(pl.Float64)
    per = d.group_by(cluster, maintain_order=True).agg(
        (pl.col(value).cast(pl.Float64) * w).sum().alias("num"), w.sum().alias("den")
    )
    num = per["num"].to_numpy()
    den = per["den"].to_numpy()
    est = float(num.sum() / den.sum())
    k = len(num)
    if k < 2:
        return est, NAN, NAN
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, k, size=(n_resamples, k))
    boots = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    alpha = (1 - level) / 2
    return est, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))


def pearson_ci(x, y, level: float = 0.95) -> tuple[float, float, float, float]:
    """Pearson r with its Fisher-z confidence interval and two-sided p-value:
    ``(r, low, high, p)``. Pairs with a ``nan`` are dropped; fewer than 3 pairs or a
    constant input gives ``nan``s."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"pearson_ci: x has shape {a.shape}, y has shape {b.shape}")
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return NAN, NAN, NAN, NAN
    res = sps.pearsonr(a, b)
    ci = res.confidence_interval(confidence_level=level)
    return float(res.statistic), float(ci.low), float(ci.high), float(res.pvalue)


def gini(values) -> float:
    """Gini coefficient of non-negative values (0 = perfect equality, 1 - 1/n at most).

    Uses the mean-absolute-difference form ``sum_i sum_j |x_i - x_j| / (2 n^2 mean)``.
    All-zero input gives 0.

    Raises:
        ValueError: a value is negative.
    """
    x = _clean(values)
    if len(x) == 0:
        return NAN
    if (x < 0).any():
        raise ValueError(f"gini: values must be non-negative, got min {x.min()}")
    total = x.sum()
    if total == 0:
        return 0.0
    n = len(x)
    diff = np.abs(x[:, None] - x[None, :]).sum()
    return float(diff / (2 * n * n * x.mean()))
