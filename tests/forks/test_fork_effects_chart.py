"""The chart and per-parent table of sl.effects (scarce_lab.forks.effects)."""

from __future__ import annotations

import pytest

from scarce_lab.forks.effects import effects_chart, paired_effects, parent_differences


def _row(parent, seed, label, value, at=3):
    return {"environment": "e", "parent": parent, "at": at, "seed": seed, "intervention": label,
            "metrics": {"payoff": value, "rounds": 4.0}}


def test_parent_differences_average_seeds_per_parent_and_feed_the_effect_table():
    vals = [_row(p, s, k, v) for p, base in (("pa", 5.0), ("pb", 7.0)) for s in range(3)
            for k, v in (("none", base), ("seat_model:x=y", base + s))]
    d = parent_differences(vals).filter(metric="payoff").sort("parent")
    assert d["difference"].to_list() == pytest.approx([1.0, 1.0]) and d["n_seeds"].to_list() == [3, 3]
    (r,) = paired_effects(vals).filter(metric="payoff").iter_rows(named=True)
    assert r["effect"] == pytest.approx(1.0) and r["n_parents"] == 2 and r["n_pairs"] == 6


def test_chart_draws_a_point_per_parent_and_refuses_an_all_zero_one():
    vals = [_row(p, 0, k, v) for p in ("pa", "pb") for k, v in (("none", 1.0), ("rule:k=v", 3.0))]
    spec = effects_chart(parent_differences(vals)).to_dict()
    assert spec["facet"]["field"] == "metric" and spec["resolve"]["scale"]["x"] == "independent"
    zero = [_row("pa", 0, k, 1.0) for k in ("none", "rule:k=v")]
    assert not effects_chart(parent_differences(zero))  # a NoFigure: every difference is zero
    assert not effects_chart(parent_differences([_row("pa", 0, "rule:k=v", 1.0)]))  # nothing paired
