"""Tenure metrics (incumbents vs newcomer, before/after the join) on scripted runs, and
compositions that share a `model` never pooled in SovSim tables."""

from __future__ import annotations

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.pooling import PoolingError
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
    t = sl.sovsim.tenure_metrics(sl.load(newcomer_runs))
    sus = t.filter(pl.col("model") == "scripted/greedy+scripted/sustainable")
    rows = {(r["status"], r["period"]): r for r in sus.iter_rows(named=True)}
    assert set(rows) == {("incumbent", "before"), ("incumbent", "after"), ("newcomer", "after")}
    # before the join: 4 sustainable agents take floor3(120/8) = 15 of a full pool, paid 15/3 + 60/4
    assert rows[("incumbent", "before")]["extraction_mean"] == 15.0
    assert rows[("incumbent", "before")]["payoff_mean"] == 20.0
    assert rows[("newcomer", "after")]["extraction_mean"] == 30.0  # the greedy worker's cap
    assert all(r["n_runs"] == 3 for r in rows.values())
    # every run played identically (scripted, no randomness): no spread, so no interval is claimed
    assert rows[("newcomer", "after")]["extraction_low"] is None
    assert "Student t over runs" in sus["interval"][0]


def test_tenure_intervals_are_t_over_runs(newcomer_runs):
    from scarce_lab.analysis.stats import mean_ci

    d = sl.sovsim.agent_rounds(sl.load(newcomer_runs)).filter(pl.col("model") == "scripted/random")
    t = sl.sovsim.tenure_metrics(d, by="agent")
    row = t.filter((pl.col("agent") == "a4") & (pl.col("period") == "after")).row(0, named=True)
    per_run = (d.filter((pl.col("agent") == "a4") & (pl.col("round") >= 3)).group_by("run_id")
               .agg(pl.col("extraction").mean())["extraction"].to_list())
    assert row["status"] == "newcomer" and row["role"] == "worker"
    assert row["n_runs"] == len(per_run)
    m, lo, hi = mean_ci(per_run)
    assert row["extraction_mean"] == pytest.approx(m)
    if row["extraction_low"] is not None:
        assert (row["extraction_low"], row["extraction_high"]) == pytest.approx((lo, hi))


def test_runs_without_a_join_give_an_empty_table(tmp_path):
    run_sweep([SovSimConfig(condition="kcpr", model="scripted/sustainable", game={"rounds": 2})], tmp_path,
              progress=False)
    t = sl.sovsim.tenure_metrics(sl.load(tmp_path))
    assert t.height == 0 and "extraction_mean" in t.columns


def test_a_run_that_collapsed_before_the_join_is_counted(tmp_path):
    cfgs = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/greedy"},
                         newcomer={"round": 3}, game={"rounds": 4})]
    run_sweep(cfgs, tmp_path, progress=False)  # the greedy king empties the pool in round 1
    t = sl.sovsim.tenure_metrics(sl.load(tmp_path))
    assert t["period"].to_list() == ["before"] and t["runs_ended_before_join"].to_list() == [1]


def test_two_compositions_with_the_same_model_stay_separate_rows(tmp_path):
    king = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/fixed:30"},
                         game={"rounds": 3}, simulation=i) for i in range(2)]
    worker = [SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"a0": "scripted/fixed:30"},
                           game={"rounds": 3}, simulation=i) for i in range(2)]
    run_sweep(king + worker, tmp_path, progress=False)
    rounds = sl.sovsim.agent_rounds(sl.load(tmp_path))
    assert rounds["model"].n_unique() == 1  # same models per run: only the composition tells them apart
    assert rounds["condition"].n_unique() == 2
    values = sl.sovsim.table(rounds).frame
    assert values.height == 2
    assert sorted(values["condition"].to_list()) == sorted(
        rounds["condition"].unique().to_list())
    assert any("composition=king=fixed:30" in c for c in values["condition"].to_list())
    # pooled on purpose (by base condition), the two compositions are refused
    with pytest.raises(PoolingError, match="composition"):
        sl.sovsim.table(rounds, by="base_condition")
