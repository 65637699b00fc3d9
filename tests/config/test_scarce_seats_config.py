"""SCARCE seats and joins/leaves in the config: spelling, validation, condition
settings, run ids, labels (config/scarce_seats.py)."""

from __future__ import annotations

import pytest

from scarce_lab.config.base import ConfigError, build_config
from scarce_lab.environments.scarce.config import ScarceConfig

#: The golden SCARCE run's id (tests/golden/v4/scarce): a config without seats keeps it.
GOLDEN_ID = "scarce_ballots_revisable_mem-cross_scripted-random_s1_2e136edb"


def test_without_seats_or_joins_nothing_changes():
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/random", mechanism="revisable", seed=1)
    assert cfg.run_id == GOLDEN_ID
    dumped = cfg.model_dump(mode="json")
    assert not {"seats", "joins", "leaves"} & set(dumped)
    assert not {"seats", "joins", "leaves"} & set(cfg.condition_settings())
    plan = cfg.seat_plan()
    assert [s.solver.model for s in plan.values()] == ["scripted/random"] * 2
    assert {s.memory for s in plan.values()} == {"cross"}
    assert cfg.world_rules().worker_memory == {} and cfg.world_rules().joins == {}


def test_cli_spelling_dotted_parts_and_nested_files(tmp_path):
    cfg = build_config(ScarceConfig, overrides=[
        "workers=3", "seats.w0=openai/gpt-4o", "seats.*.negotiator=scripted/strategic", "seats.w1.memory=none",
        "seats.w0.solver.temperature=0.5",
    ])
    assert set(cfg.seats) == {"w0", "*.negotiator", "w1", "w0.solver"}
    plan = cfg.seat_plan()
    # the agent id wins over '*.negotiator' (seats.resolve_seat: agent, alias, then '*')
    assert plan["w0"].solver.model == plan["w0"].negotiator.model == "openai/gpt-4o"
    assert plan["w1"].negotiator.model == "scripted/strategic" and plan["w1"].solver.model == "scripted/fifo"
    assert plan["w1"].memory == "none" and plan["w0"].memory == "cross"
    assert plan["w0"].solver.temperature == 0.5 and plan["w0"].negotiator.temperature == 0.0
    f = tmp_path / "c.yaml"
    f.write_text("workers: 3\nseats:\n  w0: {solver: openai/gpt-4o, memory: none}\n  '*': scripted/fifo\n")
    cfg2 = build_config(ScarceConfig, file=f)
    assert set(cfg2.seats) == {"w0.solver", "w0", "*"}
    assert cfg2.seat_plan()["w0"].solver.model == "openai/gpt-4o"
    assert cfg2.seat_plan()["w0"].negotiator.model == "scripted/fifo"


def test_settings_follow_the_map_and_scripted_parts_send_nothing():
    cfg = ScarceConfig(workers=3, model="scripted/fifo", negotiator_model="fake/model",
                       llm={"temperature": 0.2, "max_tokens": 300},
                       seats={"w0.negotiator": {"temperature": 0.9, "max_tokens": 50}, "w2": "scripted/strategic"})
    plan = cfg.seat_plan()
    assert plan["w0"].negotiator.temperature == 0.9 and plan["w0"].negotiator.max_tokens == 50
    assert plan["w1"].negotiator.temperature == 0.2 and plan["w1"].negotiator.max_tokens == 300  # the llm block
    assert plan["w0"].solver.temperature is None  # a scripted solver is sent nothing
    assert plan["w2"].negotiator.model == "scripted/strategic" and plan["w2"].negotiator.temperature is None
    assert cfg.llm_models() == ["fake/model"]
    assert "llm.temperature" in cfg.condition_settings()  # a model plays: sampling settings define the condition


def test_composition_is_a_condition_setting_hashed_and_labelled():
    a = ScarceConfig(workers=3, model="scripted/fifo", seats={"w0": "scripted/random"})
    b = ScarceConfig(workers=3, model="scripted/fifo", seats={"w1": "scripted/random"})
    c = ScarceConfig(workers=3, model="scripted/fifo", seats={"w0": {"memory": "none"}})
    ids = {a.run_id, b.run_id, c.run_id, ScarceConfig(workers=3, model="scripted/fifo").run_id}
    assert len(ids) == 4
    assert a.condition_settings()["seats"]["w0"]["solver"] == {"model": "scripted/random"}
    assert a.composition_label() == "w0=random, others=fifo"
    assert "seats=[w0=random, others=fifo]" in a.condition_label()
    assert c.composition_label() == "w0=fifo (memory=none), others=fifo"
    assert "_mixed_" in a.run_id and "_scripted-fifo_" in c.run_id


def test_llm_models_lists_every_seat_model():
    cfg = ScarceConfig(workers=3, model="scripted/fifo",
                       seats={"w0": "fake/a", "w1.negotiator": "fake/b", "w2.solver": "embedded/smollm2"})
    assert cfg.llm_models() == ["fake/a", "fake/b", "embedded/smollm2"]


@pytest.mark.parametrize("seats, joins, match", [
    ({"w9": "scripted/fifo"}, {}, "no seat 'w9'"),
    ({"newcomer": "scripted/fifo"}, {}, "no seat 'newcomer'"),
    ({"w0.coder": "scripted/fifo"}, {}, "no seat 'w0.coder'"),
    ({"w0.solver": {"memory": "none"}}, {}, "memory is a worker's horizon"),
    ({"w0": {"memory": "forever"}}, {}, "must be one of"),
    ({"w0.negotiator": "scripted/nonsense"}, {}, "seats.w0.negotiator: 'scripted/nonsense' names no scripted policy"),
    ({"w0": "scripted/skilled:7"}, {}, "skill"),
    ({"w0": {"temperature": 0.5}}, {}, "would reach no model"),
    ({"w0": {"model": "openai/gpt-4o", "reasoning_effort": "high"}}, {}, "not accepted by 'openai/gpt-4o'"),
])
def test_bad_seats_are_refused_naming_the_seat(seats, joins, match):
    with pytest.raises(ValueError, match=match):
        ScarceConfig(workers=3, subruns=2, model="scripted/fifo", seats=seats, joins=joins)


def test_newcomer_alias_reaches_joining_workers_only():
    cfg = ScarceConfig(workers=3, subruns=2, model="scripted/fifo", joins={"w2": 1},
                       seats={"newcomer": "scripted/random"})
    plan = cfg.seat_plan()
    assert plan["w2"].solver.model == "scripted/random" and plan["w2"].newcomer
    assert plan["w0"].solver.model == "scripted/fifo" and not plan["w0"].newcomer


@pytest.mark.parametrize("kw, match", [
    (dict(joins={"w7": 1}), "unknown worker"),
    (dict(joins={"w2": 0}), r"joins.w2: subrun 0 must be in 1..2"),
    (dict(joins={"w2": 3}), r"must be in 1..2"),
    (dict(leaves={"w1": 2}), r"leaves.w1: subrun 2 must be in 0..1"),
    (dict(joins={"w2": 2}, leaves={"w2": 1}), "before joins"),
    (dict(workers=1, leaves={"w0": 0}), "no worker is present in subrun 1"),
])
def test_bad_joins_and_leaves_are_refused(kw, match):
    base = dict(workers=3, subruns=3, model="scripted/fifo") | kw
    with pytest.raises(ValueError, match=match):
        ScarceConfig(**base)


def test_joins_and_leaves_define_the_condition_and_who_plays():
    cfg = ScarceConfig(workers=3, subruns=3, model="scripted/fifo", joins={"w2": 1}, leaves={"w0": 1})
    assert [cfg.present(k) for k in range(3)] == [["w0", "w1"], ["w0", "w1", "w2"], ["w1", "w2"]]
    s = cfg.condition_settings()
    assert s["joins"] == {"w2": 1} and s["leaves"] == {"w0": 1}
    assert cfg.run_id != ScarceConfig(workers=3, subruns=3, model="scripted/fifo").run_id
    assert "joins=[w2@1]" in cfg.condition_label() and "leaves=[w0@1]" in cfg.condition_label()
    rules = cfg.world_rules()
    assert rules.present(0) == ("w0", "w1") and rules.present(2) == ("w1", "w2")


def test_build_config_error_names_the_seat():
    with pytest.raises(ConfigError, match="seats"):
        build_config(ScarceConfig, overrides=["workers=2", "seats.w5=scripted/fifo"])


def test_a_seat_model_and_its_settings_combine_in_either_order():
    for order in (["seats.w0=scripted/random", "seats.w0.memory=none"],
                  ["seats.w0.memory=none", "seats.w0=scripted/random"]):
        cfg = build_config(ScarceConfig, overrides=["workers=2", *order])
        seat = cfg.seat_plan()["w0"]
        assert (seat.solver.model, seat.memory) == ("scripted/random", "none"), order


def test_a_seat_setting_litellm_drops_is_refused_or_recorded_as_not_sent():
    seats = {"w0": {"model": "openai/o3-mini", "temperature": 0.7}}
    with pytest.raises(ValueError, match="would not be sent to 'openai/o3-mini'"):
        ScarceConfig(workers=2, model="scripted/fifo", seats=seats)
    cfg = ScarceConfig(workers=2, model="scripted/fifo", seats=seats, llm={"allow_ignored_settings": True})
    assert cfg.seat_plan()["w0"].solver.temperature is None  # never recorded as sent
    assert "temperature" not in cfg.condition_settings()["seats"]["w0"]["solver"]
