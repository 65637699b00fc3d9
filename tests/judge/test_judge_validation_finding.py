"""The judge validation table (``sl.scarce.judge_validation``): an undefined precision or
recall (0/0) reads n/a, is null in the saved table and never pulls the macro F1 down."""

from __future__ import annotations

import json

import pytest

import scarce_lab as sl


def _report(tmp_path, per_label, macro_f1=0.0):
    rep = {"taxonomy": "casino", "n_units": 4, "note": "test panel",
           "scores": {"panel": {"summary": {"micro_f1": 0.5, "macro_f1": macro_f1, "kappa_macro": 0.1,
                                            "exact_match": 0.25, "n_no_answer": 0},
                                "per_label": per_label}}}
    path = tmp_path / "validation.json"
    path.write_text(json.dumps(rep))
    return path


def _row(label, support, predicted, p, r, f, k=0.0):
    return {"label": label, "support": support, "predicted": predicted, "precision": p, "recall": r, "f1": f,
            "cohen_kappa": k, "cohen_kappa_reason": None}


def test_undefined_precision_and_recall_read_na(tmp_path):
    # as the shipped reports stored them: 0.0 where scikit-learn's zero_division=0 filled a 0/0
    path = _report(tmp_path, [_row("small-talk", 4, 0, 0.0, 0.0, 0.0), _row("vouch-fair", 0, 6, 0.0, 0.0, 0.0),
                              _row("self-need", 1, 2, 0.5, 1.0, 2 / 3), _row("uv-part", 0, 0, 0.0, 0.0, 0.0, None)])
    f = sl.scarce.judge_validation(path)
    rows = {r["label"]: r for r in f.frame.iter_rows(named=True)}
    assert set(rows) == {"small-talk", "vouch-fair", "self-need"}
    assert rows["small-talk"]["precision"] is None and rows["small-talk"]["recall"] == 0.0
    assert rows["vouch-fair"]["recall"] is None and rows["vouch-fair"]["precision"] == 0.0
    shown = {line.split("|")[1].strip(): line for line in f.markdown().splitlines()[2:]}
    assert "n/a" in shown["small-talk"] and "n/a" in shown["vouch-fair"] and "n/a" not in shown["self-need"]
    # macro F1 over the three categories where F1 is defined, not the stored summary's value
    assert "macro F1 0.22 (over the 3 categories" in f.reading
    assert "macro_f1" in f.convention and "undefined" in f.convention


@pytest.mark.parametrize("report", ["data/scarce/labels/ground_truth/validation.json",
                                    "data/scarce/labels/casino_validation/validation.json"])
def test_shipped_reports_show_no_zero_for_undefined(report):
    f = sl.scarce.judge_validation(report)
    for r in f.frame.iter_rows(named=True):
        assert (r["precision"] is None) == (r["predicted"] == 0)
        assert (r["recall"] is None) == (r["support"] == 0)
