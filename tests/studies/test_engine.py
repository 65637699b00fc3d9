"""The study engine (scarce_lab.studies.run): the eval-set rules with a fake task
(fast), and one small SCARCE study end to end against the fake OpenAI server (slow):
plan, cap, kill and resume without a lost or repeated call, labels, status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.studies import StudyError, get
from scarce_lab.studies.run import plan, read_state, run, status
from tests.fake_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = {"model": "scripted/routine", "negotiator_model": "scripted/reciprocal"}
TINY = {"workers": 2, "subruns": 1, "deadline_min": 3, "max_solver_steps": 6}


@pytest.fixture
def fake_task(monkeypatch):
    """Replace the environment's run task: each run's outcomes are taken in turn from
    ``plan[run_id]`` (default ``complete``); every call is recorded in ``seen``."""
    import scarce_lab.runners.executors as ex

    seen: list = []
    script: dict[str, list[str]] = {}

    def task(environment):
        def one(cfg, out, resume):
            seen.append(cfg)
            todo = script.get(cfg.run_id) or ["complete"]
            status = todo.pop(0) if len(todo) > 1 else todo[0]
            return ex.RunOutcome(cfg.run_id, status, None if status == "complete" else "boom: injected")
        return one

    monkeypatch.setattr(ex, "run_task", task)
    return types.SimpleNamespace(seen=seen, script=script)


def test_a_failed_run_is_retried_at_most_retries_times_and_every_attempt_is_recorded(tmp_path, fake_task):
    st = get("memory-horizon")
    ids = [c.run_id for _, c in st.configs(SCRIPTED, seeds=[3], arms=["subrun", "none"], overrides=TINY)]
    fake_task.script[ids[0]] = ["failed"]  # fails every time
    fake_task.script[ids[1]] = ["failed", "complete"]  # recovers on its second attempt
    result = run(st, SCRIPTED, out=tmp_path, seeds=[3], arms=["subrun", "none"], overrides=TINY, retries=2,
                 progress=False, say=lambda *_: None)
    attempts = read_state(tmp_path)["attempts"]
    assert [a["status"] for a in attempts[ids[0]]] == ["failed", "failed", "failed"]
    assert attempts[ids[0]][0]["error"] == "boom: injected"
    assert [a["status"] for a in attempts[ids[1]]] == ["failed", "complete"]
    assert [c.run_id for c in fake_task.seen].count(ids[0]) == 3
    assert result.arms["subrun"].failed == 1 and result.arms["none"].failed == 0
    assert result.stopped == "1 run(s) not complete after 2 retries (study.json: attempts)"


def test_a_later_run_with_other_choices_is_refused_naming_the_difference(tmp_path, fake_task):
    st = get("memory-horizon")
    run(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=TINY, progress=False, say=lambda *_: None)
    with pytest.raises(StudyError, match=r"seeds: \[0\] there, \[1\] asked"):
        run(st, SCRIPTED, out=tmp_path, seeds=[1], arms=["none"], overrides=TINY, progress=False,
            say=lambda *_: None)
    state = read_state(tmp_path)
    assert state["models"] == [SCRIPTED] and state["overrides"] == TINY and state["stopped"] == "complete"


def test_a_dry_run_is_refused_where_the_run_would_be_and_a_new_server_address_is_no_other_choice(tmp_path, fake_task):
    st = get("memory-horizon")
    first = {**TINY, "llm.api_base": "http://127.0.0.1:9/v1"}
    run(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=first, progress=False, say=lambda *_: None)
    with pytest.raises(StudyError, match=r"arms: \['none'\] there, \['subrun'\] asked"):
        plan(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["subrun"], overrides=first)
    moved = {**TINY, "llm.api_base": "http://127.0.0.1:10/v1", "llm.timeout_s": 30}  # the server restarted elsewhere
    assert len(plan(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=moved).runs) == 1
    run(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=moved, progress=False, say=lambda *_: None)
    assert read_state(tmp_path)["overrides"]["llm.api_base"] == "http://127.0.0.1:10/v1"
    with pytest.raises(StudyError, match="max_solver_steps"):  # a setting of the runs is still a choice
        plan(st, SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides={**moved, "max_solver_steps": 7})


@pytest.fixture
def widths(monkeypatch):
    """A fake ``scarce_lab.studies.report`` whose ``headline_widths`` returns the next
    of ``seq`` on each call (the last one again once they run out)."""
    seq: list = []
    calls: list = []

    def headline_widths(study, out, watched=None):
        calls.append(out)
        return seq[min(len(calls), len(seq)) - 1]

    module = types.ModuleType("scarce_lab.studies.report")
    module.headline_widths = headline_widths
    monkeypatch.setitem(sys.modules, "scarce_lab.studies.report", module)
    return types.SimpleNamespace(seq=seq, calls=calls)


def test_target_width_adds_seed_batches_until_every_interval_is_narrow_enough(tmp_path, fake_task, widths):
    st = get("memory-horizon")
    widths.seq += [{"none": {"reciprocity": 0.6, "reputation": None}, "cross": {"reciprocity": 0.5, "reputation": 0.1}},
                   {"none": {"reciprocity": 0.3, "reputation": 0.28}, "cross": {"reciprocity": 0.31, "reputation": 0.1}},
                   {"none": {"reciprocity": 0.2, "reputation": 0.2}, "cross": {"reciprocity": 0.25, "reputation": 0.1}}]
    result = run(st, SCRIPTED, out=tmp_path, seeds=[4, 5], arms=["none", "cross"], overrides=TINY,
                 target_width={"reciprocity": 0.3, "reputation": 0.3}, max_seeds=20, progress=False,
                 say=lambda *_: None)
    state = read_state(tmp_path)
    assert state["stopped"].startswith("target widths reciprocity 0.3, reputation 0.3 reached")
    assert "every watched interval is bounded" in state["stopped"]
    assert state["seeds_run"] == [4, 5, 6, 7, 8, 9]  # two batches of the study's two seeds added
    assert len(widths.calls) == 3 + 1  # after each batch, then once by status
    assert result.arms["cross"].widths == {"reciprocity": 0.25, "reputation": 0.1}


def test_target_width_stops_at_max_seeds_and_says_so(tmp_path, fake_task, widths):
    widths.seq.append({"none": {"reciprocity": 0.9}})
    run(get("memory-horizon"), SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=TINY,
        target_width={"reciprocity": 0.1}, max_seeds=3, progress=False, say=lambda *_: None)
    state = read_state(tmp_path)
    assert state["stopped"] == "max seeds 3 reached" and state["seeds_run"] == [0, 1, 2]
    assert sorted(c.seed for c in fake_task.seen) == [0, 0, 0, 1, 1, 2]  # no complete folder: each batch reruns


def test_one_target_width_watches_every_headline_metric_and_a_bad_one_is_refused(tmp_path, fake_task, widths):
    widths.seq.append({"none": {"reciprocity": 0.1, "alliance_formation": 0.1, "alliance_loyalty": 0.1,
                                "reputation": None}})  # no interval yet for one metric: not narrow enough
    run(get("memory-horizon"), SCRIPTED, out=tmp_path, seeds=[0], arms=["none"], overrides=TINY, target_width=0.5,
        max_seeds=2, progress=False, say=lambda *_: None)
    assert read_state(tmp_path)["stopped"] == "max seeds 2 reached"
    for bad, match in (({"survival_rate": 0.2}, "not a headline metric"), ({"reciprocity": float("nan")}, "finite"),
                       (0.0, "finite number > 0"), ({"reciprocity": True}, "finite number > 0")):
        with pytest.raises(StudyError, match=match):
            run(get("memory-horizon"), SCRIPTED, out=tmp_path / "x", target_width=bad, max_seeds=3,
                say=lambda *_: None)


def test_target_width_without_a_stop_is_refused():
    with pytest.raises(StudyError, match="--max-seeds or --cost-limit"):
        run(get("memory-horizon"), SCRIPTED, out=Path("unused"), target_width=0.2, say=lambda *_: None)


def test_plan_prices_the_negotiators_and_the_judges(tmp_path):
    prices = {"openai/priced": {"input_per_mtok": 100, "output_per_mtok": 400}}
    p = plan(get("memory-horizon"), {"model": "scripted/routine", "negotiator_model": "openai/priced"},
             out=tmp_path, seeds=[0], arms=["cross"], overrides={**TINY, "llm.prices": prices},
             judges=["openai/priced", "openai/priced"])
    neg = p.models["openai/priced"]
    # 2 workers x 6 requests x (3 + 2 private rounds) x 2 (a second call each)
    assert neg.unit_calls_high == 2 * 6 * 5 * 2 and neg.bounded
    judge = p.judges["openai/priced"]
    assert p.judge_units == (0, 2 * 6) and judge.calls_high == 2 * 2 * 12  # 2 judges x 2 calls x 12 units
    low, high = p.cost_usd
    assert low == 0 and high > 0 and high == neg.cost_range[1] + judge.cost_range[1]
    assert "at most 120 in all" in p.text() and not any(tmp_path.iterdir())


# -- end to end against the fake server ---------------------------------------------------
def _study_args(url: str, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["study", "run", "memory-horizon", "-m", "scripted/skilled:0.5", "--role", "negotiator_model=openai/fake",
            "--api-base", url, "--seed", "0", "--arm", "none", "--arm", "cross", "--out", str(out),
            "-S", "workers=2", "-S", "subruns=1", "-S", "deadline_min=3", "-S", "max_solver_steps=6",
            "-S", f"llm.cache_dir={cache}", "-S", "llm.max_concurrency=1", "--judges", "openai/fake,openai/fake",
            "--no-progress", *extra]


def _records(folder: Path) -> list[dict]:
    return [json.loads(x) for x in folder.joinpath("llm_calls.jsonl").read_text().splitlines() if x.strip()]


def _requests(out: Path) -> dict[str, set[str]]:
    """Per run folder (and labels/), the requests recorded (their messages' hashes)."""
    return {d.name: {r["messages_hash"] for r in _records(d)} for d in out.iterdir()
            if (d / "llm_calls.jsonl").exists()}


KILLER = """
import os, signal, sys
from scarce_lab.llm.cache import ResponseCache
put, n = ResponseCache.put, [0]
def counting(self, *a, **k):
    put(self, *a, **k)
    n[0] += 1
    if n[0] == int(os.environ["KILL_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)
ResponseCache.put = counting
from scarce_lab.cli import main
sys.argv = ["scarce-lab", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_study_end_to_end_plan_cap_kill_resume_labels_status(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "none")
    runner = CliRunner()
    with FakeOpenAIServer(latency_s=0.0) as ref_srv:  # the reference: one uninterrupted study
        r = runner.invoke(app, _study_args(ref_srv.url, tmp_path / "ref", tmp_path / "cache-ref"))
        assert r.exit_code == 0, r.output
        ref_requests = ref_srv.stats()["requests"]
    assert "labels: " in r.output and (tmp_path / "ref" / "labels" / "labels.parquet").exists()
    with FakeOpenAIServer(latency_s=0.0) as srv:
        out, cache = tmp_path / "out", tmp_path / "cache"
        # the plan: printed, nothing sent, no folder
        r = runner.invoke(app, [*_study_args(srv.url, out, cache), "--dry-run"])
        assert r.exit_code == 0 and "2 run(s), 2 to run" in r.output and "judge panel" in r.output, r.output
        # a cap below the plan's low estimate: refused before any call
        priced = ["-S", 'llm.prices={"openai/fake": {"input_per_mtok": 1000, "output_per_mtok": 1000}}']
        args = _study_args(srv.url, tmp_path / "capped", cache, *priced, "--cost-limit", "0.0001")
        r = runner.invoke(app, [*args[:3], "-m", "openai/fake", *args[5:]])
        assert r.exit_code != 0 and "below the plan's low estimate" in r.output, r.output
        assert srv.stats()["requests"] == 0 and not (tmp_path / "capped").exists()
        # killed (SIGKILL) after its 7th answer, then resumed
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KILL_AFTER": "7"}
        killed = subprocess.run([sys.executable, "-c", KILLER, *_study_args(srv.url, out, cache)], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=300)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        assert srv.stats()["requests"] == 7
        assert read_state(out)["stopped"] is None  # killed before the end
        r = runner.invoke(app, _study_args(srv.url, out, cache))
        assert r.exit_code == 0, r.output
        # no call lost or repeated: as many requests as the uninterrupted study, each recorded once
        assert srv.stats()["requests"] == ref_requests
    # every request of the uninterrupted study is recorded (those answered after the last
    # commit come back from the cache on resume, recorded as cache hits)
    assert _requests(out) == _requests(tmp_path / "ref")
    for ref_dir in (tmp_path / "ref").glob("scarce_*"):
        assert (out / ref_dir.name / "events.jsonl").read_text().count("\n") == \
            (ref_dir / "events.jsonl").read_text().count("\n")
    r = runner.invoke(app, ["study", "status", str(out)])
    assert r.exit_code == 0 and "arm none: 1 done, 0 failed" in r.output and "arm cross: 1 done" in r.output
    assert "last run stopped: complete" in r.output
    st = status(out)
    sent = sum(not r["cache_hit"] for d in out.glob("scarce_*") for r in _records(d))
    assert st.labelled > 0 and sum(a.calls for a in st.arms.values()) == sent


def test_cli_list_show_status_and_report_use_the_study_folder(tmp_path, fake_task, monkeypatch):
    import scarce_lab as sl

    st = sl.study("memory-horizon")
    assert st is get("memory-horizon")
    st.run(model=SCRIPTED, out=tmp_path, seeds=[2], arms=["cross"], overrides=TINY, progress=False,
           say=lambda *_: None)
    asked = []

    class Found:
        frame = None

        def markdown(self):
            return "| source | verdict |"

    def report(study, out, *, labels=None):
        asked.append((study.name, out, labels))
        return Found()

    module = types.ModuleType("scarce_lab.studies.report")
    module.report, module.headline_widths = report, lambda study, out, watched=None: {"cross": {"reciprocity": None}}
    monkeypatch.setitem(sys.modules, "scarce_lab.studies.report", module)
    runner = CliRunner()
    r = runner.invoke(app, ["study", "list"])
    assert r.exit_code == 0 and "memory-horizon: " in r.output
    r = runner.invoke(app, ["study", "report", str(tmp_path), "--save", str(tmp_path / "saved")])
    assert r.exit_code == 0 and "| source | verdict |" in r.output, r.output
    assert asked == [("memory-horizon", tmp_path, None)]
    assert (tmp_path / "saved" / "memory-horizon.md").read_text() == "| source | verdict |"
    r = runner.invoke(app, ["study", "status", str(tmp_path)])
    assert "arm cross: 0 done, 0 failed, 0 unfinished, 1 missing" in r.output  # the fake task wrote no folder
    assert "widths: reciprocity -" in r.output
    r = runner.invoke(app, ["study", "run", "memory-horizon", "--arm", "sideways", "-m", "x", "--dry-run"])
    assert r.exit_code == 2 and "--arm" in r.output and "sideways" in r.output
    r = runner.invoke(app, ["study", "run", "memory-horizon", "--role", "judge_model=x", "--dry-run"])
    assert r.exit_code == 2 and "--role" in r.output and "judge_model" in r.output


def test_status_says_when_the_arms_dollars_miss_calls_the_ledger_charged():
    from scarce_lab.studies.run import ArmStatus, StudyStatus

    arms = {"cross": ArmStatus("cross", done=2, calls=40, usd=0.31)}
    assert "the ledger (charged as each call" not in StudyStatus("s", Path("o"), arms, ledger_usd=0.31).text()
    text = StudyStatus("s", Path("o"), arms, ledger_usd=0.37).text()  # calls answered before a kill, replayed at $0
    assert "the arms' $0.3100 counts each run's recorded calls" in text and "replays from the response cache" in text
