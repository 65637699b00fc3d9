"""Ratings and the population game of a cross-play grid: Bradley-Terry from invasion
comparisons (recovery, closed form, intervals only from the validated count, no
finite rating when one model never loses), alpha-rank against the paper's closed
forms, the replicator dynamics' rest points and their stability, and loud refusals of
pooled conditions, missing cells, NaN payoffs and unbalanced grids."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis import population_game as pg
from scarce_lab.analysis import ratings as rt

REPO = Path(__file__).resolve().parents[2]


def _runs(rows) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"condition": pl.String, "focal_model": pl.String, "background_model": pl.String,
                                      "simulation": pl.Int64, "focal_payoff": pl.Float64}, orient="row")


def _grid(payoff, sims, cond="c1") -> pl.DataFrame:
    """A full grid: ``payoff(f, b, s)`` for every ordered pair of models and simulation."""
    models = sorted({f for f, _ in payoff})
    return _runs([(cond, f, b, s, payoff[(f, b)][s]) for f in models for b in models for s in range(sims)])


def _gumbel_grid(strengths: dict[str, float], sims: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return _runs([("c1", f, b, s, strengths[f] + rng.gumbel()) for f in strengths for b in strengths
                  for s in range(sims)])


def test_bradley_terry_recovers_known_strengths_and_covers_them():
    truth = {"m1": 1.1, "m2": 0.3, "m3": -0.2, "m4": -1.2}
    table = rt.bradley_terry(_gumbel_grid(truth, 100, seed=7)).sort("model")
    centre = np.mean(list(truth.values()))
    for r in table.iter_rows(named=True):
        want = truth[r["model"]] - centre
        assert abs(r["rating"] - want) < 0.25, (r["model"], r["rating"], want)
        assert r["ci_low"] < r["rating"] < r["ci_high"] and r["simulations"] == 100
    assert table["rating"].sum() == pytest.approx(0.0, abs=1e-9)  # centred
    assert table["elo"].to_list() == pytest.approx([rt.ELO_PER_LOGIT * v for v in table["rating"]])


def test_two_members_give_the_closed_form_log_odds():
    # x beats y in 8 of 10 invasion comparisons (5 simulations x 2 directions): r_x - r_y = log(8/2)
    wins_x_over_y = [1, 1, 1, 0, 1]   # x over y's background beats y's self-play
    wins_y_over_x = [0, 0, 1, 0, 0]   # y over x's background beats x's self-play
    rows = []
    for s in range(5):
        rows += [("c1", "x", "x", s, 5.0), ("c1", "y", "y", s, 5.0),
                 ("c1", "x", "y", s, 6.0 if wins_x_over_y[s] else 4.0),
                 ("c1", "y", "x", s, 6.0 if wins_y_over_x[s] else 4.0)]
    t = {r["model"]: r for r in rt.bradley_terry(_runs(rows)).iter_rows(named=True)}
    assert t["x"]["rating"] - t["y"]["rating"] == pytest.approx(math.log(8 / 2), rel=1e-6)
    assert t["x"]["wins"] == 8 and t["x"]["comparisons"] == 10


def test_ties_count_half_and_intervals_are_absent_below_the_validated_count():
    sims = rt.MIN_SIMS_INTERVAL - 1
    pay = {("p", "p"): [1.0] * sims, ("q", "q"): [1.0] * sims, ("p", "q"): [2.0, 1.0][:sims],
           ("q", "p"): [0.0, 1.0][:sims]}
    t = {r["model"]: r for r in rt.bradley_terry(_grid(pay, sims)).iter_rows(named=True)}
    assert t["p"]["ties"] == 2 and t["p"]["wins"] == 3.0  # a win, a tie, a tie, a win (its rival's loss)
    assert t["p"]["rating"] is not None and t["p"]["ci_low"] is None
    assert f"from {rt.MIN_SIMS_INTERVAL} simulations" in t["p"]["ci_note"]


def test_a_model_that_never_loses_gets_no_finite_rating():
    pay = {("a", "a"): [1.0, 1.0, 1.0], ("b", "b"): [1.0, 2.0, 1.0], ("c", "c"): [3.0, 3.0, 2.0],
           ("a", "b"): [9.0, 9.0, 9.0], ("b", "a"): [0.0, 0.0, 0.0], ("a", "c"): [9.0, 9.0, 9.0],
           ("c", "a"): [0.0, 0.0, 0.0], ("b", "c"): [4.0, 1.0, 1.0], ("c", "b"): [0.0, 3.0, 0.0]}
    t = rt.bradley_terry(_grid(pay, 3))
    assert t["rating"].null_count() == 3
    assert "strongly connected" in t["ci_note"][0] and ": a never lose against b, c" in t["ci_note"][0]


def test_ratings_refuse_pooled_conditions_and_fit_each_condition_alone():
    both = pl.concat([_gumbel_grid({"u": 0.5, "v": -0.5}, 4, seed=1),
                      _gumbel_grid({"u": 0.5, "v": -0.5}, 4, seed=2).with_columns(condition=pl.lit("c2"))])
    with pytest.raises(rt.RatingError, match="never pooled"):
        rt.bradley_terry(both, by=())
    with pytest.raises(rt.RatingError, match="never pooled"):
        pg.population_games(both, by=())
    assert sorted(rt.bradley_terry(both)["condition"].unique()) == ["c1", "c2"]


def test_hostile_inputs_fail_naming_the_cell():
    grid = _gumbel_grid({"u": 0.5, "v": -0.5, "w": 0.0}, 3, seed=3)
    nan = grid.with_columns(pl.when((pl.col("focal_model") == "v") & (pl.col("background_model") == "w")
                                    & (pl.col("simulation") == 2)).then(float("nan"))
                            .otherwise(pl.col("focal_payoff")).alias("focal_payoff"))
    with pytest.raises(rt.RatingError, match=r"focal v over background w \(condition=c1\), simulation 2: .*nan"):
        rt.bradley_terry(nan)
    no_self = grid.filter(~((pl.col("focal_model") == "w") & (pl.col("background_model") == "w")))
    with pytest.raises(rt.RatingError, match="focal w over background w .*self-play"):
        rt.bradley_terry(no_self)
    with pytest.raises(rt.RatingError, match="focal w over background w .*has no run"):
        pg.population_games(no_self)
    one_run = grid.filter(~((pl.col("focal_model") == "u") & (pl.col("background_model") == "v")
                            & (pl.col("simulation") > 0)))
    with pytest.raises(rt.RatingError, match=r"focal u over background v .*simulations \[0\], the grid \[0, 1, 2\]"):
        pg.population_games(one_run)
    with pytest.raises(rt.RatingError, match="focal u over background u .*2 runs of simulation 0"):
        rt.bradley_terry(pl.concat([grid, grid.filter((pl.col("focal_model") == "u")
                                                      & (pl.col("background_model") == "u")
                                                      & (pl.col("simulation") == 0))]))
    with pytest.raises(rt.RatingError, match="lack column"):
        rt.bradley_terry(grid.drop("simulation"))


def test_a_condition_with_one_model_is_left_out_and_said():
    lone = _runs([("solo", "z", "z", s, 1.0 + s) for s in range(3)])
    pair = _gumbel_grid({"u": 0.5, "v": -0.5}, 3, seed=5)
    for result in (rt.ratings_result, pg.population_game_result):
        only = result(lone, payoff="points", name="t")
        assert only.frame is None and only.reading.startswith("No table: t: every condition holds one model")
        both = result(pl.concat([lone, pair]), payoff="points", name="t")
        assert set(both.frame["condition"]) == {"c1"} and "Left out (one model" in both.reading
        assert "condition=solo" in both.reading
    with pytest.raises(rt.RatingError, match=r"\(condition=solo\) holds one model \(z\)"):
        pg.population_games(lone)


# -- alpha-rank (Omidshafiei et al. 2019, single population) ------------------------------
def test_alpha_rank_of_rock_paper_scissors_is_uniform():
    rps = np.array([[0.0, -2.0, 2.0], [2.0, 0.0, -2.0], [-2.0, 2.0, 0.0]])
    for alpha in (0.5, 5.0, 50.0):
        assert pg.alpha_rank(rps, alpha=alpha, population_size=20) == pytest.approx([1 / 3] * 3, abs=1e-9)


def test_alpha_rank_puts_the_mass_on_a_dominant_strategy():
    # a prisoner's dilemma (row payoffs; defect, the second strategy, dominates)
    pd = np.array([[3.0, 0.0], [5.0, 1.0]])
    assert pg.alpha_rank(pd, alpha=100.0, population_size=30)[1] > 0.999
    assert pg.alpha_rank(pd, alpha=0.0)[1] == pytest.approx(0.5)  # no selection: neutral drift both ways


def test_fixation_and_mass_match_the_closed_forms():
    # a constant fitness advantage d of strategy 0 (payoffs in 0..1: the range scaling is the identity):
    # rho = (1 - exp(-alpha d)) / (1 - exp(-m alpha d)) (Traulsen et al. 2006, the paper's Fermi process)
    game = np.array([[1.0, 1.0], [0.0, 0.0]])
    alpha, m = 0.3, 12
    d = 1.0
    rho_in = pg.fixation_probability(game, resident=1, mutant=0, alpha=alpha, population_size=m)
    assert rho_in == pytest.approx((1 - math.exp(-alpha * d)) / (1 - math.exp(-m * alpha * d)))
    rho_out = pg.fixation_probability(game, resident=0, mutant=1, alpha=alpha, population_size=m)
    assert rho_out == pytest.approx((1 - math.exp(alpha * d)) / (1 - math.exp(m * alpha * d)))
    # two strategies: pi_0 / pi_1 = rho(1 -> 0) / rho(0 -> 1)
    mass = pg.alpha_rank(game, alpha=alpha, population_size=m)
    assert mass[0] / mass[1] == pytest.approx(rho_in / rho_out)
    assert pg.fixation_probability(np.ones((2, 2)), 0, 1, alpha=5.0, population_size=m) == pytest.approx(1 / m)


def test_alpha_rank_refuses_bad_matrices():
    with pytest.raises(rt.RatingError, match=r"payoff\[1, 0\] is nan"):
        pg.alpha_rank(np.array([[1.0, 2.0], [np.nan, 0.0]]))
    with pytest.raises(rt.RatingError, match="square"):
        pg.alpha_rank(np.ones((2, 3)))


# -- replicator dynamics ------------------------------------------------------------------
def _points(game) -> dict[tuple, dict]:
    return {q["support"]: q for q in pg.rest_points(np.asarray(game, float))}


def test_hawk_dove_has_a_stable_mixed_rest_point_at_v_over_c():
    v, c = 2.0, 5.0
    hd = [[(v - c) / 2, v], [0.0, v / 2]]  # hawk, dove
    pts = _points(hd)
    assert set(pts) == {(0,), (1,), (0, 1)}
    assert pts[(0, 1)]["x"] == pytest.approx([v / c, 1 - v / c]) and pts[(0, 1)]["stability"] == "stable"
    assert pts[(0,)]["stability"] == pts[(1,)]["stability"] == "unstable"
    assert pts[(0, 1)]["max_real"] < 0


def test_coordination_has_two_stable_pure_points_and_rps_is_undecided():
    pts = _points([[3.0, 0.0], [1.0, 2.0]])
    assert pts[(0,)]["stability"] == pts[(1,)]["stability"] == "stable"
    assert pts[(0, 1)]["stability"] == "unstable" and pts[(0, 1)]["x"] == pytest.approx([0.5, 0.5])
    rps = _points([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    assert rps[(0, 1, 2)]["stability"] == "undecided"  # a centre: purely imaginary eigenvalues
    assert _points(np.ones((2, 2)))[(0, 1)]["stability"] == "degenerate"  # every mix is a rest point


def test_population_game_bootstrap_shares_and_one_simulation():
    # coordination-like grid with noise: both pure points stable in (nearly) every resample
    rng = np.random.default_rng(4)
    base = {("h", "h"): 3.0, ("h", "k"): 0.0, ("k", "h"): 1.0, ("k", "k"): 2.0}
    runs = _runs([("c1", f, b, s, base[(f, b)] + 0.1 * rng.normal()) for (f, b) in base for s in range(6)])
    g = pg.population_games(runs, n_boot=60)[0]
    ranks, points = pg.population_game_frames([g], ["condition"])
    assert ranks["top_share"].sum() == pytest.approx(1.0)
    stable = points.filter(pl.col("stability") == "stable")
    assert stable.height == 2 and (stable["stable_share"] > 0.9).all()
    one = pg.population_games(runs.filter(pl.col("simulation") == 0))[0]
    assert one.top_share is None and one.point_shares is None


# -- the shipped grids, through the faces ------------------------------------------------
def test_shipped_sovsim_ratings_have_intervals_and_the_embedded_grid_is_refused_by_cell():
    ds = sl.sovsim.load(REPO / "data" / "crossplay" / "sovsim" / "scripted")
    t = sl.sovsim.crossplay_ratings(ds, focal="leader").frame
    assert sorted(t["condition"].unique()) == ["bcpr", "kcpr"] and t.height == 6
    assert t["ci_low"].null_count() == 0 and (t["simulations"] == 5).all()
    kcpr = t.filter(pl.col("condition") == "kcpr").sort("rating", descending=True)
    assert kcpr["model"][0] == "scripted/sustainable" and kcpr["ci_low"][0] > 0
    emb = sl.sovsim.load(REPO / "data" / "crossplay" / "sovsim" / "embedded")
    with pytest.raises(rt.RatingError, match="self-play"):
        sl.sovsim.crossplay_ratings(emb, focal="leader")


def test_shipped_scarce_population_game_through_the_face():
    ds = sl.scarce.load(REPO / "data" / "crossplay" / "scarce" / "scripted")
    found = sl.scarce.crossplay_ratings(ds, focal="w0", method="population-game", n_boot=40)
    assert found.frame["mass"].sum() == pytest.approx(1.0) and found.frame["simulations"][0] == 5
    assert "scarce_crossplay_population_game_rest_points" in found.extra
    assert found.convention["parameters"]["alpha"] == 10.0


def test_one_name_two_readings_and_a_setting_of_the_other_reading_is_refused():
    ds = sl.load(REPO / "data" / "crossplay" / "scarce" / "scripted")
    with pytest.raises(ValueError, match=r"method='bradley-terry' takes no alpha, n_boot"):
        sl.scarce.crossplay_ratings(ds, focal="w0", alpha=3.0, n_boot=10)
    with pytest.raises(ValueError, match=r"method 'elo': one of bradley-terry, population-game"):
        sl.scarce.crossplay_ratings(ds, focal="w0", method="elo")
