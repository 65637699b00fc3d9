"""Interval kinds (which a stopping rule may watch) and the distribution-free interval
for a median: the rules the study engine and ``sl.effects`` rely on, checked fast
(the coverage simulations themselves: ``benchmarks/bench_coverage.py``)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchmarks import bench_coverage as B
from scarce_lab import registry
from scarce_lab.analysis import stats
from scarce_lab.studies import Study, StudyError, get
from scarce_lab.studies.run import run, target_widths


@pytest.mark.parametrize("n", [6, 7, 11, 19, 40, 64])
def test_median_ci_takes_the_widest_rank_whose_exact_coverage_holds(n):
    x = np.random.default_rng(n).exponential(3, n)
    _, lo, hi = stats.median_ci(x)
    xs = np.sort(x)
    k = int(np.flatnonzero(xs == lo)[0]) + 1
    assert hi == xs[n - k]
    assert 1 - 2 * sps.binom.cdf(k - 1, n, 0.5) >= 0.95  # [x_(k), x_(n+1-k)] covers any median
    assert 1 - 2 * sps.binom.cdf(k, n, 0.5) < 0.95  # and the next narrower one would not


def test_median_ci_needs_six_values_at_95_and_says_why_below():
    assert stats.min_median_ci_n(0.95) == 6 and stats.min_median_ci_n(0.99) == 8
    m, lo, hi = stats.median_ci([4.0, -1.0, 2.5, 0.0, 7.0])
    assert m == 2.5 and math.isnan(lo) and math.isnan(hi) and "needs 6" in lo.reason and "0.938" in lo.reason
    assert stats.median_ci([0.0] * 5 + [3.0] * 4) == (0.0, 0.0, 3.0)  # an atom: the interval is closed
    with pytest.raises(ValueError, match="level"):
        stats.median_ci([1.0] * 8, level=1.0)


def test_only_the_bounded_kind_may_be_watched_and_clopper_pearson_fails_under_stopping():
    watchable = [k for k, v in stats.INTERVAL_KINDS.items() if v.under_stopping]
    assert watchable == ["bounded"] and all(v.why_not for v in stats.INTERVAL_KINDS.values() if not v.under_stopping)
    # exact (no Monte Carlo): Clopper-Pearson at rate 0.49, batches of 3, stop at width 0.5 or 30 runs
    assert B.cov_stopping_binomial(0.49, 0.5, 3, 30) < 0.93
    assert B.cov_stopping_binomial(0.49, 0.5, 3, 3) >= 0.95  # a fixed 3 runs: exact coverage holds


def test_every_environment_declares_a_known_kind_for_every_metric():
    for env in ("sovsim", "scarce", "economy"):
        declared = registry.get(env).study_metrics(None)
        assert declared and all(stats.interval_kind(k) for k in declared.values()), env
    with pytest.raises(ValueError, match="unknown interval kind 'wald'"):
        stats.interval_kind("wald")


def test_target_width_refuses_a_metric_whose_interval_is_not_validated_before_anything_runs(tmp_path):
    study = get("power-conditions")
    with pytest.raises(StudyError, match=r"refused for survival_rate.*exact_binomial.*survival_time=W"):
        run(study, "scripted/random", out=tmp_path / "out", target_width=0.3, max_seeds=4, say=lambda *_: None)
    assert not (tmp_path / "out").exists()
    assert target_widths(study, {"survival_time": 2, "leader_extraction_rate": 0.2}) == {
        "survival_time": 2.0, "leader_extraction_rate": 0.2}
    assert target_widths(get("economy-ablations"), 0.1) == {"eval": 0.1, "last_fifth": 0.1}  # rates: bounded
    bids = Study(name="toy-bids", environment="scarce", title="t", notebook="x.ipynb", source="S",
                 headline=["urgent_mean_bid@S1", "median_winning_bid@S2"], arms=[{"name": "a", "settings": {}}])
    with pytest.raises(StudyError, match=r"urgent_mean_bid@S1, median_winning_bid@S2.*No headline metric of 'toy-bids'"):
        target_widths(bids, 50.0)


def test_study_show_states_each_headline_interval():
    text = get("power-conditions").show()
    assert "survival_rate (exact_binomial; not under --target-width)" in text
    assert "survival_time (bounded; --target-width may watch it)" in text


def test_shipped_sovsim_rows_state_the_kind_they_print(tmp_path):
    from scarce_lab.data.loaders import load_dataset

    for run_dir in sorted((Path(__file__).parents[2] / "data" / "sovsim").glob("sovsim-kcpr-scripted-random-s0-*"))[:3]:
        shutil.copytree(run_dir, tmp_path / run_dir.name)
    frame = registry.get("sovsim").study_metrics(load_dataset(tmp_path, cache=False))
    declared = registry.get("sovsim").study_metrics(None)
    assert frame.height and all(r["interval"] == declared[r["metric"]] for r in frame.iter_rows(named=True))
