"""SovSim agent-round table: our run directories and both published layouts."""

import asyncio
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.environments.sovsim.published.govsim_log import read_govsim_logs
from scarce_lab.environments.sovsim.published.sovsim_json import read_rationales
from scarce_lab.environments.sovsim.runner.play import GameSpec, arun_game
from scarce_lab.environments.sovsim.tables import (
    AGENT_ROUND_SCHEMA,
    detect_layouts,
    load_agent_rounds,
)

SHARED = Path(__file__).parents[3] / "shared" / "data"
SOVSIM_SAMPLE = SHARED / "sovsim_format_sample"
GOVSIM = SHARED / "govsim_fishing_v7"
needs_sovsim = pytest.mark.skipif(not SOVSIM_SAMPLE.exists(), reason=f"shared data absent: {SOVSIM_SAMPLE}")
needs_govsim = pytest.mark.skipif(not GOVSIM.exists(), reason=f"shared data absent: {GOVSIM}")


def test_our_runs_to_agent_rounds(tmp_path):
    spec = GameSpec("kcpr_m", "scripted/greedy_leader", seed=0)
    asyncio.run(arun_game(spec, tmp_path))
    df = load_agent_rounds(tmp_path)
    assert df.schema == pl.Schema(AGENT_ROUND_SCHEMA)
    assert df.height == 4  # one round (collapse) x 4 agents
    king = df.filter(pl.col("is_leader")).row(0, named=True)
    assert (king["role"], king["extraction"], king["remainder_seen"], king["payoff"]) == ("king", 102, 102, 34)
    assert (king["announced_pool"], king["pool_before"], king["pool_seen"]) == (60, 120, 120)
    peasant = df.filter(pl.col("agent") == "a0").row(0, named=True)
    assert (peasant["role"], peasant["pool_seen"], peasant["remainder_seen"]) == ("peasant", 60, None)
    assert df["collapsed"].all() and set(df["model"]) == {"scripted/greedy_leader"}
    assert set(df["simulation"]) == {0} and set(df["source"]) == {"scarce_lab"}


@needs_sovsim
def test_sovsim_json_adapter_on_shared_sample():
    path = SOVSIM_SAMPLE / "example-model" / "kcpr_m" / "rationales.json"
    df = read_rationales(path)
    assert set(df["model"]) == {"example-model"} and set(df["condition"]) == {"kcpr_m"}
    r1 = df.filter((pl.col("simulation") == 1) & (pl.col("round") == 1)).sort("agent_index")
    # first record of the sample: extractions 12, 9, 18, 0; final pool 81; announced 100
    assert r1["extraction"].to_list() == [12, 9, 18, 0]
    assert r1["payoff"].to_list() == [24.25, 23.25, 26.25, 20.25]
    assert r1["role"].to_list() == ["peasant"] * 3 + ["king"]
    king = r1.row(3, named=True)
    assert king["remainder_seen"] == 120 - 39 and king["announced_pool"] == 100
    assert r1["pool_seen"].to_list() == [100, 100, 100, 120]
    # payoff rule holds on every row: z/3 + final_pool/4
    assert ((df["extraction"] / 3 + df["remaining"] / 4 - df["payoff"]).abs() < 1e-9).all()


@needs_sovsim
def test_sovsim_json_rejects_unknown_condition(tmp_path):
    bad = tmp_path / "m" / "anarchy" / "rationales.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("[]")
    with pytest.raises(ValueError, match="anarchy"):
        read_rationales(bad)


@needs_govsim
def test_govsim_adapter_on_shared_logs():
    log = GOVSIM / "Llama-3-8B" / "vital-thunder-155" / "log_env.json"
    df = read_govsim_logs([log])
    assert set(df["n_agents"]) == {5} and set(df["role"]) == {"fisher"} and not df["is_leader"].any()
    assert df["round"].min() == 1 and df["round"].max() == 12  # stored from 0
    per_round = df.group_by("round").agg(
        pl.col("pool_before").first(), pl.col("remaining").first(), pl.col("extraction").sum()
    )
    # conservation: pool before - harvest = pool after, every round
    assert (per_round["pool_before"] - per_round["extraction"] == per_round["remaining"]).all()
    r5 = per_round.filter(pl.col("round") == 5).row(0, named=True)
    r6 = per_round.filter(pl.col("round") == 6).row(0, named=True)
    assert r6["pool_before"] == min(100, 2 * r5["remaining"])  # regeneration rule
    assert (df["payoff"] == df["extraction"]).all()


@needs_govsim
def test_govsim_values_stored_as_strings(tmp_path):
    run = tmp_path / "M" / "run-1"
    run.mkdir(parents=True)
    rows = [
        {"agent_id": f"persona_{i}", "round": "0", "action": "harvesting",
         "resource_in_pool_before_harvesting": "100.0", "resource_in_pool_after_harvesting": "3.0",
         "resource_collected": str(c), "wanted_resource": str(c)}
        for i, c in enumerate([20, 20, 20, 20, 17])
    ] + [{"agent_id": "framework", "round": "0", "action": "utterance"}]
    import json

    (run / "log_env.json").write_text(json.dumps(rows))
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text(
        "experiment:\n  scenario: fishing\n  env:\n    name: fish_baseline_concurrent\n"
        "    poupulation_change_after_round: double_100_cap\ngroup_name: M\nllm:\n  path: org/m\n")
    df = load_agent_rounds(tmp_path)
    assert df.height == 5 and df["collapsed"].all()  # 3 < 5 tons
    assert df["extraction"].sum() == 97 and set(df["model"]) == {"M"}
    assert set(df["condition"]) == {"fish_baseline_concurrent"}


@needs_sovsim
@needs_govsim
def test_layout_detection_from_path():
    assert detect_layouts(SOVSIM_SAMPLE)["sovsim_json"] and not detect_layouts(SOVSIM_SAMPLE)["govsim_log"]
    sov = load_agent_rounds(SOVSIM_SAMPLE)
    assert set(sov["source"]) == {"sovsim_json"} and set(sov["condition"]) == {"cpr", "kcpr_m"}
    gov = load_agent_rounds(GOVSIM)
    assert set(gov["source"]) == {"govsim_log"}
    assert gov["run_id"].n_unique() == len(list(GOVSIM.rglob("log_env.json")))
    one = load_agent_rounds(SOVSIM_SAMPLE / "example-model" / "cpr" / "rationales.json")
    assert set(one["condition"]) == {"cpr"}
    with pytest.raises(FileNotFoundError):
        load_agent_rounds(SHARED / "casino")


def test_in_order_keeps_an_ordered_frame_and_sorts_any_other():
    """``in_order`` returns a frame already in the table's order as it is (no copy) and
    sorts every other: a later key out of order, a tie broken by a later key, a null key."""
    from scarce_lab.environments.sovsim.agent_rounds import SORT_KEYS, in_order

    base = {"source": ["x"] * 4, "model": ["m", "m", "m", "n"], "condition": ["cpr"] * 4,
            "run_id": ["r1", "r10", "r2", "r0"], "round": [2, 1, 1, 1], "agent_index": [0, 0, 1, 0]}
    ordered = pl.DataFrame(base)
    tie = pl.DataFrame({**base, "agent_index": [0, 0, 0, 0], "round": [1, 1, 1, 1], "run_id": ["r"] * 4, "model": ["m"] * 4})
    assert in_order(tie) is not tie and in_order(tie).equals(tie)  # a repeated key: sorted, stable
    assert in_order(ordered) is ordered
    for col, values in (("agent_index", [0, 1, 0, 0]), ("run_id", ["r2", "r10", "r1", "r0"]),
                        ("model", ["n", "m", "m", "m"]), ("round", [3, 1, 1, None])):
        shuffled = pl.DataFrame({**base, col: values})
        out = in_order(shuffled)
        assert out.equals(shuffled.sort(*SORT_KEYS, maintain_order=True)), col
    two_parts = pl.concat([ordered.slice(2), ordered.slice(0, 2)], rechunk=False)
    assert in_order(two_parts).equals(ordered)


def test_label_conditions_without_shown_settings_takes_base_condition():
    """No setting varies: ``condition`` is ``base_condition`` row by row (the stale
    labels a frame carried are replaced), the other columns untouched; with a varying
    setting the label names it."""
    from scarce_lab.data.tables import label_conditions

    df = pl.DataFrame({"base_condition": ["kcpr", "bcpr", "kcpr"], "settings": [None, None, None],
                       "condition": ["old", "old", "old"], "model": ["a", "b", "a"], "v": [1.5, 2.5, 3.5]})
    out = label_conditions(df)
    assert out["condition"].to_list() == ["kcpr", "bcpr", "kcpr"]
    assert out.columns == df.columns and out["v"].to_list() == [1.5, 2.5, 3.5]
    varied = df.with_columns(settings=pl.Series(['{"rounds": 2}', '{"rounds": 3}', '{"rounds": 3}']))
    assert label_conditions(varied)["condition"].to_list() == ["kcpr,rounds=2", "bcpr,rounds=3", "kcpr,rounds=3"]
