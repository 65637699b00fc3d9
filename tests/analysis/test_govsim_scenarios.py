"""GovSim results read by their own rules.

Small samples laid out as GovSim's ``simulation/main.py`` writes them
(``results/<scenario>_<code_version>/<group_name>/<run>/`` with ``.hydra/config.yaml``
and ``log_env.json``; ``group_name: ''`` gives the flat ``<scenario>_<code_version>/<run>/``),
with the configurations' shape copied from the public result folders (giorgiopiatti/GovSim
and the pedrocurvo/GovSim fork: fishing_v6.4 flat runs, mix_llm runs, trash_v7.0).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import polars as pl
import pytest
import yaml

from scarce_lab.environments.sovsim.analysis.conventions import (
    Convention,
    PresetMismatchError,
    resolve_convention,
)
from scarce_lab.environments.sovsim.analysis.metrics import (
    UnfinishedRunsWarning,
    simulation_metrics,
    sovsim_table,
)
from scarce_lab.environments.sovsim.published.govsim_log import (
    GovSimConfigError,
    GovSimNotReadWarning,
    run_model,
)
from scarce_lab.environments.sovsim.tables import load_agent_rounds

ENVS = {"fishing": "fish_baseline_concurrent", "sheep": "sheep_baseline_concurrent",
        "pollution": "pollution_baseline_concurrent", "trash": "trash_baseline_concurrent"}


def config(scenario="fishing", *, group="", llm="org/a", version="v7.0", regrowth="double_100_cap", **top):
    cfg = {
        "experiment": {
            "name": f"{scenario}_${{code_version}}/${{group_name}}", "scenario": scenario,
            "env": {"name": ENVS.get(scenario, f"{scenario}_baseline_concurrent"), "max_num_rounds": 12,
                    "initial_resource_in_pool": 100, "poupulation_change_after_round": regrowth, "num_agents": 5,
                    "harvesting_order": "concurrent"},
        },
        "code_version": version, "group_name": group, "llm": {"path": llm, "temperature": 0.0}, "mix_llm": [],
        "seed": 42,
    }
    return cfg | top


def harvest_log(takes: list[list[int]], *, trash: bool = False) -> list[dict]:
    """Harvest records of a concurrent GovSim run: ``takes[r][i]`` units taken by agent
    ``i`` in round ``r``; the pool follows the scenario's code (double and cap at 100,
    or +50 and cap for trash), with values stored as strings as GovSim does."""
    pool, rows = 100, []
    for r, take in enumerate(takes):
        after = pool - sum(take)
        rows += [{"agent_id": f"persona_{i}", "round": str(r), "action": "harvesting",
                  "resource_in_pool_before_harvesting": str(pool), "resource_in_pool_after_harvesting": str(after),
                  "resource_collected": str(t), "wanted_resource": str(t)} for i, t in enumerate(take)]
        rows.append({"agent_id": "framework", "round": str(r), "action": "conversation_summary"})
        pool = min(100, after + 50) if trash else min(100, after * 2)
    return rows


def write_run(folder: Path, cfg: dict | None, log: list[dict] | None) -> Path:
    folder.mkdir(parents=True)
    (folder / "persona_0").mkdir()
    if cfg is not None:
        (folder / ".hydra").mkdir()
        (folder / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    if log is not None:
        (folder / "log_env.json").write_text(json.dumps(log))
    return folder


def test_trash_runs_that_overflow_are_scored_not_dropped(tmp_path):
    """Trash (the fork's pollution-like scenario): the house gains 50 a month and the run
    ends when more than 95 remain; taking out less than 50 // 5 = 10 is the unsustainable
    side. Under fishing rules the overflowing run never 'collapses' (100 > 5) and was
    dropped as unfinished."""
    root = tmp_path / "trash_v7.0" / "M"
    write_run(root / "overflow", config("trash", group="M"), harvest_log([[6] * 5, [0] * 5], trash=True))
    write_run(root / "steady", config("trash", group="M"), harvest_log([[10] * 5] * 12, trash=True))
    df = load_agent_rounds(tmp_path)
    assert set(df["role"]) == {"roommate"}
    conv = resolve_convention(df, "govsim")
    assert (conv.scenario, conv.collapse_above, conv.collapse_threshold, conv.unsustainable_below) == \
        ("trash", True, 95.0, 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnfinishedRunsWarning)
        per = simulation_metrics(df, conv)
    rows = {r["run_id"].split("/")[-1]: r for r in per.iter_rows(named=True)}
    assert rows["overflow"]["survival_time"] == 2 and rows["overflow"]["collapsed"]
    assert rows["steady"]["survival_time"] == 12 and not rows["steady"]["collapsed"]
    assert rows["overflow"]["overuse"] == 1.0 and rows["steady"]["overuse"] == 0.0
    assert rows["steady"]["efficiency"] is None  # no benchmark in the trash scenario's source
    s = sovsim_table(df, preset="govsim").row(0, named=True)
    assert s["n"] == 2 and s["survival_rate_mean"] == 0.5 and s["efficiency_status"] == "not_applicable"


def test_pasture_and_pollution_follow_govsims_common_environment(tmp_path):
    for scen, role in (("sheep", "shepherd"), ("pollution", "factory_owner")):
        root = tmp_path / scen / f"{scen}_v7.0" / "M"
        write_run(root / "r1", config(scen, group="M"), harvest_log([[10] * 5, [20] * 5]))  # 100->50->100->0
        write_run(root / "r2", config(scen, group="M"), harvest_log([[19] * 5]))  # 100 -> 5: not below 5
        df = load_agent_rounds(tmp_path / scen)
        assert set(df["role"]) == {role}
        conv = resolve_convention(df, "govsim")
        assert (conv.scenario, conv.collapse_above, conv.collapse_threshold) == (scen, False, 5.0)
        with pytest.warns(UnfinishedRunsWarning, match="1 unfinished"):  # r2: one round, no collapse
            per = simulation_metrics(df, conv)
        assert per["overuse"].to_list() == [0.5]  # 20 > 100/10 in round 2 only
    both = pl.concat([load_agent_rounds(tmp_path / "sheep"), load_agent_rounds(tmp_path / "pollution")])
    with pytest.raises(PresetMismatchError, match="different GovSim scenarios"):
        resolve_convention(both, "govsim")


@pytest.mark.parametrize("cfg,match", [
    (config("lake"), "experiment.scenario = 'lake' is not a scenario"),
    ({k: v for k, v in config().items() if k != "experiment"} | {"experiment": {"env": {"name": "x"}}},
     "experiment.scenario = None"),
    (config(regrowth="linear_10"), "poupulation_change_after_round = 'linear_10'"),
])
def test_unknown_scenario_or_rule_is_refused(tmp_path, cfg, match):
    write_run(tmp_path / "fishing_v7.0" / "r1", cfg, harvest_log([[10] * 5]))
    with pytest.raises(GovSimConfigError, match=match):
        load_agent_rounds(tmp_path)
    with pytest.raises(GovSimConfigError, match=match):  # force loads runs without a config, never these
        load_agent_rounds(tmp_path, force=True)


def test_flat_layout_reads_each_runs_model_and_says_what_it_left_out(tmp_path):
    """GovSim's default group_name '' puts runs of every model in one folder: each run is
    its own llm.path, a mix_llm run is 'mixed', and nothing is skipped silently."""
    flat = tmp_path / "fishing_v6.4"
    log = harvest_log([[10] * 5] * 12)
    write_run(flat / "a-1", config(llm="org/a", version="v6.4"), log)
    write_run(flat / "a-2", config(llm="org/a", version="v6.4"), log)
    write_run(flat / "b-1", config(llm="org/b", version="v6.4"), log)
    mixed = config(llm=None, version="v6.4", weak_model={"path": "org/b"}, strong_model={"path": "org/a"},
                   mix_llm=[{"llm": "${strong_model}"}] * 4 + [{"llm": "${weak_model}"}])
    write_run(flat / "mix-1", mixed, log)
    write_run(flat / "listed-1", config(llm=["org/a"] * 4 + ["org/b"], version="v6.4"), log)
    write_run(flat / "nomodel-1", config(llm="", version="v6.4"), log)
    write_run(flat / "interrupted-1", None, None)  # persona memories only, as GovSim leaves them
    write_run(flat / "empty-1", config(llm="org/a", version="v6.4"), [{"agent_id": "framework", "round": "0"}])
    with pytest.warns(GovSimNotReadWarning) as rec:
        df = load_agent_rounds(flat)
    msg = " ".join(str(w.message) for w in rec)
    assert "not read (3)" in msg
    assert "interrupted-1 (no log_env.json)" in msg
    assert "nomodel-1 (its configuration names no model" in msg
    assert "empty-1 (log_env.json has no harvest record)" in msg
    assert sorted(df["model"].unique()) == ["mixed: 4x org/a + 1x org/b", "org/a", "org/b"]
    runs = df.group_by("model").agg(pl.col("run_id").n_unique()).sort("model")["run_id"].to_list()
    assert runs == [2, 2, 1]  # the mix_llm run and the listed llm.path run are the same mixture
    assert "fishing_v6.4" not in set(df["model"])


def test_run_model_forms():
    assert run_model({"llm": {"path": "x"}}) == "x"
    assert run_model({"llm": {"path": ["x", "x"]}}) == "x"
    assert run_model({"llm": {"path": ["x", "y", "x"]}}) == "mixed: 2x x + 1x y"
    assert run_model({"llm": {"path": ""}}) is None
    assert run_model({"s": {"path": "q"}, "mix_llm": [{"llm": "${s}"}, {"llm": {"path": "r"}}]}) == \
        "mixed: 1x q + 1x r"


def test_total_gain_is_the_mean_per_agent_as_govsims_get_payoffs(tmp_path):
    """plots.get_payoffs: per run, each agent's sum of resource_collected, then the mean
    over agents. The column says which."""
    takes = [[10, 20, 0, 5, 15], [10, 10, 10, 10, 10]] + [[4] * 5] * 10
    write_run(tmp_path / "fishing_v7.0" / "M" / "r1", config(group="M"), harvest_log(takes))
    df = load_agent_rounds(tmp_path)
    per_agent = [sum(t[i] for t in takes) for i in range(5)]
    per = simulation_metrics(df, resolve_convention(df, "govsim"))
    assert per["total_payoff"][0] == pytest.approx(sum(per_agent) / 5)
    s = sovsim_table(df, preset="govsim")
    assert s["total_payoff_unit"][0] == "mean per agent"
    from scarce_lab.environments.sovsim.analysis.metrics import format_table
    assert "Total payoff (mean per agent)" in format_table(s)
    assert "Total payoff (sum over agents)" in format_table(sovsim_table(df, preset="govsim",
                                                                          force=True).with_columns(
        pl.lit("sum over agents").alias("total_payoff_unit")))


def test_equality_when_nobody_harvested_follows_the_presets_source(tmp_path):
    write_run(tmp_path / "fishing_v7.0" / "M" / "r1", config(group="M"), harvest_log([[0] * 5] * 12))
    df = load_agent_rounds(tmp_path)
    gov = simulation_metrics(df, resolve_convention(df, "govsim"))
    assert gov["equality"][0] is None  # GovSim's gini: 0/0 = NaN
    sov = simulation_metrics(df, Convention(n_agents=5, initial_pool=100, equality_over="extraction"))
    assert sov["equality"][0] == 0.0  # SovSim's payoff_equality returns 0.0 on a zero sum
    assert not math.isnan(sov["efficiency"][0])


def test_cli_prints_what_was_not_read(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    flat = tmp_path / "fishing_v7.0"
    write_run(flat / "a-1", config(), harvest_log([[10] * 5] * 12))
    write_run(flat / "interrupted-1", None, None)
    res = CliRunner().invoke(app, ["table", "sovsim", str(flat), "--preset", "govsim"])
    assert res.exit_code == 0, res.output
    assert "warning: not read (1):" in res.output and "interrupted-1 (no log_env.json)" in res.output
