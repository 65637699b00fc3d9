"""Hostile inputs against the seats / newcomers / talk / institutions settings as they
reach tables: two different conditions must never share a label."""

from __future__ import annotations

import polars as pl
import pytest

from scarce_lab.data.tables import label_conditions, settings_json


def _labels(settings: list[dict]) -> dict[str, str]:
    df = pl.DataFrame({"base_condition": ["kcpr"] * len(settings),
                       "settings": [settings_json(s) for s in settings],
                       "condition": [None] * len(settings)})
    out = label_conditions(df)
    return dict(zip(out["settings"], out["condition"], strict=True))


@pytest.mark.parametrize("settings", [
    # a mixed population beside a uniform run of the same model: the presence of
    # ``seats``/``composition`` is the difference
    [{"model": "x"}, {"model": "x", "seats": {"a0": {"model": "m1"}}, "composition": "a0=m1, others=x"}],
    # talk recorded only when on: a run without the key is another condition
    [{"model": "x"}, {"model": "x", "talk": "public"}],
    # institutions recorded only when on
    [{"model": "x"}, {"model": "x", "institutions.sanctions": "vote"}],
    # two runs, each with a setting the other lacks
    [{"model": "x", "talk": "public"}, {"model": "x", "institutions.reputation": True}],
])
def test_distinct_settings_never_share_a_condition_label(settings):
    labels = _labels(settings)
    assert len(set(labels.values())) == len(settings), labels


def test_a_setting_every_run_shares_stays_out_of_the_label():
    labels = _labels([{"model": "x", "talk": "public", "rounds": 2}, {"model": "x", "talk": "public", "rounds": 3}])
    assert sorted(labels.values()) == ["kcpr,rounds=2", "kcpr,rounds=3"]


def test_compositions_whose_readable_labels_collide_get_distinct_condition_labels():
    # SCARCE names the composition in base_condition by short model names, which drop the
    # provider: openai/gpt-4o and azure/gpt-4o both read "gpt-4o"; the seats settings are
    # skipped as "already in the base condition", yet they differ
    base = "fifo_ballots_mem-cross,seats=[w0=gpt-4o, others=fifo]"
    a = {"seats": {"w0": {"negotiator": {"model": "openai/gpt-4o"}}}}
    b = {"seats": {"w0": {"negotiator": {"model": "azure/gpt-4o"}}}}
    df = pl.DataFrame({"base_condition": [base, base], "settings": [settings_json(a), settings_json(b)],
                       "condition": [None, None]})
    out = label_conditions(df, skip=("seats",))
    labels = out["condition"].to_list()
    assert len(set(labels)) == 2, labels
    assert any("openai/gpt-4o" in x for x in labels) and any("azure/gpt-4o" in x for x in labels), labels


def _labels_by_model(rows: list[tuple[str, dict]]) -> dict[tuple[str, str], str]:
    df = pl.DataFrame({"base_condition": ["kcpr"] * len(rows), "model": [m for m, _ in rows],
                       "settings": [settings_json(s) for _, s in rows], "condition": [None] * len(rows)})
    out = label_conditions(df)
    return {(m, s): c for m, s, c in out.select("model", "settings", "condition").rows()}


def test_a_mixed_run_and_a_uniform_run_of_one_of_its_models_get_two_labels():
    uniform = {"model": "x"}
    mixed = {"model": "x", "seats": {"a0": {"model": "m1"}}, "composition": "a0=m1, others=x"}
    labels = _labels_by_model([("x", uniform), ("x", mixed), ("m1", mixed)])
    assert labels[("x", settings_json(uniform))] != labels[("x", settings_json(mixed))], labels


def test_models_whose_recorded_settings_differ_keep_one_label():
    # a scripted model records no sampling settings: no other condition (tables group by
    # model and condition), so the label stays the base condition for both
    labels = _labels_by_model([("scripted/greedy", {"condition": "kcpr"}),
                               ("embedded/smollm2", {"condition": "kcpr", "llm.temperature": 0.7})])
    assert set(labels.values()) == {"kcpr"}, labels
