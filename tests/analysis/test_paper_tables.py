"""Paper-shaped SCARCE tables: wide layouts that never pool conditions, short
labels with the full settings one click away, LaTeX export, and sentences that answer a
table's question about a change (Table 5, Table 8)."""

from __future__ import annotations

import polars as pl
import pytest

from scarce_lab.analysis.layout import (
    blank_repeats,
    group_labels,
    setting_labels,
    settings_table,
    wide_table,
)
from scarce_lab.analysis.readings import describe_change


def _res(rows):
    return pl.DataFrame(rows, schema={"model": pl.String, "condition": pl.String, "stage": pl.Int64,
                                      "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64,
                                      "se": pl.Float64, "n": pl.Int64, "runs": pl.Int64}, orient="row")


def test_wide_table_is_the_paper_layout_and_refuses_to_pool():
    res = _res([("a", "c1", 1, 0.5, 0.4, 0.6, 0.05, 10, 3), ("a", "c1", 2, 0.7, None, None, None, 10, 1),
                ("b", "c1", 1, 0.1, 0.0, 0.2, 0.05, 10, 3)])
    w = wide_table(res, ["model"], "stage")
    assert w.columns == ["model", "1", "2"]
    assert w.row(0) == ("a", "0.50 [0.40, 0.60]", "0.70")
    assert w.row(1) == ("b", "0.10 [0.00, 0.20]", "")  # no row: empty cell, not 0
    assert w.row(2) == ("runs", "3", "1")
    pooled = pl.concat([res, _res([("a", "c2", 1, 0.9, None, None, None, 5, 1)])])
    with pytest.raises(ValueError, match="never pooled"):
        wide_table(pooled, ["model"], "stage")  # two conditions of model a in one cell


def test_labels_name_what_differs_and_the_full_condition_stays_available():
    res = _res([("m", "ballots_fixed_mem-cross,workers=2", 1, 0.1, None, None, None, 1, 1),
                ("m", "ballots_fixed_mem-none,workers=2", 1, 0.2, None, None, None, 1, 1),
                ("m", "ballots_fixed_mem-cross,workers=3", 1, 0.3, None, None, None, 1, 1)])
    res = res.with_columns(memory=pl.Series(["cross", "none", "cross"]))
    lab = setting_labels(res, "memory")
    assert lab["setting"].to_list() == ["m | reference", "m | reference", "m | workers=3"]
    w = wide_table(lab, ["setting"], "memory")  # memory horizons as columns, one row per other setting
    assert w.height == 3 and w.row(0)[1:] == ("0.10", "0.20")
    grouped = group_labels(res)
    key = settings_table(grouped)
    assert key.height == 3 and all(len(g) < len(c) for g, c in zip(key["group"], key["condition"], strict=True))


def test_blank_repeats_only_for_display():
    df = pl.DataFrame({"kind": ["relational", "relational", "other"], "category": ["a", "b", "c"]})
    assert blank_repeats(df, ["kind"])["kind"].to_list() == ["relational", "", "other"]


def test_describe_change_answers_the_question_with_holm_and_mechanical_rules():
    rows = [("m1", "c", s, v, v - 0.05, v + 0.05, 0.02, 20, 5) for s, v in ((1, 0.9), (2, 0.6), (3, 0.2))]
    rows += [("m2", "c", s, 0.5, 0.4, 0.6, 0.05, 20, 5) for s in (1, 3)]
    res = group_labels(_res(rows))
    text = describe_change(res, "stage", [1, 2, 3], ["group"], "Does it fall?")
    assert text.startswith("Does it fall? m1: 0.90")
    assert "falls by 0.70" in text and "does not change" in text
    assert "Holm-adjusted over 2 comparison(s); 1 change(s) at the 5% level" in text
    mech = res.filter(pl.col("model") == "m1").with_columns(by_construction=pl.lit(True))
    assert "not a finding" in describe_change(mech, "stage", [1, 2, 3], ["group"], "Q?")
    single = res.with_columns(se=pl.lit(None, pl.Float64), runs=pl.lit(1))
    assert "cannot say whether anything changes" in describe_change(single, "stage", [1, 2, 3], ["group"], "Q?")


def test_a_table_with_nothing_to_show_is_a_sentence_and_no_file(tmp_path):
    from scarce_lab.analysis.figures import save_table
    from scarce_lab.analysis.layout import NoTable, nothing_to_show

    zeros = _res([("m", "c", s, 0.0, 0.0, 0.0, 0.0, 10, 3) for s in (1, 2)])
    for stem in ("t2", "t2_values"):  # an earlier run's table of other data
        save_table(pl.DataFrame({"a": [1]}), stem, tmp_path, convention={"x": 1})
    empty = nothing_to_show(zeros, "t2", tmp_path)
    assert isinstance(empty, NoTable) and "every value is zero" in str(empty) and str(empty).startswith("*No table: t2")
    assert not list(tmp_path.iterdir())
    nan = zeros.with_columns(value=pl.lit(float("nan")))
    assert "no group has a value" in nothing_to_show(nan, "t").reason
    assert "no row" in nothing_to_show(zeros.head(0), "t").reason
    one = zeros.with_columns(value=pl.Series([0.0, 0.25]))
    assert nothing_to_show(one, "t") is None
    with pytest.raises(ValueError, match="no 'value' column"):
        nothing_to_show(zeros.drop("value"), "t")


def test_describe_change_calls_a_zig_zag_not_monotone_never_a_fall():
    rows = [("m", "c", s, v, None, None, None, 4, 1) for s, v in ((1, 350.0), (2, 111.0), (3, 350.0), (4, 182.0))]
    text = describe_change(group_labels(_res(rows)), "stage", [1, 2, 3, 4], ["group"], "Does it rise?")
    assert "not monotone (falls, rises, falls); last minus first -168.00" in text
    assert "falls by" not in text
    mono = [("m", "c", s, v, None, None, None, 4, 1) for s, v in ((1, 350.0), (2, 228.0), (3, 96.0), (4, 63.0))]
    assert "falls by 287.00" in describe_change(group_labels(_res(mono)), "stage", [1, 2, 3, 4], ["group"], "Q?")


def test_describe_contrast_answers_urgent_vs_not_per_model_with_the_test():
    from scarce_lab.analysis.readings import describe_contrast

    rows = []
    for m, gap in (("m1", 100.0), ("m2", 0.0)):
        for s in (1, 2):
            rows += [(m, "c", s, True, 50.0 + gap, 45.0 + gap, 55.0 + gap, 2.0, 10, 5),
                     (m, "c", s, False, 50.0, 45.0, 55.0, 2.0, 10, 5)]
    res = group_labels(pl.DataFrame(rows, schema={"model": pl.String, "condition": pl.String, "stage": pl.Int64,
                                                  "urgent": pl.Boolean, "value": pl.Float64, "lo": pl.Float64,
                                                  "hi": pl.Float64, "se": pl.Float64, "n": pl.Int64, "runs": pl.Int64},
                                   orient="row"))
    text = describe_contrast(res, "urgent", True, False, ["group"], "stage", "Do urgent workers bid more?",
                             labels=("urgent", "not urgent"))
    assert text.startswith("Do urgent workers bid more? m1: urgent higher at stage 1, 2 (stage 1: 150.00")
    assert "m2: no stage differs at the 5% level" in text
    assert "Holm-adjusted over 4 comparison(s); 2 differ at the 5% level" in text
