"""The cross-play planner: every focal x background composition over the base runs,
focal seats by count or by key, refusals named, each composition its own run id."""

from __future__ import annotations

import pytest

from scarce_lab.config import ScarceConfig
from scarce_lab.runners.crossplay import (
    CrossPlayError,
    PopulationSettings,
    focal_seat_ids,
    format_plan,
    plan_crossplay,
)

BASE = dict(workers=3, model="scripted/skilled:0.5", negotiator_model="scripted/fifo", subruns=1)
POP = PopulationSettings.parse("scripted/strategic,scripted/fifo", None, "1", "negotiator")


def _bases(seeds=(0, 1)):
    return [ScarceConfig(seed=s, **BASE) for s in seeds]


def test_grid_is_every_focal_background_pair_over_every_base_run():
    plan = plan_crossplay(_bases(), POP)
    assert len(plan.compositions) == 4 and len(plan.runs) == 8 and plan.base_runs == 2
    assert len({c.run_id for c in plan.configs}) == 8  # each composition (and seed) its own run
    pairs = [(c.focal, c.background) for c in plan.compositions]
    assert pairs == [("scripted/strategic", "scripted/strategic"), ("scripted/strategic", "scripted/fifo"),
                     ("scripted/fifo", "scripted/strategic"), ("scripted/fifo", "scripted/fifo")]
    for comp, cfg in plan.runs:
        seats = {k: s.model for k, s in cfg.seats.items()}
        if comp.focal == comp.background == BASE["negotiator_model"]:
            assert seats == {}  # seats that change no seat are the run without them (one condition, one id)
        else:
            assert seats == {"*.negotiator": comp.background, "w0.negotiator": comp.focal}
        # what the run will play: w0's negotiator is focal, the others background, solvers untouched
        plan_ = cfg.seat_plan()
        assert plan_["w0"].negotiator.model == comp.focal
        assert {plan_[w].negotiator.model for w in ("w1", "w2")} == {comp.background}
        assert {plan_[w].solver.model for w in plan_} == {"scripted/skilled:0.5"}
    text = format_plan(plan)
    assert "2 focal x 2 background = 4 composition(s) x 2 base run(s)" in text and "= 8 run(s)" in text
    assert "focal=fifo@w0.negotiator, background=strategic: 2 run(s)" in text


def test_background_subset_and_named_focal_seats():
    pop = PopulationSettings.parse(["scripted/strategic", "scripted/fifo"], "scripted/fifo", "w1,w2", "negotiator")
    plan = plan_crossplay(_bases((0,)), pop)
    assert [(c.focal, c.background) for c in plan.compositions] == [
        ("scripted/strategic", "scripted/fifo"), ("scripted/fifo", "scripted/fifo")]
    assert plan.compositions[0].focal_seats == ("w1", "w2")


def test_focal_seats_by_alias_and_count():
    seats = {"a0": (), "a1": (), "a2": (), "a3": ("king", "leader")}
    assert focal_seat_ids(seats, ("king",)) == ("a3",)
    assert focal_seat_ids(seats, ("leader", "a0")) == ("a0", "a3")  # seat order
    assert focal_seat_ids(seats, 2) == ("a0", "a1")
    with pytest.raises(CrossPlayError, match="no seat 'boss'.*a3 \\(king, leader\\)"):
        focal_seat_ids(seats, ("boss",))
    with pytest.raises(CrossPlayError, match="no background seat"):
        focal_seat_ids(seats, 4)
    with pytest.raises(CrossPlayError, match="names every seat"):
        focal_seat_ids(seats, ("a0", "a1", "a2", "king"))


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(members=""), "empty member"),
    (dict(members=[]), "at least one model"),
    (dict(members="a,a"), "listed twice"),
    (dict(members="a,,b"), "empty member"),
    (dict(members="a", focal_seats="0"), ">= 1"),
    (dict(members="a", focal_seats="*"), "not '\\*'"),
    (dict(members="a", focal_seats="w0.negotiator"), "seat.part"),
    (dict(members="a", focal_seats=True), "neither a count"),
])
def test_bad_population_settings_are_named(kwargs, match):
    with pytest.raises(CrossPlayError, match=match):
        PopulationSettings.parse(**kwargs)


def test_population_block_refuses_unknown_keys():
    with pytest.raises(CrossPlayError, match=r"unknown key\(s\) \['focal'\]"):
        PopulationSettings.from_block({"members": ["a"], "focal": 1})
    s = PopulationSettings.from_block({"members": "x,y", "background": ["y"], "focal_seats": "w0", "part": "solver"})
    assert s == PopulationSettings(("x", "y"), ("y",), ("w0",), "solver")


def test_a_part_the_environment_lacks_is_refused():
    with pytest.raises(CrossPlayError, match="part 'bidder'.*solver"):
        plan_crossplay(_bases(), PopulationSettings.parse("scripted/fifo", part="bidder"))


def test_a_base_config_that_sets_a_seat_model_is_refused():
    cfg = ScarceConfig(seats={"w2.negotiator": "scripted/edf"}, **BASE)
    with pytest.raises(CrossPlayError, match=r"already gives a model to \['w2.negotiator'\]"):
        plan_crossplay([cfg], POP)


def test_a_policy_the_seat_cannot_play_is_refused_before_running():
    pop = PopulationSettings.parse("scripted/no-such-policy", "scripted/fifo", 1, "negotiator")
    with pytest.raises(CrossPlayError, match="no-such-policy"):
        plan_crossplay(_bases(), pop)


def test_economy_founders_are_seats():
    from scarce_lab.config import EconomyRunConfig

    pop = PopulationSettings.parse("scripted/random-rules", "scripted/random-rules", 1)
    plan = plan_crossplay([EconomyRunConfig(agents=3, episodes=2, eval_episodes=0)], pop)
    (comp, cfg), = plan.runs
    assert comp.focal_seats == ("a0",)
    # every seat plays the base model: the seats change nothing and are dropped (the run without them)
    assert cfg.seats is None and cfg.run_id == EconomyRunConfig(agents=3, episodes=2, eval_episodes=0).run_id


def test_sovsim_king_over_background_workers():
    from scarce_lab.config import SovSimConfig

    pop = PopulationSettings.parse("scripted/greedy,scripted/sustainable", "embedded/smollm2", "king")
    plan = plan_crossplay([SovSimConfig(condition="kcpr", simulation=i) for i in range(2)], pop)
    assert len(plan.runs) == 4 and len({c.run_id for c in plan.configs}) == 4
    for comp, cfg in plan.runs:
        assert comp.focal_seats == ("a3",)
        assert cfg.seat_models() == {"a0": "embedded/smollm2", "a1": "embedded/smollm2", "a2": "embedded/smollm2",
                                     "a3": comp.focal}
    with pytest.raises(CrossPlayError, match="no seat 'king'"):
        plan_crossplay([SovSimConfig(condition="cpr")], pop)
