"""Agreement statistics against values computed by hand (and sklearn/statsmodels)."""

import math

import numpy as np
import pytest

from scarce_lab.judge.agreement import (
    bootstrap_units,
    fleiss_kappa,
    krippendorff_alpha,
    label_agreement,
    rating_matrix,
    score_against_gold,
)

NAN = float("nan")


def test_krippendorff_alpha_by_hand():
    # Coincidences: o00=4, o11=2, o01=o10=1; n0=5, n1=3, n=8.
    # Do = 2/8, De = 2*5*3/(8*7) = 30/56, alpha = 1 - Do/De = 8/15.
    m = np.array([[1, 1], [0, 0], [1, 0], [0, 0]], dtype=float)
    assert krippendorff_alpha(m) == pytest.approx(8 / 15)


def test_krippendorff_alpha_with_missing_and_degenerate():
    # Unit 2 has one rating (not pairable); the others agree: alpha = 1.
    m = np.array([[1, 1], [0, NAN], [0, 0]])
    assert krippendorff_alpha(m) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha(np.zeros((3, 2))))  # no variation


def test_fleiss_kappa_by_hand():
    # Per-unit agreement P_i = 1, 1, 1/3, 1/3 -> P = 2/3; p1 = p0 = 1/2 -> Pe = 1/2.
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3.
    m = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
    assert fleiss_kappa(m) == pytest.approx(1 / 3)
    # A unit with a missing rating is left out of Fleiss' kappa.
    m2 = np.vstack([m, [1, NAN, 0]])
    assert fleiss_kappa(m2) == pytest.approx(1 / 3)
    assert math.isnan(fleiss_kappa(np.ones((4, 3))))


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, 60)
    m = np.column_stack([truth, truth, np.where(rng.random(60) < 0.2, 1 - truth, truth)]).astype(
        float
    )
    lo, hi = bootstrap_units(m, krippendorff_alpha, n_boot=200, seed=3)
    assert (lo, hi) == bootstrap_units(m, krippendorff_alpha, n_boot=200, seed=3)
    assert lo <= krippendorff_alpha(m) <= hi and lo < hi


def test_rating_matrix_and_label_agreement_table():
    answers = {
        "j1": {"u1": ["a"], "u2": [], "u3": ["a", "b"], "u4": []},
        "j2": {"u1": ["a"], "u2": [], "u3": ["b"], "u4": None},
    }
    m = rating_matrix(answers, "a", ["u1", "u2", "u3", "u4"])
    assert m[:3].tolist() == [[1, 1], [0, 0], [1, 0]] and math.isnan(m[3, 1])
    t = label_agreement(answers, ["a", "b"], ["u1", "u2", "u3", "u4"], n_boot=50)
    assert t["label"].to_list() == ["a", "b", "(pooled)"]
    row_a = t.row(0, named=True)
    assert row_a["n_units"] == 4 and row_a["n_complete"] == 3
    assert row_a["prevalence"] == pytest.approx(3 / 7)
    # label a on the 3 complete units: [[1,1],[0,0],[1,0]] -> o00=2, o11=2, o01=o10=1,
    # n=6, De = 2*3*3/(6*5) = 0.6, Do = 2/6, alpha = 1 - (1/3)/0.6 = 4/9.
    assert row_a["alpha"] == pytest.approx(4 / 9)


def test_scores_against_gold_by_hand():
    gold = [["a"], ["a", "b"], ["b"], []]
    pred = [["a"], ["a"], None, ["b"]]
    per_label, s = score_against_gold(gold, pred, ["a", "b"])
    a, b = per_label.rows(named=True)
    assert (a["precision"], a["recall"], a["f1"], a["cohen_kappa"]) == (1.0, 1.0, 1.0, 1.0)
    assert (b["support"], b["predicted"], b["precision"], b["recall"], b["f1"]) == (
        2,
        1,
        0.0,
        0.0,
        0.0,
    )
    assert b["cohen_kappa"] == pytest.approx(-0.5)  # po = 1/4, pe = 1/2
    assert s["micro_precision"] == pytest.approx(2 / 3)
    assert s["micro_recall"] == pytest.approx(1 / 2)
    assert s["micro_f1"] == pytest.approx(4 / 7)
    assert s["macro_f1"] == pytest.approx(0.5)
    assert s["kappa_pooled"] == pytest.approx(0.25)  # po = 5/8, pe = 1/2
    assert s["exact_match"] == pytest.approx(0.25)
    assert s["n_no_answer"] == 1 and s["n_units"] == 4


def test_scores_match_sklearn_reference():
    from sklearn.metrics import cohen_kappa_score, f1_score

    rng = np.random.default_rng(0)
    labels = ["x", "y", "z"]
    gold = [[lab for lab in labels if rng.random() < 0.4] for _ in range(40)]
    pred = [[lab for lab in labels if rng.random() < 0.4] for _ in range(40)]
    per_label, s = score_against_gold(gold, pred, labels)
    yt = np.array([[lab in g for lab in labels] for g in gold], dtype=int)
    yp = np.array([[lab in p for lab in labels] for p in pred], dtype=int)
    assert s["micro_f1"] == pytest.approx(f1_score(yt, yp, average="micro"))
    assert s["macro_f1_all"] == pytest.approx(f1_score(yt, yp, average="macro"))
    for i, row in enumerate(per_label.iter_rows(named=True)):
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(yt[:, i], yp[:, i]))


def test_score_length_mismatch():
    with pytest.raises(ValueError, match="gold has 1 units"):
        score_against_gold([["a"]], [], ["a"])


def test_closed_forms_equal_the_packages_on_random_matrices():
    from scarce_lab.judge.agreement import _alpha_counts, _counts, _fleiss_counts

    rng = np.random.default_rng(0)
    for _ in range(100):
        m = rng.integers(0, 2, (int(rng.integers(2, 15)), int(rng.integers(2, 5)))).astype(float)
        m[rng.random(m.shape) < 0.15] = np.nan
        ones, cnt = _counts(m)
        for fast, ref in (
            (float(_alpha_counts(ones, cnt)), krippendorff_alpha(m)),
            (float(_fleiss_counts(ones, cnt, m.shape[1])), fleiss_kappa(m)),
        ):
            assert (math.isnan(fast) and math.isnan(ref)) or fast == pytest.approx(ref, abs=1e-9)


def test_label_agreement_cis_equal_the_generic_bootstrap():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, 40)
    m = np.column_stack([truth, truth, np.where(rng.random(40) < 0.3, 1 - truth, truth)]).astype(
        float
    )
    m[3, 1] = NAN
    units = [f"u{r}" for r in range(40)]
    answers = {
        f"j{c}": {
            u: None if np.isnan(m[r, c]) else (["x"] if m[r, c] else [])
            for r, u in enumerate(units)
        }
        for c in range(3)
    }
    row = label_agreement(answers, ["x"], units, n_boot=300, seed=4).row(0, named=True)
    assert (row["alpha_lo"], row["alpha_hi"]) == pytest.approx(
        bootstrap_units(m, krippendorff_alpha, n_boot=300, seed=4)
    )
    assert (row["fleiss_lo"], row["fleiss_hi"]) == pytest.approx(
        bootstrap_units(m, fleiss_kappa, n_boot=300, seed=4)
    )
    assert row["alpha"] == pytest.approx(krippendorff_alpha(m))
