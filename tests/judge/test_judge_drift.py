"""Language-drift measures against hand-computed values."""

import math

import polars as pl
import pytest

from scarce_lab.judge.drift import (
    bow_cosine,
    drift_table,
    new_word_share,
    tokenize,
    trigram_repetition,
)


def test_primitives_by_hand():
    assert tokenize("I'll bid 5, OK?") == ["i'll", "bid", "5", "ok"]
    # counts (a2, b1) . (a1, c1) = 2; |.| = sqrt(5), sqrt(2)
    assert bow_cosine(["a", "a", "b"], ["a", "c"]) == pytest.approx(2 / math.sqrt(10))
    assert math.isnan(bow_cosine([], ["a"]))
    # trigrams of a b c a b c: abc bca cab abc -> 4 occurrences, 3 distinct
    assert trigram_repetition(list("abcabc")) == pytest.approx(1 / 4)
    assert math.isnan(trigram_repetition(["a", "b"]))
    assert new_word_share(["a", "x", "x"], {"a", "b"}) == pytest.approx(1 / 2)


def test_drift_table_per_run_and_stage():
    df = pl.DataFrame(
        {
            "run_id": ["r", "r", "r", "s"],
            "round": [1, 1, 2, 1],
            "text": ["a b c a b c", "d", "a b x", "q"],
        }
    )
    t = drift_table(df)
    assert t.select("run_id", "stage").rows() == [("r", 1), ("r", 2), ("s", 1)]
    r1, r2, s1 = t.rows(named=True)
    # stage 1 = "a b c a b c d": trigrams abc bca cab abc bcd -> 1 repeat of 5
    assert r1["n_tokens"] == 7 and r1["trigram_repetition"] == pytest.approx(0.2)
    assert r1["cosine_prev"] is None and r1["new_word_share"] is None
    # (a2 b2 c2 d1) . (a1 b1 x1) = 4; norms sqrt(13), sqrt(3)
    assert r2["cosine_prev"] == pytest.approx(4 / math.sqrt(39))
    assert r2["new_word_share"] == pytest.approx(1 / 3)  # x is new among {a, b, x}
    assert s1["trigram_repetition"] is None
    with pytest.raises(ValueError, match="missing columns"):
        drift_table(df.drop("text"))
