"""The readings and charts of notebook 01 (SovSim findings) say what the data hold:
numbers per model (never pooled across models), ties counted, sentences that fit the
conditions they name, and scales that show the values drawn."""

from __future__ import annotations

import json

import polars as pl

from scarce_lab.analysis import figures as F
from scarce_lab.environments.sovsim.analysis import charts


def _kings(model: str, misreports: list[list[int]], condition: str = "kcpr_m") -> list[dict]:
    """King-rounds of ``model``: one list of misreports per simulation (true pool 100)."""
    return [{"model": model, "condition": condition, "run_id": f"{model}-{condition}-{s}", "round": r + 1,
             "is_leader": True, "pool_before": 100, "announced_pool": 100 + m}
            for s, sim in enumerate(misreports) for r, m in enumerate(sim)]


def test_misreport_reading_is_per_model_never_pooled():
    """The reading pooled every model's king-rounds (scripted baselines with many honest
    rounds included) into one share and one mean: -6.9 units for a model whose own
    misreport is -51.2."""
    df = pl.DataFrame(_kings("llm/a", [[-60, -40], [-50]]) + _kings("scripted/honest", [[0] * 10] * 3))
    s = charts.misreport_sentence(df)
    # llm/a: per simulation -50 and -50 -> -50.0 (Table 1's mean of simulation means); 100% false
    assert "llm/a: false in 100% of 3 king-rounds (2 simulations), mean misreport -50.0 units" in s
    assert "scripted/honest: false in 0% of 30 king-rounds (3 simulations), mean misreport +0.0 units" in s
    assert "of 33" not in s and "-4.5" not in s  # the pooled share and mean (3 of 33 rounds, -150/33)


def test_misreport_reading_and_panels_keep_conditions_apart():
    df = pl.DataFrame(_kings("m", [[-10]]) + _kings("m", [[0], [0]], condition="kcpr_m,rounds=2"))
    s = charts.misreport_sentence(df)
    assert "m · kcpr_m: false in 100% of 1" in s and "m · kcpr_m,rounds=2: false in 0% of 2" in s


def test_misreport_histogram_gives_each_model_its_own_count_axis():
    """One shared count axis (up to 60 for the scripted baselines) flattened the
    embedded model's bars to a few pixels."""
    df = pl.DataFrame(_kings("llm/a", [[-60, -40]]) + _kings("scripted/honest", [[0] * 60]))
    spec = F.strict_spec(charts.misreport_chart(df))
    assert spec["resolve"]["scale"]["y"] == "independent"
    text = json.dumps(spec)
    assert "llm/a (2 rounds, 1 simulation)" in text and "scripted/honest (60 rounds, 1 simulation)" in text


def _survival(model_conditions: dict[str, dict[str, list[int]]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    per_sim = pl.DataFrame([{"model": m, "condition": c, "survival_time": t}
                            for m, conds in model_conditions.items() for c, ts in conds.items() for t in ts])
    summary = per_sim.group_by("model", "condition").agg(pl.col("survival_time").mean().alias("survival_time_mean"))
    return summary, per_sim


def test_survival_sentence_on_govsim_conditions_states_no_sovsim_tie_rule_and_counts_in_the_singular():
    """The GovSim table's reading ended "(ties: the first condition in CPR, BCPR, KCPR,
    KCPR-M order)" though no GovSim condition is one of those and nothing tied, and said
    "for 1 pairs ... (1 comparisons)"."""
    summary, per_sim = _survival({"Llama": {"fish_baseline": [2, 3], "fish_universalization": [12, 11]}})
    s = charts.survival_sentence(summary, per_sim)
    assert "CPR" not in s and "ties" not in s.lower()
    assert "for 1 pair of conditions" in s and "(1 comparison)" in s and "1 pairs" not in s


def test_survival_sentence_counts_tied_conditions_where_they_tie():
    summary, _ = _survival({"m": {"cpr": [12], "bcpr": [12], "kcpr": [5], "kcpr_m": [3]},
                            "n": {"fish_a": [4], "fish_b": [2], "fish_c": [2]}})
    s = charts.survival_sentence(summary)
    assert "longest survival under CPR (symmetric) (12.0 rounds, tied with 1 other condition)" in s
    assert "shortest under fish_b (2.0, tied with 1 other condition)" in s
    assert "A tie names the first tied condition in the order CPR, BCPR, KCPR, KCPR-M" in s
    untied, _ = _survival({"m": {"cpr": [12], "kcpr": [5]}})
    assert "tie" not in charts.survival_sentence(untied)


def _pools(model: str, condition: str, sims: list[list[int]], rounds: int = 3) -> list[dict]:
    """Agent-round rows (one agent) of simulations whose pool per round is given; a
    simulation shorter than ``rounds`` collapsed in its last round."""
    return [{"model": model, "condition": condition, "run_id": f"{model}-{condition}-{s}", "round": r + 1,
             "pool_before": p, "remaining": p // 2, "collapsed": len(sim) < rounds and r == len(sim) - 1}
            for s, sim in enumerate(sims) for r, p in enumerate(sim)]


def test_pool_reading_says_how_many_groups_tie_at_the_lowest_final_pool():
    """The reading named one group ("the lowest final mean pool is 0 units (embedded/smollm2,
    KCPR ...)") where 13 groups end at 0."""
    df = pl.DataFrame(_pools("a", "kcpr", [[100, 10], [100, 8]]) + _pools("b", "kcpr", [[100, 5]] * 2)
                      + _pools("b", "cpr", [[100, 9]] * 2) + _pools("c", "cpr", [[100, 90, 80], [100, 95, 85]]))
    s = charts.pool_sentence(df)
    assert "lowest for model=a, condition=KCPR (king) (0, tied with 2 other group(s))" in s
    assert "highest for model=c, condition=CPR (symmetric) (82" in s
    assert "start of round 3" in s and "collapsed pool counts as 0" in s


def _y_encodings(spec) -> dict[str, dict]:
    """Every quantitative y encoding of ``spec`` by field, with its mark."""
    found: dict[str, dict] = {}

    def visit(d):
        if isinstance(d, dict):
            y = (d.get("encoding") or {}).get("y")
            if isinstance(y, dict) and y.get("field"):
                found[y["field"]] = {"y": y, "mark": d.get("mark")}
            for v in d.values():
                visit(v)
        elif isinstance(d, list):
            for v in d:
                visit(v)

    visit(spec)
    return found


def test_trajectory_scales_show_the_values_below_the_top_edge():
    """Each extraction strip's y axis ended at the data's largest value (15), so the
    lines ran along the border, and the pool was a solid grey block whose line was the
    panel's top edge."""
    from pathlib import Path

    from scarce_lab.environments.sovsim.analysis import conventions, metrics
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    df = load_agent_rounds(Path(__file__).resolve().parents[2] / "data" / "sovsim")
    per_sim = metrics.simulation_metrics(df, conventions.convention("sovsim"))
    chart = charts.trajectories_chart(df, per_sim, ["scripted/sustainable"])
    ys = _y_encodings(F.strict_spec(chart))
    run = charts.pick_simulations(per_sim, ["scripted/sustainable"], "kcpr")["run_id"][0]
    shown = df.filter(pl.col("run_id") == run)
    for field in ("pool_before", "extraction"):
        top = ys[field]["y"]["scale"]["domain"][1]
        assert top > float(shown[field].max()) * 1.05, (field, top)  # headroom above the largest value
        assert ys[field]["y"]["axis"]["values"][-1] == top  # a labelled tick at the top
    pool = ys["pool_before"]["mark"]
    # a solid line over a see-through fill, one colour (one meaning per colour in the notebook)
    assert pool["opacity"] < 1 and pool["line"]["opacity"] == 1 and pool["line"]["color"] == pool["color"]
    assert [charts.nice_top(v) for v in (0, 15, 120, 136)] == [1.0, 20.0, 150.0, 150.0]


def test_table1_caption_explains_intervals_around_values_identical_in_every_run():
    """"960.00 [396.29, 1315.16]" for a payoff of 960 in every simulation read as a
    bug: the caption named the method but not that (and why) a group whose simulations
    all agree gets the score interval. Only the text changed, not the interval."""
    from pathlib import Path

    from scarce_lab.environments.sovsim.analysis import conventions, metrics, paper
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    conv = conventions.convention("sovsim")
    df = load_agent_rounds(Path(__file__).resolve().parents[2] / "data" / "sovsim")
    summary = metrics.summarize(metrics.simulation_metrics(df, conv), conv=conv)
    text = metrics.format_table(summary)
    assert "960.00 [396.29, 1315.16]" in text  # scripted/sustainable: 960 in every simulation, interval unchanged
    note = " ".join(text.split("\n\n")[-1].split())
    assert "all give the same value still gets this interval" in note
    assert "do not show that the metric cannot vary" in note and "largest spread" in note
    doc = " ".join(paper.table.__doc__.split())
    assert "all give the same value gets that interval too" in doc and "largest spread" in doc
    assert "all agree" in paper.TABLE1_INTERVALS
