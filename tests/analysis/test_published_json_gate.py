"""The authors' published layouts (SovSim sim_XX.json, GovSim log_env.json) are JSON
files handed to the loaders: the read gate's parse applies to them as to every run
file, so a NaN or Infinity literal or a key written twice is refused by name instead
of becoming a NaN extraction or the last of two models."""

from __future__ import annotations

import json

import pytest

from scarce_lab.environments.sovsim.published.sovsim_runs import read_sim_file


def _sim(extraction: float) -> dict:
    rounds = [{"round": t, "pool_before": 90, "sustainability_threshold": 45.0,
               "extractions": [9, extraction, 9, 9], "remaining_before_leader": None, "final_pool": 50,
               "pool_next": 90, "payoffs": [9.0] * 4, "collapsed": False} for t in (1, 2, 3)]
    return {"model": "m-9", "condition": "cpr", "simulation_id": 4, "total_rounds_played": 3, "collapsed": False,
            "rounds": rounds, "config": {"max_rounds": 3}}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_sim_file_with_a_non_finite_literal_is_refused(tmp_path, literal):
    text = json.dumps(_sim(7.0)).replace('"extractions": [9, 7.0', f'"extractions": [9, {literal}', 1)
    (tmp_path / "sim_04.json").write_text(text)
    with pytest.raises(ValueError, match="sim_04.json"):
        read_sim_file(tmp_path / "sim_04.json")


@pytest.mark.parametrize(("edit", "field"), [(("collapsed", "false"), "collapsed"), (("payoffs", [9.0] * 3), "payoffs"),
                                           (("remaining_before_leader", "n/a"), "remaining_before_leader")])
def test_a_sim_file_round_the_reader_cannot_take_is_refused_by_file_round_and_field(tmp_path, edit, field):
    sim = _sim(7.0)
    sim["rounds"][1][edit[0]] = edit[1]
    sim["condition"] = "kcpr"
    (tmp_path / "sim_04.json").write_text(json.dumps(sim))
    with pytest.raises(ValueError, match=rf"sim_04\.json: round record 1: {field}"):
        read_sim_file(tmp_path / "sim_04.json")


def test_a_sim_file_naming_its_model_twice_is_refused(tmp_path):
    text = json.dumps(_sim(7.0)).replace('"model": "m-9"', '"model": "m-9", "model": "m-10"', 1)
    (tmp_path / "sim_04.json").write_text(text)
    with pytest.raises(ValueError, match="twice|repeated|duplicate"):
        read_sim_file(tmp_path / "sim_04.json")


def _rationales(tmp_path, text: str):
    from scarce_lab.environments.sovsim.published.sovsim_json import read_rationales

    p = tmp_path / "agent_rationales" / "m-3" / "kcpr" / "rationales.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return read_rationales(p)


def _records() -> list[dict]:
    return [{"simulation_id": s, "round": t, "pool_before": 80, "extractions": [5, 6, 7, 8], "final_pool": 54,
             "payoffs": [5.0, 6.0, 7.0, 8.0], "collapsed": False, "reasonings": ["a", "round", "c", "d"]}
            for s in (0, 1) for t in (1, 2)]


@pytest.mark.parametrize("edit", [
    ('"pool_before": 80', '"pool_before": 80, "pool_before": 120'),  # polars alone keeps the first
    ('"final_pool": 54', '"\\u0066inal_pool": 3, "final_pool": 54'),  # the same key, written with an escape
])
def test_a_rationales_file_writing_a_field_twice_is_refused_on_the_fast_path_too(tmp_path, edit):
    text = json.dumps(_records())
    assert _rationales(tmp_path, text).height == 16
    with pytest.raises(ValueError, match="twice|repeated|duplicate"):
        _rationales(tmp_path, text.replace(*edit, 1))


def test_text_that_looks_like_keys_keeps_the_fast_path_and_reads_as_the_strict_reader(tmp_path):
    from scarce_lab.environments.sovsim.published import sovsim_json as sj

    text = json.dumps(_records()).replace('"a"', '"payoffs: \\"round\\": 3"')  # a key-like text in a value
    p = tmp_path / "r.json"
    p.write_text(text)
    assert sj._read_raw(p) is not None  # no doubled key: polars reads it
    assert sj.read_rationales(p, model="m", condition="kcpr", run_prefix="x").equals(sj._read_records(p, "m", "kcpr", "x"))
    p.write_text(text.replace('"round": 1', '"round" : 1', 1).replace('"pool_before": 80', '"pool_before": 80, "pool_before" : 9', 1))
    assert sj._read_raw(p) is None  # a key written twice, the second with space before its colon


def test_every_documented_key_keeps_the_fast_path(tmp_path):
    from scarce_lab.environments.sovsim.published import sovsim_json as sj

    recs = [r | {"announced_pool": 60, "announcement_reasoning": "say less"} for r in _records()]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(recs, indent=1))  # the released files' layout: one key a line
    assert sj._read_raw(p) is not None
    p.write_text(json.dumps([r | {"notes": "x"} for r in recs]))  # an undocumented key: the strict reader decides
    assert sj._read_raw(p) is None and sj._read_records(p, "m", "kcpr_m").height == 16
