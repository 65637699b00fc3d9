"""Confidence intervals and small statistics shared by every metric module.

Conventions (see docs/design.md): runs are the independent unit. Means over runs use a
t interval; proportions over independent trials use a Wilson interval; anything
computed over rounds inside runs uses a cluster bootstrap with the run as the cluster.
Every function returns floats; where the sample is too small to say, the value is
:class:`~scarce_lab.undefined.Undefined` (a ``nan`` that carries the reason: the one
"undefined, because ..." convention, shared with :mod:`scarce_lab.judge.stat`).
Where a method does not keep its 95% at small run counts, the function gives no
interval below the count where it does (coverage of each: ``benchmarks/bench_coverage.py``).

Size: every interval method the toolkit prints lives here (docs/design.md: stats.py holds
all CIs), each with the coverage figures that justify where it is given; splitting them
would scatter that one rule. Multiple-comparison adjustment is in :mod:`.comparisons`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..undefined import NO_SPREAD, NO_VALUES, ONE_VALUE, Undefined, or_none

# scipy is imported by the functions that use it: a second at import, which the CLI's
# start-up (the table help reads this package's docstrings) should not pay.


#: Quantile functions of scipy.special that scipy.stats' ``ppf`` calls for these
#: distributions (scipy 1.17 ``_continuous_distns``: ``t._ppf`` is ``stdtrit``, ``norm._ppf``
#: ``ndtri``, ``beta._ppf`` the ufunc ``_ufuncs._beta_ppf``; ``betaincinv`` is another
#: Boost policy: NaN or another number at q below ~1e-70): the same numbers without
#: importing scipy.stats (0.6 s of a fresh process; tests/analysis compares them).
_SPECIAL_PPF = {"t": ("stdtrit", lambda q, df: (df, q)), "norm": ("ndtri", lambda q: (q,)),
                "beta": ("_ufuncs._beta_ppf", lambda q, a, b: (q, a, b))}


@functools.lru_cache(maxsize=4096)
def quantile(dist: str, q: float, *shape: float) -> float:
    """``scipy.stats.<dist>.ppf(q, *shape)`` as a float, memoised: a table asks the same
    few quantiles (t at the same run counts, the normal's) hundreds of times, and each
    scipy call costs ~0.15 ms. The value is scipy's, unchanged; for ``t``, ``norm`` and
    ``beta`` at ``0 < q < 1`` it comes from the scipy.special function that scipy.stats
    itself calls (:data:`_SPECIAL_PPF`), so a table need not import scipy.stats.

    Raises:
        AttributeError: ``dist`` is not a scipy.stats distribution.
    """
    if dist in _SPECIAL_PPF and 0.0 < q < 1.0:
        from scipy import special

        name, args = _SPECIAL_PPF[dist]
        try:
            fn = functools.reduce(getattr, name.split("."), special)
        except AttributeError:  # another scipy (a private name): scipy.stats itself, below
            fn = None
        if fn is not None:
            return float(fn(*args(q, *shape)))
    from scipy import stats as sps
    return float(getattr(sps, dist).ppf(q, *shape))


def _none(reason: str, k: int) -> tuple[Undefined, ...]:
    """``k`` undefined values, each with ``reason`` (:class:`scarce_lab.undefined.Undefined`)."""
    u = Undefined(reason)
    return (u,) * k


def _clean(values: Sequence[float] | np.ndarray | pl.Series) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    return arr[~np.isnan(arr)]


def _infinite(x: np.ndarray) -> str | None:
    """The reason a statistic of ``x`` (``nan`` already dropped) is undefined because it
    holds an infinite value, else ``None``: a mean over ``inf`` is no number, and
    ``inf - inf`` would report "no spread"."""
    bad = x[~np.isfinite(x)]
    return None if not bad.size else f"an infinite value ({float(bad[0])}) among the values: no statistic"


def _count(value: Any, name: str, where: str) -> int:
    """``value`` as a count: an integer (a float that is one is taken). Raises ValueError
    naming ``where``, ``name`` and the value otherwise (``1.5`` trials, ``nan``, ``True``)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer | float | np.floating) or \
            not math.isfinite(value) or float(value) != int(value):
        raise ValueError(f"{where}: {name} must be a whole count, got {value!r}")
    return int(value)


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval ``(mean, low, high)``.

    ``nan`` values are dropped. With one value, or values constant up to float noise
    (:func:`near_constant`), the interval is ``(nan, nan)``: a zero-width interval from
    a few runs that happened to agree would claim a certainty the data do not have.
    """
    x = _clean(values)
    n = len(x)
    if n == 0:
        return _none(NO_VALUES, 3)
    if why := _infinite(x):
        return _none(why, 3)
    m = float(x.mean())
    if not math.isfinite(m):
        return _none(f"the mean of values up to {float(np.abs(x).max())} overflows a float", 3)
    if n == 1 or near_constant(x):
        return (m, *_none(ONE_VALUE if n == 1 else NO_SPREAD, 2))
    se = float(x.std(ddof=1)) / math.sqrt(n)
    h = quantile("t", 0.5 + level / 2, n - 1) * se
    return m, m - h, m + h


def mean_ci_cells(values, level: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """:func:`mean_ci` as frame cells: ``(mean, low, high)`` with ``None`` (null) where
    it is undefined (no value; one value or no spread: no interval). ``None``, ``nan``
    and infinite values are left out. The one place a table turns an
    :class:`~scarce_lab.undefined.Undefined` interval into nulls (SovSim and Economy
    tables)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return tuple(or_none(v) for v in mean_ci(vals, level=level))  # type: ignore[return-value]


def bounded_mean_ci(values, lower: float, upper: float, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of a measure with known bounds and an interval that keeps its coverage at
    few runs: ``(mean, low, high)``.

    The interval is the hull of the Student-t interval (:func:`mean_ci`) and a score
    interval that assumes the largest variance a variable in ``[lower, upper]`` with that
    mean can have (``(mu - lower)(upper - mu)``: the Wilson form of :func:`wilson_ci` on
    the rescaled mean), clipped to the bounds. The t interval alone undercovers on
    bounded, skewed measures with mass at a bound (SovSim survival times that pile up at
    the last round: 89-93% at 3-30 simulations); the hull covered at least 98.7% of
    simulated datasets at 2-30 runs for every shape tried (uniform, 60-85% at the
    ceiling, 70% at the floor, a narrow bell, five beta shapes), at the price of width
    (``benchmarks/bench_coverage.py``, rows "bounded"). It is given for constant
    samples too (the score part needs no spread), and never from one value.

    Args:
        values: one value per run (``nan`` dropped), each in ``[lower, upper]``.
        lower, upper: the measure's bounds (``lower < upper``).

    Raises:
        ValueError: ``lower >= upper``, a value outside the bounds (naming it), or
            ``level`` outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"bounded_mean_ci: level must lie in (0, 1), got {level!r}")
    if not lower < upper:
        raise ValueError(f"bounded_mean_ci: lower={lower!r} must be below upper={upper!r}")
    x = _clean(values)
    eps = 1e-9 * (upper - lower)
    if len(x) and (x.min() < lower - eps or x.max() > upper + eps):
        bad = float(x[(x < lower - eps) | (x > upper + eps)][0])
        raise ValueError(f"bounded_mean_ci: value {bad!r} outside [{lower}, {upper}]")
    n = len(x)
    if n == 0:
        return _none(NO_VALUES, 3)
    m, tlo, thi = mean_ci(x, level)
    if n == 1:
        return (m, *_none(ONE_VALUE, 2))
    center, half = _wilson(min(1.0, max(0.0, (m - lower) / (upper - lower))), n, level)
    slo, shi = lower + (upper - lower) * (center - half), lower + (upper - lower) * (center + half)
    lo = slo if math.isnan(tlo) else min(tlo, slo)
    hi = shi if math.isnan(thi) else max(thi, shi)
    return m, max(lower, lo), min(upper, hi)


def grouped_mean_ci(df: pl.DataFrame, by: Sequence[str], value: str, level: float = 0.95) -> pl.DataFrame:
    """:func:`mean_ci` of ``value`` for every group of ``by`` at once: columns ``*by``,
    ``n`` (rows of the group), ``mean``, ``low``, ``high`` (nulls where :func:`mean_ci`
    gives ``nan``: no value, one value, or values without spread). Null and ``nan`` values are left out of the mean."""
    from scipy import stats as sps
    v = pl.col(value).cast(pl.Float64)
    g = df.group_by(*by).agg(pl.len().alias("n"), v.drop_nulls().drop_nans().alias("_v"))
    g = g.with_columns(_k=pl.col("_v").list.len(), mean=pl.col("_v").list.mean(), _sd=pl.col("_v").list.std(ddof=1))
    q = sps.t.ppf(0.5 + level / 2, np.maximum(g["_k"].to_numpy() - 1, 1))
    half = pl.Series(q, dtype=pl.Float64) * pl.col("_sd") / pl.col("_k").cast(pl.Float64).sqrt()
    spread = (pl.col("_k") >= 2) & (pl.col("_sd") != 0)  # else no interval
    out = g.with_columns(low=pl.when(spread).then(pl.col("mean") - half), high=pl.when(spread).then(pl.col("mean") + half))
    finite = [pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in ("mean", "low", "high")]
    return out.with_columns(finite).select(*by, pl.col("n").cast(pl.Int64), "mean", "low", "high")


def proportion_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Proportion and Clopper-Pearson ("exact") interval ``(p, low, high)``: the
    interval every proportion table prints.

    Its coverage is at least ``level`` for every true rate and every ``n`` (Clopper and
    Pearson 1934), where Wilson's dips to 0.80-0.90 near rates of 0.05-0.1 with 5-30
    trials (``benchmarks/bench_coverage.py``). Ends from the beta quantiles
    ``B(a/2; s, n-s+1)`` and ``B(1-a/2; s+1, n-s)``, 0 and 1 at ``s = 0`` and ``s = n``;
    the same numbers as statsmodels' ``proportion_confint(method="beta")``.

    Raises:
        ValueError: ``successes`` outside ``0..n``, negative ``n`` or ``level`` outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"proportion_ci: level must lie in (0, 1), got {level!r}")
    successes, n = _count(successes, "successes", "proportion_ci"), _count(n, "n", "proportion_ci")
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"proportion_ci: successes={successes} must lie in 0..n (n={n})")
    if n == 0:
        return _none("no trials (n=0)", 3)
    a = (1 - level) / 2
    lo = 0.0 if successes == 0 else quantile("beta", a, successes, n - successes + 1)
    hi = 1.0 if successes == n else quantile("beta", 1 - a, successes + 1, n - successes)
    return successes / n, lo, hi


def wilson_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Proportion and Wilson score interval ``(p, low, high)`` (Wilson 1927).

    Closed form ``(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with
    ``z`` the normal quantile of ``0.5 + level/2``; the same numbers as statsmodels'
    ``proportion_confint(method="wilson")`` (tested), without importing it (and pandas)
    at analysis time.

    Raises:
        ValueError: ``successes`` outside ``0..n`` or negative ``n``.
    """
    successes, n = _count(successes, "successes", "wilson_ci"), _count(n, "n", "wilson_ci")
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson_ci: successes={successes} must lie in 0..n (n={n})")
    if n == 0:
        return _none("no trials (n=0)", 3)
    center, half = _wilson(successes / n, n, level)
    return successes / n, max(0.0, center - half), min(1.0, center + half)


def _wilson(p: float, n: int, level: float) -> tuple[float, float]:
    """Centre and half-width of the Wilson score interval of a proportion ``p`` of ``n``."""
    z = quantile("norm", 0.5 + level / 2)
    z2 = z * z
    denom = 1 + z2 / n
    return (p + z2 / (2 * n)) / denom, z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom


def bootstrap_ci(
    values,
    stat: Callable[..., np.ndarray | float] = np.mean,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Statistic and percentile bootstrap interval over independent values (scipy).

    ``stat`` is called on whole batches of resamples (``stat(array, axis=-1)``, scipy's
    ``vectorized=True``): numpy reductions such as ``np.mean`` and ``np.median`` work as
    they are. Same seed, same interval.

    Raises:
        TypeError: ``stat`` does not take an ``axis`` argument.
    """
    from scipy import stats as sps
    x = _clean(values)
    if len(x) == 0:
        return _none(NO_VALUES, 3)
    if why := _infinite(x):
        return _none(why, 3)
    est = float(stat(x))
    if not math.isfinite(est):
        return _none(f"the statistic of values up to {float(np.abs(x).max())} overflows a float", 3)
    if len(x) < 2:
        return (est, *_none(ONE_VALUE, 2))
    if np.all(x == x[0]):
        return est, est, est
    try:
        stat(x[None, :2], axis=-1)
    except TypeError:
        raise TypeError(
            f"bootstrap_ci: stat {getattr(stat, '__name__', stat)!r} must accept axis= (vectorised); "
            "wrap it, e.g. lambda a, axis=-1: np.percentile(a, 90, axis=axis)"
        ) from None
    res = sps.bootstrap(
        (x,),
        stat,
        vectorized=True,
        confidence_level=level,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return est, float(res.confidence_interval.low), float(res.confidence_interval.high)


def bootstrap_means(values, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement, each the size of ``values``).

    Drawn without a per-resample loop: a resample is a multinomial count of each
    distinct value (exactly the distribution of drawing ``n`` values with replacement),
    so 0/1 data (survived or not) costs one binomial draw per resample. ``nan`` values
    are dropped first. Returns an array of shape ``(n_resamples,)``.

    Raises:
        ValueError: no value left, or ``n_resamples`` < 1.
    """
    x = _clean(values)
    if len(x) == 0 or n_resamples < 1:
        raise ValueError(f"bootstrap_means: {len(x)} values, n_resamples={n_resamples}; need >= 1 of each")
    distinct, freq = np.unique(x, return_counts=True)
    n = len(x)
    if len(distinct) == 1:
        return np.full(n_resamples, float(distinct[0]))
    counts = rng.multinomial(n, freq / n, size=n_resamples)
    return counts @ distinct / n


def _cluster_draws(k: int, n_resamples: int, rng: np.random.Generator, max_cells: int = 4_000_000):
    """Index matrices ``(rows, k)`` of clusters drawn with replacement, in chunks of at
    most ``max_cells`` cells so memory stays bounded; the same stream as one
    ``rng.integers(0, k, size=(n_resamples, k))`` call."""
    step = max(1, max_cells // max(k, 1))
    done = 0
    while done < n_resamples:
        rows = min(step, n_resamples - done)
        yield rng.integers(0, k, size=(rows, k))
        done += rows


def cluster_bootstrap_ci(
    df: pl.DataFrame,
    *,
    cluster: str,
    value: str,
    weight: str | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    min_clusters: int | None = None,
) -> tuple[float, float, float]:
    """Pooled mean of ``value`` with a cluster (run-level) percentile bootstrap interval.

    Not what the tables print (they use :func:`cluster_mean_ci`): with few clusters
    this interval is far too narrow (58%, 80%, 84% and 90% coverage with 2, 3, 5 and 10
    runs, ``benchmarks/bench_coverage.py``), so it is given only from ``min_clusters``
    clusters on (default :data:`MIN_RUNS_CLUSTER_BOOTSTRAP`).

    The estimate is the ratio of sums ``sum(w * value) / sum(w)`` over all rows (rows
    with null ``value`` are dropped). Resampling draws whole clusters with replacement,
    so rounds inside a run stay together (docs/design.md: runs are the independent unit).
    Below ``min_clusters`` clusters the interval is ``(nan, nan)``.

    Raises:
        KeyError: ``cluster``, ``value`` or ``weight`` is not a column of ``df``.
    """
    for col in [cluster, value] + ([weight] if weight else []):
        if col not in df.columns:
            raise KeyError(f"cluster_bootstrap_ci: column {col!r} not in frame {df.columns}")
    d = df.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
    if d.height == 0:
        return _none(NO_VALUES, 3)
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
    need = max(2, MIN_RUNS_CLUSTER_BOOTSTRAP if min_clusters is None else min_clusters)
    if k < need:
        return (est, *_none(f"{k} run(s): the cluster bootstrap needs {need}", 2))
    rng = np.random.default_rng(seed)
    boots = np.concatenate([num[idx].sum(axis=1) / den[idx].sum(axis=1) for idx in _cluster_draws(k, n_resamples, rng)])
    alpha = (1 - level) / 2
    return est, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))


#: Fewest clusters from which :func:`cluster_bootstrap_ci` gives an interval (94% with
#: 30 runs, ``benchmarks/bench_coverage.py``).
MIN_RUNS_CLUSTER_BOOTSTRAP = 30
#: Fewest runs from which :func:`cluster_bootstrap_median` gives an interval: below it
#: the percentile cluster bootstrap of a median covers well under its nominal 95%
#: (``benchmarks/bench_coverage.py``: 48%, 75%, 83% and 90% with 2, 3, 5 and 10 runs;
#: 93% with 30).
MIN_RUNS_MEDIAN = 30
#: Fewest simulations per condition from which :func:`relative_drop_ci` gives an
#: interval: with 2, 3 and 5 its percentile bootstrap covered 47%, 74% and 89%, with 10
#: 93-95% (``benchmarks/bench_coverage.py``, survival rates 0.8 -> 0.4).
MIN_RUNS_DROP = 10


def cluster_means(df: pl.DataFrame, *, cluster: str, value: str, weight: str | None = None) -> np.ndarray:
    """Each cluster's (run's) mean of ``value``, ``sum(w * value) / sum(w)`` over its rows
    with a non-null, non-``nan`` value (``weight`` defaults to 1): an array of shape
    ``(clusters,)`` in order of the clusters' first rows (empty when no row is left).

    Raises:
        KeyError: a named column is not in ``df``.
    """
    for col in [cluster, value] + ([weight] if weight else []):
        if col not in df.columns:
            raise KeyError(f"cluster_means: column {col!r} not in frame {df.columns}")
    v = pl.col(value).cast(pl.Float64)
    d = df.filter(v.is_not_null() & v.is_not_nan())
    if d.height == 0:
        return np.array([], dtype=float)
    if weight is None:
        mean = v.mean()
    else:
        w = pl.col(weight).cast(pl.Float64)
        mean = (v * w).sum() / w.sum()
    return d.group_by(cluster, maintain_order=True).agg(mean.alias("m"))["m"].to_numpy()


def cluster_mean_ci(
    df: pl.DataFrame,
    *,
    cluster: str,
    value: str,
    weight: str | None = None,
    level: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float, float]:
    """Mean over clusters (runs) of each cluster's mean of ``value``, with a Student-t
    interval over the cluster means (``k - 1`` degrees of freedom): ``(mean, low, high)``.

    This is the interval the SCARCE tables print: every run counts once,
    whatever its number of rows, and the t interval over run means keeps its 95% from
    2 runs on, where the percentile cluster bootstrap of the pooled mean covered 58-90%
    with 2-10 runs (``benchmarks/bench_coverage.py``). Each cluster's mean is
    ``sum(w * value) / sum(w)`` over its rows (``weight`` defaults to 1); rows with a
    null or ``nan`` value are dropped. ``bounds``: the measure's range (``(0, 1)`` for a
    rate, ``(0, n_workers)`` for a count). With both bounds finite the interval is
    :func:`bounded_mean_ci` over the run means (the t interval alone undercovers when
    run means pile up at a bound, e.g. shares of 0 in most runs: 80-89% at 2-30 runs);
    with an open bound, the t interval clipped to the range.

    Undefined parts are ``nan``: no row gives ``(nan, nan, nan)``; one cluster, or
    cluster means that are all equal (no spread to estimate an error from: a
    zero-width interval would claim certainty), give ``(mean, nan, nan)``.

    Raises:
        KeyError: ``cluster``, ``value`` or ``weight`` is not a column of ``df``.
        ValueError: ``level`` outside (0, 1) or ``bounds`` not ``(low <= high)``.
    """
    if not 0 < level < 1:
        raise ValueError(f"cluster_mean_ci: level must lie in (0, 1), got {level!r}")
    if bounds is not None and not bounds[0] <= bounds[1]:
        raise ValueError(f"cluster_mean_ci: bounds {bounds!r} must be (low, high) with low <= high")
    means = cluster_means(df, cluster=cluster, value=value, weight=weight)
    if means.size == 0:
        return _none(NO_VALUES, 3)
    if bounds is not None and math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] < bounds[1]:
        return bounded_mean_ci(means, bounds[0], bounds[1], level)  # both bounds known: holds at few runs
    m = float(means.mean())
    k = len(means)
    if k < 2 or np.ptp(means) <= 1e-12 * max(1.0, abs(m)):
        return (m, *_none(ONE_VALUE if k < 2 else NO_SPREAD, 2))
    half = quantile("t", 0.5 + level / 2, k - 1) * float(means.std(ddof=1)) / math.sqrt(k)
    lo, hi = m - half, m + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return m, lo, hi


def relative_drop_ci(
    base, other, *, level: float = 0.95, n_resamples: int = 2000, rng: np.random.Generator | None = None,
    min_runs: int = MIN_RUNS_DROP,
) -> tuple[float, float, float]:
    """Relative drop ``(mean(base) - mean(other)) / mean(base)`` with a percentile
    bootstrap interval (simulations resampled within each condition with
    :func:`bootstrap_means`; resamples with a zero baseline mean are left out; the
    lower ``(1-level)/2`` and upper ``(1+level)/2`` order statistics):
    ``(drop, low, high)``.

    The interval is given only when both conditions have at least ``min_runs``
    simulations (default :data:`MIN_RUNS_DROP`): with fewer, the percentile bootstrap of
    a ratio undercovers (``benchmarks/bench_coverage.py``), so the ends are ``nan`` and
    the caller says why (:func:`interval_note`). A zero baseline mean gives ``nan`` for
    all three. ``nan`` values are dropped.
    """
    b, o = _clean(base), _clean(other)
    if b.size == 0 or o.size == 0:
        return _none(NO_VALUES, 3)
    if why := _infinite(b) or _infinite(o):
        return _none(why, 3)
    if b.mean() == 0:
        return _none("baseline mean is 0: no relative drop", 3)
    drop = float((b.mean() - o.mean()) / b.mean())
    if min(b.size, o.size) < max(2, min_runs):
        return (drop, *_none(f"fewer than {max(2, min_runs)} runs per condition: no bootstrap interval", 2))
    rng = np.random.default_rng(0) if rng is None else rng
    bb = bootstrap_means(b, n_resamples, rng)
    oo = bootstrap_means(o, n_resamples, rng)
    ok = bb != 0
    if not ok.any():
        return (drop, *_none("every resampled baseline mean is 0", 2))
    boots = (bb[ok] - oo[ok]) / bb[ok]
    a = (1 - level) / 2
    return drop, float(np.quantile(boots, a, method="lower")), float(np.quantile(boots, 1 - a, method="higher"))


def cluster_bootstrap_median(
    values, clusters, *, level: float = 0.95, n_resamples: int = 2000, seed: int = 0,
    min_clusters: int = MIN_RUNS_MEDIAN,
) -> tuple[float, float, float, int]:
    """Median of ``values`` (rows) with a percentile bootstrap that resamples whole
    clusters (runs) with replacement: ``(median, low, high, clusters)``.

    Each resample's median is the median of the concatenated rows of its drawn
    clusters, computed for all resamples at once as a weighted median over the sorted
    rows (weight = how often the row's cluster was drawn); ties and even totals follow
    ``np.median`` (mean of the two middle values). Interval quantiles are linear
    (``np.quantile``); ``nan`` with fewer than ``min_clusters`` clusters (default
    :data:`MIN_RUNS_MEDIAN`: with fewer the interval undercovers, see
    ``benchmarks/bench_coverage.py``; never fewer than 2). Rows whose value is ``nan``
    are dropped.

    Raises:
        ValueError: ``values`` and ``clusters`` differ in length.
    """
    v = np.asarray(values, dtype=float)
    c = np.asarray(clusters)
    if v.shape != c.shape:
        raise ValueError(f"cluster_bootstrap_median: {v.shape[0]} values but {c.shape[0]} cluster labels")
    keep = ~np.isnan(v)
    v, c = v[keep], c[keep]
    if len(v) == 0:
        return (*_none(NO_VALUES, 3), 0)
    # cluster ids in order of first appearance (the order the old loop drew from)
    _, first, inv = np.unique(c, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    cid = order[inv]
    k = len(first)
    est = float(np.median(v))
    if k < max(2, min_clusters):
        return (est, *_none(f"{k} run(s): the cluster bootstrap needs {max(2, min_clusters)}", 2), k)
    srt = np.argsort(v, kind="stable")
    vs, cs = v[srt], cid[srt]
    sizes = np.bincount(cid, minlength=k)
    rng = np.random.default_rng(seed)
    out = []
    for idx in _cluster_draws(k, n_resamples, rng, max_cells=max(1, 4_000_000 // max(1, len(v) // k))):
        draws = np.zeros((idx.shape[0], k), dtype=np.int64)
        np.add.at(draws, (np.arange(idx.shape[0])[:, None], idx), 1)
        total = draws @ sizes
        cum = np.cumsum(draws[:, cs], axis=1)  # (rows, n): rows at or before each sorted value
        lo_pos, hi_pos = (total - 1) // 2, total // 2
        a = (cum <= lo_pos[:, None]).sum(axis=1)
        b = (cum <= hi_pos[:, None]).sum(axis=1)
        out.append((vs[a] + vs[b]) / 2)
    boots = np.concatenate(out)
    alpha = (1 - level) / 2
    return est, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha)), k


#: Relative spread below which :func:`near_constant` calls values constant: far above
#: the rounding of float sums and means (about 1e-16 per operation), far below any
#: difference a measurement of these games can hold.
NEAR_CONSTANT_RTOL = 1e-9


def near_constant(values, rtol: float = NEAR_CONSTANT_RTOL) -> bool:
    """True when the non-``nan`` ``values`` are constant up to float noise: their range
    is at most ``rtol`` times their largest magnitude (exactly equal values, zeros
    included, are constant). Fewer than 2 values count as constant."""
    x = _clean(values)
    if len(x) < 2:
        return True
    return bool(np.ptp(x) <= rtol * float(np.abs(x).max()))


def pearson_ci(x, y, level: float = 0.95) -> tuple[float, float, float, float]:
    """Pearson r with its Fisher-z confidence interval and two-sided p-value:
    ``(r, low, high, p)``. Pairs with a ``nan`` are dropped.

    Undefined values are ``nan``, never a number that only looks like a result:
    fewer than 3 pairs, a constant input (constant up to float noise:
    :func:`near_constant`; a mean over a different number of rounds of the same share
    differs in the last bit and would otherwise correlate with the number of rounds)
    or fewer than 3 distinct points give ``nan`` for all four (through two distinct points r is +-1 whatever the data); with 3
    pairs the interval is ``nan`` (the Fisher z standard error 1/sqrt(n - 3) needs
    n >= 4)."""
    from scipy import stats as sps
    if not 0 < level < 1:
        raise ValueError(f"pearson_ci: level must lie in (0, 1), got {level!r}")
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"pearson_ci: x has shape {a.shape}, y has shape {b.shape}")
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if len(a) < 3 or near_constant(a) or near_constant(b) or len(set(zip(a, b, strict=True))) < 3:
        return _none("fewer than 3 distinct pairs, or a variable without spread", 4)
    res = sps.pearsonr(a, b)
    if len(a) < 4:
        return (float(res.statistic), *_none("3 pairs: no Fisher interval", 2), float(res.pvalue))
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
        return Undefined(NO_VALUES)
    if why := _infinite(x):
        return Undefined(why)
    if (x < 0).any():
        raise ValueError(f"gini: values must be non-negative, got min {x.min()}")
    total = x.sum()
    if total == 0:
        return 0.0
    n = len(x)
    ranks = 2 * np.arange(1, n + 1) - n - 1
    return float((ranks * np.sort(x)).sum() / (n * total))


def gini_expr(column: str) -> pl.Expr:
    """:func:`gini` as a polars aggregation (``df.group_by(run).agg(gini_expr("wealth"))``
    or on a list column via ``pl.col(c).list.eval``): the sorted form
    ``sum_i (2 i - n - 1) x_(i) / (n sum x)``, identical to the mean-absolute-difference
    form. Nulls and ``nan`` are dropped; all-zero gives 0; no value gives null. Negative
    values are the caller's to refuse."""
    x = pl.col(column).drop_nulls().drop_nans().cast(pl.Float64).sort()
    n = x.len()
    total = x.sum()
    ranks = 2 * pl.int_range(1, n + 1, dtype=pl.Int64) - n - 1
    return (
        pl.when(n == 0).then(None)
        .when(total == 0).then(0.0)
        .otherwise((ranks * x).sum() / (n * total))
    ).alias(column)



def median_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Median and a distribution-free interval for the population median: ``(median,
    x_(k), x_(n+1-k))``, the order statistics of the sign test's inversion, with ``k``
    the largest rank such that ``P(Binomial(n, 1/2) <= k - 1) <= (1 - level) / 2``.

    For independent draws of one distribution, continuous or not (an atom at zero
    included: the interval is closed), the interval holds every median of it with
    probability at least ``level`` (e.g. Conover, *Practical Nonparametric Statistics*,
    3rd ed., section 3.2): no shape, symmetry or spread is assumed. It needs
    :func:`min_median_ci_n` values (6 at 95%: with 5 the widest interval, the minimum to
    the maximum, covers with probability ``1 - 2/32 = 0.9375``); below that, and with no
    value, the ends are undefined and say why. ``nan`` values are dropped.

    Raises:
        ValueError: ``level`` outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"median_ci: level must lie in (0, 1), got {level!r}")
    x = np.sort(_clean(values))
    n = len(x)
    if n == 0:
        return _none(NO_VALUES, 3)
    med = float(np.median(x))
    need = min_median_ci_n(level)
    if n < need:
        return (med, *_none(f"{n} value{'s' if n != 1 else ''}: a distribution-free {level:.0%} interval for a "
                            f"median needs {need} (the widest, minimum to maximum, covers with probability "
                            f"1 - 2^(1-{n}) = {1 - 2.0 ** (1 - n):.3f})", 2))
    from scipy import stats as sps
    k = int(np.searchsorted(sps.binom.cdf(np.arange(n), n, 0.5), (1 - level) / 2, side="right"))  # ranks 1..k ok
    return med, float(x[k - 1]), float(x[n - k])


def min_median_ci_n(level: float = 0.95) -> int:
    """The fewest values :func:`median_ci` gives an interval from: the smallest ``n``
    with ``2^-n <= (1 - level) / 2`` (6 at 95%)."""
    return math.ceil(math.log2(2 / (1 - level)) - 1e-12)


@dataclass(frozen=True)
class IntervalKind:
    """What a printed 95% interval is, and whether a rule that stops adding runs when it
    is narrow enough (``scarce-lab study run --target-width``) may watch it.

    Attributes:
        name: the key in :data:`INTERVAL_KINDS` (what ``study_metrics`` declares per metric).
        method: the method, with the function that computes it.
        under_stopping: the evidence that it keeps 95% when runs stop on its width
            (``""``: not validated: a stopping rule may not watch it).
        why_not: why it may not be watched (``""`` when it may).
    """
    name: str
    method: str
    under_stopping: str = ""
    why_not: str = ""


#: Every kind of interval a study metric prints (``EnvironmentSpec.study_metrics(None)``
#: maps each metric to one). Coverage under stopping: ``benchmarks/bench_coverage.py``,
#: "stopping on width" (a first batch of runs, a batch more while the interval is wider
#: than W; batches of 1-10, at most 30 or 60 runs).
INTERVAL_KINDS: dict[str, IntervalKind] = {k.name: k for k in (
    IntervalKind("bounded", "hull of the Student-t and the bounded score interval over run means "
                 "(bounded_mean_ci; cluster_mean_ci with both bounds)",
                 under_stopping="covered at least 97.5% of simulated studies that stopped on its width, in every "
                 "shape tried (uniform, piled at a bound, beta, SCARCE-like run rates)"),
    IntervalKind("exact_binomial", "Clopper-Pearson over independent simulations (proportion_ci)",
                 why_not="its worst coverage falls to 0.93-0.95 (computed exactly over the binomial) when runs stop "
                 "as soon as it is narrow: its width depends on the rate, so a run of lucky outcomes stops early"),
    IntervalKind("t", "Student-t over run means (mean_ci; open, or clipped to a range it does not know)",
                 why_not="it covers only 74-86% on skewed bounded measures when runs stop as soon as it is "
                 "narrow (a dataset that happens to look tight stops early)"),
    IntervalKind("median_bootstrap", "cluster bootstrap of a median (cluster_bootstrap_median)",
                 why_not="its coverage under stopping on width is not simulated"),
    IntervalKind("drop_bootstrap", "percentile bootstrap of a relative drop (relative_drop_ci)",
                 why_not="its coverage under stopping on width is not simulated"),
    IntervalKind("median_order", "distribution-free interval for a median from order statistics (median_ci)",
                 why_not="its coverage under stopping on width is not simulated"),
)}


def interval_kind(name: str) -> IntervalKind:
    """The :class:`IntervalKind` named ``name``.

    Raises:
        ValueError: an unknown kind (naming it and the known kinds).
    """
    try:
        return INTERVAL_KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown interval kind {name!r} (known: {', '.join(INTERVAL_KINDS)})") from None
