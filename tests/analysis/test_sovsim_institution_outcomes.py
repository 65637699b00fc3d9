"""``sl.sovsim.institution_outcomes``: one row per institution arm, never pooled; an
institution's metric only where it is on; net payoffs; the shipped data's arms."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.analysis.institutions import institution_arm
from scarce_lab.environments.sovsim.analysis.pooling import PoolingError
from scarce_lab.environments.sovsim.runner.play import run_sweep

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "talk_institutions" / "sovsim_institutions"
SEATS = {"a2": "scripted/opportunist", "*": "scripted/conditional"}


def test_the_arm_is_read_from_the_recorded_settings():
    assert institution_arm(None) == "none" == institution_arm(json.dumps({"condition": "cpr", "talk": "public"}))
    assert institution_arm(json.dumps({"sanctions": True, "quota": "leader", "elections": 2})) == \
        "sanctions+quota=leader+elections=2"
    assert institution_arm(json.dumps({"sanctions": True, "sanction_impact": 4})) == "sanctions(impact=4)"
    with pytest.raises(ValueError, match="not JSON"):
        institution_arm("{oops")


def test_arms_are_kept_apart_and_metrics_shown_only_where_on(tmp_path):
    cfgs = [SovSimConfig(condition="cpr", model="scripted/conditional", seats=SEATS, simulation=i, game={"rounds": 3},
                         **kw) for i in range(2) for kw in ({}, {"sanctions": True}, {"quota": "all"})]
    run_sweep(cfgs, tmp_path, progress=False)
    f = sl.sovsim.institution_outcomes(sl.load(tmp_path)).frame
    assert set(f["institutions"]) == {"none", "sanctions", "quota=all"}
    by = {(r["institutions"], r["metric"]): r for r in f.iter_rows(named=True)}
    assert ("none", "punishment") not in by and ("none", "quota") not in by
    assert by[("sanctions", "punishment")]["value"] > 0  # the opportunist is punished after round 1
    assert by[("quota=all", "quota")]["value"] == 15 and by[("quota=all", "survival_rate")]["value"] == 1.0
    assert all(by[(a, "survival_time")]["runs"] == 2 for a in ("none", "sanctions", "quota=all"))


def test_runs_of_one_arm_with_other_settings_are_not_pooled(tmp_path):
    cfgs = [SovSimConfig(condition="cpr", model="scripted/conditional", seats=SEATS, sanctions=True,
                         game={"rounds": 3, "initial_pool": pool}) for pool in (120, 96)]
    run_sweep(cfgs, tmp_path, progress=False)
    with pytest.raises(PoolingError, match="initial_pool"):
        sl.sovsim.institution_outcomes(sl.load(tmp_path))


@pytest.mark.skipif(not SHIPPED.exists(), reason="the shipped institutions data are not in this checkout")
def test_the_shipped_arms_and_their_headline():
    f = sl.sovsim.institution_outcomes(sl.sovsim.load(SHIPPED)).frame
    arms = f.select("base_condition", "institutions").unique()
    assert arms.height == 12 and (f["runs"] == 5).all()
    rate = {(r["base_condition"], r["institutions"]): r["value"]
            for r in f.filter(pl.col("metric") == "survival_rate").iter_rows(named=True)}
    assert rate[("cpr", "none")] == 0 and rate[("cpr", "quota=all")] == 1
    assert rate[("bcpr", "sanctions+quota=leader+elections=1")] > rate[("bcpr", "quota=leader+elections=1")]


def test_the_analysis_knows_every_institution_setting_and_its_default():
    from scarce_lab.environments.sovsim.analysis.institutions import _DEFAULTS
    from scarce_lab.environments.sovsim.world.institutions import INSTITUTION_FIELDS

    fields = SovSimConfig.model_fields
    assert tuple(_DEFAULTS) == INSTITUTION_FIELDS
    assert all(fields[k].default == v for k, v in _DEFAULTS.items())


def _inside_natural_ranges(f: pl.DataFrame, rounds: int) -> list[str]:
    """Rows whose interval leaves the metric's natural range (survival time in [1, rounds],
    equality in [0, 1], counts and pools at least 0)."""
    ranges = {"survival_time": (1, rounds), "equality": (0, 1), "mean_pool": (0, None), "punishment": (0, None),
              "quota": (0, None), "seat_moves": (0, None)}
    bad = []
    for r in f.filter(pl.col("lo").is_not_null()).iter_rows(named=True):
        a, b = ranges.get(r["metric"], (None, None))
        if (a is not None and r["lo"] < a - 1e-9) or (b is not None and r["hi"] > b + 1e-9):
            bad.append(f"{r['institutions']} {r['metric']} [{r['lo']:.2f}, {r['hi']:.2f}]")
    return bad


def test_intervals_stay_inside_each_measures_range(tmp_path):
    # a random seat makes games of 1 to 4 rounds: survival piles at both ends, the t interval ran past them
    cfgs = [SovSimConfig(condition="cpr", model="scripted/conditional", simulation=i, game={"rounds": 4},
                         seats={"a0": "scripted/random", "a1": "scripted/opportunist", "*": "scripted/conditional"},
                         **kw) for i in range(4) for kw in ({}, {"sanctions": True})]
    run_sweep(cfgs, tmp_path, progress=False)
    f = sl.sovsim.institution_outcomes(sl.load(tmp_path)).frame
    assert not _inside_natural_ranges(f, 4)
    times = f.filter(pl.col("metric") == "survival_time")
    assert times["lo"].is_not_null().all()  # a bounded interval, even where the four games agree


@pytest.mark.skipif(not SHIPPED.exists(), reason="the shipped institutions data are not in this checkout")
def test_the_shipped_intervals_stay_inside_each_measures_range():
    f = sl.sovsim.institution_outcomes(sl.sovsim.load(SHIPPED)).frame
    assert not _inside_natural_ranges(f, 12)
    time = {r["institutions"]: r for r in f.filter((pl.col("metric") == "survival_time")
                                                  & (pl.col("base_condition") == "bcpr")).iter_rows(named=True)}
    assert time["sanctions+quota=leader+elections=1"]["hi"] <= 12  # the t interval said 14.8


def test_the_chart_shows_survival_by_arm_in_sovsim_words(tmp_path):
    cfgs = [SovSimConfig(condition="cpr", model="scripted/conditional", seats=SEATS, simulation=i, game={"rounds": 3},
                         **kw) for i in range(2) for kw in ({}, {"quota": "all"})]
    run_sweep(cfgs, tmp_path, progress=False)
    chart = sl.sovsim.institution_outcomes(sl.load(tmp_path)).chart
    spec = json.dumps(chart.to_dict())
    assert "no institution" in spec and "fresh each contention" not in spec  # not SCARCE's memory setting
    assert "survival time (rounds)" in spec and '"x": "independent"' in spec
