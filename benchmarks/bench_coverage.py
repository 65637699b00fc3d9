"""Coverage of every interval method the toolkit prints, at 2, 3, 5, 10 and 30 runs.

Each method is simulated on datasets drawn like the data it is used on, with a known
true value; coverage is the share of nominal-95% intervals that contain it. A method
that gives no interval at a run count (too few runs for it to hold) prints ``--``
there; the ``given`` figure says in what share of datasets an interval was printed
(an undefined statistic, e.g. every rating identical, prints none).

Scenarios (the true value in brackets):

- ``cluster``: SCARCE per-contention rates. ``k`` runs, run rate ``mu_r ~ N(0.5, 0.1)``
  clipped to [0.01, 0.99], 5..40 Bernoulli contentions per run [0.5]. Methods: the
  percentile cluster bootstrap of the pooled mean (``stats.cluster_bootstrap_ci``, the
  method the tables printed before the cluster intervals) and the t interval over run means (``stats.cluster_mean_ci``,
  the method used now).
- ``cluster median``: SCARCE stage medians of bids. ``k`` runs, run level
  ``N(50, 10)``, 5..40 bids per run ``N(level, 15)`` [the population median, 50]:
  ``stats.cluster_bootstrap_median`` (printed from ``stats.MIN_RUNS_MEDIAN`` runs on).
- ``t``: SovSim per-simulation survival times: uniform on 1..12 [6.5], and with a mass
  at the ceiling (60% survive all 12 rounds, the rest uniform on 1..11) [9.6]:
  ``stats.mean_ci``. The second is a known weak spot of a t interval (a bounded, skewed
  mean): it covers about 90% with 4-10 runs, and no interval is given when every run
  survived.
- ``proportion``: survival rate over ``k`` simulations, exact over the binomial for
  every true rate in ``P_GRID``; the figure is the *worst* rate of the grid. Wilson
  (before) and Clopper-Pearson (``stats.proportion_ci``, now).
- ``relative drop``: SovSim drop of the survival rate from a baseline (rate 0.8) to a
  condition (rate 0.4), ``k`` simulations each [0.5]: the percentile bootstrap
  (``stats.relative_drop_ci``; printed from ``stats.MIN_RUNS_DROP`` on).
- ``Fisher z``: Pearson r of bivariate normal pairs with rho = 0.5 (``stats.pearson_ci``;
  needs 4 pairs).
- ``cross-play ratings``: Bradley-Terry ratings of a focal/background grid
  (``ratings.bradley_terry``) with ``k`` simulations per cell; each cell's focal payoff
  is the member's strength plus Gumbel noise (so the invasion comparison is exactly
  Bradley-Terry, and a background's self-play draw is shared by every comparison
  against it in that simulation) [the centred strengths]; the interval (se clustered
  by simulation, t quantile) is printed from ``ratings.MIN_SIMS_INTERVAL`` simulations.
- ``agreement``: Krippendorff's alpha and Fleiss' kappa of 3 judges on ``k`` units
  (prevalence 0.3, each judge right with probability 0.85) [the value on 400 000 units];
  percentile bootstrap over units (``judge.agreement``; printed from
  ``agreement.MIN_UNITS_INTERVAL`` units on).

Stopping on width (``scarce-lab study run --target-width W``): seeds are added in batches
until the interval is at most ``W`` wide or ``max`` runs, which can bias the interval
(a dataset that happens to look tight stops early). ``target_width_table`` simulates the
rule for each interval kind (``stats.INTERVAL_KINDS``) with the shipped function:
``bounded`` (``stats.bounded_mean_ci``) and ``t`` (``stats.mean_ci``) on every shape of
``BOUNDED_SHAPES`` and SCARCE-like run rates, ``exact_binomial`` (``stats.proportion_ci``)
exactly over the binomial at rates 0.01-0.99: a first batch (1, 2, 5 or 10 runs), a
batch more while the interval is wider than ``W`` (a share of the measure's range), at
most 30 or 60 runs; the *worst* coverage over shapes (or rates) at the stop and the mean
runs it stopped at. Only a kind that keeps 95% there may be watched (``under_stopping``).

Fork effects (``sl.effects``, ``fork_effect_table``): ``k`` parents (5, 6, 10, 20, 30,
50) with 2 fork seeds each; a parent's paired difference (intervention fork minus the
``none`` fork of the same seed) is its own effect plus seed noise, in five families:
bell (parent ``N(1, 1)``, seed ``N(0, 1)``), skewed (parent ``LogNormal(0, 1)``, seed
``N(0, 0.5)``), zero-inflated (60% of parents unchanged, the rest ``Exponential(4)``,
seed noise zero half the time else ``N(0, 2)``), zero-inflated with exact zeros (the
unchanged parents' forks identical to their ``none`` forks: a scripted policy), and
heavy-tailed (parent ``1 + t(2)``, seed ``N(0, 1)``). Methods: the t interval of the
mean over parents (before; truth the mean) and the order-statistic interval of the
median over parents (``stats.median_ci``, printed now from ``effects.MIN_PARENTS``;
truth the median, from 4 million parents).

Usage: ``python benchmarks/bench_coverage.py [--quick] [--sims 2000] [--seed 0]``.
``--quick`` runs 300 datasets per cell with 400 resamples (a few minutes); the default
2000 datasets with 1000 resamples took 22 minutes on the shared 2-core machine (most of
it the stopping simulations). The Monte Carlo
error of a coverage near 0.95 is about ``sqrt(0.95 * 0.05 / sims)`` (0.5 points at 2000).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.analysis import ratings, stats  # noqa: E402
from scarce_lab.forks import effects  # noqa: E402
from scarce_lab.judge import agreement  # noqa: E402

RUNS = (2, 3, 5, 10, 30)
P_GRID = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
LEVEL = 0.95


# -- data generators -----------------------------------------------------------------
def _cluster_data(k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-run (successes, contentions) of one SCARCE-like dataset of ``k`` runs."""
    mu = np.clip(rng.normal(0.5, 0.1, k), 0.01, 0.99)
    n = rng.integers(5, 41, k)
    return rng.binomial(n, mu).astype(float), n.astype(float)


def _frame(num: np.ndarray, den: np.ndarray) -> pl.DataFrame:
    runs = np.repeat(np.arange(len(num)), den.astype(int))
    vals = np.concatenate([np.r_[np.ones(int(s)), np.zeros(int(n - s))] for s, n in zip(num, den, strict=True)])
    return pl.DataFrame({"run_id": runs, "value": vals})


# -- one coverage function per method: (k, sims, resamples, rng) -> (coverage, given) ---
def cov_cluster_bootstrap(k, sims, boot, rng):
    """Before: percentile cluster bootstrap of the pooled mean (vectorised copy of
    ``stats.cluster_bootstrap_ci`` as the tables printed it, from 2 runs on: whole runs
    drawn with replacement; the function now gives it only from
    ``stats.MIN_RUNS_CLUSTER_BOOTSTRAP`` runs on)."""
    hit = 0
    for _ in range(sims):
        num, den = _cluster_data(k, rng)
        idx = rng.integers(0, k, (boot, k))
        b = num[idx].sum(1) / den[idx].sum(1)
        lo, hi = np.quantile(b, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        hit += lo <= 0.5 <= hi
    return hit / sims, 1.0


def cov_cluster_t(k, sims, boot, rng):
    """Now: ``stats.cluster_mean_ci`` (t over run means), called on every dataset."""
    hit = given = 0
    for _ in range(sims):
        num, den = _cluster_data(k, rng)
        _, lo, hi = stats.cluster_mean_ci(_frame(num, den), cluster="run_id", value="value", bounds=(0.0, 1.0))
        if not math.isnan(lo):
            given += 1
            hit += lo <= 0.5 <= hi
    return (hit / given if given else math.nan), given / sims


def cov_cluster_median(k, sims, boot, rng, *, min_clusters=None):
    """``stats.cluster_bootstrap_median`` as printed now (from ``stats.MIN_RUNS_MEDIAN``
    runs on), or from ``min_clusters`` runs on."""
    kw = {} if min_clusters is None else {"min_clusters": min_clusters}
    hit = given = 0
    for _ in range(sims):
        level = rng.normal(50, 10, k)
        n = rng.integers(5, 41, k)
        vals = np.concatenate([rng.normal(lv, 15, m) for lv, m in zip(level, n, strict=True)])
        runs = np.repeat(np.arange(k), n)
        _, lo, hi, _ = stats.cluster_bootstrap_median(vals, runs, n_resamples=boot, seed=int(rng.integers(1 << 30)),
                                                      **kw)
        if not math.isnan(lo):
            given += 1
            hit += lo <= 50 <= hi
    return (hit / given if given else math.nan), given / sims


def cov_cluster_median_any(k, sims, boot, rng):
    """Before: the same bootstrap printed from 2 runs on."""
    return cov_cluster_median(k, sims, boot, rng, min_clusters=2)


def cov_t(k, sims, boot, rng):
    x = rng.integers(1, 13, (sims, k)).astype(float)
    m = x.mean(1)
    se = x.std(1, ddof=1) / math.sqrt(k)
    h = sps.t.ppf((1 + LEVEL) / 2, k - 1) * se
    ok = se > 0
    # check the vectorised copy against the shipped function on the first dataset
    ref = stats.mean_ci(x[0])
    assert (not ok[0]) or abs(ref[1] - (m[0] - h[0])) < 1e-9, "mean_ci differs from the t formula"
    hit = (m - h <= 6.5) & (6.5 <= m + h)
    return float(hit[ok].mean()), float(ok.mean())


def cov_t_ceiling(k, sims, boot, rng):
    """``stats.mean_ci`` on survival times with a mass at the ceiling: 60% of
    simulations survive all 12 rounds, the others end uniformly in rounds 1..11
    [0.6 x 12 + 0.4 x 6 = 9.6]. Runs that all give the same value get no interval."""
    x = np.where(rng.random((sims, k)) < 0.6, 12, rng.integers(1, 12, (sims, k))).astype(float)
    m = x.mean(1)
    se = x.std(1, ddof=1) / math.sqrt(k)
    h = sps.t.ppf((1 + LEVEL) / 2, k - 1) * se
    ok = se > 0
    hit = (m - h <= 9.6) & (9.6 <= m + h)
    return float(hit[ok].mean()), float(ok.mean())


#: shapes of a bounded per-simulation measure: survival times on 1..12 (uniform, 60% and
#: 85% at the last round, 70% at the first) and measures on [0, 1] (beta shapes).
BOUNDED_SHAPES = {
    "survival uniform": (1, 12, lambda rng, n: rng.integers(1, 13, n).astype(float), 6.5),
    "survival 60% at 12": (1, 12, lambda rng, n: np.where(rng.random(n) < 0.6, 12, rng.integers(1, 12, n)), 9.6),
    "survival 85% at 12": (1, 12, lambda rng, n: np.where(rng.random(n) < 0.85, 12, rng.integers(1, 12, n)),
                           0.85 * 12 + 0.15 * 6),
    "survival 70% at 1": (1, 12, lambda rng, n: np.where(rng.random(n) < 0.7, 1, rng.integers(2, 13, n)), 0.7 + 0.3 * 7),
    "beta(0.3, 0.3)": (0, 1, lambda rng, n: rng.beta(0.3, 0.3, n), 0.5),
    "beta(5, 0.5)": (0, 1, lambda rng, n: rng.beta(5, 0.5, n), 5 / 5.5),
    "beta(20, 2)": (0, 1, lambda rng, n: rng.beta(20, 2, n), 20 / 22),
}


def cov_bounded(k, sims, boot, rng):
    """``stats.bounded_mean_ci`` (the shipped function, on every dataset): the worst
    coverage over :data:`BOUNDED_SHAPES`; ``given`` is the smallest share of datasets
    with an interval."""
    worst, given = 1.0, 1.0
    for lo, hi, draw, truth in BOUNDED_SHAPES.values():
        n_hit = n_given = 0
        for _ in range(sims):
            _, a, b = stats.bounded_mean_ci(np.asarray(draw(rng, k), dtype=float), lo, hi, level=LEVEL)
            if not math.isnan(a):
                n_given += 1
                n_hit += a <= truth <= b
        worst = min(worst, n_hit / n_given if n_given else math.nan)
        given = min(given, n_given / sims)
    return worst, given


def cov_t_bounded_worst(k, sims, boot, rng):
    """The t-interval alone (``stats.mean_ci``) on the same shapes: the worst coverage
    among datasets that got an interval (before: printed for survival time)."""
    worst, given = 1.0, 1.0
    for _lo, _hi, draw, truth in BOUNDED_SHAPES.values():
        x = np.stack([np.asarray(draw(rng, k), dtype=float) for _ in range(sims)])
        m, sd = x.mean(1), x.std(1, ddof=1)
        ok = sd > 0
        h = sps.t.ppf((1 + LEVEL) / 2, k - 1) * sd / math.sqrt(k)
        hit = (m - h <= truth) & (truth <= m + h)
        if ok.any():
            worst = min(worst, float(hit[ok].mean()))
        given = min(given, float(ok.mean()))
    return worst, given


def _exact_proportion(k, ci) -> float:
    """Worst coverage over ``P_GRID``: exact, summing the binomial pmf over outcomes."""
    bounds = [ci(s, k) for s in range(k + 1)]
    worst = 1.0
    for p in P_GRID:
        pmf = sps.binom.pmf(np.arange(k + 1), k, p)
        worst = min(worst, float(sum(w for (_, lo, hi), w in zip(bounds, pmf, strict=True) if lo <= p <= hi)))
    return worst


def cov_wilson(k, sims, boot, rng):
    return _exact_proportion(k, stats.wilson_ci), 1.0


def cov_proportion(k, sims, boot, rng):
    return _exact_proportion(k, stats.proportion_ci), 1.0


def cov_drop(k, sims, boot, rng, *, min_runs=None):
    hit = given = 0
    for _ in range(sims):
        base = rng.binomial(1, 0.8, k).astype(float)
        other = rng.binomial(1, 0.4, k).astype(float)
        kw = {} if min_runs is None else {"min_runs": min_runs}
        _, lo, hi = stats.relative_drop_ci(base, other, n_resamples=boot, rng=rng, **kw)
        if not math.isnan(lo):
            given += 1
            hit += lo <= 0.5 <= hi
    return (hit / given if given else math.nan), given / sims


def cov_drop_any(k, sims, boot, rng):
    """Before: the same bootstrap printed from 2 simulations on."""
    return cov_drop(k, sims, boot, rng, min_runs=2)


def cov_fisher(k, sims, boot, rng):
    cov = np.array([[1, 0.5], [0.5, 1]])
    hit = given = 0
    for _ in range(sims):
        xy = rng.multivariate_normal([0, 0], cov, k)
        _, lo, hi, _ = stats.pearson_ci(xy[:, 0], xy[:, 1])
        if not math.isnan(lo):
            given += 1
            hit += lo <= 0.5 <= hi
    return (hit / given if given else math.nan), given / sims


#: Parent differences of fork effects, ``(k parents, 2 seeds)`` -> paired differences
#: (intervention fork minus the ``none`` fork of the same seed), and the true mean of a
#: parent's mean difference. The median's truth is computed by :func:`_fork_truth`.
FORK_FAMILIES = {
    "bell": (lambda rng, k: rng.normal(1, 1, (k, 1)) + rng.normal(0, 1, (k, 2)), 1.0),
    "skewed": (lambda rng, k: rng.lognormal(0, 1, (k, 1)) + rng.normal(0, 0.5, (k, 2)), math.exp(0.5)),
    "zero-inflated": (lambda rng, k: np.where(rng.random((k, 1)) < 0.6, 0.0, rng.exponential(4, (k, 1)))
                      + np.where(rng.random((k, 2)) < 0.5, 0.0, rng.normal(0, 2, (k, 2))), 1.6),
    "zero-inflated, exact zeros": (lambda rng, k: np.where(
        rng.random((k, 1)) < 0.6, 0.0, rng.exponential(4, (k, 1)) + rng.normal(0, 2, (k, 2))), 1.6),
    "heavy-tailed": (lambda rng, k: 1 + rng.standard_t(2, (k, 1)) + rng.normal(0, 1, (k, 2)), 1.0),
}
FORK_PARENTS = (5, 6, 10, 20, 30, 50)
_FORK_MEDIAN: dict[str, float] = {}


def _fork_truth(family: str) -> float:
    """The median of a parent's mean paired difference in ``family`` (4 million parents)."""
    if family not in _FORK_MEDIAN:
        d = FORK_FAMILIES[family][0](np.random.default_rng(777), 4_000_000).mean(1)
        _FORK_MEDIAN[family] = float(np.median(d))
    return _FORK_MEDIAN[family]


def _fork_rows(d: np.ndarray) -> list[dict]:
    return [{"environment": "e", "parent": f"p{i}", "at": 1, "seed": j, "intervention": label, "metrics": {"m": v}}
            for i in range(d.shape[0]) for j in range(d.shape[1]) for label, v in (("none", 0.0), ("x", float(d[i, j])))]


def cov_fork(method: str, family: str, k: int, sims: int, rng) -> tuple[float, float]:
    """Coverage of a fork-effect interval over ``k`` parents with 2 seeds each:
    ``t`` (before: Student-t over parents of the mean, truth the mean) or ``median``
    (now: ``sl.effects``, :func:`stats.median_ci` over parents, truth the median),
    vectorised, checked against the shipped function on the first dataset."""
    draw, mean = FORK_FAMILIES[family]
    d = np.stack([draw(rng, k) for _ in range(sims)])  # (sims, k, 2)
    x = np.sort(d.mean(2), axis=1)
    if method == "t":
        m, sd = x.mean(1), x.std(1, ddof=1)
        h = sps.t.ppf((1 + LEVEL) / 2, k - 1) * sd / math.sqrt(k)
        ok = sd > 0
        hit = (m - h <= mean) & (mean <= m + h)
        ref = stats.mean_ci(x[0])
        assert not ok[0] or abs(ref[1] - (m[0] - h[0])) < 1e-9, "the t copy differs from stats.mean_ci"
        return float(hit[ok].mean()), float(ok.mean())
    truth = _fork_truth(family)
    r = effects.paired_effects(_fork_rows(d[0])).row(0, named=True)  # the shipped path, on the first dataset
    if r["ci_low"] is None:
        return math.nan, 0.0
    need = stats.min_median_ci_n(LEVEL)
    kk = int(np.searchsorted(sps.binom.cdf(np.arange(k), k, 0.5), (1 - LEVEL) / 2, side="right"))
    lo, hi = x[:, kk - 1], x[:, k - kk]
    assert k >= need and abs(r["ci_low"] - lo[0]) < 1e-9 and abs(r["ci_high"] - hi[0]) < 1e-9, \
        "the order-statistic copy differs from sl.effects"
    return float(((lo <= truth) & (truth <= hi)).mean()), 1.0


def fork_effect_table(sims: int, seed: int, parents=FORK_PARENTS) -> pl.DataFrame:
    """Coverage of fork-effect intervals: one row per (method, family), a column per parent count."""
    rows = []
    for method in ("t", "median"):
        for family in FORK_FAMILIES:
            row = {"method": {"t": "t over parents, mean (before)", "median": "order statistics, median (now)"}[method],
                   "family": family}
            for k in parents:
                c, g = cov_fork(method, family, k, sims, np.random.default_rng([seed, k, sum(map(ord, method + family))]))
                row[f"k={k}"] = "--" if g == 0 else f"{c:.3f}" + ("" if g > 0.995 else f" ({g:.0%})")
            rows.append(row)
    return pl.DataFrame(rows)


def _ratings(n, rng):
    truth = rng.random(n) < 0.3
    right = rng.random((n, 3)) < 0.85
    return np.where(right, truth[:, None], ~truth[:, None]).astype(float)


_TRUE_AGREEMENT: dict[str, float] = {}


def _true_agreement() -> dict[str, float]:
    if not _TRUE_AGREEMENT:
        m = _ratings(400_000, np.random.default_rng(12345))
        ones, cnt = agreement._counts(m)
        _TRUE_AGREEMENT["alpha"] = float(agreement._alpha_counts(ones, cnt))
        _TRUE_AGREEMENT["fleiss"] = float(agreement._fleiss_counts(ones, cnt, 3))
    return _TRUE_AGREEMENT


def _cov_agreement(stat, min_units):
    """Coverage of the percentile bootstrap over units that ``judge.agreement`` prints
    (its own resampling, ``_boot_arrays``, and interval, ``_percentile``), given from
    ``min_units`` units on (None: ``agreement.MIN_UNITS_INTERVAL``, what
    ``label_agreement`` applies; checked once per call against ``label_agreement``)."""
    def cov(k, sims, boot, rng):
        need = agreement.MIN_UNITS_INTERVAL if min_units is None else min_units
        if min_units is None:
            m = _ratings(k, rng)
            answers = {f"j{j}": {f"u{i}": (["x"] if m[i, j] else []) for i in range(k)} for j in range(3)}
            row = agreement.label_agreement(answers, ["x"], [f"u{i}" for i in range(k)], n_boot=50).row(0, named=True)
            assert (row[f"{stat}_lo"] is not None and not math.isnan(row[f"{stat}_lo"])) or k < need or \
                math.isnan(row["alpha" if stat == "alpha" else "fleiss_kappa"]), "label_agreement differs"
        if k < need:
            return math.nan, 0.0
        truth = _true_agreement()[stat]
        hit = given = 0
        for _ in range(sims):
            ci = agreement._percentile(agreement._boot_arrays(_ratings(k, rng), n_boot=boot,
                                                              seed=int(rng.integers(1 << 30)))[stat], boot, LEVEL)
            if not math.isnan(ci.lo):
                given += 1
                hit += ci.lo <= truth <= ci.hi
        return (hit / given if given else math.nan), given / sims
    return cov


def _cov_bradley_terry(strengths: tuple[float, ...]):
    """Coverage of ``ratings.bradley_terry``'s interval (computed as it computes it:
    ``ratings.fit_bradley_terry``, se clustered by simulation, t quantile) on a
    cross-play grid of ``len(strengths)`` members with ``k`` simulations per cell: each
    cell's focal payoff is the focal member's strength plus Gumbel noise, so "F over B
    beats B's self-play" is exactly Bradley-Terry with the true centred ratings, while
    B's self-play draw of a simulation is shared by every comparison against B in it
    (the grid's dependence). Coverage is over members and datasets with a finite
    estimate; ``given`` is the share of datasets with one (a comparison graph that is
    not strongly connected has none)."""
    a = np.asarray(strengths, float)
    truth = a - a.mean()
    n = len(a)
    fi, bi = (np.array(v) for v in zip(*[(f, b) for f in range(n) for b in range(n) if f != b], strict=True))

    def cov(k, sims, boot, rng):
        if k < ratings.MIN_SIMS_INTERVAL:
            return math.nan, 0.0
        hit = given = 0
        for _ in range(sims):
            own = a[None, :] + rng.gumbel(size=(k, n))  # B's self-play payoff per simulation
            inv = a[fi][None, :] + rng.gumbel(size=(k, len(fi)))  # F over B per simulation
            y = (inv > own[:, bi]).astype(float).ravel()
            fit = ratings.fit_bradley_terry(n, np.tile(fi, k), np.tile(bi, k), y, np.repeat(np.arange(k), len(fi)))
            if fit["ok"]:
                given += 1
                hit += int(np.sum(np.abs(fit["rating"] - truth) <= fit["q"] * fit["se"]))
        return (hit / (given * n) if given else math.nan), given / sims
    return cov


METHODS = {
    # name: (coverage function, scenario); "(before)": the method printed before the cluster intervals
    "cluster bootstrap (before)": (cov_cluster_bootstrap, "cluster"),
    "t over run means (now)": (cov_cluster_t, "cluster"),
    "median cluster bootstrap, from 2 (before)": (cov_cluster_median_any, "cluster median"),
    "median cluster bootstrap (now)": (cov_cluster_median, "cluster median"),
    "t over runs": (cov_t, "survival time"),
    "t over runs (ceiling)": (cov_t_ceiling, "survival time, 60% at 12"),
    "t over runs, worst bounded shape (before)": (cov_t_bounded_worst, "bounded measure"),
    "bounded: hull of t and score (now)": (cov_bounded, "bounded measure"),
    "Wilson (before; worst p)": (cov_wilson, "proportion"),
    "Clopper-Pearson (now; worst p)": (cov_proportion, "proportion"),
    "relative drop, from 2 (before)": (cov_drop_any, "relative drop"),
    "relative drop (now)": (cov_drop, "relative drop"),
    "Fisher z": (cov_fisher, "Pearson r"),
    "alpha bootstrap, from 1 unit (before)": (_cov_agreement("alpha", 1), "agreement"),
    "alpha bootstrap (now)": (_cov_agreement("alpha", None), "agreement"),
    "Fleiss bootstrap, from 1 unit (before)": (_cov_agreement("fleiss", 1), "agreement"),
    "Fleiss bootstrap (now)": (_cov_agreement("fleiss", None), "agreement"),
    "Bradley-Terry, 3 members": (_cov_bradley_terry((0.6, 0.0, -0.6)), "cross-play ratings"),
    "Bradley-Terry, 3 members far apart": (_cov_bradley_terry((1.5, 0.0, -1.5)), "cross-play ratings"),
    "Bradley-Terry, 5 members": (_cov_bradley_terry((1.0, 0.5, 0.0, -0.5, -1.0)), "cross-play ratings"),
}


def coverage_table(sims: int, boot: int, seed: int, methods=None, runs=RUNS) -> pl.DataFrame:
    """One row per (method, runs): ``coverage`` (nan where no interval was given),
    ``given`` (share of datasets with an interval), ``seconds``."""
    rows = []
    for name, (fn, scenario) in METHODS.items():
        if methods is not None and name not in methods:
            continue
        for k in runs:
            rng = np.random.default_rng([seed, k, sum(map(ord, name))])
            t0 = time.perf_counter()
            c, g = fn(k, sims, boot, rng)
            rows.append({"method": name, "scenario": scenario, "runs": k, "coverage": c, "given": g,
                         "seconds": time.perf_counter() - t0})
    return pl.DataFrame(rows)


#: Shapes of a per-run value for the stopping simulations: :data:`BOUNDED_SHAPES` and
#: SCARCE-like run rates (each run's share of 5-40 contentions, run rates N(0.5, 0.1)).
def _stopping_shapes() -> dict[str, tuple]:
    return {**BOUNDED_SHAPES, "run rates N(0.5, 0.1)": (
        0, 1, lambda rng, k: (lambda nd: nd[0] / nd[1])(_cluster_data(k, rng)), 0.5)}


#: (kind, shipped interval of one array of run values on [lo, hi], widths as shares of the range).
STOPPING_KINDS = (
    ("bounded", lambda x, lo, hi: stats.bounded_mean_ci(x, lo, hi, level=LEVEL), (0.6, 0.45, 0.3)),
    ("t", lambda x, lo, hi: stats.mean_ci(x, level=LEVEL), (0.3, 0.2, 0.15)),
)
STOP_BATCHES = (1, 2, 5, 10)
STOP_MOST = (30, 60)


def cov_stopping(ci, draw, truth: float, lo: float, hi: float, width: float, batch: int, most: int, sims: int,
                 rng) -> dict[str, float]:
    """Coverage of ``ci`` when the runs stop on its width (the study engine's
    ``--target-width`` rule: a first batch of ``batch`` runs, a batch more while the
    interval is wider than ``width`` x the range, at most ``most`` runs): ``coverage``
    among datasets with an interval at the stop, ``runs at stop`` (mean), ``stopped by
    width`` (share)."""
    hit = given = by_width = 0
    stopped_at = []
    w = width * (hi - lo)
    for _ in range(sims):
        x = np.asarray(draw(rng, batch), dtype=float)
        while True:
            _, a, b = ci(x, lo, hi)
            narrow = not math.isnan(a) and b - a <= w
            if narrow or len(x) >= most:
                break
            x = np.r_[x, np.asarray(draw(rng, min(batch, most - len(x))), dtype=float)]
        stopped_at.append(len(x))
        by_width += narrow
        if not math.isnan(a):
            given += 1
            hit += a <= truth <= b
    return {"coverage": hit / given if given else math.nan, "runs at stop": float(np.mean(stopped_at)),
            "stopped by width": by_width / sims}


def cov_stopping_binomial(p: float, width: float, batch: int, most: int) -> float:
    """Exact coverage of ``stats.proportion_ci`` (Clopper-Pearson) at true rate ``p``
    when simulations stop on its width (same rule): the distribution of successes is
    carried batch by batch over the paths not yet stopped (no Monte Carlo error)."""
    cov, n, dist = 0.0, 0, np.array([1.0])
    while n < most:
        k = min(batch, most - n)
        dist, n = np.convolve(dist, sps.binom.pmf(np.arange(k + 1), k, p)), n + k
        go = np.zeros_like(dist)
        for s in np.flatnonzero(dist):
            _, a, b = stats.proportion_ci(int(s), n, level=LEVEL)
            if b - a <= width or n >= most:
                cov += dist[s] * (a <= p <= b)
            else:
                go[s] = dist[s]
        dist = go
    return cov


def target_width_table(sims: int, seed: int, batches=STOP_BATCHES, mosts=STOP_MOST) -> pl.DataFrame:
    """One row per (interval kind, width, batch, most runs): the *worst* coverage over
    the shapes (:func:`_stopping_shapes`; for ``exact_binomial`` the rates 0.01-0.99,
    exact), the shape it was worst at, and the range of mean runs at the stop."""
    rows = []
    shapes = _stopping_shapes()
    for kind, ci, widths in STOPPING_KINDS:
        for most in mosts:
            for b in batches:
                for w in widths:
                    res = []
                    for name, (lo, hi, draw, truth) in shapes.items():
                        rng = np.random.default_rng([seed, b, most, int(w * 1000), sum(map(ord, kind + name))])
                        res.append((cov_stopping(ci, draw, truth, lo, hi, w, b, most, sims, rng), name))
                    worst = min(res, key=lambda r: r[0]["coverage"])
                    at = [r[0]["runs at stop"] for r in res]
                    rows.append({"interval": kind, "width (share of range)": w, "batch": b, "max runs": most,
                                 "worst coverage": worst[0]["coverage"], "worst shape": worst[1],
                                 "runs at stop": f"{min(at):.1f}-{max(at):.1f}"})
    grid = np.linspace(0.01, 0.99, 99)
    for most in mosts:
        for b in batches:
            for w in (0.6, 0.45, 0.3):
                cov = [cov_stopping_binomial(p, w, b, most) for p in grid]
                i = int(np.argmin(cov))
                rows.append({"interval": "exact_binomial", "width (share of range)": w, "batch": b, "max runs": most,
                             "worst coverage": cov[i], "worst shape": f"rate {grid[i]:.2f} (exact)",
                             "runs at stop": "-"})
    return pl.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="300 datasets per cell, 400 resamples")
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sims, boot = (300, 400) if a.quick else (a.sims, a.boot)
    t0 = time.perf_counter()
    tab = coverage_table(sims, boot, a.seed)
    print(f"nominal 95% intervals; {sims} datasets per cell, {boot} resamples; MC error ~"
          f"{100 * math.sqrt(0.95 * 0.05 / sims):.1f} points")
    wide = []
    for name, _ in METHODS.items():
        part = tab.filter(pl.col("method") == name)
        row = {"method": name, "scenario": part["scenario"][0]}
        for r in part.iter_rows(named=True):
            row[f"k={r['runs']}"] = "--" if r["given"] == 0 else (
                f"{r['coverage']:.3f}" + ("" if r["given"] > 0.995 else f" ({r['given']:.0%})"))
        wide.append(row)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, tbl_width_chars=200):
        print(pl.DataFrame(wide))
    print("'--': no interval printed at that run count; '(x%)': share of datasets given an interval")
    print("stopping on width (scarce-lab study run --target-width; worst coverage over shapes; "
          "stats.INTERVAL_KINDS says which kinds may be watched):")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=3, fmt_str_lengths=40, tbl_width_chars=200):
        print(target_width_table(sims, a.seed))
    print("fork effects (sl.effects; k parents, 2 fork seeds each; t: truth the mean, median: truth the median):")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, tbl_width_chars=200):
        print(fork_effect_table(sims, a.seed))
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
