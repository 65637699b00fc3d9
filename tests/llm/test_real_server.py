"""A real OpenAI-compatible server in the tests.

llama-cpp-python's own server (``python -m llama_cpp.server``, the ``server`` extra)
runs on 127.0.0.1 over the embedded model's GGUF with the ``chatml-function-calling``
chat format (tool calls). Through it, as a user with a local server would: SovSim with
``openai/...`` and ``--api-base`` (the server refuses ``json_schema``: ``auto`` moves to
``json_object`` and says so), SCARCE with the server as negotiator (``hosted_vllm/``)
and as solver with native tool calls, and the judge. Games are tiny (the 135M model
takes 1 to 3 s per call on 2 idle cores). Skipped, with the reason, only where the
server extra or the embedded model is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow]

_EXTRA = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def _missing() -> str | None:
    gone = [m for m in _EXTRA if importlib.util.find_spec(m) is None]
    if gone:
        return f"llama-cpp-python's server extra is not installed ({', '.join(gone)}): pip install -e '.[server]'"
    from scarce_lab.llm.embedded import EmbeddedModelUnavailable, model_path

    try:
        model_path()
    except EmbeddedModelUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def server():
    why = _missing()
    if why:
        pytest.skip(why)
    from scarce_lab.llm.embedded import model_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--model_alias", "smollm2",
         "--chat_format", "chatml-function-calling", "--n_ctx", "4096", "--n_threads", "2",
         "--host", "127.0.0.1", "--port", str(port), "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited: {proc.stderr.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail("llama_cpp.server did not answer in 120 s")
    yield url
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    # the openai provider wants a key; a local server takes any
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-server")


def _calls(run):
    return [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]


def test_sovsim_kcpr_completes_against_the_plain_server_with_auto(server, tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from scarce_lab.data.recorder import read_manifest

    out = tmp_path / "sovsim"
    r = CliRunner().invoke(app, [
        "run", "sovsim", "-c", "kcpr", "-m", "openai/smollm2", "--api-base", server, "-n", "1",
        "--no-progress", "-o", str(out), "-S", "game.rounds=1", "-S", "game.n_agents=2", "-S", "llm.max_tokens=80",
        "--concurrency", "1",
    ])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    man = read_manifest(run)
    assert man.status == "complete"
    assert man.notes["structured_output"]["openai/smollm2"] == ["json_object", "json_schema"]
    calls = _calls(run)
    refused = [c for c in calls if c["outcome"] == "request_refused"]
    answered = [c for c in calls if c["outcome"] != "request_refused"]
    # the server refuses json_schema (HTTP 500 naming response_format): not retried,
    # and the decisions were made under json_object
    assert refused and all(c["structured_output"] == "json_schema" for c in refused)
    assert all("response_format" in c["error"] for c in refused)
    assert answered and all(c["structured_output"] == "json_object" for c in answered)
    assert all(c["params"]["response_format"]["type"] == "json_object" for c in answered)
    # what was sent, recorded: sampling settings that change answers, and no price
    assert all(c["params"]["repeat_penalty"] == 1.0 and c["params"]["temperature"] == 0.7 for c in answered)
    assert all(c["cost_usd"] == 0.0 for c in answered)
    assert sum(c["outcome"] == "ok" for c in answered) >= 1
    # each decision names its calls (the refused json_schema call, then the json_object one)
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.data.tables.calls import decision_calls

    ds = load_dataset(out)
    named = [decision_calls(ds, k) for k in ("announcement", "extraction")]
    ids = [i for d in named for i in d["call_id"].to_list()]
    assert all(d["call_found"].all() for d in named) and sorted(ids) == sorted(c["call_id"] for c in calls)


def test_scarce_with_the_server_as_negotiator_and_as_solver(server, tmp_path):
    from scarce_lab.data.recorder import read_manifest
    from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, of, toy_task

    # negotiators through hosted_vllm/ (no key needed), scripted solvers
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", negotiator_model="hosted_vllm/smollm2",
                       deadline_min=1.0, private_rounds=0, scripted_call_s=0, seed=0,
                       llm={"api_base": server, "max_concurrency": 1})
    run = run_scarce(cfg, tmp_path / "neg", tasks=[toy_task()], grade_fn=fake_grade,
                     sandbox=FakeSandbox(tmp_path / "sbx"))
    assert read_manifest(run).status == "complete"
    evs = events(run)
    assert len(of(evs, "declaration")) == 2
    calls = _calls(run)
    assert {c["purpose"] for c in calls} >= {"negotiation:declaration"}
    assert {c["structured_output"] for c in calls if c["outcome"] != "request_refused"} == {"json_object"}

    # solvers with native tool calls (the server's chatml-function-calling format)
    cfg = ScarceConfig(workers=1, subruns=1, model="openai/smollm2", negotiator_model="scripted/fifo",
                       max_solver_steps=2, private_rounds=0, seed=0,
                       llm={"api_base": server, "structured_output": "tools", "max_concurrency": 1})
    run = run_scarce(cfg, tmp_path / "solve", tasks=[toy_task()], grade_fn=fake_grade,
                     sandbox=FakeSandbox(tmp_path / "sbx2"))
    assert read_manifest(run).status == "complete"
    solver = [c for c in _calls(run) if c["purpose"] == "solver"]
    assert solver and all(c["params"].get("tools") and c["params"]["tool_choice"] == "auto" for c in solver)
    # every step is a tool call, or a text answer recorded as such (never a silent action)
    assert all(c["outcome"] in ("tool_call", "text_for_tool", "invalid") for c in solver)
    assert any(c["outcome"] == "tool_call" for c in solver)
    acts = of(events(run), "solver_action")
    assert len(acts) == len({c["decision_id"] for c in solver})  # a text answer is asked once more


def test_judge_label_through_the_server(server, tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from tests.judge.test_judge_units import make_scarce_run

    data = make_scarce_run(tmp_path / "data")
    out = tmp_path / "labels"
    r = CliRunner().invoke(app, [
        "judge", "label", str(data), "--judges", "hosted_vllm/smollm2", "--api-base", server,
        "--out", str(out), "--no-progress", "--n-boot", "5", "--limit", "1",
    ])
    assert r.exit_code == 0, r.output
    calls = _calls(out)
    assert calls and {c["structured_output"] for c in calls if c["outcome"] != "request_refused"} == {"json_object"}
    rows = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert rows and all(row["status"] not in ("transport_error", "request_refused") for row in rows)


def test_judge_exits_nonzero_when_no_call_answered(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from tests.judge.test_judge_units import make_scarce_run

    data = make_scarce_run(tmp_path / "data")
    r = CliRunner().invoke(app, [
        "judge", "label", str(data), "--judges", "hosted_vllm/smollm2", "--api-base", "http://127.0.0.1:9/v1",
        "--out", str(tmp_path / "labels"), "--no-progress", "--n-boot", "5", "--timeout", "5",
    ], env={**os.environ})
    assert r.exit_code == 1, r.output
    assert "no judge call got an answer" in r.output
