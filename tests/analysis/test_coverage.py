"""Intervals that keep their 95%, claims that survive many comparisons.

The coverage tests run the functions of ``benchmarks/bench_coverage.py`` with fewer
simulated datasets (seeded). Tolerance: a method must cover at least
``0.95 - 0.02 - 3 * sqrt(0.95 * 0.05 / sims)`` (the issue's 2 points, plus three Monte
Carlo standard errors); the old cluster bootstrap fails that bound at 2 runs, so the
test can tell a bad method from a good one.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest

from benchmarks import bench_coverage as B
from scarce_lab.analysis import comparisons, stats
from scarce_lab.analysis.readings import describe_extremes
from scarce_lab.environments.scarce.analysis.dynamics import compare_schedulers
from scarce_lab.environments.sovsim.analysis.charts import correlation_sentence, survival_sentence
from scarce_lab.environments.sovsim.analysis.metrics import leader_rate_vs_survival


def _floor(sims: int) -> float:
    return 0.95 - 0.02 - 3 * math.sqrt(0.95 * 0.05 / sims)


@pytest.mark.parametrize("method,runs,sims", [
    ("t over run means (now)", (2, 3, 5, 10, 30), 300),
    ("Clopper-Pearson (now; worst p)", (2, 3, 5, 10, 30), 1),  # exact over the binomial
    ("relative drop (now)", (2, 5, 10), 300),
    ("Fisher z", (5, 10), 300),
    ("alpha bootstrap (now)", (5, 30), 150),
])
@pytest.mark.slow
def test_chosen_methods_keep_their_coverage(method, runs, sims):
    tab = B.coverage_table(sims, 300, seed=22, methods=[method], runs=runs)
    for r in tab.iter_rows(named=True):
        if r["given"] == 0:  # not printed at this run count: nothing to cover
            continue
        assert r["coverage"] >= _floor(max(sims, 300) if method.startswith("Clopper") else sims), r


def test_methods_not_printed_below_their_run_counts():
    tab = B.coverage_table(50, 100, seed=1, methods=["relative drop (now)", "alpha bootstrap (now)"],
                           runs=(2, 3, 5))
    assert tab["given"].to_list() == [0.0] * 6


def test_old_cluster_bootstrap_fails_the_same_bound():
    """The bound is not vacuous: the method replaced covers far less with 2 runs."""
    r = B.coverage_table(300, 300, seed=22, methods=["cluster bootstrap (before)"], runs=(2,)).row(0, named=True)
    assert r["coverage"] < _floor(300) - 0.1


def test_proportion_ci_matches_statsmodels_beta():
    from statsmodels.stats.proportion import proportion_confint

    for s, n in [(0, 5), (1, 5), (3, 7), (7, 7), (12, 30)]:
        _, lo, hi = stats.proportion_ci(s, n)
        elo, ehi = proportion_confint(s, n, method="beta")
        assert (lo, hi) == pytest.approx((elo, ehi), abs=1e-12)
    with pytest.raises(ValueError, match="successes"):
        stats.proportion_ci(6, 5)


def test_cluster_mean_ci_is_t_over_run_means_clipped_to_bounds():
    df = pl.DataFrame({"run_id": ["a"] * 4 + ["b"] * 2, "v": [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]})
    m, lo, hi = stats.cluster_mean_ci(df, cluster="run_id", value="v")
    assert m == pytest.approx((0.75 + 0.0) / 2)
    _, elo, ehi = stats.mean_ci([0.75, 0.0])
    assert (lo, hi) == pytest.approx((elo, ehi))
    assert lo < 0 < 1 < hi  # 2 runs: a wide t interval ...
    _, blo, bhi = stats.cluster_mean_ci(df, cluster="run_id", value="v", bounds=(0.0, 1.0))
    assert (blo, bhi) == (0.0, 1.0)  # ... that a rate's range clips
    same = df.with_columns(pl.lit(0.5).alias("v"))
    assert math.isnan(stats.cluster_mean_ci(same, cluster="run_id", value="v")[1])  # no zero-width interval


def test_deadline_miss_count_interval_stays_within_the_workers():
    """A count of 4 workers' deadlines from 2 runs was printed as [0, 13.71]."""
    out = pl.DataFrame({"run_id": ["r1", "r2"], "scheduler": ["fifo", "fifo"], "seed": [0, 1],
                        "submissions": [4, 4], "deadline_misses": [0, 4], "mean_partial_score": [1.0, 0.0],
                        "total_queue_wait_s": [0.0, 10.0]})
    cmp = compare_schedulers(out, by=("scheduler",), reference="ballots")
    miss = cmp.filter(pl.col("metric") == "deadline_misses").row(0, named=True)
    assert miss["lo"] == 0.0 and miss["hi"] == 4.0
    score = cmp.filter(pl.col("metric") == "mean_partial_score").row(0, named=True)
    assert (score["lo"], score["hi"]) == (0.0, 1.0)


def test_near_constant_input_refuses_a_correlation():
    """A leader taking 10% of the remainder in every round: its per-simulation mean
    differs in the last bit with the number of rounds; r must be undefined."""
    surv = [3, 5, 6, 7, 9, 10, 11, 12, 3, 6, 9, 12]
    rate = [float(np.mean([3 / 30] * t)) for t in surv]
    assert len(set(rate)) > 1  # not equal bit for bit
    assert stats.near_constant(rate)
    assert all(math.isnan(v) for v in stats.pearson_ci(rate, surv))
    per_sim = pl.DataFrame({"model": "m", "simulation": range(12), "survival_time": surv,
                            "leader_extraction_rate": rate})
    assert leader_rate_vs_survival(per_sim)["r"][0] is None
    assert not stats.near_constant([0.1, 0.1 + 1e-6])
    assert not math.isnan(stats.pearson_ci([0.1, 0.2, 0.4, 0.3], [1, 2, 4, 2])[0])


@pytest.mark.slow
def test_adjust_pvalues_holm_and_bh():
    p = [0.01, 0.04, 0.03, math.nan]
    rej, adj = comparisons.adjust_pvalues(p, "holm")
    assert adj[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adj[3]) and not rej[3]
    _, bh = comparisons.adjust_pvalues(p, "fdr_bh")
    assert bh[:3] == pytest.approx([0.03, 0.04, 0.04])
    with pytest.raises(ValueError, match="method"):
        comparisons.adjust_pvalues(p, "bonf")
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(4)
    for m in (1, 2, 7, 40):
        q = rng.uniform(0, 0.2, m) ** 2
        q[rng.integers(0, m)] = q[0]  # ties
        for method in ("holm", "fdr_bh"):
            rej, got = comparisons.adjust_pvalues(q, method)
            erej, exp, _, _ = multipletests(q, alpha=0.05, method=method)
            assert got == pytest.approx(exp, abs=1e-12) and (rej == erej).all()


# -- many comparisons on pure noise --------------------------------------------------
def _noise_per_sim(rng, models=20, sims=30):
    return pl.DataFrame([{"model": f"model-{m:02d}", "condition": "kcpr", "simulation": s, "run_id": f"r{m}-{s}",
                          "leader_extraction_rate": float(rng.uniform(0, 1)),
                          "survival_time": int(rng.integers(1, 13))}
                         for m in range(models) for s in range(sims)])


@pytest.mark.slow
def test_per_model_correlation_claims_are_controlled_on_pure_noise():
    """Case c09: 20 null models x 30 simulations, 50 datasets. Unadjusted, about 64%
    of datasets report at least one model's r as non-zero; Holm keeps the family-wise
    rate at 5% (binomial(50, 0.05) exceeds 6 with probability about 1%)."""
    rng = np.random.default_rng(0)
    claimed = unadjusted = 0
    for _ in range(50):
        per_sim = _noise_per_sim(rng)
        tab = leader_rate_vs_survival(per_sim)
        assert set(tab["n_tests"]) == {20} and set(tab["correction"]) == {"Holm"}
        claimed += bool((tab["p_adj"] < 0.05).any())
        unadjusted += bool((tab["p"] < 0.05).any())
        s = correlation_sentence(per_sim)
        assert "Holm-adjusted over the 20 model(s)" in s
        assert ("negative (adjusted" in s or "positive (adjusted" in s) == bool((tab["p_adj"] < 0.05).any())
    assert unadjusted >= 15  # the problem is real on this data
    assert claimed <= 6


def test_group_comparison_claims_are_controlled_on_pure_noise():
    """describe_extremes names the highest and lowest of 8 groups (28 pairs) of 3
    runs each, all drawn alike: at least one 'differs at the 5% level' in few datasets."""
    rng = np.random.default_rng(1)
    claims = 0
    for _ in range(60):
        rows = []
        for g in range(8):
            runs = rng.normal(0.5, 0.1, 3)
            rows.append({"g": f"g{g}", "value": float(runs.mean()), "lo": 0.0, "hi": 1.0, "runs": 3,
                         "se": float(runs.std(ddof=1) / math.sqrt(3))})
        s = describe_extremes(pl.DataFrame(rows), ["g"], "x")
        assert "Holm-adjusted (28 comparisons)" in s
        claims += not s.split("): ")[-1].startswith("0 differ")
    assert claims <= 7


def test_survival_sentence_tests_condition_pairs_with_holm():
    rng = np.random.default_rng(2)
    per_sim = pl.DataFrame([{"model": m, "condition": c, "survival_time": int(rng.integers(1, 13))}
                            for m in ("a", "b") for c in ("cpr", "kcpr") for _ in range(6)])
    summary = per_sim.group_by("model", "condition").agg(pl.col("survival_time").mean().alias("survival_time_mean"))
    s = survival_sentence(summary, per_sim)
    assert "2 pairs of conditions within models, Holm-adjusted together (2 comparisons)" in s
    assert "Descriptive only: no test was run." in survival_sentence(summary)


def test_cross_model_means_leave_scripted_baselines_out():
    from scarce_lab.environments.sovsim.analysis.cross import models_under_study

    per_sim = pl.DataFrame({"model": ["llm/a", "llm/b", "scripted/greedy", "scripted/sustainable"]})
    assert models_under_study(per_sim) == (["llm/a", "llm/b"], ["scripted/greedy", "scripted/sustainable"])
    assert models_under_study(per_sim, ["llm/a", "scripted/greedy"]) == (["llm/a", "scripted/greedy"], [])
    with pytest.raises(ValueError, match="not in the data"):
        models_under_study(per_sim, ["llm/c"])


def test_no_warning_from_stats_on_undefined_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(stats.cluster_mean_ci(pl.DataFrame({"r": ["a"], "v": [1.0]}), cluster="r",
                                                value="v")[1])
        assert math.isnan(stats.relative_drop_ci([0.0, 0.0], [1.0, 1.0])[0])


def test_bounded_mean_ci_is_the_hull_of_t_and_the_score_interval_and_keeps_its_coverage():
    """``stats.bounded_mean_ci``: the hull of the t interval and the maximum-variance score
    interval, clipped to the bounds; on survival times that pile up at the last round
    (where the t interval alone covered 89-93%) it covers at least 95% at 3 and 10 runs."""
    import math

    import numpy as np

    from scarce_lab.analysis import stats

    x = [12.0, 12.0, 7.0, 12.0, 3.0]
    m, lo, hi = stats.bounded_mean_ci(x, 1, 12)
    _, tlo, thi = stats.mean_ci(x)
    y = (m - 1) / 11
    z = 1.959963984540054
    c = (y + z * z / 10) / (1 + z * z / 5)
    h = z * math.sqrt(y * (1 - y) / 5 + z * z / 100) / (1 + z * z / 5)
    assert m == pytest.approx(9.2)
    assert lo == pytest.approx(max(1, min(tlo, 1 + 11 * (c - h)))) and hi == pytest.approx(min(12, max(thi, 1 + 11 * (c + h))))
    assert stats.bounded_mean_ci([12.0, 12.0], 1, 12)[1] < 12.0  # an interval for identical runs too
    assert math.isnan(stats.bounded_mean_ci([5.0], 1, 12)[1])  # never from one value
    with pytest.raises(ValueError, match="value 13.0 outside"):
        stats.bounded_mean_ci([13.0, 2.0], 1, 12)
    rng = np.random.default_rng(5)
    for k in (3, 10):
        hits = 0
        for _ in range(1500):
            draw = np.where(rng.random(k) < 0.85, 12, rng.integers(1, 12, k)).astype(float)
            _, a, b = stats.bounded_mean_ci(draw, 1, 12)
            hits += a <= 0.85 * 12 + 0.15 * 6 <= b
        assert hits / 1500 >= 0.95 - 0.011, (k, hits / 1500)  # 0.95 minus ~2 Monte Carlo standard errors
