"""SovSimConfig's seats and newcomer: resolution, refusals, condition settings, run ids,
and that a config without either is what it was before they existed."""

from __future__ import annotations

import pytest

from scarce_lab.config.base import ConfigError, build_config
from scarce_lab.environments.sovsim.config import SovSimConfig


def test_without_seats_or_newcomer_nothing_changes():
    c = SovSimConfig(condition="kcpr")
    assert c.run_id == "sovsim-kcpr-embedded-smollm2-s0-0"
    dump = c.model_dump(mode="json")
    assert "seats" not in dump and "newcomer" not in dump
    assert not any(k.startswith(("seats", "composition", "newcomer")) for k in c.condition_settings())
    assert SovSimConfig.model_validate(dump) == c


def test_seat_keys_resolve_most_specific_first_field_by_field():
    c = SovSimConfig(condition="kcpr", model="scripted/random", llm={"temperature": 0.5}, newcomer={"round": 2},
                     seats={"*": "embedded/smollm2", "peasant": {"temperature": 0.1}, "a1": "openai/gpt-4o",
                            "king": "scripted/greedy", "newcomer": {"model": "scripted/fixed:9"}})
    r = c.resolved_seats()
    assert c.seat_models() == {"a0": "embedded/smollm2", "a1": "openai/gpt-4o", "a2": "embedded/smollm2",
                               "a3": "scripted/greedy", "a4": "scripted/fixed:9"}
    assert r["a1"].temperature == 0.1 and r["a0"].temperature == 0.1  # the role sets it, the id sets the model
    assert r["a0"].max_tokens == 110  # from llm
    assert c.llm_models() == ["embedded/smollm2", "openai/gpt-4o"]


def test_leader_alias_and_the_newcomer_who_replaces_the_king():
    c = SovSimConfig(condition="bcpr", seats={"leader": "scripted/greedy"},
                     newcomer={"round": 2, "mode": "replace", "replaces": "a3"})
    assert c.seat_roles()["a4"] == "boss"
    assert c.seat_models()["a3"] == "scripted/greedy" and c.seat_models()["a4"] == "scripted/greedy"


@pytest.mark.parametrize("kw, match", [
    ({"condition": "kcpr", "seats": {"kign": "scripted/greedy"}}, "no seat 'kign'"),
    ({"condition": "cpr", "seats": {"king": "scripted/greedy"}}, "no seat 'king'"),
    ({"condition": "cpr", "seats": {"leader": "scripted/greedy"}}, "no seat 'leader'"),
    ({"condition": "kcpr", "seats": {"newcomer": "scripted/greedy"}}, "no seat 'newcomer'"),
    ({"condition": "kcpr", "seats": {"a4": "scripted/greedy"}}, "no seat 'a4'"),
    ({"condition": "kcpr", "seats": {"king": {"model": "scripted/greedy", "memory": "none"}}},
     r"seats\.king\.memory: not a seat setting"),
    ({"condition": "kcpr", "seats": {"king": {"model": "openai/o3-mini", "temperature": 0.3}}}, "would not be sent"),
    ({"condition": "kcpr", "newcomer": {"round": 13}}, "last round"),
    ({"condition": "cpr", "newcomer": {"round": 2, "leader": "newcomer"}}, "cpr"),
])
def test_bad_seats_and_newcomers_are_refused_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        SovSimConfig(**kw)


def test_ignored_seat_setting_allowed_when_asked_and_recorded_not_sent():
    c = SovSimConfig(condition="kcpr", llm={"allow_ignored_settings": True},
                     seats={"king": {"model": "openai/o3-mini", "temperature": 0.3}})
    assert c.condition_settings()["seats"]["a3"]["temperature"] == "not sent"


def test_composition_is_a_condition_setting_and_in_the_run_id():
    a = SovSimConfig(condition="kcpr", model="embedded/smollm2", seats={"king": "openai/gpt-4o"})
    b = SovSimConfig(condition="kcpr", model="embedded/smollm2", seats={"a0": "openai/gpt-4o"})
    assert a.condition_settings()["composition"] == "king=gpt-4o, others=smollm2"
    assert b.condition_settings()["composition"] == "a0=gpt-4o, others=smollm2"
    assert a.run_id != b.run_id and "-mixed-" in a.run_id and "-mixed-" in b.run_id
    assert "composition=king=gpt-4o, others=smollm2" in a.condition_label()


def test_seats_that_are_all_alike_are_the_game_of_model_and_llm():
    same = SovSimConfig(condition="kcpr", seats={"*": {"model": "openai/gpt-4o", "temperature": 0}})
    plain = SovSimConfig(condition="kcpr", model="openai/gpt-4o", llm={"temperature": 0})
    assert same.run_id == plain.run_id and same.condition_settings() == plain.condition_settings()
    assert not same.is_mixed()


def test_newcomer_is_a_condition_setting():
    c = SovSimConfig(condition="kcpr", newcomer={"round": 3, "mode": "replace", "replaces": "a0"})
    s = c.condition_settings()
    assert (s["newcomer.round"], s["newcomer.mode"], s["newcomer.replaces"], s["newcomer.leader"]) == (
        3, "replace", "a0", "incumbent")
    assert c.run_id != SovSimConfig(condition="kcpr").run_id
    assert "newcomer=replace:a0@3" in c.condition_label()


def test_dash_s_and_files_spell_seats_the_same(tmp_path):
    by_s = build_config(SovSimConfig, overrides=["condition=kcpr", "seats.king=openai/gpt-4o",
                                                 "seats.*=embedded/smollm2", "newcomer.round=3"])
    f = tmp_path / "c.yaml"
    f.write_text('condition: kcpr\nseats: {king: openai/gpt-4o, "*": embedded/smollm2}\nnewcomer: {round: 3}\n')
    assert build_config(SovSimConfig, file=f) == by_s
    with pytest.raises(ConfigError, match="kign"):
        build_config(SovSimConfig, overrides=["condition=kcpr", "seats.kign=openai/gpt-4o"])


def test_the_dollar_cap_covers_every_seat_model():
    SovSimConfig(condition="kcpr", model="openai/gpt-4o-mini", llm={"max_cost_usd": 1})  # priced: accepted
    with pytest.raises(ValueError, match="openai/no-such-model-x"):
        SovSimConfig(condition="kcpr", model="openai/gpt-4o-mini", llm={"max_cost_usd": 1},
                     seats={"king": "openai/no-such-model-x"})
