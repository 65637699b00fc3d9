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


def test_a_sim_file_naming_its_model_twice_is_refused(tmp_path):
    text = json.dumps(_sim(7.0)).replace('"model": "m-9"', '"model": "m-9", "model": "m-10"', 1)
    (tmp_path / "sim_04.json").write_text(text)
    with pytest.raises(ValueError, match="twice|repeated|duplicate"):
        read_sim_file(tmp_path / "sim_04.json")
