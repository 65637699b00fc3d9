"""Errors where the user is.

``sl.run`` returned normally for a misspelled policy, an unknown embedded model, a
missing API key and a failed run (the error only inside ``manifest.json``); the
progress bar reached 12/12 for a game that failed in round 1; a missing key was
retried for 26-28 s; ``sl.table(ds, presett=...)`` ignored the option; ``table
sovsim`` on failed runs printed empty tables with exit 0; ``sl.load("data/sovsim")``
failed from ``notebooks/`` while notebook parameters resolved from the root.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import scarce_lab as sl
from scarce_lab.cli import app
from scarce_lab.config import EconomyRunConfig, SovSimConfig
from scarce_lab.runners.preflight import ModelUnavailableError, RunFailedError

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _one_line(output: str) -> str:
    """The CLI's message with rich's box and line wrapping taken out."""
    return " ".join(output.replace("│", " ").replace("╭", " ").replace("╰", " ").replace("─", "").split())


# -- before anything runs ---------------------------------------------------------------------
@pytest.mark.parametrize("cfg,match", [
    (SovSimConfig(condition="kcpr", model="embedded/smollm3"), r"no embedded model 'smollm3'; available: embedded/smollm2"),
    (EconomyRunConfig(task="arithmetic", model="embedded/smollm3", episodes=2), r"smollm3"),
])  # an unknown scripted name is refused sooner, when the config is built (tests/runners/test_harness_files.py)
def test_sl_run_refuses_an_unusable_model_before_writing(cfg, match, tmp_path):
    with pytest.raises(ModelUnavailableError, match=match):
        sl.run(cfg, out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_a_missing_key_fails_at_once_naming_the_variable(tmp_path, monkeypatch):
    from scarce_lab.llm.transport import load_litellm

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    litellm = load_litellm()
    calls = []  # "at once": before any model call (each was retried, 26-28 s in all), not under a time

    async def sent(**kw):
        calls.append(kw.get("model"))
        raise RuntimeError("a model call was made")

    monkeypatch.setattr(litellm, "acompletion", sent)
    with pytest.raises(ModelUnavailableError, match="OPENAI_API_KEY is not set"):
        sl.run(SovSimConfig(condition="cpr", model="openai/gpt-4o-mini"), out=tmp_path / "runs")
    assert calls == [] and not (tmp_path / "runs").exists()
    res = runner.invoke(app, ["run", "sovsim", "-m", "anthropic/claude-3-5-sonnet-latest", "-c", "cpr", "-n", "1",
                              "-o", str(tmp_path / "cli"), "--no-progress"])
    assert res.exit_code == 2 and "ANTHROPIC_API_KEY" in _one_line(res.output)
    assert not (tmp_path / "cli").exists()


@pytest.mark.parametrize("value", ["", "   ", "\t\n"])
def test_a_key_set_but_empty_is_a_missing_key(value, tmp_path, monkeypatch):
    """Adversarial review: ``OPENAI_API_KEY=`` (an empty export in a .env file) passed
    the preflight, because litellm only checks that the variable exists; every call
    then failed authentication."""
    monkeypatch.setenv("OPENAI_API_KEY", value)
    with pytest.raises(ModelUnavailableError, match="OPENAI_API_KEY is set but empty"):
        sl.run(SovSimConfig(condition="cpr", model="openai/gpt-4o-mini"), out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
    import os

    assert os.environ["OPENAI_API_KEY"] == value  # the check leaves the environment as it was


@pytest.mark.parametrize("model,match", [
    ("nosuchprovider/foo", r"cannot route it to a provider"),
    ("Scripted/greedy", r"case-sensitive: did you mean 'scripted/greedy'"),
    ("OpenAI/gpt-4o-mini", r"case-sensitive: did you mean 'openai/gpt-4o-mini'"),
    ("Embedded/smollm2", r"did you mean 'embedded/smollm2'"),
])
def test_a_name_litellm_cannot_route_is_refused_before_the_run(model, match, tmp_path):
    """Adversarial review: these passed the preflight (litellm's ``validate_environment``
    finds no key to miss for an unknown provider) and the run then failed at its first
    decision with a transport error."""
    with pytest.raises(ModelUnavailableError, match=match):
        sl.run(SovSimConfig(condition="cpr", model=model), out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_local_servers_need_no_key(tmp_path, monkeypatch):
    from scarce_lab.runners.preflight import check_model

    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    check_model("ollama/llama3")  # litellm lists OLLAMA_API_BASE, which has a default: not a credential
    check_model("hosted_vllm/m", None)


def test_credential_errors_are_not_retried():
    """litellm wraps the OpenAI SDK's "Missing credentials" as InternalServerError (a
    retryable class): it was retried for 26-28 s."""
    from scarce_lab.llm.transport import load_litellm, retryable

    lit = load_litellm()
    missing = lit.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`, or set "
                                      "the `OPENAI_API_KEY` environment variable.", llm_provider="openai",
                                      model="gpt-4o-mini")
    assert not retryable(missing)
    assert not retryable(lit.AuthenticationError("bad key", llm_provider="openai", model="gpt-4o-mini"))
    assert retryable(lit.InternalServerError("upstream 502", llm_provider="openai", model="gpt-4o-mini"))


# -- a failed run ------------------------------------------------------------------------------
# a routable model whose server refuses connections (port 9, discard): every call fails
# at once. (``nosuchprovider/foo`` is refused before the run by the preflight now.)
UNREACHABLE = "http://127.0.0.1:9/v1"
FAILING = dict(condition="cpr", model="openai/unreachable", game={"rounds": 3},
               llm={"max_retries": 0, "cache": False, "api_base": UNREACHABLE})


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def test_sl_run_raises_for_a_failed_run_with_the_manifest_reason(tmp_path):
    cfg = SovSimConfig.model_validate(FAILING)
    with pytest.raises(RunFailedError) as info:
        sl.run(cfg, out=tmp_path)
    err = info.value
    man = json.loads((err.run_dir / "manifest.json").read_text())
    assert man["status"] == "failed" and err.status == "failed" and err.reason == man["error"]
    assert "missing decision" in str(err) and "round 1" in str(err)


def test_cli_run_economy_failed_run_is_one_line_and_nonzero(tmp_path):
    res = runner.invoke(app, ["run", "economy", "--task", "arithmetic", "--model", "openai/unreachable", "--agents", "2",
                              "--episodes", "1", "--eval-episodes", "0", "-S", "llm.max_retries=0", "--no-cache",
                              "-S", f"llm.api_base={UNREACHABLE}",
                              "--out", str(tmp_path)])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    # one line for the failed run, one for the sweep's counts
    assert len(lines) == 2 and lines[0].startswith("error: run ") and "missing decision" in lines[0]
    assert lines[1].endswith(": failed 1")
    assert "Traceback" not in res.output
    (manifest,) = tmp_path.glob("*/manifest.json")
    assert json.loads(manifest.read_text())["status"] == "failed"


def test_progress_bar_does_not_fill_a_failed_game(tmp_path, capsys):
    from scarce_lab.environments.sovsim.runner.play import run_sweep

    ok = SovSimConfig(condition="cpr", model="scripted/sustainable", game={"rounds": 3})
    bad = SovSimConfig.model_validate(FAILING)
    res = run_sweep([ok, bad], tmp_path, progress=True)
    assert sorted(r.status for r in res) == ["complete", "failed"]
    err = capsys.readouterr().err
    final = err.replace("\r", "\n").strip().splitlines()[-1]
    assert "3/6" in final and "1 failed" in final and "100%" not in final, final


def test_cli_table_of_failed_runs_is_an_error(tmp_path):
    with pytest.raises(RunFailedError):
        sl.run(SovSimConfig.model_validate(FAILING), out=tmp_path)
    res = runner.invoke(app, ["table", "sovsim", str(tmp_path)])
    assert res.exit_code == 2 and "no finished simulation" in _one_line(res.output)
    with pytest.raises(ValueError, match="no finished simulation"):
        sl.table(tmp_path)


# -- options and paths ----------------------------------------------------------------------------
def test_sl_table_refuses_unknown_options_and_wrong_kinds():
    ds = sl.load(REPO / "data" / "sovsim")
    with pytest.raises(TypeError, match=r"unknown option 'presett'.*did you mean 'preset'"):
        sl.table(ds, presett="govsim")
    with pytest.raises(ValueError, match=r"strict='false' must be a bool"):
        sl.table(ds, strict="false")
    with pytest.raises(ValueError, match=r"preset='sovsin' is not one of"):
        sl.table(ds, preset="sovsin")
    eco = sl.load(REPO / "data" / "economy" / "blocksworld")
    with pytest.raises(TypeError, match="unknown option 'window' for a economy table; options: dynamics"):
        sl.table(eco, window=5)
    strict, lenient = sl.table(ds, strict=True), sl.table(ds)
    assert strict.frame.height == lenient.frame.height > 0


def test_relative_paths_resolve_from_the_project_root_everywhere(monkeypatch):
    """One rule for sl.load and notebook parameters (datasets.resolve_path)."""
    from scarce_lab.datasets import resolve_path

    monkeypatch.chdir(REPO / "notebooks")
    assert resolve_path("data/sovsim") == REPO / "data" / "sovsim"
    from_notebooks = sl.load("data/sovsim").runs.collect().height
    monkeypatch.chdir(REPO)
    assert sl.load("data/sovsim").runs.collect().height == from_notebooks > 0


def test_outside_a_checkout_relative_paths_are_the_working_directory(tmp_path, monkeypatch):
    from scarce_lab.datasets import resolve_path

    monkeypatch.chdir(tmp_path)
    assert resolve_path("x/y") == tmp_path / "x" / "y"
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nothing")):
        sl.load("nothing")


def test_one_command_line_gives_one_value_per_setting(tmp_path, monkeypatch):
    """-S twice with two values, or an -S without '=', is refused naming it; an -S over
    an option's value wins (the documented precedence) and says so; --out that is a file
    is refused before anything runs; the default --out is runs/NAME at the project root,
    the folder sl.load('runs/NAME') reads, from whatever working directory."""
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from scarce_lab.datasets import resolve_path

    base = ["run", "sovsim", "-m", "scripted/greedy", "-c", "cpr", "-n", "1", "--no-progress"]
    r = CliRunner().invoke(app, [*base, "-o", str(tmp_path), "-S", "game.rounds=3", "-S", "game.rounds=5"])
    assert r.exit_code == 2 and "game.rounds is set twice (3 and 5)" in r.output
    r = CliRunner().invoke(app, [*base, "-o", str(tmp_path), "-S", "game.rounds"])
    assert r.exit_code == 2 and "expected key=value" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, [*base, "-o", str(tmp_path), "--rounds", "4", "-S", "game.rounds=2"])
    assert r.exit_code == 0 and "-S game.rounds=2 replaces the option's value 4" in r.output
    assert "rounds=2" in r.output
    (tmp_path / "file").write_text("x")
    r = CliRunner().invoke(app, [*base, "-o", str(tmp_path / "file")])
    assert r.exit_code == 2 and "is a file, not a folder" in r.output
    project = tmp_path / "proj"
    (project / "scarce_lab").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "notebooks").mkdir()
    monkeypatch.chdir(project / "notebooks")
    r = CliRunner().invoke(app, [*base, "--rounds", "2"])
    assert r.exit_code == 0, r.output
    assert resolve_path("runs/sovsim") == project / "runs" / "sovsim"
    assert len(list((project / "runs" / "sovsim").glob("*/manifest.json"))) == 1
    assert not (project / "notebooks" / "runs").exists()
