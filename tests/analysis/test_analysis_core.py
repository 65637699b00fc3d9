"""The analysis core: one never-pool error, one "undefined, because ..." convention,
one mean_ci and one gini, shared by the environments and the judge."""

from __future__ import annotations

import math
import pickle

import polars as pl
import pytest

from scarce_lab.analysis import pooling, stats
from scarce_lab.environments.economy.analysis.metrics import wealth_gini
from scarce_lab.environments.sovsim.analysis import pooling as sovsim_pooling
from scarce_lab.judge.stat import FEWER_THAN_2_RATERS, Interval, Stat
from scarce_lab.undefined import ONE_VALUE, Undefined, is_undefined, or_none, reason_of


def test_one_pooling_error_class_for_every_environment():
    assert sovsim_pooling.PoolingError is pooling.PoolingError
    per_sim = pl.DataFrame({"run_id": ["r1", "r2"], "model": ["m", "m"], "condition": ["cpr", "cpr"], "base_condition": ["cpr", "cpr"],
                            "settings": ['{"rounds": 2}', '{"rounds": 3}'], "source": ["ours", "ours"]})
    with pytest.raises(pooling.PoolingError, match="rounds"):  # the SovSim check, caught by the core class
        sovsim_pooling.pool_groups(per_sim, "base_condition")


def test_undefined_is_a_nan_with_its_reason():
    u = Undefined("one run")
    assert math.isnan(u) and u != u and math.isnan(u + 1) and u.reason == "one run"
    assert pickle.loads(pickle.dumps(u)).reason == "one run"
    assert pl.Series([u, 1.0]).is_nan().to_list() == [True, False]
    assert reason_of(u) == "one run" and reason_of(float("nan")) == "not stated" and reason_of(1.0) is None
    assert is_undefined(None) and not is_undefined(0.0)
    assert or_none(u) is None and or_none(2) == 2.0
    with pytest.raises(ValueError, match="reason"):
        Undefined("")


def test_mean_ci_says_why_there_is_no_interval():
    m, lo, hi = stats.mean_ci([5.0])
    assert m == 5.0 and math.isnan(lo) and lo.reason == ONE_VALUE
    assert "spread" in stats.mean_ci([2, 2, 2])[1].reason
    assert stats.mean_ci([])[0].reason == "no values"
    assert "needs 3" in stats.cluster_bootstrap_ci(
        pl.DataFrame({"run": ["a", "b"], "v": [1.0, 2.0]}), cluster="run", value="v", min_clusters=3)[1].reason


def test_mean_ci_cells_is_the_frame_form_of_mean_ci():
    assert stats.mean_ci_cells([5.0, None, float("nan"), float("inf")]) == (5.0, None, None)
    assert stats.mean_ci_cells([]) == (None, None, None)
    assert stats.mean_ci_cells([1.0, 2.0, 4.0]) == pytest.approx(stats.mean_ci([1.0, 2.0, 4.0]))


def test_wealth_gini_is_the_core_gini_with_the_economy_convention():
    assert wealth_gini([1.0, 3.0]) == pytest.approx(stats.gini([1.0, 3.0])) == pytest.approx(0.25)
    assert wealth_gini([-2.0, 0.0]) is None  # no wealth left to compare
    assert stats.gini([0.0, 0.0]) == 0.0


def test_judge_stats_share_the_convention():
    s = Stat(float("nan"), FEWER_THAN_2_RATERS)
    assert isinstance(s.value, Undefined) and s.value.reason == FEWER_THAN_2_RATERS
    assert math.isnan(float(s)) and type(float(s)) is float
    lo, hi = Interval(float("nan"), float("nan"), FEWER_THAN_2_RATERS)
    assert reason_of(lo) == reason_of(hi) == FEWER_THAN_2_RATERS
    assert Stat(0.5).value == 0.5 and Stat(0.5).defined
