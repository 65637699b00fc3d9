"""Institution rates never pool runs of different conditions into one arm."""

from __future__ import annotations

import json

import polars as pl
import pytest

from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.environments.scarce.analysis.institutions import (
    BEHAVIOUR_METRICS,
    institution_behaviour,
    institution_settings,
)


def _runs(settings: list[dict]) -> pl.DataFrame:
    cfg = json.dumps({"scheduler": "ballots", "institutions": {"sanctions": "mechanism"}})
    return pl.DataFrame({"run_id": [f"r{i}" for i in range(len(settings))], "seed": list(range(len(settings))),
                         "config": [cfg] * len(settings), "environment": ["scarce"] * len(settings),
                         "condition_settings": [json.dumps(s) for s in settings]})


def _rates(n: int) -> pl.DataFrame:
    return pl.DataFrame({"run_id": [f"r{i}" for i in range(n)], **{m: [0.5] * n for m in BEHAVIOUR_METRICS}})


def test_one_arm_of_two_models_or_compositions_is_refused():
    runs = _runs([{"scheduler": "ballots", "institutions.sanctions": "mechanism", "model": "scripted/fifo"},
                  {"scheduler": "ballots", "institutions.sanctions": "mechanism", "model": "openai/gpt-4o",
                   "seats": {"w0": {"memory": "none"}}}])
    s = institution_settings(runs)
    assert s["arm"].n_unique() == 1  # the arm names the scheduler and institutions only
    with pytest.raises(PoolingError):
        institution_behaviour(_rates(2), s.drop("seed"))


def test_one_arm_of_one_condition_over_seeds_is_a_group():
    same = {"scheduler": "ballots", "institutions.sanctions": "mechanism", "model": "scripted/fifo"}
    beh = institution_behaviour(_rates(2), institution_settings(_runs([same, same])).drop("seed"))
    assert beh.filter(pl.col("metric") == BEHAVIOUR_METRICS[0])["runs"].to_list() == [2]
