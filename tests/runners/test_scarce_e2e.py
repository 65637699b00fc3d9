"""SCARCE end to end on the real local sandbox and real grading, and with the embedded model."""

from __future__ import annotations

import json

import pytest

from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, of, toy_task


@pytest.mark.slow
def test_scripted_run_on_local_sandbox_with_real_grading(tmp_path):
    from scarce_lab.tasks.suite import list_task_ids, load_suite

    if not {"rev", "tac"} <= set(list_task_ids()):
        pytest.skip("shipped tasks rev/tac not built")
    tasks = load_suite(["rev", "tac"])
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", task_assignment="distinct", seed=0)
    run = run_scarce(cfg, tmp_path, tasks=tasks)
    evs = events(run)
    assert read_manifest(run).status == "complete"
    by_task = {t.id: t for t in tasks}
    subs = {e["agent"]: e["payload"] for e in of(evs, "submission")}
    # the scripted solver writes the shipped reference solution: it scores 100 % on the hidden tests
    assert all(s["score"] == 1.0 and s["resolved"] and not s["deadline_missed"] for s in subs.values())
    assert all(s["passed"] == s["total"] >= 30 for s in subs.values())
    # it really ran the original program on the documented examples inside its slot
    started = {e["agent"]: e["payload"]["task_id"] for e in of(evs, "subrun_start")}
    checked = 0
    for e in of(evs, "execution"):
        p = e["payload"]
        task = by_task[started[e["agent"]]]
        for ex in task.examples[:3]:
            if p["command"].endswith(f"./{task.program} " + " ".join(ex.args)) or (
                not ex.args and p["command"].endswith(f"./{task.program}")
            ):
                if p["stdout"] == ex.stdout and p["exit_code"] == ex.exit_code:
                    checked += 1
                    break
    assert checked >= 2
    assert all(e["payload"]["exit_code"] == 0 for e in of(evs, "execution") if "compile.sh" in e["payload"]["command"])


@pytest.mark.embedded
def test_embedded_negotiators_short_deadline(tmp_path, embedded_model):
    # 2 workers request at t=0 (scripted steps cost 0 s) and meet in one contention with no
    # private round: 3 phases x 2 calls (+ repairs). The 1-minute deadline passes during it
    # (20 virtual s per phase), so the run stops there: a handful of model calls.
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", negotiator_model=embedded_model,
                       deadline_min=1.0, private_rounds=0, scripted_call_s=0, seed=0)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    evs = events(run)
    assert read_manifest(run).status == "complete"
    decls = of(evs, "declaration")
    assert len(decls) == 2
    for d in decls:
        p = d["payload"]
        assert 1 <= p["desired_position"] <= 2 and 1 <= p["desired_duration_seconds"] <= 300
        assert 0 <= p["bid_price"] <= 1000
    assert len(of(evs, "contention_start")) == 1 and of(evs, "contention_start")[0]["payload"]["participants"] == [
        "w0", "w1"]
    assert len(of(evs, "ballot")) == 2 and len(of(evs, "schedule")) == 1
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert 6 <= len(calls) <= 12 and all(c["model"] == embedded_model for c in calls)
    assert {e["agent"] for e in of(evs, "submission")} == {"w0", "w1"}


@pytest.mark.embedded
def test_embedded_solvers_reach_an_auction(tmp_path, embedded_model):
    # the embedded model as solver AND negotiator. Its masked actions are legal by
    # construction; following its checklist it writes a program and compile.sh, then
    # requests a slot at its third step: both workers meet in one contested contention
    # (no private round), negotiated by the model. 2 x 3 solver calls + 2 x 3 negotiation
    # calls (+ repairs).
    cfg = ScarceConfig(workers=2, subruns=1, model=embedded_model, private_rounds=0, max_solver_steps=3, seed=0)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    evs = events(run)
    assert read_manifest(run).status == "complete"
    acts = [e["payload"] for e in of(evs, "solver_action")]
    assert all(a["violation"] is None for a in acts), [a["violation"] for a in acts]
    assert {a["tool"] for a in acts} >= {"write_file", "request_execution_slot"}
    (c,) = of(evs, "contention_start")
    assert c["payload"]["participants"] == ["w0", "w1"]
    for d in of(evs, "declaration"):
        p = d["payload"]
        assert 1 <= p["desired_position"] <= 2 and 1 <= p["desired_duration_seconds"] <= 300 and 0 <= p["bid_price"] <= 1000
        assert not p["fallback_used"] and p["outcome"] == "ok"
    assert len(of(evs, "ballot")) == 2 and len(of(evs, "schedule")) == 1 and len(of(evs, "slot_start")) >= 1
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert {c["purpose"] for c in calls} >= {"solver", "negotiation:declaration", "negotiation:ballots"}
    assert {e["agent"] for e in of(evs, "submission")} == {"w0", "w1"}
