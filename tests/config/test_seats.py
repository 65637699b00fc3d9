"""Seats: parsing, key checks, field-by-field resolution and composition labels."""

import pytest

from scarce_lab.config.seats import (
    SeatSettings,
    check_seat_keys,
    composition_label,
    parse_seats,
    resolve_seat,
)


def test_parse_string_and_mapping_values():
    seats = parse_seats({"king": "openai/gpt-4o", "*": {"model": "embedded/smollm2", "temperature": 0.2}})
    assert seats["king"] == SeatSettings(model="openai/gpt-4o")
    assert seats["*"].temperature == 0.2


@pytest.mark.parametrize("raw", [["a"], {"": "m"}, {"a b": "m"}, {"k": 3}, {"k": {"modle": "x"}},
                                 {"k": {"temperature": 3.0}}, {"k": "a,b"}, {"k": " m"}])
def test_parse_refuses_bad_seats(raw):
    with pytest.raises(ValueError):
        parse_seats(raw)


def test_a_setting_the_seats_do_not_have_is_refused_by_key_and_a_subclass_adds_settings():
    from scarce_lab.environments.scarce.seats import ScarceSeatSettings

    with pytest.raises(ValueError, match=r"seats\.w0\.memory: not a seat setting here \(a seat sets model, "):
        parse_seats({"w0": {"model": "m", "memory": "none"}})
    with pytest.raises(ValueError, match=r"seats\.w0\.temperature: Input should be less than or equal to 2"):
        parse_seats({"w0": {"temperature": 3.0}})
    seats = parse_seats({"w0": {"model": "m", "memory": "none"}, "*": "n"}, ScarceSeatSettings)
    assert seats["w0"] == ScarceSeatSettings(model="m", memory="none") and seats["*"].memory is None
    assert resolve_seat(seats, "w0", default=ScarceSeatSettings(memory="cross")) == ScarceSeatSettings(
        model="m", memory="none")
    assert parse_seats({"w0": {"model": "m", "memory": None}}) == {"w0": SeatSettings(model="m")}  # null: unset


def test_check_keys_names_unknown_seat():
    seats = parse_seats({"kign": "m"})
    with pytest.raises(ValueError, match="kign"):
        check_seat_keys(seats, ["a0", "a1", "king"])
    check_seat_keys(parse_seats({"king": "m", "*": "n"}), ["a0", "king"])
    with pytest.raises(ValueError, match="w0.judge"):
        check_seat_keys(parse_seats({"w0.judge": "m"}), ["w0"], parts=["solver", "negotiator"])
    check_seat_keys(parse_seats({"w0.solver": "m", "*.negotiator": "n"}), ["w0"], parts=["solver", "negotiator"])
    with pytest.raises(ValueError):
        check_seat_keys(parse_seats({"w0.solver": "m"}), ["w0"])  # no parts in this environment


def test_resolution_is_most_specific_first_field_by_field():
    seats = parse_seats({"*": {"model": "b", "temperature": 0.5}, "king": "a", "a3.solver": {"temperature": 0.1}})
    default = SeatSettings(model="d", temperature=0.7)
    assert resolve_seat(seats, "a3", ["king"], default=default) == SeatSettings(model="a", temperature=0.5)
    assert resolve_seat(seats, "a3", ["king"], part="solver", default=default) == SeatSettings(model="a", temperature=0.1)
    assert resolve_seat(seats, "a0", default=default) == SeatSettings(model="b", temperature=0.5)
    assert resolve_seat({}, "a0", default=default) == default


def test_composition_labels():
    m = SeatSettings
    assert composition_label({"a0": m(model="embedded/smollm2"), "a1": m(model="embedded/smollm2")}) == "all=smollm2"
    label = composition_label(
        {"a0": m(model="embedded/smollm2"), "a1": m(model="embedded/smollm2"), "a2": m(model="embedded/smollm2"),
         "a3": m(model="openai/gpt-4o")}, names={"a3": "king"})
    assert label == "king=gpt-4o, others=smollm2"
    tie = composition_label({"w0": m(model="x/a"), "w1": m(model="x/b")})
    assert tie == "w0=a, w1=b"
    from scarce_lab.environments.scarce.seats import ScarceSeatSettings as scarce

    assert composition_label({"w0": scarce(model="s/fifo", memory="none"), "w1": scarce(model="s/fifo"),
                              "w2": scarce(model="s/fifo")}) == "w0=fifo (memory=none), others=fifo"
