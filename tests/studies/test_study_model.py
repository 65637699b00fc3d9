"""The study declaration (scarce_lab.studies.Study): what it refuses and what it builds."""

from __future__ import annotations

import pytest

from scarce_lab import studies
from scarce_lab.studies import Study, StudyError, read_studies

TOML = """
[[study]]
name = "tiny-horizon"
title = "a two-arm SovSim check"
notebook = "01_sovsim_power_conditions.ipynb"
source = "SovSim"
seeds = 2
paper = { "game.rounds" = 12 }
settings = { "game.rounds" = 5 }
departures = { "game.rounds" = "short games for the test" }
arms = [ { name = "cpr", settings = { condition = "cpr" } },
         { name = "bcpr", settings = { condition = "bcpr" } } ]
[study.profiles.greedy]
models = { model = "scripted/greedy" }
seeds = [3]
arms = ["bcpr"]
"""


def _study(text: str = TOML) -> Study:
    return read_studies(text, "test.toml", "sovsim")[0]


def test_configs_are_arm_major_with_the_study_settings_and_seeds() -> None:
    st = _study()
    runs = st.configs({"model": "scripted/sustainable"})
    assert [a for a, _ in runs] == ["cpr", "cpr", "bcpr", "bcpr"]
    assert [c.seed for _, c in runs] == [0, 1, 0, 1]
    assert {c.game.rounds for _, c in runs} == {5}
    assert {c.model for _, c in runs} == {"scripted/sustainable"}


def test_a_profile_fills_models_seeds_and_arms() -> None:
    runs = _study().configs({}, profile="greedy")
    assert [(a, c.condition, c.seed, c.model) for a, c in runs] == [("bcpr", "bcpr", 3, "scripted/greedy")]


def test_an_override_of_what_the_arms_vary_is_refused() -> None:
    with pytest.raises(StudyError, match="condition"):
        _study().configs({"model": "scripted/greedy"}, overrides={"condition": "kcpr"})


def test_a_setting_the_config_refuses_names_the_study_and_arm() -> None:
    with pytest.raises(StudyError, match=r"tiny-horizon.*arm 'cpr'.*rounds"):
        _study().configs({"model": "scripted/greedy"}, overrides={"game.rounds": -4})


def test_departures_need_a_reason_and_arms_a_unique_name() -> None:
    with pytest.raises(StudyError, match="without a reason"):
        _study(TOML.replace('departures = { "game.rounds" = "short games for the test" }', ""))
    with pytest.raises(StudyError, match="arm names repeat"):
        _study(TOML.replace('name = "bcpr"', 'name = "cpr"'))
    with pytest.raises(StudyError, match="names arms the study has not"):
        _study(TOML.replace('arms = ["bcpr"]', 'arms = ["kcpr"]'))


def test_departures_list_the_study_profile_user_and_model() -> None:
    deps = _study().departures_of("greedy", {"game.initial_pool": 100}, ["openai/x"])
    got = {(d["setting"], str(d["here"])) for d in deps}
    assert ("game.rounds", "5") in got and ("game.initial_pool", "100") in got and ("model", "openai/x") in got
    assert "short games" in _study().show()


def test_arm_of_refuses_an_ambiguous_or_unknown_run() -> None:
    st = _study()
    assert st.arm_of({"condition": "bcpr"}) == "bcpr"
    assert st.arm_of({"condition": "kcpr"}) is None
    amb = _study(TOML.replace('settings = { condition = "bcpr" }', 'settings = { "game.rounds" = 5 }'))
    assert amb.arm_of({"condition": "cpr", "game.rounds": 5}) is None  # both arms match: counted in neither


def test_arm_of_prefers_the_arm_whose_settings_depart_from_the_paper() -> None:
    """A run of the varied arm also has the baseline arm's setting when that setting is
    the paper's own value (SCARCE's richer worker runs at the paper's cross memory): the
    arm whose settings depart from the paper is the run's arm, not neither."""
    st = _study(TOML.replace('settings = { condition = "cpr" }', 'settings = { "game.rounds" = 12 }'))
    assert st.arm_of({"condition": "bcpr", "game.rounds": 12}) == "bcpr"
    assert st.arm_of({"condition": "cpr", "game.rounds": 12}) == "cpr"


def test_an_unknown_study_names_the_declared_ones() -> None:
    with pytest.raises(StudyError, match="memory-horizon"):
        studies.get("no-such-study")
