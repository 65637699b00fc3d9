"""Tenure metrics of the Economy of Minds (newcomer vs incumbent founders) on scripted
runs: values checked against the events by hand, intervals from analysis.stats, and
conditions (compositions) never pooled."""

from __future__ import annotations

import inspect
import json

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.findings import method_of
from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.analysis.stats import proportion_ci
from scarce_lab.data.loaders import load_dataset
from scarce_lab.environments.economy import tables as T
from scarce_lab.environments.economy.analysis.tenure import (
    tenure_per_run,
    tenure_table,
    tenure_wealth_curve,
)
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.play import run_economy


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("tenure")
    for seed in range(3):
        for wealth in (None, 200):
            nc = {"episode": 4} | ({"wealth": wealth} if wealth else {})
            run_economy(EconomyRunConfig(agents=5, episodes=12, eval_episodes=1, seed=seed, detail="episodes",
                                         seats={"newcomer": "scripted/expert"}, newcomer=nc), out)
    run_economy(EconomyRunConfig(agents=5, episodes=12, eval_episodes=1, seed=0, detail="episodes"), out)
    return load_dataset(out)


def _per_run(ds):
    return tenure_per_run(T.joins(ds), T.births(ds), T.deaths(ds), T.agent_wealth(ds), T.agent_episodes(ds))


def test_per_run_values_follow_the_events(ds):
    pr = _per_run(ds)
    assert pr.height == 12  # 6 runs with a newcomer x 2 tenures; the run without one has no row
    row = pr.filter(pl.col("tenure") == "newcomer").row(0, named=True)
    # by hand from the tables: the newcomer's mean wealth over training snapshots from round 4
    aw = T.agent_wealth(ds).filter((pl.col("run_id") == row["run_id"]) & (pl.col("phase") == "train"))
    agent = T.joins(ds).filter(pl.col("run_id") == row["run_id"])["agent"][0]
    mine = aw.filter((pl.col("agent") == agent) & (pl.col("round") >= 4))["wealth"]
    assert row["wealth"] == pytest.approx(mine.mean())
    wins = T.agent_episodes(ds).filter((pl.col("run_id") == row["run_id"]) & (pl.col("agent") == agent)
                                       & (pl.col("phase") == "train"))["n_wins"].sum()
    assert row["wins"] == pytest.approx(wins / (12 - 4))
    dead = agent in T.deaths(ds).filter(pl.col("run_id") == row["run_id"])["agent"].to_list()
    assert row["survival"] == (0.0 if dead else 1.0)


def test_table_intervals_and_no_pooling(ds):
    pr = _per_run(ds)
    t = tenure_table(pr)
    assert t.height == 4 and set(t["n_runs"]) == {3}
    assert t["condition"].n_unique() == 2  # the two endowments are two conditions
    nc = t.filter(pl.col("tenure") == "newcomer")
    for r in nc.iter_rows(named=True):
        s = int(pr.filter((pl.col("condition") == r["condition"]) & (pl.col("tenure") == "newcomer"))["survival"].sum())
        p, lo, hi = proportion_ci(s, 3)
        assert (r["survival"], r["survival_lo"], r["survival_hi"]) == pytest.approx((p, lo, hi))
    inc = t.filter(pl.col("tenure") == "incumbent")
    assert ((inc["survival_hi"].fill_null(1) <= 1) & (inc["survival_lo"].fill_null(0) >= 0)).all()
    with pytest.raises(PoolingError, match="newcomer.wealth"):
        tenure_table(pr.with_columns(condition=pl.lit("one label")))


def test_wealth_curve_and_face(ds):
    curve = tenure_wealth_curve(T.joins(ds), T.births(ds), T.agent_wealth(ds))
    assert set(curve["tenure"]) == {"newcomer", "incumbent"} and curve["since"].min() == 0
    assert curve["since"].max() == 12 - 4 - 1
    res = sl.economy.tenure(ds)
    assert res.frame.height == 4 and "Clopper-Pearson" in res.convention["intervals"]
    new = res.frame.filter(pl.col("tenure") == "newcomer").row(0, named=True)
    assert res.reading.startswith("After the join, newcomer against incumbents")
    assert f"newcomer survived in {new['survival']:.2f} of runs" in res.reading
    assert res.method == method_of(sl.economy.tenure) and res.method in inspect.getdoc(sl.economy.tenure)


def test_seated_and_unseated_runs_get_distinct_condition_labels(ds):
    runs = T.runs(ds)
    labels = dict(zip(runs["run_id"], runs["condition"], strict=True))
    plain = [r for r, s in zip(runs["run_id"], runs["settings"], strict=True)
             if "newcomer.episode" not in json.loads(s)]
    assert len(plain) == 1 and labels[plain[0]] not in {v for k, v in labels.items() if k != plain[0]}
    assert len(set(labels.values())) == 3  # no seats; newcomer at initial wealth; newcomer with 200
