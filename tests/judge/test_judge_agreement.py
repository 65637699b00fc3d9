"""Agreement statistics against values computed by hand (and sklearn/statsmodels)."""

import math

import numpy as np
import polars as pl
import pytest

from scarce_lab.judge.agreement import (
    FEWER_THAN_2_RATERS,
    NO_COMPLETE_UNITS,
    NO_DEFINED_LABEL,
    NO_PAIRABLE_UNITS,
    NO_UNITS,
    SINGLE_CATEGORY,
    bootstrap_units,
    fleiss_kappa,
    krippendorff_alpha,
    label_agreement,
    rating_matrix,
)
from scarce_lab.judge.scores import score_against_gold

NAN = float("nan")


def test_krippendorff_alpha_by_hand():
    # Coincidences: o00=4, o11=2, o01=o10=1; n0=5, n1=3, n=8.
    # Do = 2/8, De = 2*5*3/(8*7) = 30/56, alpha = 1 - Do/De = 8/15.
    m = np.array([[1, 1], [0, 0], [1, 0], [0, 0]], dtype=float)
    a = krippendorff_alpha(m)
    assert a.value == pytest.approx(8 / 15) and a.reason is None and a.n_units == 4
    assert float(a) == a.value


def test_krippendorff_alpha_with_missing_and_degenerate():
    # Unit 2 has one rating (not pairable); the others agree: alpha = 1.
    m = np.array([[1, 1], [0, NAN], [0, 0]])
    assert krippendorff_alpha(m).value == pytest.approx(1.0)
    flat = krippendorff_alpha(np.zeros((3, 2)))  # no variation
    assert math.isnan(flat.value) and flat.reason == SINGLE_CATEGORY


def test_fleiss_kappa_by_hand():
    # Per-unit agreement P_i = 1, 1, 1/3, 1/3 -> P = 2/3; p1 = p0 = 1/2 -> Pe = 1/2.
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3.
    m = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
    assert fleiss_kappa(m).value == pytest.approx(1 / 3)
    # A unit with a missing rating is left out of Fleiss' kappa.
    m2 = np.vstack([m, [1, NAN, 0]])
    k2 = fleiss_kappa(m2)
    assert k2.value == pytest.approx(1 / 3) and k2.n_units == 4
    flat = fleiss_kappa(np.ones((4, 3)))
    assert math.isnan(flat.value) and flat.reason == SINGLE_CATEGORY


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, 60)
    m = np.column_stack([truth, truth, np.where(rng.random(60) < 0.2, 1 - truth, truth)]).astype(
        float
    )
    lo, hi = bootstrap_units(m, krippendorff_alpha, n_boot=200, seed=3)
    assert (lo, hi) == tuple(bootstrap_units(m, krippendorff_alpha, n_boot=200, seed=3))
    assert lo <= krippendorff_alpha(m).value <= hi and lo < hi


def test_rating_matrix_and_label_agreement_table():
    answers = {
        "j1": {"u1": ["a"], "u2": [], "u3": ["a", "b"], "u4": []},
        "j2": {"u1": ["a"], "u2": [], "u3": ["b"], "u4": None},
    }
    m = rating_matrix(answers, "a", ["u1", "u2", "u3", "u4"])
    assert m[:3].tolist() == [[1, 1], [0, 0], [1, 0]] and math.isnan(m[3, 1])
    t = label_agreement(answers, ["a", "b"], ["u1", "u2", "u3", "u4"], n_boot=50)
    assert t["label"].to_list() == ["a", "b", "(pooled)", "(macro)"]
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
            (float(_alpha_counts(ones, cnt)), krippendorff_alpha(m).value),
            (float(_fleiss_counts(ones, cnt, m.shape[1])), fleiss_kappa(m).value),
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
        tuple(bootstrap_units(m, krippendorff_alpha, n_boot=300, seed=4))
    )
    assert (row["fleiss_lo"], row["fleiss_hi"]) == pytest.approx(
        tuple(bootstrap_units(m, fleiss_kappa, n_boot=300, seed=4))
    )
    assert row["alpha"] == pytest.approx(krippendorff_alpha(m).value)


# -- kind 9: undefined values say why; macro average; more than two categories ---------
@pytest.mark.parametrize(
    "matrix, alpha_reason, fleiss_reason",
    [
        (np.empty((0, 3)), NO_UNITS, NO_UNITS),
        (np.array([[1.0], [0.0]]), FEWER_THAN_2_RATERS, FEWER_THAN_2_RATERS),
        (np.array([[1, NAN], [NAN, 0]]), NO_PAIRABLE_UNITS, NO_COMPLETE_UNITS),
        (np.array([[2, 2, 2], [2, 2, NAN]]), SINGLE_CATEGORY, SINGLE_CATEGORY),
    ],
)
def test_undefined_statistics_give_their_reason(matrix, alpha_reason, fleiss_reason):
    a, k = krippendorff_alpha(matrix), fleiss_kappa(matrix)
    assert math.isnan(a.value) and a.reason == alpha_reason and not a.defined
    assert math.isnan(k.value) and k.reason == fleiss_reason and not k.defined
    ci = bootstrap_units(np.asarray(matrix, dtype=float), fleiss_kappa, n_boot=20)
    assert math.isnan(ci.lo) and math.isnan(ci.hi) and ci.reason


def test_bad_matrices_are_errors():
    with pytest.raises(ValueError, match="matrix"):
        krippendorff_alpha(np.zeros(4))
    with pytest.raises(ValueError, match="infinite"):
        fleiss_kappa(np.array([[1.0, np.inf]]))


def test_fleiss_kappa_of_fleiss_1971_worked_example_five_categories():
    # The classic worked example (Fleiss 1971 as tabulated on Wikipedia's "Fleiss'
    # kappa" page): 10 subjects, 14 raters, 5 categories; kappa = 0.210.
    table = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    raw = np.array([np.repeat(np.arange(5), row) for row in table], dtype=float)
    assert fleiss_kappa(raw).value == pytest.approx(0.20993, abs=5e-5)


def test_krippendorff_alpha_of_krippendorff_2011_example_four_categories_missing():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C:
    # 4 observers, 12 units, values 1..5 with missing data; nominal alpha = 0.743.
    rows = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
    m = np.array(rows, dtype=float).T  # (units, observers)
    assert krippendorff_alpha(m).value == pytest.approx(0.743, abs=5e-4)


def test_fleiss_kappa_matches_statsmodels_on_random_multicategory_matrices():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    from scarce_lab.judge.agreement import _fleiss_table

    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(200):
        n_cat = int(rng.integers(3, 7))
        k = int(rng.integers(2, 6))
        m = rng.integers(0, n_cat, (int(rng.integers(2, 25)), k)).astype(float)
        holes = rng.random(m.shape) < 0.1
        m[holes] = np.nan
        complete = m[~np.isnan(m).any(axis=1)]
        ours = fleiss_kappa(m)
        if complete.shape[0] == 0 or np.unique(complete).size < 2:
            assert not ours.defined
            continue
        table, _ = aggregate_raters(complete.astype(int), n_cat=n_cat)
        ref = float(sm_fleiss(table, method="fleiss"))
        assert ours.value == pytest.approx(ref, abs=1e-12)
        # The closed form (used by the bootstrap) on the full table, NaN rows included.
        rated = ~np.isnan(m)
        counts = np.stack([((m == c) & rated).sum(axis=1) for c in range(n_cat)], axis=-1).astype(
            float
        )
        assert float(_fleiss_table(counts, k)) == pytest.approx(ref, abs=1e-12)
        checked += 1
    assert checked > 150


def test_macro_average_over_defined_labels_says_how_many():
    # Label "a" varies (alpha defined); "b" is never given (single category); "c" is
    # given by every judge on every unit (single category).
    units = [f"u{i}" for i in range(12)]
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 2, len(units))
    noisy = np.where(rng.random(len(units)) < 0.25, 1 - truth, truth)
    answers = {
        j: {u: (["a"] if col[i] else []) + ["c"] for i, u in enumerate(units)}
        for j, col in (("j1", truth), ("j2", truth), ("j3", noisy))
    }
    t = label_agreement(answers, ["a", "b", "c"], units, n_boot=200, seed=1, min_units=1)
    rows = {r["label"]: r for r in t.iter_rows(named=True)}
    assert rows["b"]["alpha_reason"] == SINGLE_CATEGORY and math.isnan(rows["b"]["alpha"])
    assert rows["c"]["fleiss_reason"] == SINGLE_CATEGORY
    assert rows["a"]["alpha_reason"] is None and rows["a"]["fleiss_reason"] is None
    macro = rows["(macro)"]
    assert macro["n_labels"] == 3 and macro["alpha_labels_defined"] == 1
    assert macro["fleiss_labels_defined"] == 1
    assert macro["alpha"] == pytest.approx(rows["a"]["alpha"])
    assert macro["fleiss_kappa"] == pytest.approx(rows["a"]["fleiss_kappa"])
    assert macro["alpha_lo"] <= macro["alpha"] <= macro["alpha_hi"]
    assert rows["a"]["alpha_labels_defined"] is None  # only the macro row counts labels
    # Nothing defined at all: the macro value is NaN and says so.
    flat = {j: {u: [] for u in units} for j in ("j1", "j2")}
    m2 = label_agreement(flat, ["a", "b"], units, n_boot=20).row(-1, named=True)
    assert math.isnan(m2["alpha"]) and m2["alpha_reason"] == NO_DEFINED_LABEL
    assert m2["alpha_labels_defined"] == 0
    one = label_agreement({"j1": answers["j1"]}, ["a"], units, n_boot=20).row(0, named=True)
    assert one["alpha_reason"] == FEWER_THAN_2_RATERS
    assert one["fleiss_reason"] == FEWER_THAN_2_RATERS


def test_macro_mean_of_two_defined_labels():
    units = [f"u{i}" for i in range(30)]
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, (30, 2))
    b = rng.integers(0, 2, (30, 2))
    answers = {
        f"j{c}": {
            u: [lab for lab, m in (("a", a), ("b", b)) if m[i, c]] for i, u in enumerate(units)
        }
        for c in range(2)
    }
    t = label_agreement(answers, ["a", "b"], units, n_boot=50)
    rows = {r["label"]: r for r in t.iter_rows(named=True)}
    want = (
        krippendorff_alpha(a.astype(float)).value + krippendorff_alpha(b.astype(float)).value
    ) / 2
    assert rows["(macro)"]["alpha"] == pytest.approx(want)
    assert rows["(macro)"]["alpha_labels_defined"] == 2


def test_score_summary_says_why_values_are_undefined():
    per_label, s = score_against_gold([[], []], [[], None], ["a", "b"])
    assert per_label["cohen_kappa_reason"].to_list() == [SINGLE_CATEGORY, SINGLE_CATEGORY]
    assert math.isnan(s["kappa_macro"]) and s["kappa_labels_defined"] == 0
    assert s["undefined"]["kappa_macro"] == NO_DEFINED_LABEL
    assert s["undefined"]["kappa_pooled"] == SINGLE_CATEGORY
    assert s["undefined"]["macro_f1"] == "no label with support or predictions"
    _, empty = score_against_gold([], [], ["a"])
    assert empty["undefined"]["micro_f1"] == NO_UNITS


def test_no_bootstrap_interval_from_too_few_units():
    """With fewer than MIN_UNITS_INTERVAL units the percentile bootstrap undercovers
    (benchmarks/bench_coverage.py): the value is given, the interval is not, with why."""
    from scarce_lab.judge.agreement import MIN_UNITS_INTERVAL

    rng = np.random.default_rng(3)
    for n, has_ci in ((12, False), (MIN_UNITS_INTERVAL, True)):
        units = [f"u{i}" for i in range(n)]
        truth = rng.integers(0, 2, n)
        noisy = np.where(rng.random(n) < 0.2, 1 - truth, truth)
        answers = {j: {u: (["a"] if col[i] else []) for i, u in enumerate(units)}
                   for j, col in (("j1", truth), ("j2", truth), ("j3", noisy))}
        row = label_agreement(answers, ["a"], units, n_boot=200, seed=1).row(0, named=True)
        assert not math.isnan(row["alpha"])
        assert (not math.isnan(row["alpha_lo"])) == has_ci
        assert (row["alpha_reason"] is None) == has_ci
        if not has_ci:
            assert row["alpha_reason"].startswith(f"interval: fewer than {MIN_UNITS_INTERVAL} units (12)")


def test_scores_undefined_precision_recall_are_nan_not_zero():
    # "a": supported, never predicted (precision 0/0); "b": predicted, no support (recall 0/0);
    # "c": neither (F1 0/0). None of them may read 0.00, and macro F1 is over a, b and d only.
    gold = [["a"], ["a", "d"], ["d"], []]
    pred = [[], ["d"], ["d", "b"], []]
    per_label, s = score_against_gold(gold, pred, ["a", "b", "c", "d"])
    a, b, c, d = per_label.rows(named=True)
    assert math.isnan(a["precision"]) and a["recall"] == 0.0 and a["f1"] == 0.0
    assert b["precision"] == 0.0 and math.isnan(b["recall"]) and b["f1"] == 0.0
    assert math.isnan(c["precision"]) and math.isnan(c["recall"]) and math.isnan(c["f1"])
    assert (d["precision"], d["recall"], d["f1"]) == (1.0, 1.0, 1.0)
    assert s["macro_f1"] == pytest.approx(1 / 3)


def test_the_pooled_row_gets_an_interval_by_its_units_not_its_items():
    """3 units x 21 labels are 63 pooled items from 3 units: no interval (a sheet of three
    units printed alpha [-0.059, 0.000]); 30 units of 2 labels (60 items) get one."""
    rng = np.random.default_rng(3)
    labels = [f"l{i}" for i in range(21)]
    few = [f"u{i}" for i in range(3)]
    answers = {j: {u: [lab for lab in labels if rng.random() < 0.3] for u in few} for j in ("p", "q")}
    pooled = label_agreement(answers, labels, few, n_boot=50).filter(pl.col("label") == "(pooled)").row(0, named=True)
    assert pooled["n_units"] == 63 and math.isnan(pooled["alpha_lo"]) and "fewer than 30 units (3)" in pooled["alpha_reason"]
    many = [f"u{i}" for i in range(30)]
    answers = {j: {u: [lab for lab in ("a", "b") if rng.random() < 0.5] for u in many} for j in ("p", "q")}
    pooled = label_agreement(answers, ["a", "b"], many, n_boot=50).filter(pl.col("label") == "(pooled)").row(0, named=True)
    assert not math.isnan(pooled["alpha_lo"])
