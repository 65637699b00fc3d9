"""Economy of Minds seats and newcomer settings: spelling, key checks, condition
settings, run ids and labels."""

from __future__ import annotations

import pytest

from scarce_lab.config.base import build_config
from scarce_lab.environments.economy.config import EconomyRunConfig


def _qa(**kw):
    return EconomyRunConfig(**{"task": "arithmetic", "model": "scripted/partial", "agents": 4, **kw})


def test_no_seats_keeps_settings_run_id_and_config():
    cfg = EconomyRunConfig()
    assert cfg.run_id == "eco-blocksworld-none-scripted-random-rules-s0"
    assert "seats" not in cfg.model_dump() and "newcomer" not in cfg.model_dump()
    assert not any(k.startswith(("seats.", "newcomer.")) for k in cfg.condition_settings())


def test_seats_resolve_by_id_then_role_then_star_then_model():
    cfg = _qa(seats={"a0": "openai/gpt-4o", "compute": {"model": "embedded/smollm2", "temperature": 0.5},
                     "*": "scripted/partial"})
    r = cfg.resolved_seats()
    assert r["a0"].model == "openai/gpt-4o" and r["a0"].temperature == 0.0  # the client's, as sent
    assert r["a1"].model == "embedded/smollm2" and r["a1"].temperature == 0.5  # a1 is the compute founder
    assert r["a2"].model == r["a3"].model == r["*"].model == "scripted/partial"
    assert r["a2"].temperature is None  # a scripted seat carries no sampling settings
    assert cfg.llm_models() == ["openai/gpt-4o", "embedded/smollm2"]
    assert cfg.composition() == "a0=gpt-4o, a1=smollm2 (temperature=0.5), others=partial"


def test_bare_model_means_every_seat():
    cfg = _qa(model="embedded/smollm2", seats={"a3": "scripted/partial"})
    assert [s.model for s in cfg.resolved_seats().values()] == [
        "embedded/smollm2"] * 3 + ["scripted/partial", "embedded/smollm2"]  # a0..a3, then '*' (the model)


@pytest.mark.parametrize("seats, message", [
    ({"a9": "scripted/partial"}, "no seat 'a9'"),
    ({"planner": "scripted/partial"}, "no seat 'planner'"),
    ({"newcomer": "scripted/partial"}, "no seat 'newcomer'"),  # no newcomer in this run
    ({"a0": {"model": "scripted/partial", "temperature": 0.3}}, "would not reach the scripted policy"),
    ({"a0": {"memory": "none"}}, r"seats\.a0\.memory: not a seat setting"),  # SCARCE's, not the economy's
    ({"a0": "openai/gpt-4o,x"}, "whitespace"),
])
def test_bad_seats_fail_naming_the_key(seats, message):
    with pytest.raises(ValueError, match=message):
        _qa(seats=seats)


def test_blocksworld_has_no_roles_and_refuses_presets_and_task_dirs():
    with pytest.raises(ValueError, match="no seat 'compute'"):
        EconomyRunConfig(agents=3, seats={"compute": "scripted/expert"})
    with pytest.raises(ValueError, match="not available under preset"):
        EconomyRunConfig(task="arithmetic", model="scripted/partial", preset="eom-reference",
                         seats={"a0": "scripted/partial"})


def test_newcomer_must_join_in_training_with_an_economy():
    with pytest.raises(ValueError, match="newcomer.episode"):
        EconomyRunConfig(episodes=5, newcomer={"episode": 5})
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        EconomyRunConfig(episodes=5, newcomer={"episode": 0})
    with pytest.raises(ValueError, match="no economy to join"):
        EconomyRunConfig(episodes=5, baseline="round-robin", newcomer={"episode": 2})


def test_composition_is_a_condition_hashed_into_the_run_id_and_labelled():
    a = _qa(seats={"a0": "openai/gpt-4o"})
    b = _qa(seats={"a1": "openai/gpt-4o"})
    c = _qa(seats={"a0": "openai/gpt-4o"}, newcomer={"episode": 3})
    assert len({a.run_id, b.run_id, c.run_id, _qa().run_id}) == 4
    assert a.condition_settings()["seats.a0.model"] == "openai/gpt-4o"
    assert c.condition_settings()["newcomer.episode"] == 3
    assert "seats[a0=gpt-4o, others=partial]" in a.condition_label()
    assert "newcomer[episode=3]" in c.condition_label()
    # the same composition written two ways is one condition
    same = _qa(seats={"a0": {"model": "openai/gpt-4o"}, "*": "scripted/partial"})
    assert same.condition_settings() == a.condition_settings()


def test_dash_s_spelling():
    cfg = build_config(EconomyRunConfig, overrides=[
        "task=arithmetic", "model=scripted/partial", "agents=4", "seats.a0=openai/gpt-4o",
        "seats.compute.temperature=0.4", "seats.compute.model=embedded/smollm2", "newcomer.episode=5",
        "newcomer.wealth=80"])
    assert cfg.seats["a0"].model == "openai/gpt-4o" and cfg.seats["compute"].temperature == 0.4
    assert cfg.newcomer.episode == 5 and cfg.newcomer.wealth == 80
    with pytest.raises(Exception, match="a99"):
        build_config(EconomyRunConfig, overrides=["seats.a99=scripted/expert"])
