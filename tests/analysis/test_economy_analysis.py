"""Economy metrics on hand-built frames (no envs, no agents)."""

from __future__ import annotations

import polars as pl
import pytest

from scarce_lab.analysis.stats import mean_ci_cells as mean_ci
from scarce_lab.environments.economy.analysis.metrics import (
    ablation_table,
    bid_convergence,
    format_table,
    per_run_rates,
    solve_curve,
    specialisation,
    specialisation_index,
    wealth_gini,
)


def _episodes(run_id, seed, train, ev, condition="none"):
    rows = [{"run_id": run_id, "task": "blocksworld", "condition": condition, "model": "scripted/x",
             "seed": seed, "phase": "train", "episode": i, "solved": s} for i, s in enumerate(train)]
    rows += [{"run_id": run_id, "task": "blocksworld", "condition": condition, "model": "scripted/x",
              "seed": seed, "phase": "eval", "episode": i, "solved": s} for i, s in enumerate(ev)]
    return rows


def test_per_run_rates_and_ablation_table_hand_case():
    # 10 training episodes: first fifth = episodes 0-1, last fifth = episodes 8-9.
    r1 = _episodes("r1", 0, [0, 0, 0, 1, 0, 1, 1, 1, 1, 1], [1, 1, 0, 1])
    r2 = _episodes("r2", 1, [1, 0, 0, 0, 1, 1, 0, 1, 1, 0], [1, 0, 0, 0])
    df = pl.DataFrame(r1 + r2).with_columns(pl.col("solved").cast(pl.Boolean))
    pr = per_run_rates(df).sort("run_id")
    assert pr["first_fifth"].to_list() == [0.0, 0.5]
    assert pr["last_fifth"].to_list() == [1.0, 0.5]
    assert pr["eval"].to_list() == [0.75, 0.25]
    t = ablation_table(df)
    row = t.row(0, named=True)
    assert row["n_runs"] == 2 and row["first_fifth"] == pytest.approx(0.25)
    assert row["eval"] == pytest.approx(0.5)
    # t-interval with 2 runs: half-width = t(0.975, 1) * sd / sqrt(2) = 12.706 * 0.3536 / 1.414
    m, lo, hi = mean_ci([0.75, 0.25])
    assert hi - m == pytest.approx(12.7062 * 0.35355 / 1.41421, rel=1e-3)
    assert (row["eval_lo"], row["eval_hi"]) == (0.0, 1.0)  # clipped to [0, 1]
    assert format_table(t)["frozen eval"][0] == "0.50 [0.00, 1.00]"


def test_solve_curve_windows_per_run_then_over_runs():
    df = pl.DataFrame(_episodes("r1", 0, [0, 0, 1, 1], []) + _episodes("r2", 1, [0, 1, 1, 1], []))
    df = df.with_columns(pl.col("solved").cast(pl.Boolean))
    c = solve_curve(df, window=2)
    assert c["window_start"].to_list() == [0, 2]
    assert c["solve_rate"].to_list() == [0.25, 1.0]


def test_gini_hand_cases():
    assert wealth_gini([5, 5, 5, 5]) == pytest.approx(0.0)
    assert wealth_gini([0, 0, 0, 10]) == pytest.approx(0.75)
    assert wealth_gini([1, 3]) == pytest.approx(0.25)
    assert wealth_gini([-4, 0]) is None


def _wins():
    rows = [
        ("r1", "a0", "place", 6), ("r1", "a0", "dig", 2), ("r1", "a1", "unstack", 4), ("r1", "a1", "place", 2),
    ]
    return pl.DataFrame(
        [{"run_id": r, "task": "blocksworld", "condition": "none", "phase": "train", "round": 0,
          "agent": a, "step_kind": k, "wins": n} for r, a, k, n in rows]
    )


def test_specialisation_shares_and_index():
    s = specialisation(_wins())
    place = {r["agent"]: r["share_of_kind"] for r in s.filter(pl.col("step_kind") == "place").iter_rows(named=True)}
    assert place == {"a0": pytest.approx(0.75), "a1": pytest.approx(0.25)}
    a0 = s.filter((pl.col("agent") == "a0") & (pl.col("step_kind") == "place"))["share_of_agent"][0]
    assert a0 == pytest.approx(0.75)
    # index: (6 + 4) / (8 + 6) wins in each agent's main step kind
    assert specialisation_index(_wins())["specialisation"][0] == pytest.approx(10 / 14)


def test_bid_convergence_gap_hand_case():
    df = pl.DataFrame([
        {"run_id": "r1", "task": "blocksworld", "condition": "none", "phase": "train", "round": 0,
         "agent": "a0", "n_wins": 2, "paid": 10, "received": 4, "reward": 0, "realised": 4},
        {"run_id": "r1", "task": "blocksworld", "condition": "none", "phase": "train", "round": 1,
         "agent": "a1", "n_wins": 1, "paid": 5, "received": 0, "reward": 20, "realised": 20},
    ])
    b = bid_convergence(df, window=10).row(0, named=True)
    assert b["bid_per_win"] == pytest.approx(15 / 3)
    assert b["realised_per_win"] == pytest.approx(24 / 3)
    assert b["gap"] == pytest.approx((3 + 15) / 2)  # |10-4|/2 and |5-20|/1, averaged


def test_economy_metrics_refuse_to_pool_models_or_settings():
    """A table never pools runs of different conditions. The
    Economy groups by (task, condition); a group mixing models or settings is refused."""
    from scarce_lab.analysis.pooling import PoolingError

    a = pl.DataFrame(_episodes("r1", 0, [0, 1], [1])).with_columns(pl.lit('{"agents":12}').alias("settings"))
    b = pl.DataFrame(_episodes("r2", 1, [1, 1], [0])).with_columns(
        pl.lit('{"agents":12}').alias("settings"), pl.lit("embedded/smollm2").alias("model"))
    with pytest.raises(PoolingError, match="model: embedded/smollm2, scripted/x"):
        ablation_table(pl.concat([a, b]).with_columns(pl.col("solved").cast(pl.Boolean)))
    c = b.with_columns(pl.lit("scripted/x").alias("model"), pl.lit('{"agents":4}').alias("settings"))
    with pytest.raises(PoolingError, match="agents: 12, 4"):
        solve_curve(pl.concat([a, c]).with_columns(pl.col("solved").cast(pl.Boolean)))
    same = pl.concat([a, a.with_columns(pl.lit("r3").alias("run_id"))]).with_columns(pl.col("solved").cast(pl.Boolean))
    assert ablation_table(same)["n_runs"].to_list() == [2]


def test_chart_condition_names_keep_only_what_differs_and_stay_distinct():
    """Panel titles were full labels cut by the renderer to the same text
    ("full economy (agents=12, bid_sch..." twice)."""
    import polars as pl

    from scarce_lab.environments.economy.analysis.metrics import _readable_conditions

    conds = ["none,agents=12,bid_scheme=fixed,episodes=150", "none,agents=12,bid_scheme=holland,episodes=150",
             "no-auction,agents=12,bid_scheme=fixed,episodes=150", "baseline-full,agents=5,bid_scheme=fixed,episodes=10"]
    d, order = _readable_conditions(pl.DataFrame({"condition": conds}))
    assert order == ["full economy", "full economy (bid_scheme=holland)", "no auction",
                     "baseline full (agents=5, episodes=10)"]
    assert d["condition"].to_list() == [order[0], order[1], order[2], order[3]]


def _agent_episodes():
    # two runs, one window: r1's agents overpay and underpay by 4 credits per win (the means
    # of bid and value per win coincide), r2's by 2: the gap is 4 and 2, not 0
    rows = []
    for run, d in (("r1", 4), ("r2", 2)):
        rows += [{"run_id": run, "task": "blocksworld", "condition": "none", "phase": "train", "round": 0,
                  "agent": "a0", "n_wins": 1, "paid": 10, "realised": 10 - d},
                 {"run_id": run, "task": "blocksworld", "condition": "none", "phase": "train", "round": 1,
                  "agent": "a1", "n_wins": 1, "paid": 10, "realised": 10 + d}]
    return pl.DataFrame(rows)


def test_bid_chart_plots_the_gap_the_reading_gives_with_its_interval():
    """The chart drew bid and value per win (their means coincide: 10 and 10 here) while the
    reading gave the mean absolute gap (3), and said "(no interval)" though the frame has one."""
    import json

    from scarce_lab.environments.economy.analysis.metrics import bid_convergence_chart
    from scarce_lab.environments.economy.analysis.readings import bid_sentence

    conv = bid_convergence(_agent_episodes(), window=10)
    r = conv.row(0, named=True)
    assert (r["bid_per_win"], r["realised_per_win"], r["gap"]) == (10.0, 10.0, 3.0)
    assert r["gap_lo"] is not None and r["gap_lo"] < 3.0 < r["gap_hi"]
    spec = json.dumps(bid_convergence_chart(conv).to_dict())
    assert '"field": "gap"' in spec and '"field": "gap_lo"' in spec and '"field": "gap_hi"' in spec
    assert "bid_per_win" not in spec.split('"datasets"')[0] and "no interval" not in spec
    text = bid_sentence(conv)
    assert f"from 3.0 [{r['gap_lo']:.1f}, {r['gap_hi']:.1f}] to 3.0" in text and "95% t-intervals" in text
    one = bid_convergence(_agent_episodes().filter(pl.col("run_id") == "r1"), window=10)
    assert "one seed: no interval" in bid_sentence(one)


def test_ablation_sentence_says_why_one_seed_has_no_interval():
    """With one seed the reading pointed to "intervals in the table", which had none."""
    from scarce_lab.environments.economy.analysis.readings import ablation_sentence

    one = pl.DataFrame(_episodes("r1", 0, [0, 1, 1, 1, 1], [1])).with_columns(pl.col("solved").cast(pl.Boolean))
    text = ablation_sentence(ablation_table(one))
    assert "n = 1 seed per condition: no interval" in text and "intervals in the table" not in text
    two = pl.DataFrame(_episodes("r1", 0, [0, 1, 1, 1, 1], [1]) + _episodes("r2", 1, [0, 0, 1, 1, 0], [0]))
    assert "n = 2 seeds per condition; 95% intervals in the table" in ablation_sentence(
        ablation_table(two.with_columns(pl.col("solved").cast(pl.Boolean))))


def test_tables_show_readable_condition_names_with_the_full_labels_folded():
    """The ablation and specialisation tables showed raw labels ("none,agents=12,...")."""
    import scarce_lab as sl

    ds = sl.economy.load("data/economy/blocksworld")
    for f in (sl.economy.table(ds), sl.economy.specialisation(ds)):
        shown = f.layout["condition"].to_list()
        assert "full economy" in shown and "no auction" in shown
        assert not any(c.startswith(("none,", "no-auction,")) for c in shown)
        head, _, key = f.markdown().partition("Full conditions behind the labels")
        assert "none,agents=12" not in head and "none,agents=12,bid_scheme=fixed,episodes=150" in key
        assert f.frame["condition"].str.starts_with("none,").any()  # the saved frame keeps the full label
