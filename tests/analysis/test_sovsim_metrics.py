"""SovSim metrics against hand computations (games played through env + runner)."""

import asyncio

import numpy as np
import polars as pl
import pytest

from scarce_lab.agents.decided import Decided
from scarce_lab.environments.sovsim.analysis.conventions import convention
from scarce_lab.environments.sovsim.analysis.dynamics import misreports, pool_band
from scarce_lab.environments.sovsim.analysis.metrics import (
    format_table,
    leader_rate_vs_survival,
    simulation_metrics,
    summarize,
)
from scarce_lab.environments.sovsim.runner.play import GameSpec, arun_game
from scarce_lab.environments.sovsim.tables import agent_round_frame, load_agent_rounds


class Script:
    """Plays ``values[round]`` (or the last value); announces ``announce``."""

    model = "test/script"

    def __init__(self, *values, announce=None):
        self.values, self.announce = values, announce

    async def adecide(self, obs, seed, run_id=None):
        if obs.phase == "announce":
            return Decided(value=self.announce)
        v = self.values[min(obs.round, len(self.values)) - 1]
        return Decided(value=min(v, obs.max_extraction))


def play(tmp_path, cond, scripts, sim=0, rounds=12, model="test/script"):
    spec = GameSpec(cond, model, simulation=sim, rounds=rounds)
    agents = dict(zip(("a0", "a1", "a2", "a3"), scripts, strict=True))
    asyncio.run(arun_game(spec, tmp_path, agents=agents))


def metrics(tmp_path, **conv):
    return simulation_metrics(load_agent_rounds(tmp_path), convention("sovsim", **conv))


def one(ps, cond="cpr"):
    return ps.filter(pl.col("base_condition") == cond).row(0, named=True)


def test_everyone_15(tmp_path):
    play(tmp_path, "cpr", [Script(15)] * 4)
    m = one(metrics(tmp_path))
    assert (m["survival_time"], m["survived"], m["survived_strict"]) == (12, True, True)
    assert m["total_payoff"] == 960 and m["total_extraction"] == 720
    assert m["efficiency"] == 1.0 and m["equality"] == 1.0
    assert m["overuse"] == 0.0 and m["defection_onset"] is None  # 15 is not > 120/8


def test_three_rounds_of_18(tmp_path):
    play(tmp_path, "cpr", [Script(18)] * 4)
    m = one(metrics(tmp_path))
    # pools 120, 96, 48; collapse in round 3; payoffs 18 + 12 + 6 per agent
    assert (m["survival_time"], m["survived"], m["collapsed"]) == (3, False, True)
    assert m["total_payoff"] == 4 * 36
    assert m["efficiency"] == pytest.approx(216 / 720)
    assert m["overuse"] == 1.0
    # CPR has no subordinates: defection onset is not applicable (the SovSim authors' rule) ...
    assert m["defection_onset"] is None and m["defection_applicable"] is False
    # ... unless asked to count citizens
    m2 = one(metrics(tmp_path, defection_in_cpr=True))
    assert m2["defection_onset"] == 1 and m2["defection_applicable"] is True


def test_king_takes_whole_remainder(tmp_path):
    play(tmp_path, "kcpr", [Script(15)] * 3 + [Script(120)])
    m = one(metrics(tmp_path), "kcpr")
    # payoffs 5, 5, 5, 25: Gini = (6 ordered pairs x 20) / (2 x 16 x 10) = 0.375
    assert m["total_payoff"] == 40 and m["equality"] == pytest.approx(0.625)
    assert m["leader_extraction_rate"] == 1.0
    assert m["overuse"] == 0.25  # only the king's 75 > 15
    assert m["efficiency"] == pytest.approx(120 / 720) and m["survival_time"] == 1


def test_collapse_in_last_round_lenient_vs_strict(tmp_path):
    play(tmp_path, "cpr", [Script(*([15] * 11 + [30]))] * 4)
    lenient = one(metrics(tmp_path))
    strict = one(metrics(tmp_path, strict_survival=True))
    assert lenient["survival_time"] == 12 and lenient["collapsed"]
    assert lenient["survived"] is True and strict["survived"] is False


def test_leader_rate_and_defection_onset(tmp_path):
    workers = [Script(15, 15), Script(15, 18), Script(15, 15)]
    play(tmp_path, "bcpr", workers + [Script(15, 12)], rounds=2)
    m = one(metrics(tmp_path, rounds=2), "bcpr")
    # round 1: remainder 75, boss 15; round 2 (pool 120): remainder 72, boss 12
    assert m["leader_extraction_rate"] == pytest.approx((15 / 75 + 12 / 72) / 2)
    assert m["defection_onset"] == 2  # worker a1 took 18 > 120/8 in round 2
    assert m["overuse"] == pytest.approx(1 / 8)


def test_misreport_kcpr_m(tmp_path):
    play(tmp_path, "kcpr_m", [Script(6)] * 3 + [Script(9, announce=90)], rounds=2)
    m = one(metrics(tmp_path, rounds=2), "kcpr_m")
    # round 1 pool 120 (announced 90), remaining 120-27=93 -> round 2 pool 120
    assert m["misreport"] == -30
    mis = misreports(load_agent_rounds(tmp_path))
    assert mis["misreport"].to_list() == [-30, -30]


def test_unfinished_runs_are_dropped(tmp_path):
    play(tmp_path, "cpr", [Script(15)] * 4, rounds=3)  # stopped at round 3 of 12, no collapse
    assert metrics(tmp_path).height == 0
    assert simulation_metrics(load_agent_rounds(tmp_path), drop_unfinished=False).height == 1


def test_summary_survival_rate_drop_and_correlation(tmp_path):
    play(tmp_path, "cpr", [Script(15)] * 4, sim=0)
    play(tmp_path, "cpr", [Script(15)] * 4, sim=1)
    # kcpr: sim 0 survives (king takes 15 of 75 each round), sim 1 king takes all (1 round),
    # sim 2 king takes 45 of 75 -> remaining 30 -> pool 60; then 45 + 15 = 60 -> collapse in round 2
    play(tmp_path, "kcpr", [Script(15)] * 3 + [Script(15)], sim=0)
    play(tmp_path, "kcpr", [Script(15)] * 3 + [Script(120)], sim=1)
    play(tmp_path, "kcpr", [Script(15)] * 3 + [Script(45)], sim=2)
    ps = metrics(tmp_path)
    kc = ps.filter(pl.col("condition") == "kcpr").sort("simulation")
    assert kc["survival_time"].to_list() == [12, 1, 2]
    rates = kc["leader_extraction_rate"].to_list()
    assert rates[0] == pytest.approx(0.2) and rates[1] == 1.0
    assert rates[2] == pytest.approx((45 / 75 + 15 / 15) / 2)
    s = summarize(ps)
    row = s.filter(pl.col("condition") == "kcpr").row(0, named=True)
    assert row["n"] == 3 and row["survival_rate_mean"] == pytest.approx(1 / 3)
    assert row["survival_rate_ci_low"] < 1 / 3 < row["survival_rate_ci_high"]  # Wilson
    assert row["survival_time_mean"] == pytest.approx(5.0)
    assert row["survival_time_ci_low"] < 5 < row["survival_time_ci_high"]
    assert row["survival_drop_mean"] == pytest.approx((1 - 1 / 3) / 1)
    cpr = s.filter(pl.col("condition") == "cpr").row(0, named=True)
    assert cpr["survival_rate_mean"] == 1.0 and cpr["survival_drop_mean"] is None
    assert cpr["leader_extraction_rate_mean"] is None
    corr = leader_rate_vs_survival(ps).row(0, named=True)
    assert corr["n"] == 3
    assert corr["r"] == pytest.approx(np.corrcoef(rates, [12, 1, 2])[0, 1])
    # three simulations: r and p exist, the Fisher z interval (se = 1/sqrt(n - 3)) does not
    assert corr["ci_low"] is None and corr["ci_high"] is None and 0 < corr["p"] <= 1
    md = format_table(s)
    assert "| test/script | kcpr | 3 | 5.00 [" in md
    band = pool_band(load_agent_rounds(tmp_path)).filter(
        (pl.col("condition") == "kcpr") & (pl.col("round") == 2)
    ).row(0, named=True)
    # the simulation that collapsed in round 1 counts as an empty pool from round 2 on
    assert band["n"] == 3 and band["mean"] == pytest.approx((120 + 60 + 0) / 3)


def test_govsim_preset_on_hand_frame():
    # 5 fishers, one round: pool 100, harvests 10, 10, 10, 10, 12 -> remaining 48
    rows = [
        dict(source="t", run_id="g1", model="m", condition="fishing", simulation=0, round=1,
             agent=f"p{i}", agent_index=i, role="fisher", is_leader=False, n_agents=5,
             pool_before=100.0, pool_seen=100.0, extraction=float(z), payoff=float(z),
             remaining=48.0, collapsed=False)
        for i, z in enumerate([10, 10, 10, 10, 12])
    ]
    df = agent_round_frame(rows)
    ps = simulation_metrics(df, convention("govsim", rounds=1))
    m = ps.row(0, named=True)
    assert m["efficiency"] == pytest.approx(1 - (600 - 52) / 600)
    assert m["overuse"] == pytest.approx(1 / 5)  # only 12 > 100/2/5 = 10
    # Gini of (10,10,10,10,12): sum |xi-xj| = 8 pairs x 2 = 16; / (2 x 25 x 10.4)
    assert m["equality"] == pytest.approx(1 - 16 / (2 * 25 * 10.4))
    sov = simulation_metrics(df, convention("sovsim", rounds=1)).row(0, named=True)
    assert sov["efficiency"] == pytest.approx(1 - (720 - 52) / 720)


def test_json_format_rows(tmp_path):
    play(tmp_path, "cpr", [Script(15)] * 4)
    import json

    rows = json.loads(format_table(summarize(metrics(tmp_path)), "json"))
    assert rows[0]["model"] == "test/script" and rows[0]["n"] == 1
    assert rows[0]["efficiency"]["mean"] == 1.0 and rows[0]["efficiency"]["ci_low"] is None
    with pytest.raises(ValueError, match="format"):
        format_table(summarize(metrics(tmp_path)), "xml")
    with pytest.raises(ValueError, match="preset"):
        convention("nope")


def test_repeated_agent_rounds_and_bad_extractions_are_refused(tmp_path):
    """A repeated record (or a dataset loaded twice) doubled every total payoff, and a
    NaN extraction moved efficiency and defection onset, without a word."""
    import math

    from scarce_lab.environments.sovsim.analysis.metrics import AgentRoundError, simulation_metrics

    play(tmp_path, "cpr", [Script(15)] * 4, sim=0)
    df = load_agent_rounds(tmp_path)
    simulation_metrics(df)  # the clean table is accepted
    for bad, match in [
        (pl.concat([df, df]), "more than once"),
        (pl.concat([df, df.head(1)]), "round 1 agent"),
        (df.with_columns(pl.when(pl.col("round") == 2).then(math.nan).otherwise(pl.col("extraction"))
                         .cast(df.schema["extraction"]).alias("extraction")), "NaN"),
        (df.with_columns(pl.when(pl.col("round") == 3).then(None).otherwise(pl.col("extraction"))
                         .alias("extraction")), "missing"),
    ]:
        with pytest.raises(AgentRoundError, match=match):
            simulation_metrics(bad)
        with pytest.raises(AgentRoundError, match=match):
            simulation_metrics(bad.lazy())
