"""Talk metrics on scripted SovSim runs: promise-keeping (a stated extraction against the
actual one), quota proposers by role, survival and equality by talk condition, never
pooled across condition settings."""

from __future__ import annotations

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.analysis.talk import stated_extractions, talk_setting
from scarce_lab.environments.sovsim.runner.play import run_sweep


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("talk")
    cfgs = [SovSimConfig(condition=c, model=m, talk="public", simulation=i, game={"rounds": 4})
            for m in ("scripted/promise_defector", "scripted/quota_keeper") for c in ("cpr", "bcpr") for i in (0, 1)]
    cfgs.append(SovSimConfig(condition="cpr", model="scripted/quota_keeper", game={"rounds": 4}))  # talk none
    run_sweep(cfgs, out, progress=False)
    return sl.load(out)


def test_stated_extractions_parse_the_scripted_tags():
    talk = pl.DataFrame({"run_id": ["r"] * 3, "round": [1, 1, 2], "agent": ["a0", "a1", "a0"], "turn": [1, 1, 1],
                         "text": ["[promise extraction=15] I will take 15", "[quota per_agent=9] each 9", "hello 12"]})
    st = stated_extractions(talk)
    assert st.select("agent", "kind", "stated").rows() == [("a0", "promise", 15), ("a1", "quota", 9)]


def test_promise_keeping_separates_the_defector_from_the_keeper(ds):
    res = sl.sovsim.promise_keeping(ds)
    pk = res.frame
    assert set(pk["talk"]) == {"public"}  # the talk=none run states nothing
    d = pk.filter(pl.col("model") == "scripted/promise_defector")
    # round 1 of each of 2 runs: every agent promises 15 (= 120 // 8) and takes 30: the pool collapses at once
    assert d["n"].to_list() == [8, 8] and d["kept"].to_list() == [0, 0] and d["mean_excess"].to_list() == [15, 15]
    assert (d["value"] == 0).all() and (d["cp_high"] < 0.61).all()
    k = pk.filter(pl.col("model") == "scripted/quota_keeper")
    assert (k["value"] == 1).all() and (k["n"] == 2 * 4 * 4).all() and (k["mean_excess"] == 0).all()
    assert (k["cp_low"] > 0.89).all() and (k["runs"] == 2).all()
    assert "kept" in res.method and "promise-keeping rate" in res.reading
    # one interval beside the estimate, the one the method calls the 95% CI (runs the unit)
    shown = res.markdown()
    assert "clopper_pearson" not in shown and "Brackets: 95% CI, bounded t/score hull over run means" in res.reading


def test_quota_proposers_by_role(ds):
    q = sl.sovsim.quota_proposers(ds).frame
    keeper = q.filter(pl.col("model") == "scripted/quota_keeper")
    assert set(zip(keeper["base_condition"], keeper["role"], strict=True)) == {
        ("bcpr", "boss"), ("bcpr", "worker"), ("cpr", "citizen")}
    assert (keeper["value"] == 1).all() and (keeper["source"] == "tag").all()
    assert (q.filter(pl.col("model") == "scripted/promise_defector")["n_quota"] == 0).all()
    # judge labels instead of tags (the panel's labels.parquet: one row per unit)
    first = ds.payloads("talk").collect().row(0, named=True)
    unit = f"{first['run_id']}:{first['round']}:{first['agent']}"
    labels = pl.DataFrame({"unit_id": [unit], "labels": [["quota_proposal", "promise"]]})
    judged = sl.sovsim.quota_proposers(ds, labels=labels).frame
    assert judged["n"].sum() == 1 and judged["n_quota"].sum() == 1 and (judged["source"] == "judge").all()


def _metric(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    return frame.filter(pl.col("metric") == metric)


def test_talk_outcomes_keep_talk_conditions_apart(ds):
    o = sl.sovsim.talk_outcomes(ds).frame
    keeper_cpr = o.filter((pl.col("model") == "scripted/quota_keeper") & (pl.col("base_condition") == "cpr"))
    time = _metric(keeper_cpr, "survival_time")
    assert time["talk"].to_list() == ["none", "public"] and time["runs"].to_list() == [1, 2]
    assert (_metric(keeper_cpr, "survival_rate")["value"] == 1).all()
    assert (_metric(keeper_cpr, "equality")["value"] == 1).all()
    defect = o.filter(pl.col("model") == "scripted/promise_defector")
    assert (_metric(defect, "survival_time")["value"] == 1).all()
    assert (_metric(defect, "survival_rate")["value"] == 0).all()


def test_talk_outcomes_of_different_games_say_which_game(tmp_path):
    """Games of 2 and 4 rounds side by side (two models; one model's groups never mix
    settings): a ``rounds`` column tells the rows apart,
    and each game is scored by its own rounds (a 2-round game played to its end
    survived; under the other game's 4 rounds it would count as cut short)."""
    cfgs = [SovSimConfig(condition="cpr", model=m, talk="public", game={"rounds": r})
            for m, r in (("scripted/quota_keeper", 2), ("scripted/sustainable", 4))]
    run_sweep(cfgs, tmp_path, progress=False)
    ds = sl.load(tmp_path)
    res = sl.sovsim.talk_outcomes(ds)
    time = _metric(res.frame, "survival_time").sort("rounds")
    assert time["rounds"].to_list() == ["2", "4"] and time["value"].to_list() == [2.0, 4.0]
    assert (_metric(res.frame, "survival_rate")["value"] == 1).all()
    # a 2-round game's survival is never set beside a 4-round one's in one sentence
    assert "highest for" not in res.reading or "lowest for model=scripted/quota_keeper" not in res.reading
    assert "In the games with rounds=2" in res.reading and "In the games with rounds=4" in res.reading
    # the rounds differ between the runs: a column, not a departure every run shares (talk is one)
    assert "rounds" in res.layout.columns and res.departures == {"talk": "public"}
    # Table 1 of different games is refused; forced (one convention: the preset's 12
    # rounds), its layout names the game of each row. Games that collapse in round 1 are
    # finished under any number of rounds, so the forced table keeps both.
    from scarce_lab.environments.sovsim.analysis.conventions import PresetMismatchError

    with pytest.raises(PresetMismatchError, match="different games"):
        sl.sovsim.table(ds)
    run_sweep([SovSimConfig(condition="cpr", model="scripted/promise_defector", game={"rounds": r}) for r in (2, 4)],
              tmp_path / "short", progress=False)
    with pytest.warns(UserWarning, match="FORCED"):
        t = sl.sovsim.table(sl.load(tmp_path / "short"), force=True)
    assert t.layout.columns[:4] == ["Model", "Condition", "rounds", "n"]
    assert sorted(t.layout["rounds"].to_list()) == ["2", "4"] and "| rounds |" in t.markdown()


def test_runs_with_other_talk_settings_are_never_pooled(tmp_path):
    cfgs = [SovSimConfig(condition="cpr", model="scripted/quota_keeper", talk="public", talk_turns=t, game={"rounds": 2})
            for t in (1, 2)]
    run_sweep(cfgs, tmp_path, progress=False)
    with pytest.raises(PoolingError, match="talk_turns"):
        sl.sovsim.promise_keeping(sl.load(tmp_path))
    with pytest.raises(PoolingError, match="talk_turns"):
        sl.sovsim.talk_outcomes(sl.load(tmp_path))


def test_talk_setting_reads_the_recorded_setting():
    assert talk_setting('{"condition": "cpr", "talk": "public+private"}') == "public+private"
    assert talk_setting('{"condition": "cpr"}') == "none"  # recorded before talk existed
    with pytest.raises(ValueError, match="not JSON"):
        talk_setting("{oops")


def test_talk_outcome_intervals_stay_inside_the_game(tmp_path):
    # a random seat and an opportunist: 2 of 5 games reach round 4, the t interval of survival ran past it
    seats = {"a0": "scripted/random", "a1": "scripted/opportunist"}
    cfgs = [SovSimConfig(condition="cpr", model="scripted/sustainable", seats=seats, simulation=i,
                         game={"rounds": 4}, talk=talk) for i in range(5) for talk in ("none", "public")]
    run_sweep(cfgs, tmp_path, progress=False)
    f = sl.sovsim.talk_outcomes(sl.load(tmp_path)).frame.filter(pl.col("lo").is_not_null())
    time = f.filter(pl.col("metric") == "survival_time")
    assert time.height == 2 and (time["lo"] >= 1).all() and (time["hi"] <= 4).all(), time
    eq = f.filter(pl.col("metric") == "equality")
    assert (eq["lo"] >= 0).all() and (eq["hi"] <= 1).all(), eq
