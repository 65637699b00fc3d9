"""Cross-play analysis: focal runs, the payoff matrix and the invader's advantage
with t intervals over runs, choices against uniform; refusals of runs that are not
focal/background compositions."""

from __future__ import annotations

import polars as pl
import pytest

from scarce_lab.analysis import crossplay as cx
from scarce_lab.analysis.stats import mean_ci


def _agents(rows):
    return pl.DataFrame(rows, schema={"run_id": pl.String, "condition": pl.String, "agent": pl.String,
                                      "role": pl.String, "model": pl.String, "payoff": pl.Float64}, orient="row")


def _game(run, king, workers, pays, cond="kcpr"):
    """One 4-agent game: a0..a2 workers, a3 king; ``pays`` per agent."""
    return [(run, cond, f"a{i}", "king" if i == 3 else "peasant", king if i == 3 else workers, pays[i])
            for i in range(4)]


DATA = _agents([
    *_game("r1", "greedy", "llm", [10, 12, 14, 60]),
    *_game("r2", "greedy", "llm", [8, 8, 8, 50]),
    *_game("r3", "greedy", "llm", [9, 9, 9, 40]),
    *_game("r4", "llm", "greedy", [30, 30, 30, 20]),
    *_game("r5", "llm", "llm", [20, 20, 20, 25]),
])


def test_focal_runs_pair_focal_and_residents_per_run():
    runs = cx.focal_runs(DATA, "king", by=["condition"])
    r1 = runs.row(0, named=True)
    assert (r1["focal_model"], r1["background_model"], r1["focal_agents"]) == ("greedy", "llm", "a3")
    assert r1["focal_payoff"] == 60 and r1["resident_payoff"] == 12 and r1["advantage"] == 48
    assert cx.focal_runs(DATA, ["a3"]).equals(cx.focal_runs(DATA, "king"))  # by id or by role


def test_matrix_uses_mean_ci_over_runs_and_says_why_a_cell_has_no_interval():
    m = cx.focal_payoff_matrix(cx.focal_runs(DATA, "king", by=["condition"]), by=["condition"])
    cell = m.filter((pl.col("focal_model") == "greedy") & (pl.col("background_model") == "llm")).row(0, named=True)
    mean, lo, hi = mean_ci([60, 50, 40])
    assert cell["n_runs"] == 3 and cell["mean"] == pytest.approx(mean)
    assert (cell["ci_low"], cell["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert cell["ci"] == cx.CI_METHOD and cell["ci_note"] == ""
    one = m.filter(pl.col("focal_model") == "llm").to_dicts()
    assert len(one) == 2 and all(c["n_runs"] == 1 and c["ci_low"] is None and "no interval" in c["ci_note"]
                                 for c in one)


def test_invader_advantage_is_the_paired_difference_and_leaves_self_play_out():
    adv = cx.invader_advantage(cx.focal_runs(DATA, "king"))
    assert set(zip(adv["focal_model"], adv["background_model"], strict=True)) == {("greedy", "llm"), ("llm", "greedy")}
    g = adv.filter(pl.col("focal_model") == "greedy").row(0, named=True)
    mean, lo, hi = mean_ci([60 - 12, 50 - 8, 40 - 9])
    assert (g["mean"], g["ci_low"], g["ci_high"]) == (pytest.approx(mean), pytest.approx(lo), pytest.approx(hi))
    with_self = cx.invader_advantage(cx.focal_runs(DATA, "king"), include_self_play=True)
    assert with_self.height == 3


def test_no_spread_gives_no_interval_with_the_reason():
    same = _agents([*_game("s1", "g", "l", [1, 1, 1, 5]), *_game("s2", "g", "l", [1, 1, 1, 5])])
    cell = cx.focal_payoff_matrix(cx.focal_runs(same, "king")).row(0, named=True)
    assert cell["ci_low"] is None and "spread" in cell["ci_note"]


def test_a_run_that_is_not_a_focal_background_composition_is_refused():
    mixed = _agents([("m1", "kcpr", "a0", "peasant", "x", 1.0), ("m1", "kcpr", "a1", "peasant", "y", 1.0),
                     ("m1", "kcpr", "a3", "king", "z", 1.0)])
    with pytest.raises(cx.CompositionError, match="m1: not a focal/background composition"):
        cx.focal_runs(mixed, "king")
    with pytest.raises(cx.CompositionError, match="no agent is focal seat"):
        cx.focal_runs(DATA, "boss")
    with pytest.raises(ValueError, match="lacks column"):
        cx.focal_runs(DATA.drop("payoff"), "king")


def test_choices_against_uniform_count_observed_and_expected():
    # two ballots of an 'a' voter whose two rivals are one 'a' and one 'b': uniform expects 1 pick of each
    rows = []
    for run, picked in (("r1", "a"), ("r2", "a")):
        for mm in ("a", "b"):
            rows.append({"run_id": run, "chooser_model": "a", "chosen_model": mm, "expected": 0.5,
                         "picked": int(picked == mm)})
    out = cx.choice_vs_uniform(pl.DataFrame(rows))
    aa = out.filter(pl.col("chosen_model") == "a").row(0, named=True)
    ab = out.filter(pl.col("chosen_model") == "b").row(0, named=True)
    assert (aa["choices"], aa["observed"], aa["expected"], aa["excess_share"]) == (2, 2, 1.0, 0.5)
    assert (ab["observed"], ab["excess_share"]) == (0, -0.5)
    assert aa["ci_low"] is None and "spread" in aa["ci_note"]  # both runs gave +0.5


def test_a_model_with_two_seat_settings_is_refused_not_pooled():
    from scarce_lab.analysis.pooling import PoolingError

    df = DATA.with_columns(seat_settings=pl.when((pl.col("run_id") == "r2") & (pl.col("model") == "llm"))
                           .then(pl.lit('{"temperature": 0.2}')).otherwise(pl.lit('{"temperature": 0.7}')))
    with pytest.raises(PoolingError, match="'llm' plays with different seat settings"):
        cx.focal_runs(df, "king")
    same = DATA.with_columns(seat_settings=pl.lit("{}"))
    assert cx.focal_runs(same, "king").height == 5


def _scores(pays_by_run):
    """SCARCE-like runs: a3 is the focal seat; every payoff is a score in 0..1."""
    return _agents([row for run, (k, w, pays) in pays_by_run.items() for row in _game(run, k, w, pays)])


def test_a_bounded_payoff_gets_the_bounded_interval_inside_its_bounds():
    from scarce_lab.analysis.stats import bounded_mean_ci

    runs = cx.focal_runs(_scores({"r1": ("f", "b", [0.0, 0.0, 0.0, 1.0]), "r2": ("f", "b", [1.0, 1.0, 1.0, 0.2])}), "king")
    t = cx.focal_payoff_matrix(runs).row(0, named=True)
    assert t["ci_low"] < 0 or t["ci_high"] > 1  # the t interval of (1.0, 0.2) leaves 0..1: why bounds are needed
    cell = cx.focal_payoff_matrix(runs, bounds=(0.0, 1.0)).row(0, named=True)
    mean, lo, hi = bounded_mean_ci([1.0, 0.2], 0.0, 1.0)
    assert (cell["mean"], cell["ci_low"], cell["ci_high"]) == (pytest.approx(mean), pytest.approx(lo), pytest.approx(hi))
    assert 0.0 <= cell["ci_low"] < cell["ci_high"] <= 1.0 and cell["ci"] == cx.BOUNDED_CI_METHOD
    adv = cx.invader_advantage(runs, bounds=(0.0, 1.0)).row(0, named=True)  # differences 1.0 and -0.8 lie in -1..1
    assert (adv["mean"], adv["ci_low"], adv["ci_high"]) == tuple(pytest.approx(v) for v in bounded_mean_ci([1.0, -0.8], -1, 1))
    with pytest.raises(ValueError, match="outside"):  # a payoff outside its stated bounds fails loudly
        cx.focal_payoff_matrix(cx.focal_runs(_scores({"r1": ("f", "b", [0, 0, 0, 1.5])}), "king"), bounds=(0.0, 1.0))


def test_charts_state_the_method_and_give_one_focal_model_room_for_its_title():
    runs = cx.focal_runs(_scores({"r1": ("f", "b", [0.0, 0.0, 0.0, 1.0]), "r2": ("f", "b", [1.0, 1.0, 1.0, 0.2])}), "king")
    res = cx.matrix_result(runs, payoff="score (0..1)", bounds=(0.0, 1.0))
    spec = res.chart.to_dict()

    def subtitle(sp):  # the caption, wrapped into lines by figures.caption
        return " ".join(sp["title"]["subtitle"])

    assert cx.BOUNDED_CI_METHOD in subtitle(spec) and cx.BOUNDED_CI_METHOD in res.reading
    assert spec["height"] >= cx.MIN_PANEL_PX  # one focal model x one background: not a 14 px strip
    assert cx.CI_METHOD in subtitle(cx.matrix_result(runs, payoff="score").chart.to_dict())
    adv = cx.advantage_result(runs, payoff="mean score (0..1)", bounds=(0.0, 1.0)).chart.to_dict()
    assert "mean score (-1..1)" in str(adv) and "(0..1)" not in str(adv)  # a difference of scores spans -1..1


def test_tables_say_why_a_cell_has_no_interval_and_label_their_columns():
    same = _agents([*_game("s1", "g", "l", [1, 1, 1, 5]), *_game("s2", "g", "l", [1, 1, 1, 5]),
                    *_game("s3", "l", "g", [1, 1, 1, 3])])
    text = cx.matrix_result(cx.focal_runs(same, "king"), payoff="gain").text
    assert "| focal | background g | background l |" in text  # sorted, named columns
    assert "5.00 (n=2, all runs agree: no interval)" in text and "3.00 (n=1, no interval)" in text
    rows = [{"run_id": r, "chooser_model": "x/a", "chosen_model": f"x/{m}", "expected": 0.5, "picked": int(m == "a")}
            for r in ("r1", "r2") for m in ("a", "b")]
    shown = cx.choices_result(pl.DataFrame(rows), what="first places", name="t").text
    assert "| chooser's model | chosen worker's model |" in shown and "| a | b | 2 | 0 | 1.0 |" in shown
    assert "nan" not in shown and cx.CI_METHOD not in shown  # the method is in the reading, not on every row


def test_alliance_reading_leads_with_the_intervals_that_exclude_0_not_an_extreme_that_spans_it():
    # chooser a picks a well above chance in every run (tight interval); chooser b picks a
    # more than chance on average but with a wide spread: the largest excess spans 0
    rows = []
    for i, (na, nb) in enumerate([(5, 8), (6, 8), (5, 2), (6, 8), (5, 8), (6, 2)]):  # of 8 choices, picks of a
        for k in range(8):
            rows += [{"run_id": f"r{i}", "chooser_model": "x/a", "chosen_model": "x/a", "expected": 0.5, "picked": int(k < na)},
                     {"run_id": f"r{i}", "chooser_model": "x/a", "chosen_model": "x/b", "expected": 0.5, "picked": int(k >= na)},
                     {"run_id": f"r{i}", "chooser_model": "x/b", "chosen_model": "x/a", "expected": 0.5, "picked": int(k < nb)},
                     {"run_id": f"r{i}", "chooser_model": "x/b", "chosen_model": "x/b", "expected": 0.5, "picked": int(k >= nb)}]
    res = cx.choices_result(pl.DataFrame(rows), what="first places", name="t")
    t = res.frame
    top = t.sort("excess_share", descending=True).row(0, named=True)
    assert (top["chooser_model"], top["chosen_model"]) == ("x/b", "x/a") and top["ci_low"] < 0 < top["ci_high"]
    assert "2 of 4 pairs have an interval that excludes 0: a -> a +0.19 [" in res.reading
    assert "; a -> b -0.19 [" in res.reading and "The largest excess, +0.25 (b -> a" in res.reading and "spans 0" in res.reading
    assert res.reading.index("excludes 0") < res.reading.index("largest excess")
