"""Regression tests for bad input found by adversarial testing: malformed model answers,
corrupt trajectory files, interrupted runs and invalid CLI options each get a clear error
naming the field/value/path (or are recorded as data), never a crash or double count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import (
    EVENTS,
    MANIFEST,
    RunRecorder,
    TrajectoryFileError,
    read_manifest,
)
from scarce_lab.data.schema import RunManifest, RunStatus
from scarce_lab.environments.sovsim.events import Extraction
from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.llm.parsing import json_objects, parse_answer


class Pick(BaseModel):
    amount: Literal[0, 1, 2, 3]
    note: str = ""


FALLBACK = Pick(amount=0, note="fallback")


def manifest(run_id="r1", env="sovsim") -> RunManifest:
    return RunManifest(run_id=run_id, environment=env, condition="c", seed=0, package_version="0")


def _flat(output: str) -> str:
    """CLI output without the error box's borders and line wrapping."""
    return "".join(output.replace("│", " ").split())


# -- model answers -------------------------------------------------------------------
def test_deeply_nested_answer_is_a_violation_not_a_recursion_error():
    text = '{"a":' * 5000 + "1" + "}" * 5000
    assert json_objects(text) == []  # too deep to decode: no object, no RecursionError
    res = parse_answer(text, Pick)
    decision, error = res.decision, res.error
    assert decision is None and "no JSON object" in error


def test_lone_surrogate_in_answer_is_recorded_not_a_crash(tmp_path):
    c = LLMClient(LLMSettings(cache=False, max_retries=0))
    out = c.decide(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "?"}], schema=Pick,
                   fallback=FALLBACK, seed=1, mock_response='{"amount": 2, "note": "a\\ud800b"}')
    assert out.valid and out.decision == Pick(amount=2, note="a\ufffdb")
    rec = RunRecorder.create(tmp_path / "r1", manifest())
    rec.record_calls(out.calls)
    rec.emit(Extraction(extraction=3, max_extraction=30, pool_seen=120, reasoning="x\udc80y"), round=0,
             agent="a0")  # a raw lone surrogate too
    rec.commit_round(0)
    rec.finish()
    ds = load_dataset(tmp_path / "r1")
    (call,) = ds.llm_calls.collect().to_dicts()
    assert json.loads(call["parsed"]) == {"amount": 2, "note": "a\ufffdb"}
    assert ds.payloads("extraction").collect()["reasoning"].to_list() == ["x\ufffdy"]


# -- trajectory files ----------------------------------------------------------------
def _one_run(root: Path, run_id="r1", status=RunStatus.complete) -> Path:
    rec = RunRecorder.create(root / run_id, manifest(run_id))
    rec.emit(Extraction(extraction=3, max_extraction=30, pool_seen=120), round=0, agent="a0")
    rec.commit_round(0)
    if status != RunStatus.running:
        rec.finish(status)
    return rec.run_dir


def test_event_field_of_wrong_type_names_path_line_field_and_value(tmp_path):
    rd = _one_run(tmp_path)
    lines = (rd / EVENTS).read_text().splitlines()
    lines[1] = lines[1].replace('"seq":1', '"seq":"abc"')
    (rd / EVENTS).write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"events\.jsonl:2: invalid event: field 'seq': .*got 'abc'"):
        load_dataset(tmp_path)
    lines[1] = lines[1].replace('"seq":"abc"', '"seq":1').replace('"kind":"round_committed"', '"kind":"extraction"')
    (rd / EVENTS).write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"events\.jsonl:2: invalid event: field 'payload\.extraction"):
        load_dataset(tmp_path)  # a payload that does not match its kind names the missing field


def test_bad_manifest_is_one_line_naming_field_and_value(tmp_path):
    rd = _one_run(tmp_path)
    m = json.loads((rd / MANIFEST).read_text())
    m["status"] = "weird"
    (rd / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(TrajectoryFileError, match=r"manifest\.json: invalid manifest: field 'status': .*\(got 'weird'\)"):
        read_manifest(rd)
    (rd / MANIFEST).write_text("{not json")
    with pytest.raises(TrajectoryFileError) as info:
        read_manifest(rd)
    assert "manifest.json:1: not valid JSON" in str(info.value) and "\n" not in str(info.value)


def test_run_id_held_by_two_directories_counts_once(tmp_path):
    _one_run(tmp_path, status=RunStatus.running).rename(tmp_path / "r1.incomplete-0")
    _one_run(tmp_path)
    with pytest.warns(UserWarning, match="r1.incomplete-0"):
        ds = load_dataset(tmp_path)
    runs = ds.runs.collect()
    assert runs["run_id"].to_list() == ["r1"] and runs["status"].to_list() == ["complete"]
    assert ds.events.collect().height == 2  # x + round_committed, not 4


# -- economy ------------------------------------------------------------------------
def test_economy_rerun_after_a_kill_without_checkpoint_restarts_cleanly(tmp_path):
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy
    from scarce_lab.environments.economy.tables import episodes

    cfg = EconomyRunConfig(agents=3, episodes=6, eval_episodes=2, detail="episodes")
    rd = run_economy(cfg, tmp_path)
    full = (rd / EVENTS).read_text()
    # Simulate a kill -9 after episode 2 that also lost the checkpoint: committed rounds
    # 0..2, a torn line, status running.
    lines = full.splitlines(keepends=True)
    ends = [i for i, ln in enumerate(lines) if '"kind":"round_committed"' in ln]
    (rd / EVENTS).write_text("".join(lines[: ends[2] + 1]) + '{"run_id": "eco-')
    m = read_manifest(rd)
    m.status, m.ended_at = RunStatus.running, None
    (rd / MANIFEST).write_text(m.model_dump_json())
    with pytest.raises(FileExistsError, match="--resume"):
        run_economy(cfg, tmp_path)
    assert run_economy(cfg, tmp_path, resume=True) == rd
    assert read_manifest(rd).status == RunStatus.complete
    assert (rd / EVENTS).read_text() == full  # restarted from episode 0: the same trajectory
    assert episodes(load_dataset(tmp_path)).height == 8  # 6 train + 2 eval, counted once
    assert run_economy(cfg, tmp_path) == rd and (rd / EVENTS).read_text() == full  # complete: skipped


def test_economy_bad_task_file_writes_nothing(tmp_path):
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy

    bad = tmp_path / "qa.jsonl"
    bad.write_text('{"question": "1+1", "answer": 2}\n[1, 2]\n')
    cfg = EconomyRunConfig(task=f"jsonl:{bad}", model="scripted/partial", episodes=2, eval_episodes=0)
    with pytest.raises(ValueError, match=r"qa\.jsonl:2: expected a JSON object, got list"):
        run_economy(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_economy_bool_credit_is_rejected():
    from scarce_lab.environments.economy.world import EconomyConfig

    with pytest.raises(ValueError, match=r"rent\n.*valid integer.*input_value=True"):
        EconomyConfig(rent=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schedule", "weird"], "'weird' is not one of 'uniform', 'curriculum'"),
        (["--model", ""], "EconomyRunConfig.model: String should have at least 1 character (got '')"),
        (["--model", "scripted/nonexistent"], "known: scripted/random-rules, scripted/expert"),
        (["-S", "economy=[1]"], "EconomyRunConfig.economy: Input should be a valid dictionary"),
        (["-S", "economy.rnet=2"], "EconomyRunConfig.economy.rnet: Extra inputs are not permitted"),
        (["--task", "jsonl:/nonexistent.jsonl", "--model", "scripted/partial"], "--task jsonl:/nonexistent.jsonl"),
    ],
)
def test_economy_cli_bad_options_are_one_line_errors(tmp_path, args, message):
    res = CliRunner().invoke(app, ["run", "economy", "-e", "2", "--out", str(tmp_path / "o"), *args])
    assert res.exit_code == 2 and _flat(message) in _flat(res.output) and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


# -- SCARCE -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": ""}, "model must be a model name"),
        ({"model": "scripted/nonexistent"}, "model: 'scripted/nonexistent' names no scripted policy of scarce"),
        ({"model": "openai/x", "negotiator_model": "scripted/"}, "'scripted/' needs a policy name"),
        ({"tasks": ["nope"]}, "tasks: unknown task id(s) ['nope']"),
        ({"worker_budgets": {"w9": 5}}, "worker_budgets: unknown worker(s) ['w9']"),
    ],
)
def test_scarce_config_rejects_bad_models_and_tasks(kwargs, message):
    from scarce_lab.environments.scarce.runner import ScarceConfig

    with pytest.raises(ValueError) as info:
        ScarceConfig(**kwargs)
    assert message in str(info.value)


def test_scarce_table_on_bad_paths_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(app, ["table", "scarce", str(tmp_path / "missing")])
    assert res.exit_code == 2 and _flat("missing does not exist") in _flat(res.output)
    _one_run(tmp_path / "other")  # a run of another environment
    res = CliRunner().invoke(app, ["table", "scarce", str(tmp_path / "other")])
    assert res.exit_code == 2 and _flat("no SCARCE runs in this dataset (it holds sovsim)") in _flat(res.output)


# -- sandbox ------------------------------------------------------------------------
def test_binary_blob_executable_is_a_failed_command_not_a_crash(tmp_path):
    from scarce_lab.sandbox.base import ResourceLimits
    from scarce_lab.sandbox.local import run_limited

    blob = tmp_path / "executable"
    blob.write_bytes(bytes(range(256)) * 4)
    blob.chmod(0o755)
    r = run_limited(["./executable"], tmp_path, ResourceLimits(wall_seconds=5))
    assert r.exit_code == 126 and "Exec format error" in r.stderr and not r.timed_out
    r = run_limited(["./missing"], tmp_path, ResourceLimits(wall_seconds=5))
    assert r.exit_code == 127


def test_output_is_kept_when_an_escaped_process_holds_the_pipe(tmp_path):
    import shutil

    from scarce_lab.sandbox.base import ResourceLimits
    from scarce_lab.sandbox.local import run_limited

    if shutil.which("setsid") is None:
        pytest.skip("setsid (util-linux) not installed")
    r = run_limited("echo before; setsid sleep 4 & echo after", tmp_path, ResourceLimits(wall_seconds=1))
    assert r.stdout == "before\nafter\n"
    assert r.duration_s < 3.5  # wall limit + one shared 2 s grace, not 2 s per reader


# -- report -------------------------------------------------------------------------
def test_report_rejects_a_non_notebook_and_an_ambiguous_prefix(tmp_path):
    from scarce_lab.reporting import NOTEBOOKS, find_notebook

    bad = tmp_path / "bad.ipynb"
    bad.write_text("not a notebook")
    res = CliRunner().invoke(app, ["report", str(bad), "-o", str(tmp_path / "out.ipynb")])
    assert res.exit_code == 2 and _flat("not a readable notebook") in _flat(res.output)
    assert "Traceback" not in res.output
    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and _flat("is not a file") in _flat(res.output)
    if len(list(NOTEBOOKS.glob("0*.ipynb"))) > 1:
        with pytest.raises(FileNotFoundError, match="ambiguous"):
            find_notebook("0")


# -- SCARCE solver tools --------------------------------------------------------------
def test_solver_tool_paths_that_the_os_refuses_are_tool_errors(tmp_path):
    from scarce_lab.environments.scarce.agents import tools as T

    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "f.txt").write_text("x")
    bad = [
        (lambda: T.write_file(tmp_path, "a\x00b", "y"), "contains a NUL byte"),
        (lambda: T.write_file(tmp_path, "a" * 5000, "y"), "too long"),
        (lambda: T.read_file(tmp_path, "a" * 5000), "too long"),
        (lambda: T.write_file(tmp_path, "f.txt/x", "y"), "f.txt/x"),
        (lambda: T.read_file(tmp_path, "loop"), "loop"),
    ]
    for call, message in bad:
        with pytest.raises(T.ToolError) as info:
            call()
        assert message in str(info.value)
    assert T.write_file(tmp_path, "s.txt", "a\ud800b") == 3  # lone surrogate written as '?'
    assert (tmp_path / "s.txt").read_bytes() == b"a?b"


def test_command_with_nul_or_lone_surrogate_does_not_crash(tmp_path):
    from scarce_lab.sandbox.base import ResourceLimits
    from scarce_lab.sandbox.local import run_limited

    r = run_limited("echo a\x00b", tmp_path, ResourceLimits(wall_seconds=5))
    assert r.exit_code == 2 and "NUL byte" in r.stderr
    r = run_limited("echo a\ud800b", tmp_path, ResourceLimits(wall_seconds=5))
    assert r.exit_code == 0 and r.stdout == "a?b\n"


def test_economy_table_leaves_out_unfinished_runs_and_names_them(tmp_path):
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy

    done = run_economy(EconomyRunConfig(agents=3, episodes=5, eval_episodes=1, seed=1), tmp_path)
    killed = run_economy(EconomyRunConfig(agents=3, episodes=5, eval_episodes=1, seed=2), tmp_path)
    m = read_manifest(killed)
    m.status, m.ended_at = RunStatus.running, None
    (killed / MANIFEST).write_text(m.model_dump_json())
    res = CliRunner().invoke(app, ["table", "economy", str(tmp_path), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert f"warning: left out 1 unfinished run(s): {killed} (running)" in res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert [r["n_runs"] for r in doc["table"]] == [1] and done.exists()


def test_call_errors_counts_failed_calls_not_bad_answers(tmp_path):
    from scarce_lab.data.loaders import call_errors
    from scarce_lab.data.schema import LLMCallRecord

    def call(i, raw, error):
        return LLMCallRecord(call_id=str(i), model="nope/xyz", messages=[], messages_hash="h",
                             raw_response=raw, error=error)

    rec = RunRecorder.create(tmp_path / "r1", manifest())
    rec.record_calls([call(0, None, "BadRequestError: LLM Provider NOT provided\nmore"),
                      call(1, "{}", "field 'amount': Field required"), call(2, '{"amount": 1}', None)])
    rec.commit_round(0)
    rec.finish()
    assert call_errors([rec.run_dir]) == (3, 1, "BadRequestError: LLM Provider NOT provided")


def test_a_run_written_by_another_live_process_is_neither_moved_nor_resumed(tmp_path):
    import subprocess
    import sys

    from scarce_lab.data.recorder import RunInProgressError, run_in_progress
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy

    cfg = EconomyRunConfig(agents=2, episodes=2, eval_episodes=0)
    run_dir = tmp_path / cfg.run_id
    holder = (
        "import sys, time\n"
        "from scarce_lab.data.recorder import RunRecorder\n"
        "from scarce_lab.environments.economy.runner.play import EconomyRunConfig, manifest_for\n"
        "cfg = EconomyRunConfig(agents=2, episodes=2, eval_episodes=0)\n"
        f"RunRecorder.create({str(run_dir)!r}, manifest_for(cfg, cfg.run_id))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert run_in_progress(run_dir)
        with pytest.raises(RunInProgressError, match="another process"):
            RunRecorder.resume(run_dir)
        with pytest.raises(RunInProgressError, match="another process"):
            run_economy(cfg, tmp_path)
        assert [p.name for p in tmp_path.iterdir()] == [run_dir.name]  # not moved aside
    finally:
        proc.kill()
        proc.wait()
    assert not run_in_progress(run_dir)  # a dead writer's lock is gone: resuming is allowed
    assert read_manifest(run_economy(cfg, tmp_path, resume=True)).status == RunStatus.complete


def test_a_finished_run_directory_holds_only_data_files(tmp_path):
    rd = _one_run(tmp_path)
    assert sorted(p.name for p in rd.iterdir()) == ["events.jsonl", "llm_calls.jsonl", "manifest.json"]


def test_corrupt_response_cache_is_named_not_overwritten(tmp_path):
    from scarce_lab.llm.cache import ResponseCache

    bad = tmp_path / "responses.sqlite"
    bad.write_bytes(b"\x00garbage" * 600)
    with pytest.raises(ValueError, match=r"response cache .*responses\.sqlite is unusable"):
        ResponseCache(tmp_path)
    assert bad.read_bytes() == b"\x00garbage" * 600


# -- SovSim CLI (found by the adversarial pass) ----------------------------------------
def _sovsim_cli(args):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    return CliRunner().invoke(app, args)


def test_sovsim_rejects_empty_and_unknown_models_before_writing(tmp_path):
    for bad in ["", "scripted/nonexistent"]:
        res = _sovsim_cli(["run", "sovsim", "-m", bad, "-n", "1", "--rounds", "2", "-o", str(tmp_path / "x")])
        assert res.exit_code == 2, res.output
        assert "--model" in res.output
        assert not (tmp_path / "x").exists()


def test_sovsim_table_on_corrupt_or_foreign_data_is_a_clear_error(tmp_path):
    res = _sovsim_cli(["run", "sovsim", "-m", "scripted/greedy", "-c", "cpr", "-n", "1", "--rounds", "2",
                       "-o", str(tmp_path / "ok"), "--no-progress"])
    assert res.exit_code == 0, res.output
    (events,) = (tmp_path / "ok").glob("*/events.jsonl")
    lines = events.read_text().splitlines()
    lines[1] = "{broken"
    events.write_text("\n".join(lines) + "\n")
    res = _sovsim_cli(["table", "sovsim", str(tmp_path / "ok")])
    assert res.exit_code == 2 and "events.jsonl:2" in res.output.replace("\n", "").replace("│", "").replace(" ", "")
    # runs of another environment are not SovSim data
    from scarce_lab.data.recorder import RunRecorder
    from scarce_lab.data.schema import RunManifest

    rec = RunRecorder.create(tmp_path / "eco" / "r1", RunManifest(
        run_id="r1", environment="economy", condition="none", seed=0, package_version="0"))
    rec.commit_round(0)
    rec.finish()
    res = _sovsim_cli(["table", "sovsim", str(tmp_path / "eco")])
    assert res.exit_code == 2 and "no SovSim runs in this dataset (it holds economy)" in res.output


def test_sovsim_run_with_an_unreachable_model_fails_instead_of_faking_a_game(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")  # routable, keyed, but nothing listens on port 9
    res = _sovsim_cli(["run", "sovsim", "-m", "openai/unreachable", "-c", "cpr", "-n", "1", "--rounds", "3",
                       "-S", "llm.api_base=http://127.0.0.1:9/v1", "-S", "llm.max_retries=0",
                       "-o", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == 1
    (manifest,) = (tmp_path / "r").glob("*/manifest.json")
    import json

    m = json.loads(manifest.read_text())
    assert m["status"] == "failed" and "missing decision" in m["error"] and "round 1" in m["error"]
