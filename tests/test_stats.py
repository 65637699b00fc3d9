"""Confidence intervals and Gini against hand computations and reference values."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

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
    assert mean_ci([2, 2, 2]) == (2.0, 2.0, 2.0)


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
    est, lo, hi = cluster_bootstrap_ci(df, cluster="run", value="v")
    assert est == pytest.approx(10 / 12)
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
