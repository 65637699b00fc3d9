"""Never pool different conditions, for SovSim tables and the
published layouts: a condition is every setting that defines it, read from each
layout's own run configuration; tables refuse to pool runs whose settings differ (or,
forced, warn loudly and say so in the label); wrong presets and mixed layouts are errors
unless forced."""

import asyncio
import json
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.environments.sovsim.analysis.conventions import (
    PresetMismatchError,
    SovSimDataWarning,
    resolve_convention,
)
from scarce_lab.environments.sovsim.analysis.cross import cross_model_drops
from scarce_lab.environments.sovsim.analysis.metrics import simulation_metrics, sovsim_table
from scarce_lab.environments.sovsim.analysis.pooling import PoolingError
from scarce_lab.environments.sovsim.published import ForcedDataWarning
from scarce_lab.environments.sovsim.published.govsim_log import GovSimConfigError
from scarce_lab.environments.sovsim.runner.play import GameSpec, arun_game
from scarce_lab.environments.sovsim.tables import MixedLayoutsError, load_agent_rounds

GOVSIM = Path(__file__).parents[3] / "shared" / "data" / "govsim_fishing_v7"
needs_govsim = pytest.mark.skipif(not GOVSIM.exists(), reason=f"shared data absent: {GOVSIM}")
cli = CliRunner()


def _configs() -> dict[Path, dict]:
    return {p.parent: yaml.safe_load(p.read_text()) for p in sorted(GOVSIM.glob("*/*/config.yaml"))}


def govsim_as_written(dest: Path) -> Path:
    """The shared v7.0 runs laid out as GovSim's main.py writes them:
    ``results/fishing_v7.0/<group>/<run>/`` with ``log_env.json`` and ``.hydra/``."""
    root = dest / "results" / "fishing_v7.0"
    for run, cfg in _configs().items():
        if cfg["code_version"] != "v7.0":
            continue
        out = root / run.parent.name / run.name
        (out / ".hydra").mkdir(parents=True)
        shutil.copy(run / "log_env.json", out / "log_env.json")
        (out / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
        (out / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(
            [f"experiment={cfg['experiment']['env']['name']}", f"llm.path={cfg['llm']['path']}",
             f"group_name={cfg['group_name']}"]))
    return root


@needs_govsim
def test_govsim_folder_gives_one_row_per_model_and_environment(tmp_path):
    """GovSim's own layout: the environment name comes from ``.hydra/config.yaml``, so
    baseline and universalization runs are two rows of each model, each with its n."""
    root = govsim_as_written(tmp_path)
    expected: dict[tuple[str, str], int] = {}
    for run, cfg in _configs().items():
        if cfg["code_version"] == "v7.0":
            key = (run.parent.name, cfg["experiment"]["env"]["name"])
            expected[key] = expected.get(key, 0) + 1
    res = cli.invoke(app, ["table", "sovsim", str(root), "--preset", "govsim", "--format", "json"])
    assert res.exit_code == 0, res.output
    got = {(r["model"], r["base_condition"]): r for r in json.loads(res.output)["table"]}
    assert {k: r["n"] for k, r in got.items()} == expected
    assert {env for _, env in got} == {"fish_baseline_concurrent", "fish_baseline_concurrent_universalization"}
    # the two environments of one model are really different results (Llama-3-8B: 2 vs 12 rounds)
    l3 = {env: r["survival_time_mean"] for (m, env), r in got.items() if m == "Llama-3-8B"}
    assert l3 == {"fish_baseline_concurrent": 2.0, "fish_baseline_concurrent_universalization": 12.0}
    # the label shows the settings that differ between the environments, nothing else
    assert {r["condition"] for r in got.values()} == {
        "fish_baseline_concurrent,inject_universalization=False",
        "fish_baseline_concurrent_universalization,inject_universalization=True"}


@needs_govsim
def test_shared_govsim_copy_keeps_code_versions_apart():
    """The shared copy mixes runs made with GovSim v6.4 configurations (no llm.max_tokens,
    no mix_llm) into the v7.0 folder: they are another condition, never averaged in."""
    df = load_agent_rounds(GOVSIM)
    s = sovsim_table(df, preset="govsim")
    assert s["n"].sum() == len(_configs()) == 22
    versions = {run.name: cfg["code_version"] for run, cfg in _configs().items()}
    for row in s.iter_rows(named=True):
        runs = df.filter((pl.col("model") == row["model"]) & (pl.col("condition") == row["condition"]))
        assert len({versions[r.split("/")[-1]] for r in runs["run_id"].unique()}) == 1
        assert ("code_version=v6.4" in row["condition"]) == (json.loads(row["settings"])["code_version"] == "v6.4")
    with pytest.raises(PoolingError, match="code_version"):
        sovsim_table(df, preset="govsim", by="base_condition")
    with pytest.warns(SovSimDataWarning, match="code_version"):
        pooled = sovsim_table(df, preset="govsim", by="base_condition", force=True)
    mixed = {r.parent.name for r, cfg in _configs().items() if cfg["code_version"] == "v6.4"}
    assert mixed == {"Llama-2-13B", "Llama-2-7B", "Qwen2.5-0.5B"} and pooled.height == 8
    for row in pooled.iter_rows(named=True):
        assert ("[pooled: " in row["condition"]) == (row["model"] in mixed)
        assert "code_version" in row["condition"] or row["model"] not in mixed


def _govsim_run(root: Path, group: str, name: str, env: str | None, llm: str = "org/model") -> Path:
    run = root / group / name
    run.mkdir(parents=True)
    rows = [{"agent_id": f"persona_{i}", "round": "0", "action": "harvesting",
             "resource_in_pool_before_harvesting": "100", "resource_in_pool_after_harvesting": "50",
             "resource_collected": "10"} for i in range(5)]
    (run / "log_env.json").write_text(json.dumps(rows))
    if env is not None:
        (run / ".hydra").mkdir()
        cfg = {"experiment": {"scenario": "fishing",
                              "env": {"name": env, "max_num_rounds": 12, "num_agents": 5,
                                      "initial_resource_in_pool": 100,
                                      "poupulation_change_after_round": "double_100_cap"}},
               "group_name": group, "llm": {"path": llm}, "seed": 1}
        (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    return run


def test_govsim_run_without_configuration_is_an_error_unless_forced(tmp_path):
    _govsim_run(tmp_path, "M", "r1", None)
    _govsim_run(tmp_path, "M", "r2", None)
    with pytest.raises(GovSimConfigError, match=r"2 GovSim run\(s\) have no \.hydra/config\.yaml.*M/r1; .*M/r2"):
        load_agent_rounds(tmp_path)
    with pytest.warns(ForcedDataWarning, match="unknown"):
        df = load_agent_rounds(tmp_path, force=True)
    assert set(df["condition"]) == {"unknown"}
    res = cli.invoke(app, ["table", "sovsim", str(tmp_path), "--preset", "govsim"])
    assert res.exit_code == 2 and "config.yaml" in res.output


def test_govsim_group_folder_holding_two_models_labels_each_run(tmp_path):
    """Never pooled under the folder's name: each run is labelled with its own model."""
    from scarce_lab.environments.sovsim.published.govsim_log import GovSimNotReadWarning

    _govsim_run(tmp_path, "M", "r1", "fish_baseline_concurrent", llm="org/a")
    _govsim_run(tmp_path, "M", "r2", "fish_baseline_concurrent", llm="org/b")
    with pytest.warns(GovSimNotReadWarning, match="holds runs of different models"):
        df = load_agent_rounds(tmp_path)
    assert set(df["model"]) == {"M [org/a]", "M [org/b]"}


def test_wrong_preset_is_an_error_unless_forced(tmp_path):
    """GovSim data under the SovSim preset (5 agents, pool 100) and SovSim data under the
    GovSim preset are refused, with the reason; --force prints it and computes."""
    _govsim_run(tmp_path / "g", "M", "r1", "fish_baseline_concurrent")
    res = cli.invoke(app, ["table", "sovsim", str(tmp_path / "g")])
    assert res.exit_code == 2 and "govsim data, not sovsim data" in res.output.replace("\n", " ")
    res = cli.invoke(app, ["table", "sovsim", str(tmp_path / "g"), "--force"])
    # forced, the check is passed (and said); the one-round log of a 12-round game is
    # unfinished, so nothing is left to tabulate: an error, not an empty table
    assert res.exit_code == 2 and "WARNING: FORCED" in res.output
    assert "no finished simulation" in " ".join(res.output.replace("│", " ").split())
    asyncio.run(arun_game(GameSpec("cpr", "scripted/sustainable", rounds=2), tmp_path / "s"))
    with pytest.raises(PresetMismatchError, match="sovsim data, not govsim"):
        resolve_convention(load_agent_rounds(tmp_path / "s"), "govsim")


def test_runs_of_another_game_use_their_own_settings_and_different_games_are_refused(tmp_path):
    """Our runs state their game (``game.rounds`` ...): a 2-round game is scored against
    2 rounds (it survived), not silently dropped as unfinished; runs of 2 and 3 rounds in
    one table are refused."""
    asyncio.run(arun_game(GameSpec("cpr", "scripted/sustainable", rounds=2), tmp_path / "a"))
    df = load_agent_rounds(tmp_path / "a")
    conv = resolve_convention(df)
    assert (conv.rounds, conv.efficiency_benchmark, conv.max_total_payoff) == (2, 120.0, 240.0)
    s = sovsim_table(df)
    assert s["survival_rate_mean"].to_list() == [1.0] and s["efficiency_mean"].to_list() == [1.0]
    asyncio.run(arun_game(GameSpec("cpr", "scripted/sustainable", rounds=3, simulation=1), tmp_path / "a"))
    with pytest.raises(PresetMismatchError, match="different games: rounds = 2 in .*; 3 in"):
        sovsim_table(load_agent_rounds(tmp_path / "a"))


def test_role_label_ablation_is_its_own_condition(tmp_path):
    """Runs with neutral role labels never land in the default-label cell; asking to pool
    them (by the power condition) is refused, or forced with a loud warning and a label
    that says what was pooled."""
    for i, labels in enumerate(["default", "default", "neutral", "neutral"]):
        for cond in ("cpr", "kcpr"):
            asyncio.run(arun_game(GameSpec(cond, "scripted/greedy_leader", simulation=i, role_labels=labels),
                                  tmp_path))
    df = load_agent_rounds(tmp_path)
    s = sovsim_table(df)
    assert sorted(zip(s["condition"], s["n"], strict=True)) == [
        ("cpr,role_labels=default", 2), ("cpr,role_labels=neutral", 2),
        ("kcpr,role_labels=default", 2), ("kcpr,role_labels=neutral", 2)]
    drop = s.filter(pl.col("condition") == "kcpr,role_labels=neutral").row(0, named=True)
    assert drop["survival_drop_status"] in ("ok", "undefined")  # compared with cpr,role_labels=neutral only
    with pytest.raises(PoolingError, match="role_labels"):
        sovsim_table(df, by="base_condition")
    res = cli.invoke(app, ["table", "sovsim", str(tmp_path), "--by", "base_condition"])
    assert res.exit_code == 2 and "role_labels" in res.output
    res = cli.invoke(app, ["table", "sovsim", str(tmp_path), "--by", "base_condition", "--force", "-f", "json"])
    assert res.exit_code == 0
    assert "WARNING: FORCED" in res.stderr and "role_labels" in res.stderr
    rows = json.loads(res.stdout)["table"]
    assert [(r["condition"], r["n"]) for r in rows] == [("cpr [pooled: role_labels]", 4),
                                                       ("kcpr [pooled: role_labels]", 4)]


def _rationales(root: Path, model: str, cond: str) -> None:
    recs = [{"simulation_id": 1, "round": t, "pool_before": 120, "extractions": [15, 15, 15, 15], "final_pool": 60,
             "payoffs": [20.0] * 4, "collapsed": False} for t in range(1, 13)]
    p = root / model / cond / "rationales.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(recs))


def test_mixed_layouts_are_an_error_unless_forced_and_never_share_a_cell(tmp_path):
    asyncio.run(arun_game(GameSpec("cpr", "scripted/sustainable"), tmp_path / "ours"))
    _rationales(tmp_path / "rel", "scripted/sustainable", "cpr")
    with pytest.raises(MixedLayoutsError, match="runs .*sovsim_json"):
        load_agent_rounds(tmp_path)
    with pytest.warns(ForcedDataWarning, match="mixes trajectory layouts"):
        df = load_agent_rounds(tmp_path, force=True)
    assert set(df["source"]) == {"scarce_lab", "sovsim_json"}
    # same model and condition name in two layouts: not the same condition
    df = df.with_columns(model=pl.lit("m"))
    with pytest.raises(PoolingError, match="layout"):
        sovsim_table(df)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = sovsim_table(df, force=True)
    assert any("layout" in str(w.message) for w in caught)
    assert s["condition"].to_list() == ["cpr [pooled: layout, settings unknown]"] and s["n"].to_list() == [2]


def test_sovsim_run_files_carry_their_settings(tmp_path):
    """The authors' ``sim_XX.json`` files carry ``config``: runs at temperature 0 and 0.7
    are two conditions, and a cross-model mean over them is refused."""
    for temp, model in [(0.0, "a"), (0.7, "a"), (0.7, "b")]:
        for cond in ("cpr", "kcpr"):
            rounds = [{"round": t, "pool_before": 120, "sustainability_threshold": 60.0,
                       "extractions": [15, 15, 15, 15], "remaining_before_leader": 75 if cond == "kcpr" else None,
                       "final_pool": 60, "pool_next": 120, "payoffs": [20.0] * 4, "collapsed": False}
                      for t in range(1, 13)]
            sim = {"model": model, "condition": cond, "simulation_id": 1, "total_rounds_played": 12,
                   "collapsed": False, "rounds": rounds,
                   "config": {"initial_pool": 120, "max_rounds": 12, "regen_multiplier": 2, "collapse_threshold": 12,
                              "temperature": temp, "history_window": 3}}
            p = tmp_path / f"t{temp}" / model / cond / "sim_01.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(sim))
    df = load_agent_rounds(tmp_path)
    assert set(df["source"]) == {"sovsim_run"}
    s = sovsim_table(df)
    assert sorted(set(s.filter(pl.col("model") == "a")["condition"])) == [
        "cpr,temperature=0", "cpr,temperature=0.7", "kcpr,temperature=0", "kcpr,temperature=0.7"]
    lead = s.filter(pl.col("condition") == "kcpr,temperature=0.7")["leader_extraction_rate_mean"].to_list()
    assert lead == [pytest.approx(0.2), pytest.approx(0.2)]
    ps = simulation_metrics(df)
    # across models, the temperature is a setting of the model; but model a at two temperatures
    # in one cross-model mean is refused
    with pytest.raises(PoolingError, match="model a appears in kcpr as kcpr,temperature=0, kcpr,temperature=0.7"):
        cross_model_drops(ps)
    with pytest.warns(SovSimDataWarning):
        forced = cross_model_drops(ps, force=True).filter(pl.col("metric") == "survival_rate").row(0, named=True)
    assert forced["models"] == ["a (kcpr,temperature=0)", "a (kcpr,temperature=0.7)", "b"]
    one_each = ps.filter(~((pl.col("model") == "a") & pl.col("condition").str.ends_with("0.7")))
    row = cross_model_drops(one_each).filter(pl.col("metric") == "survival_rate").row(0, named=True)
    assert (row["condition"], row["models"], row["mean"]) == ("kcpr", ["a", "b"], 0.0)


@needs_govsim
def test_notebook_face_applies_the_same_checks(tmp_path):
    """``scarce_lab.table`` (the notebook face) reads GovSim's Hydra folders and refuses
    the wrong preset like the CLI."""
    import scarce_lab as sl

    root = govsim_as_written(tmp_path)
    t = sl.table(root, preset="govsim").frame
    assert t.height == 8 and set(t["base_condition"]) == {"fish_baseline_concurrent",
                                                         "fish_baseline_concurrent_universalization"}
    with pytest.raises(PresetMismatchError):
        sl.table(root)
    with pytest.warns(SovSimDataWarning):
        assert sl.table(root, force=True).frame.height == 8


def test_cross_model_mean_refuses_models_run_under_different_settings(tmp_path):
    """Model A played only with neutral role labels, model B only with the default ones:
    each model's Table 1 rows are pure, but a mean over models of "kcpr" would pool two
    conditions; it is refused (naming role_labels) unless forced."""
    for i in range(2):
        for cond in ("cpr", "kcpr"):
            asyncio.run(arun_game(GameSpec(cond, "scripted/greedy_leader", simulation=i, role_labels="neutral"),
                                  tmp_path))
            asyncio.run(arun_game(GameSpec(cond, "scripted/sustainable", simulation=i), tmp_path))
    ps = simulation_metrics(load_agent_rounds(tmp_path))
    strict = cross_model_drops(ps).filter(pl.col("metric") == "survival_rate")
    assert sorted(zip(strict["condition"], strict["n_models"], strict=True)) == [
        ("kcpr,role_labels=default", 1), ("kcpr,role_labels=neutral", 1)]
    with pytest.raises(PoolingError, match="kcpr across models: role_labels"):
        cross_model_drops(ps, by="base_condition")
    with pytest.warns(SovSimDataWarning, match="role_labels"):
        forced = cross_model_drops(ps, by="base_condition", force=True).filter(pl.col("metric") == "survival_rate")
    assert forced["n_models"].to_list() == [2]
