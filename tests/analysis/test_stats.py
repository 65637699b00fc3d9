"""Confidence intervals and Gini against hand computations and reference values."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.analysis import stats
from scarce_lab.analysis.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    gini,
    mean_ci,
    pearson_ci,
    wilson_ci,
)


def test_mean_ci_matches_hand_t_interval():
    m, lo, hi = mean_ci([1, 2, 3, 4])
    # mean 2.5, sd 1.2910, se 0.6455, t(0.975, 3) = 3.1824
    assert m == 2.5
    assert lo == pytest.approx(2.5 - 3.182446 * 0.645497, abs=1e-5)
    assert hi == pytest.approx(2.5 + 3.182446 * 0.645497, abs=1e-5)
    assert mean_ci([5.0]) [0] == 5.0 and math.isnan(mean_ci([5.0])[1])
    assert mean_ci([2, 2, 2])[0] == 2.0 and math.isnan(mean_ci([2, 2, 2])[1])  # no zero-width interval
    assert math.isnan(mean_ci([0.1 * 3, 0.3, 0.30000000000000004])[1])  # constant up to float noise


def test_wilson_ci_reference_value():
    p, lo, hi = wilson_ci(8, 10)
    # Wilson 95% for 8/10: 0.4902 .. 0.9433
    assert p == 0.8 and lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    with pytest.raises(ValueError, match="successes=11"):
        wilson_ci(11, 10)


def test_gini_hand_cases():
    assert gini([5, 5, 5, 5]) == 0.0
    assert gini([0, 0, 0, 12]) == pytest.approx(0.75)  # 1 - 1/n for n = 4
    # |1-3| pairs: sum_ij |xi-xj| = 2*2 = 4; 4 / (2 * 4 * 2) = 0.25
    assert gini([1, 3]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="non-negative"):
        gini([-1, 2])


def test_cluster_bootstrap_keeps_runs_together():
    # run a: 10 rounds of 1.0; run b: 2 rounds of 0.0. Pooled mean = 10/12.
    df = pl.DataFrame({"run": ["a"] * 10 + ["b"] * 2, "v": [1.0] * 10 + [0.0] * 2})
    est, lo, hi = cluster_bootstrap_ci(df, cluster="run", value="v", min_clusters=2)
    assert est == pytest.approx(10 / 12)
    assert math.isnan(cluster_bootstrap_ci(df, cluster="run", value="v")[1])  # 2 runs < MIN_RUNS_CLUSTER_BOOTSTRAP
    # resampling whole runs can only give 0, 10/12 or 1
    assert lo == pytest.approx(0.0) and hi == pytest.approx(1.0)
    one = cluster_bootstrap_ci(df.filter(pl.col("run") == "a"), cluster="run", value="v")
    assert one[0] == 1.0 and math.isnan(one[1])
    with pytest.raises(KeyError, match="'w'"):
        cluster_bootstrap_ci(df, cluster="run", value="w")


def test_bootstrap_and_pearson():
    est, lo, hi = bootstrap_ci(np.arange(20.0))
    assert est == 9.5 and lo < 9.5 < hi
    r, lo, hi, p = pearson_ci([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert r == pytest.approx(0.7745967, abs=1e-6) and lo < r < hi and 0 < p < 1
    assert math.isnan(pearson_ci([1, 1, 1], [1, 2, 3])[0])


def test_pearson_is_undefined_where_it_would_only_look_like_a_result():
    """Two distinct points make r = -1 with p = 0 whatever the data (the demo's three
    leader simulations: (0.16, 12), (1, 1), (1, 1)); with 3 points the Fisher z interval
    (standard error 1 / sqrt(n - 3)) does not exist."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert all(math.isnan(v) for v in pearson_ci([0.16, 1.0, 1.0], [12, 1, 1]))
        r, lo, hi, p = pearson_ci([1, 2, 3], [1, 3, 2])
    assert r == pytest.approx(0.5) and 0 < p < 1 and math.isnan(lo) and math.isnan(hi)


# -- vectorised resampling ---------------------------------------
def _old_bootstrap_ci(values, stat, n_resamples=2000, seed=0):
    """The loop-based interval this module used before (scipy, apply_along_axis)."""
    from scipy import stats as sps

    x = np.asarray(values, dtype=float)
    res = sps.bootstrap((x,), lambda s, axis=-1: np.apply_along_axis(stat, axis, s), n_resamples=n_resamples,
                       method="percentile", rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def test_bootstrap_ci_vectorised_equals_the_loop_it_replaces():
    x = np.random.default_rng(3).gamma(2.0, size=40)
    for stat in (np.mean, np.median):
        est, lo, hi = bootstrap_ci(x, stat=stat, seed=5)
        assert est == pytest.approx(float(stat(x)))
        assert (lo, hi) == pytest.approx(_old_bootstrap_ci(x, stat, seed=5), abs=1e-12)
    with pytest.raises(TypeError, match="axis"):
        bootstrap_ci(x, stat=lambda a: float(np.mean(a)))


def test_bootstrap_means_has_the_resampling_distribution():
    from math import comb

    from scarce_lab.analysis.stats import bootstrap_means

    # [0, 0, 1, 1]: a resample mean is k/4 with k ~ Binomial(4, 1/2)
    draws = bootstrap_means([0, 0, 1, 1], 40_000, np.random.default_rng(0))
    assert draws.shape == (40_000,)
    for k in range(5):
        share = float(np.mean(draws == k / 4))
        assert share == pytest.approx(comb(4, k) / 16, abs=0.01), k
    # three distinct values: mean and variance of the resample mean (var = sigma^2 / n)
    x = np.array([1.0, 2.0, 2.0, 7.0, 7.0, 7.0])
    d = bootstrap_means(x, 40_000, np.random.default_rng(1))
    assert d.mean() == pytest.approx(x.mean(), abs=0.02)
    assert d.var() == pytest.approx(x.var() / len(x), rel=0.03)
    again = bootstrap_means(x, 100, np.random.default_rng(1))
    assert np.array_equal(again, bootstrap_means(x, 100, np.random.default_rng(1)))
    assert np.all(bootstrap_means([4.0, 4.0], 10, np.random.default_rng(0)) == 4.0)
    with pytest.raises(ValueError, match="0 values"):
        bootstrap_means([], 10, np.random.default_rng(0))


def test_cluster_bootstrap_ci_exact_two_cluster_distribution_and_chunking():
    # two runs of one round each, values 0 and 1: a resample mean is 0, 1/2 or 1 with
    # probabilities 1/4, 1/2, 1/4, so the 95 % percentile interval is (0, 1)
    df = pl.DataFrame({"run": ["a", "b"], "v": [0.0, 1.0]})
    est, lo, hi = cluster_bootstrap_ci(df, cluster="run", value="v", n_resamples=4000, min_clusters=2)
    assert (est, lo, hi) == (0.5, 0.0, 1.0)
    # the chunked draws are the same stream as one big draw
    rng = np.random.default_rng(11)
    runs = rng.integers(0, 500, size=5000).astype(str)
    big = pl.DataFrame({"run": runs, "v": rng.normal(size=5000)})
    got = cluster_bootstrap_ci(big, cluster="run", value="v", seed=2)
    per = big.group_by("run", maintain_order=True).agg(pl.col("v").sum().alias("num"), pl.len().alias("den"))
    num, den = per["num"].to_numpy(), per["den"].to_numpy().astype(float)
    idx = np.random.default_rng(2).integers(0, len(num), size=(2000, len(num)))
    boots = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    assert got[1:] == pytest.approx((np.quantile(boots, 0.025), np.quantile(boots, 0.975)), abs=1e-12)


def test_cluster_bootstrap_median_equals_the_loop_it_replaces():
    from scarce_lab.analysis.stats import cluster_bootstrap_median

    def loop(values, clusters, seed):
        groups = [values[clusters == c] for c in dict.fromkeys(clusters)]
        rng = np.random.default_rng(seed)
        k = len(groups)
        boots = [np.median(np.concatenate([groups[i] for i in rng.integers(0, k, size=k)])) for _ in range(2000)]
        return float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))

    rng = np.random.default_rng(7)
    for seed in range(3):
        clusters = rng.integers(0, 9, size=60).astype(str)
        values = rng.integers(0, 12, size=60).astype(float)  # ties on purpose
        est, lo, hi, k = cluster_bootstrap_median(values, clusters, seed=seed, min_clusters=2)
        assert est == float(np.median(values)) and k == len(set(clusters))
        assert (lo, hi) == loop(values, clusters, seed)
    one = cluster_bootstrap_median([1.0, 3.0], ["x", "x"])
    assert one[0] == 2.0 and math.isnan(one[1]) and one[3] == 1
    with pytest.raises(ValueError, match="2 values but 1"):
        cluster_bootstrap_median([1.0, 2.0], ["x"])


def test_gini_expr_matches_gini():
    from scarce_lab.analysis.stats import gini_expr

    rng = np.random.default_rng(0)
    rows = [(g, float(v)) for g in range(200) for v in rng.integers(0, 50, size=rng.integers(1, 9))]
    rows += [(999, 0.0), (999, 0.0)]
    df = pl.DataFrame(rows, schema={"g": pl.Int64, "x": pl.Float64}, orient="row")
    got = dict(df.group_by("g").agg(gini_expr("x")).rows())
    for g, part in df.group_by("g"):
        assert got[g[0]] == pytest.approx(gini(part["x"].to_list()), abs=1e-12)
    assert got[999] == 0.0


def test_survival_drop_interval_matches_the_exact_bootstrap_distribution():
    """Baseline 8 of 10 simulations survived, the condition 4 of 10: the bootstrap
    drop (bb - oo) / bb has an exactly computable distribution (two binomials); the
    interval's ends must sit at its 2.5 % and 97.5 % quantiles (within a band of 1
    percentage point of probability, many standard errors at 20,000 resamples)."""
    from scipy.stats import binom

    from scarce_lab.environments.sovsim.analysis.drops import relative_drops

    per_sim = pl.DataFrame({
        "model": ["m"] * 20,
        "condition": ["cpr"] * 10 + ["kcpr"] * 10,
        "survived": [True] * 8 + [False] * 2 + [True] * 4 + [False] * 6,
    })
    out = relative_drops(per_sim, "survived", n_boot=20_000, seed=0).row(0, named=True)
    assert out["drop"] == pytest.approx(0.5)
    atoms: dict[float, float] = {}
    for i in range(1, 11):
        for j in range(11):
            d = round((i - j) / i, 12)
            atoms[d] = atoms.get(d, 0.0) + binom.pmf(i, 10, 0.8) * binom.pmf(j, 10, 0.4)
    total = sum(atoms.values())  # resamples with bb = 0 are left out
    xs = sorted(atoms)
    cdf = np.cumsum([atoms[x] / total for x in xs])

    def q(p):
        return xs[int(np.searchsorted(cdf, p))]

    assert q(0.02) <= out["ci_low"] <= q(0.03)
    assert q(0.97) <= out["ci_high"] <= q(0.98)
    assert out["ci_low"] < 0.5 < out["ci_high"]
    again = relative_drops(per_sim, "survived", n_boot=20_000, seed=0).row(0, named=True)
    assert (again["ci_low"], again["ci_high"]) == (out["ci_low"], out["ci_high"])


def test_wilson_closed_form_equals_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for n in (1, 2, 7, 10, 33, 120, 5000):
        for s in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for level in (0.9, 0.95, 0.99):
                lo, hi = proportion_confint(s, n, alpha=1 - level, method="wilson")
                p, a, b = wilson_ci(s, n, level=level)
                assert p == s / n and a == pytest.approx(lo, abs=1e-12) and b == pytest.approx(hi, abs=1e-12), (s, n)


def test_equality_is_one_minus_gini_per_simulation_and_refuses_negative_totals():
    from scarce_lab.environments.sovsim.analysis.metrics import simulation_metrics

    rows = []
    for run, payoffs in (("r1", [10.0, 10.0, 10.0, 30.0]), ("r2", [5.0, 5.0, 5.0, 5.0])):
        for i, p in enumerate(payoffs):
            rows.append({"source": "t", "run_id": run, "model": "m", "condition": "cpr", "simulation": 0, "round": 12,
                         "agent": f"a{i}", "is_leader": False, "pool_before": 120.0, "pool_seen": 120.0,
                         "remainder_seen": None, "announced_pool": None, "extraction": p, "payoff": p,
                         "remaining": 60.0, "collapsed": False})
    df = pl.DataFrame(rows)
    sims = {r["run_id"]: r for r in simulation_metrics(df).iter_rows(named=True)}
    assert sims["r1"]["equality"] == pytest.approx(1 - gini([10, 10, 10, 30]))  # 1 - 0.25
    assert sims["r2"]["equality"] == 1.0
    with pytest.raises(ValueError, match="non-negative"):
        simulation_metrics(df.with_columns(payoff=pl.when(pl.col("agent") == "a0").then(-50.0).otherwise("payoff")))


def test_pool_band_counts_collapsed_pools_as_zero():
    from scarce_lab.environments.sovsim.analysis.dynamics import pool_band, pool_dynamics

    rows = []
    for run, pools, collapse_at in (("a", [120.0, 80.0, 60.0], None), ("b", [120.0, 20.0], 2), ("c", [120.0, 100.0, 90.0], None)):
        for r, p in enumerate(pools, start=1):
            rows.append({"model": "m", "condition": "cpr", "run_id": run, "round": r, "pool_before": p,
                         "remaining": 0.0 if r == collapse_at else p / 2, "collapsed": r == collapse_at})
    df = pl.DataFrame(rows)
    dyn = pool_dynamics(df)
    assert dyn.filter(pl.col("run_id") == "b").sort("round")["pool_before"].to_list() == [120.0, 20.0, 0.0]
    band = {r["round"]: r for r in pool_band(df).iter_rows(named=True)}
    assert band[1]["n"] == 3 and band[1]["mean"] == 120.0 and band[1]["ci_low"] is None  # no spread: no band
    m, lo, hi = mean_ci([60.0, 0.0, 90.0])  # round 3: b's collapsed pool counts as 0
    assert (band[3]["mean"], band[3]["ci_low"], band[3]["ci_high"]) == pytest.approx((m, lo, hi), abs=1e-9)
    one = pool_band(df.filter(pl.col("run_id") == "a"))
    assert one["ci_low"].null_count() == one.height and one["mean"].to_list() == [120.0, 80.0, 60.0]


@settings(max_examples=300, deadline=None)
@given(q=st.floats(1e-6, 1 - 1e-6), a=st.floats(0.05, 500), b=st.floats(0.05, 500), df=st.integers(1, 10_000))
def test_quantiles_without_scipy_stats_are_scipy_stats_numbers(q, a, b, df):
    from scipy import stats as sps

    stats.quantile.cache_clear()
    assert stats.quantile("t", q, df) == float(sps.t.ppf(q, df))
    assert stats.quantile("norm", q) == float(sps.norm.ppf(q))
    assert stats.quantile("beta", q, a, b) == float(sps.beta.ppf(q, a, b))
    assert stats.quantile("chi2", q, df) == float(sps.chi2.ppf(q, df))  # any other: scipy.stats itself


@pytest.mark.parametrize(("q", "a", "b"), [(1e-300, 2.5, 1e3), (5e-324, 2.5, 2.5), (1e-300, 1e3, 1e-300),
                                          (8.6e-76, 3.47, 3.36e7), (1e-9, 1e-6, 4.0), (0.3, 7e5, 2.0)])
def test_beta_quantiles_at_extreme_arguments_are_scipy_stats_numbers(q, a, b):
    from scipy import stats as sps

    stats.quantile.cache_clear()
    with np.errstate(all="ignore"):
        want = float(sps.beta.ppf(q, a, b))
    assert stats.quantile("beta", q, a, b) == want
