"""Tenure metrics (incumbents vs newcomer, before/after the join) on scripted runs, and
compositions that share a `model` never pooled in SovSim tables."""

from __future__ import annotations

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.environments.sovsim.analysis.newcomer import tenure_metrics
from scarce_lab.environments.sovsim.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import run_sweep


@pytest.fixture(scope="module")
def newcomer_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("tenure")
    cfgs = [SovSimConfig(condition="bcpr", model="scripted/sustainable", seats={"newcomer": "scripted/greedy"},
                         newcomer={"round": 3}, game={"rounds": 5}, simulation=i) for i in range(3)]
    cfgs += [SovSimConfig(condition="bcpr", model="scripted/random", newcomer={"round": 3}, game={"rounds": 5},
                          simulation=i, seed=4) for i in range(4)]
    run_sweep(cfgs, out, progress=False)
    return out


def test_tenure_by_status_matches_the_rules(newcomer_runs):
    res = sl.sovsim.tenure(sl.load(newcomer_runs))
    sus = res.frame.filter(pl.col("model") == "scripted/greedy+scripted/sustainable")
    rows = {(r["status"], r["period"], r["metric"]): r for r in sus.iter_rows(named=True)}
    assert {(s, p) for s, p, _ in rows} == {("incumbent", "before"), ("incumbent", "after"), ("newcomer", "after")}
    # before the join: 4 sustainable agents take floor3(120/8) = 15 of a full pool, paid 15/3 + 60/4
    assert rows[("incumbent", "before", "extraction")]["value"] == 15.0
    assert rows[("incumbent", "before", "payoff")]["value"] == 20.0
    assert rows[("newcomer", "after", "extraction")]["value"] == 30.0  # the greedy worker's cap
    assert all(r["runs"] == 3 for r in rows.values())
    # every run played identically (scripted, no randomness): no spread, so no interval is claimed
    assert rows[("newcomer", "after", "extraction")]["lo"] is None
    assert "Student t over runs" in res.convention["intervals"]
    # the layout: one column per period, before first
    assert res.layout.columns[-2:] == ["before", "after"] and "newcomer" in res.markdown()


def test_tenure_intervals_are_t_over_runs(newcomer_runs):
    from scarce_lab.analysis.stats import mean_ci

    ds = sl.load(newcomer_runs)
    d = ds.sovsim.agent_rounds.filter(pl.col("model") == "scripted/random")
    t = sl.sovsim.tenure(ds, by="agent", models=["scripted/random"]).frame
    row = t.filter((pl.col("agent") == "a4") & (pl.col("period") == "after")
                   & (pl.col("metric") == "extraction")).row(0, named=True)
    per_run = (d.filter((pl.col("agent") == "a4") & (pl.col("round") >= 3)).group_by("run_id")
               .agg(pl.col("extraction").mean())["extraction"].to_list())
    assert row["status"] == "newcomer" and row["role"] == "worker"
    assert row["runs"] == len(per_run)
    m, lo, hi = mean_ci(per_run)
    assert row["value"] == pytest.approx(m)
    if row["lo"] is not None:
        assert (row["lo"], row["hi"]) == pytest.approx((lo, hi))


def test_runs_without_a_join_give_an_empty_table(tmp_path):
    run_sweep([SovSimConfig(condition="kcpr", model="scripted/sustainable", game={"rounds": 2})], tmp_path,
              progress=False)
    t = tenure_metrics(sl.load(tmp_path))
    assert t.height == 0 and "extraction_mean" in t.columns
    res = sl.sovsim.tenure(sl.load(tmp_path))  # the finding says so instead of showing a table of nothing
    assert res.frame is None and "No table" in res.markdown()


def test_a_run_that_collapsed_before_the_join_is_counted(tmp_path):
    cfgs = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/greedy"},
                         newcomer={"round": 3}, game={"rounds": 4})]
    run_sweep(cfgs, tmp_path, progress=False)  # the greedy king empties the pool in round 1
    t = sl.sovsim.tenure(sl.load(tmp_path)).frame
    assert set(t["period"]) == {"before"} and set(t["runs_ended_before_join"]) == {1}


def test_two_compositions_with_the_same_model_stay_separate_rows(tmp_path):
    king = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/fixed:30"},
                         game={"rounds": 3}, simulation=i) for i in range(2)]
    worker = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"a0": "scripted/fixed:30"},
                           game={"rounds": 3}, simulation=i) for i in range(2)]
    run_sweep(king + worker, tmp_path, progress=False)
    ds = sl.load(tmp_path)
    rounds = ds.sovsim.agent_rounds
    assert rounds["model"].n_unique() == 1  # same models per run: only the composition tells them apart
    assert rounds["condition"].n_unique() == 2
    values = sl.sovsim.table(ds).frame
    assert values.height == 2
    assert sorted(values["condition"].to_list()) == sorted(
        rounds["condition"].unique().to_list())
    assert any("composition=king=fixed:30" in c for c in values["condition"].to_list())
    # pooled on purpose (by base condition), the two compositions are refused
    with pytest.raises(PoolingError, match="composition"):
        sl.sovsim.table(ds, by="base_condition")
