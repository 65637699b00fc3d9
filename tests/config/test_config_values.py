"""Settings are read as the user wrote them: `-S` values and config files use the YAML
1.2 core schema (``0120`` is 120, not octal 80; ``yes`` is text), and a boolean is
never accepted for a number (the decisions' coercion policy applied to settings)."""

from __future__ import annotations

import pytest

from scarce_lab.config.base import ConfigError, build_config, load_yaml, parse_override
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.scarce.config import ScarceConfig
from scarce_lab.environments.sovsim.config import SovSimConfig


@pytest.mark.parametrize(
    ("text", "value"),
    [("0120", 120), ("007", 7), ("-3", -3), ("1e3", 1000.0), (".5", 0.5), ("true", True), ("False", False),
     ("yes", "yes"), ("on", "on"), ("y", "y"), ("0x10", "0x10"), ("0o17", "0o17"), ("1_000", "1_000"),
     ("[1, 2]", [1, 2]), ("{w0: 500}", {"w0": 500}), ("gpt-4o", "gpt-4o")],
)
def test_yaml_core_schema_scalars(text, value):
    got = load_yaml(text)
    assert got == value and type(got) is type(value)
    assert parse_override(f"k={text}") == ("k", value)


def test_leading_zero_is_the_decimal_the_user_typed():
    c = build_config(SovSimConfig, overrides=["game.initial_pool=0120", "game.capacity=0120"])
    assert (c.game.initial_pool, c.game.capacity) == (120, 120)


@pytest.mark.parametrize(
    ("cls", "override", "field"),
    [(SovSimConfig, "game.rounds=true", "game.rounds"), (SovSimConfig, "llm.temperature=false", "llm.temperature"),
     (ScarceConfig, "worker_budgets.w0=true", "worker_budgets.w0")],
)
def test_a_boolean_is_not_a_number(cls, override, field):
    with pytest.raises(ConfigError) as exc:
        build_config(cls, overrides=[override])
    msg = str(exc.value)
    assert f"{cls.__name__}.{field}: True is a boolean" in msg or f"{cls.__name__}.{field}: False is a boolean" in msg
    assert f"[from -S {override}]" in msg


@pytest.mark.parametrize("override", ["game.rounds=yes", "game.rounds=0x10", "game.initial_pool=0o170"])
def test_yaml_1_1_spellings_are_refused_for_numbers(override):
    with pytest.raises(ConfigError, match="game.rounds|game.initial_pool"):
        build_config(SovSimConfig, overrides=[override])


def test_config_file_uses_the_same_reading(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("game:\n  initial_pool: 0120\n  capacity: 0120\n")
    assert build_config(SovSimConfig, file=f).game.initial_pool == 120
    f.write_text("game:\n  rounds: yes\n")
    with pytest.raises(ConfigError, match=rf"game.rounds.*\[from {f}\]"):
        build_config(SovSimConfig, file=f)


def test_python_api_refuses_a_boolean_for_a_number_too():
    with pytest.raises(ValueError, match="game.rounds: True is a boolean"):
        SovSimConfig(game={"rounds": True})
    assert EconomyRunConfig().model_dump()  # the defaults still validate


def test_a_threshold_above_the_pool_is_refused():
    with pytest.raises(ConfigError, match=r"collapse_threshold \(200\) exceeds initial_pool \(120\)"):
        build_config(SovSimConfig, overrides=["game.collapse_threshold=200"])
