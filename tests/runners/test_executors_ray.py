"""Sweeps on a Ray cluster: a local Ray instance started here on
127.0.0.1 (no dashboard, several workers). Runs on Ray must give the same trajectories
as local runs with the same seeds, skip complete runs on resume, continue unfinished
ones, and work whether or not the nodes see the output folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.sovsim.runner.play import arun_game, plan_sweep, run_sweep
from scarce_lab.runners import executors

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # Ray's start-up dominates (seconds to tens of seconds)


@pytest.fixture(scope="module")
def ray_cluster():
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("ray is not installed in CI: scripts/install.sh installs the [ray] extra")
        pytest.skip("ray is not installed (pip install 'scarce-lab[ray]')")
    try:
        ray.init(num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    except Exception as exc:  # no shared memory, no free ports, a sandboxed CI
        pytest.skip(f"Ray cannot start on this machine: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()


def _events(folder: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(folder.glob("*/events.jsonl"))}


def _statuses(folder: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["status"] for p in sorted(folder.glob("*/manifest.json"))}


def test_sovsim_sweep_on_ray_equals_local_and_resumes(ray_cluster, tmp_path):
    from scarce_lab.cli import app

    configs = plan_sweep(["cpr", "kcpr_m"], ["scripted/greedy", "scripted/sustainable"], simulations=2, rounds=3)
    run_sweep(configs, tmp_path / "local", progress=False)
    args = ["run", "sovsim", "-m", "scripted/greedy", "-m", "scripted/sustainable", "-c", "cpr", "-c", "kcpr_m",
            "-n", "2", "--rounds", "3", "--no-progress", "--executor", "ray", "-o", str(tmp_path / "ray")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "8 SovSim run(s)" in r.output and "complete 8" in r.output
    local, remote = _events(tmp_path / "local"), _events(tmp_path / "ray")
    assert len(local) == 8 and local == remote  # byte for byte: same seeds, same trajectories
    assert set(_statuses(tmp_path / "ray").values()) == {"complete"}
    assert executors.output_transfer(ray_cluster, tmp_path / "ray") == "shared"

    # resume: complete runs are skipped, a missing one is run again
    gone = sorted(local)[3]
    for f in (tmp_path / "ray" / gone).iterdir():
        f.unlink()
    (tmp_path / "ray" / gone).rmdir()
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "complete 1" in r.output and "skipped 7" in r.output
    assert _events(tmp_path / "ray") == local


def test_return_transfer_resumes_an_unfinished_run_elsewhere(ray_cluster, tmp_path):
    """Nodes that do not see the output folder: the run folder travels to the task and
    back; an unfinished run continues from its last committed round."""
    import asyncio

    configs = plan_sweep(["bcpr"], ["scripted/greedy_leader", "scripted/sustainable"], simulations=1, rounds=4)
    run_sweep(configs, tmp_path / "local", progress=False)

    class Killed(RuntimeError):
        pass

    def kill_after_round_2(cfg, r):
        if r == 2:
            raise Killed("killed after round 2")

    out = tmp_path / "ray"
    with pytest.raises(Killed):
        asyncio.run(arun_game(configs[1], out, on_round=kill_after_round_2))
    assert _statuses(out) == {configs[1].run_id: "failed"}

    refused = executors.run_configs("sovsim", configs, out, transfer="return", progress=False)
    assert [o.status for o in refused] == ["complete", "error"] and "--resume" in refused[1].error
    outcomes = executors.run_configs("sovsim", configs, out, resume=True, transfer="return", progress=False)
    assert [o.status for o in outcomes] == ["skipped", "complete"]
    assert set(_statuses(out).values()) == {"complete"}

    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    cols = ["run_id", "round", "agent", "extraction", "payoff", "pool_before", "remaining", "collapsed"]
    assert load_agent_rounds(out).select(cols).equals(load_agent_rounds(tmp_path / "local").select(cols))
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = executors.run_configs("sovsim", configs, out, transfer="return", progress=False)
    assert [o.status for o in again] == ["skipped", "skipped"]  # decided on the node by open_run
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before  # nothing rewritten


def test_economy_seeds_on_ray_equal_local(ray_cluster, tmp_path):
    from scarce_lab.environments.economy.runner.play import run_economy

    configs = [EconomyRunConfig(task="arithmetic", model="scripted/partial", episodes=8, eval_episodes=3, seed=s)
               for s in (0, 1)]
    for c in configs:
        run_economy(c, tmp_path / "local")
    outcomes = executors.run_configs("economy", configs, tmp_path / "ray", progress=False)
    assert [o.status for o in outcomes] == ["complete", "complete"]
    assert _events(tmp_path / "ray") == _events(tmp_path / "local")


def test_judge_labelling_on_ray_equals_local(ray_cluster, tmp_path):
    from scarce_lab.judge import load_taxonomy
    from scarce_lab.judge.judges import make_judges
    from scarce_lab.judge.panel import label_units
    from scarce_lab.judge.units import Unit

    units = [Unit(unit_id=f"{run}:{k}:w{a}", run_id=run, round=k, agent=f"w{a}",
                  public_reasoning=f"I need the slot before my deadline ({run}, {k}, {a}).")
             for run in ("run-a", "run-b") for k in (1, 2) for a in (0, 1)]
    tax = load_taxonomy("scarce")
    judges = make_judges(["openai/judge-a", "openai/judge-b"], seed=0)
    answer = json.dumps({"labels": [{"label": tax.ids[0], "evidence": ""}]})
    kwargs = {"call_kwargs": {j.name: {"mock_response": answer} for j in judges}}
    settings = {"cache": False, "max_retries": 0}

    from scarce_lab.llm import LLMClient, LLMSettings

    local = label_units(units, tax, judges, client=LLMClient(LLMSettings(**settings)), out_dir=tmp_path / "local",
                        progress=False, **kwargs)
    sent = executors.judge_on_ray(units, tax, judges, tmp_path / "ray", client_settings=settings,
                                  panel_kwargs=kwargs, progress=False)
    assert sent == 2  # one task per run
    remote = label_units(units, tax, judges, client=LLMClient(LLMSettings(**settings)), out_dir=tmp_path / "ray",
                         progress=False, **kwargs)
    key = ["unit_id", "judge"]
    cols = ["unit_id", "judge", "status", "labels"]
    assert remote.judgements.select(cols).sort(key).equals(local.judgements.select(cols).sort(key))
    assert remote.labels.sort("unit_id").equals(local.labels.sort("unit_id"))
    assert executors.judge_on_ray(units, tax, judges, tmp_path / "ray", client_settings=settings,
                                  panel_kwargs=kwargs, progress=False) == 0  # resume: nothing left to send
    lines = (tmp_path / "ray" / "judgements.jsonl").read_text().splitlines()
    assert len(lines) == len(units) * len(judges)
    assert pl.read_ndjson(tmp_path / "ray" / "llm_calls.jsonl").height >= len(units) * len(judges)


def test_executor_errors_are_clear():
    from scarce_lab.cli import app

    r = CliRunner().invoke(app, ["run", "sovsim", "-m", "scripted/greedy", "--executor", "spark"])
    assert r.exit_code != 0 and "'spark' is not one of 'local', 'ray'" in r.output  # the executors are a choice
    r = CliRunner().invoke(app, ["run", "sovsim", "-m", "scripted/greedy", "--address", "auto"])
    assert r.exit_code != 0 and "--address is for --executor ray" in r.output


def test_scarce_runs_on_ray_equal_local_up_to_measured_durations(ray_cluster, tmp_path):
    """SCARCE runs (bubblewrap sandbox) on Ray: the same events as locally except the
    measured wall time of each sandbox command (``duration_s``), which differs between
    any two runs; the environment clock ``t`` is the same."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: no local sandbox")
    from scarce_lab.environments.scarce.config import ScarceConfig
    from scarce_lab.environments.scarce.runner import run_scarce

    configs = [ScarceConfig(workers=2, subruns=1, model="scripted/fifo", seed=s) for s in (0, 1)]
    for c in configs:
        run_scarce(c, tmp_path / "local")
    outcomes = executors.run_configs("scarce", configs, tmp_path / "ray", progress=False)
    assert [o.status for o in outcomes] == ["complete", "complete"]

    def events(folder: Path) -> dict[str, list[dict]]:
        out = {}
        for run, raw in _events(folder).items():
            rows = [json.loads(line) for line in raw.decode().splitlines()]
            for r in rows:
                r["payload"].pop("duration_s", None)
            out[run] = rows
        return out

    assert events(tmp_path / "ray") == events(tmp_path / "local") and len(events(tmp_path / "local")) == 2
