"""Hostile seat maps: spellings of one composition must be one condition (one run id),
and different compositions never one."""

from __future__ import annotations

from scarce_lab.config.economy import EconomyRunConfig
from scarce_lab.config.scarce import ScarceConfig
from scarce_lab.config.sovsim import SovSimConfig


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
    assert _eco(seats={"a0": "scripted/expert"}).run_id != _eco().run_id


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
