"""Hostile seat maps: spellings of one composition must be one condition (one run id),
and different compositions never one."""

from __future__ import annotations

from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.scarce.config import ScarceConfig
from scarce_lab.environments.sovsim.config import SovSimConfig


def _scarce(**kw):
    return ScarceConfig(**{"model": "scripted/fifo", **kw})


def _eco(**kw):
    return EconomyRunConfig(**{"task": "arithmetic", "model": "scripted/partial", "agents": 4, **kw})


def test_scarce_seats_that_change_no_seat_are_the_run_without_seats():
    plain = _scarce()
    for seats in ({"*": "scripted/fifo"}, {"w0": "scripted/fifo"}, {"*.solver": "scripted/fifo"}):
        cfg = _scarce(seats=seats)
        assert cfg.run_id == plain.run_id, seats
        assert cfg.condition_settings() == plain.condition_settings(), seats
        assert cfg.condition_label() == plain.condition_label(), seats


def test_scarce_seats_that_change_a_seat_stay_a_condition():
    plain = _scarce()
    mixed = _scarce(seats={"w0.negotiator": "scripted/strategic"})
    assert mixed.run_id != plain.run_id
    assert "seats" in mixed.condition_settings()


def test_economy_seats_that_change_no_seat_are_the_run_without_seats():
    plain = _eco()
    for seats in ({"*": "scripted/partial"}, {"a0": "scripted/partial"}):
        cfg = _eco(seats=seats)
        assert cfg.run_id == plain.run_id, seats
        assert cfg.condition_settings() == plain.condition_settings(), seats


def test_economy_seats_that_change_a_seat_stay_a_condition():
    assert _eco(seats={"a0": "scripted/full"}).run_id != _eco().run_id  # expert: Blocks World only


def test_sovsim_spellings_of_one_seat_are_one_run():
    base = {"condition": "kcpr", "model": "openai/gpt-4o-mini"}
    ids = {SovSimConfig(**base, seats=s).run_id
           for s in ({"king": "openai/gpt-4o"}, {"a3": "openai/gpt-4o"}, {"leader": "openai/gpt-4o"},
                     {"a3": "openai/gpt-4o", "*": "openai/gpt-4o-mini"})}
    assert len(ids) == 1


def test_sovsim_a_newcomer_replacing_the_leader_is_one_game_however_the_leader_is_spelt():
    # replacing the leader gives the newcomer the leader's seat with leader=incumbent (the
    # default) as with leader=newcomer: the same game (identical events), so one run id
    base = {"condition": "kcpr_m", "model": "scripted/sustainable", "game": {"rounds": 5}}
    a = SovSimConfig(**base, newcomer={"round": 3, "mode": "replace", "replaces": "a3"})
    b = SovSimConfig(**base, newcomer={"round": 3, "mode": "replace", "replaces": "a3", "leader": "newcomer"})
    assert a.run_id == b.run_id and a.condition_settings() == b.condition_settings()
    assert a.seat_roles() == b.seat_roles()
    # replacing a subordinate: where the leader goes is a real difference
    c = SovSimConfig(**base, newcomer={"round": 3, "mode": "replace", "replaces": "a0"})
    d = SovSimConfig(**base, newcomer={"round": 3, "mode": "replace", "replaces": "a0", "leader": "newcomer"})
    assert c.run_id != d.run_id


def test_a_composition_label_never_groups_two_different_models_under_one_short_name():
    from scarce_lab.config.seats import SeatSettings, composition_label

    lab = composition_label({"a0": SeatSettings(model="openai/gpt-4o"), "a1": SeatSettings(model="azure/gpt-4o"),
                             "a2": SeatSettings(model="embedded/smollm2"), "a3": SeatSettings(model="embedded/smollm2")})
    assert "openai/gpt-4o" in lab and "azure/gpt-4o" in lab and "a0+a1" not in lab, lab
    assert "others=smollm2" in lab  # unambiguous names stay short
    assert composition_label({"a0": SeatSettings(model="openai/gpt-4o"),
                              "a1": SeatSettings(model="embedded/smollm2")}) == "a0=gpt-4o, a1=smollm2"


def test_scarce_composition_label_tells_apart_what_the_seats_run():
    same_short = _scarce(seats={"w0.negotiator": "openai/gpt-4o", "w1.negotiator": "azure/gpt-4o"})
    lab = same_short.composition_label()
    assert "openai/gpt-4o" in lab and "azure/gpt-4o" in lab, lab
    # a temperature on w0's solver and on w1's negotiator: not one group
    parts = _scarce(negotiator_model="openai/gpt-4o", model="openai/gpt-4o",
                    seats={"w0.solver": {"temperature": 0.5}, "w1.negotiator": {"temperature": 0.5}})
    lab = parts.composition_label()
    assert "w0+w1" not in lab, lab
