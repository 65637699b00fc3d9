"""SCARCE runs with seats (a model and settings per worker) and newcomers/leavers:
what each worker's calls send, events, manifest, privacy, determinism, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner, run_scarce
from scarce_lab.runtime import run_sync
from tests.runners.test_scarce_run import FakeClient, FakeSandbox, events, fake_grade, of, toy_task


class RecordingClient(FakeClient):
    """The fake model of test_scarce_run, keeping what each call was sent."""

    def __init__(self):
        self.sent: list[dict] = []

    async def adecide(self, *, model, messages, schema, fallback, seed, context, **kw):
        self.sent.append({"agent": context.agent, "model": model, "temperature": kw.get("temperature"),
                          "max_tokens": kw.get("max_tokens"), "reasoning_effort": kw.get("reasoning_effort")})
        return await super().adecide(model=model, messages=messages, schema=schema, fallback=fallback, seed=seed,
                                     context=context, **kw)


def run(cfg, tmp_path: Path, **kw) -> Path:
    return run_scarce(cfg, tmp_path, tasks=[toy_task(i) for i in range(3)], grade_fn=fake_grade,
                      sandbox=FakeSandbox(tmp_path / "sbx"), **kw)


def test_each_workers_calls_send_its_own_seat(tmp_path):
    cfg = ScarceConfig(workers=3, subruns=1, model="scripted/fifo", negotiator_model="fake/base",
                       llm={"temperature": 0.1}, private_rounds=1, seed=3,
                       seats={"w0.negotiator": {"model": "fake/a", "temperature": 0.7, "max_tokens": 64},
                              "w2": "scripted/strategic"})
    client = RecordingClient()
    r = run(cfg, tmp_path, client=client)
    sent = {}
    for s in client.sent:
        sent.setdefault(s["agent"], set()).add((s["model"], s["temperature"], s["max_tokens"]))
    assert sent["w0"] == {("fake/a", 0.7, 64)}
    assert {m for m, _, _ in sent["w1"]} == {"fake/base"} and {t for _, t, _ in sent["w1"]} == {0.1}
    assert "w2" not in sent  # scripted: no model calls
    m = read_manifest(r)
    assert m.models["w0.negotiator"] == "fake/a" and m.models["w1.negotiator"] == "fake/base"
    assert m.models["w2.negotiator"] == "scripted/strategic" and m.models["negotiator"] == "mixed"
    assert m.notes["seats"]["w0"]["negotiator"] == {"model": "fake/a", "temperature": 0.7, "max_tokens": 64}
    assert m.notes["composition"] == "w0=fifo+a (temperature=0.7, max_tokens=64), w1=fifo+base, w2=strategic"
    assert m.condition_settings["seats"] == m.notes["seats"]
    # calls record the model each worker used
    calls = [json.loads(x) for x in (r / "llm_calls.jsonl").read_text().splitlines()]
    assert {(c["agent"], c["model"]) for c in calls} == {("w0", "fake/a"), ("w1", "fake/base")}


def test_no_prompt_shows_another_workers_model_budget_or_private_messages(tmp_path):
    budgets = {"w0": 1111, "w1": 2222, "w2": 3333}
    cfg = ScarceConfig(workers=3, subruns=2, model="scripted/fifo", private_rounds=1, seed=5, worker_budgets=budgets,
                       joins={"w2": 1}, seats={"w0.negotiator": "fake/model-alpha", "w1.negotiator": "fake/model-beta",
                                               "w2.negotiator": "fake/model-gamma"})
    r = run(cfg, tmp_path, client=FakeClient())
    calls = [json.loads(x) for x in (r / "llm_calls.jsonl").read_text().splitlines()]
    evs = events(r)
    secrets = [(e["payload"]["text"], {e["payload"]["sender"], e["payload"]["recipient"]})
               for e in of(evs, "private_message")]
    assert calls and secrets
    models = {"w0": "model-alpha", "w1": "model-beta", "w2": "model-gamma"}
    for c in calls:
        me, text = c["agent"], "\n".join(m["content"] for m in c["messages"])
        for other in set(models) - {me}:
            assert models[other] not in text, f"{me}'s prompt names {other}'s model"
            assert str(budgets[other]) not in text, f"{me}'s prompt shows {other}'s budget"
        for secret, allowed in secrets:
            assert secret not in text or me in allowed, f"{me} saw private message {secret}"
    assert any(c["agent"] == "w2" for c in calls)  # the newcomer negotiated (positive control)


def test_newcomer_and_leaver_events_budgets_and_conservation(tmp_path):
    cfg = ScarceConfig(workers=4, subruns=3, model="scripted/random", seed=2, budget=150,
                       worker_budgets={"w3": 90}, worker_deadlines_min={"w3": 4.0},
                       joins={"w3": 1}, leaves={"w0": 1}, seats={"w1": "scripted/fifo"})
    r = run(cfg, tmp_path)
    evs = events(r)
    subs = sorted((e["payload"]["subrun"], e["agent"]) for e in of(evs, "submission"))
    assert subs == [(0, "w0"), (0, "w1"), (0, "w2"), (1, "w0"), (1, "w1"), (1, "w2"), (1, "w3"),
                    (2, "w1"), (2, "w2"), (2, "w3")]
    joined = [(e["agent"], e["payload"]) for e in of(evs, "agent_joined")]
    left = [(e["agent"], e["payload"]) for e in of(evs, "agent_left")]
    assert joined == [("w3", {"subrun": 1, "role": "worker"})] and left == [("w0", {"subrun": 1, "role": "worker"})]
    for e in of(evs, "agent_joined") + of(evs, "agent_left"):
        assert "scripted" not in json.dumps(e)  # never the model
    starts = {(e["payload"]["subrun"], e["agent"]): e["payload"] for e in of(evs, "subrun_start")}
    assert starts[(1, "w3")]["budget"] == 90 and starts[(1, "w3")]["deadline_s"] == 240.0  # from its first subrun
    for end in of(evs, "subrun_end"):
        p = end["payload"]
        present = {b["worker"] for b in p["balances"]}
        assert present == set(cfg.present(p["subrun"]))
        assert p["conserved"]
        assert sum(b["credits"] for b in p["balances"]) + p["sink_balance"] == sum(
            cfg.budgets_for()[w] for w in present)
    for e in of(evs, "contention_start"):
        assert set(e["payload"]["participants"]) <= set(cfg.present(e["payload"]["subrun"]))
    for e in of(evs, "private_message"):
        assert e["payload"]["recipient"] in cfg.present(e["payload"]["subrun"])
    assert read_manifest(r).status == "complete"


def test_same_seed_same_trajectory_with_seats_and_a_newcomer(tmp_path):
    cfg = ScarceConfig(workers=3, subruns=2, model="scripted/random", seed=9, joins={"w2": 1},
                       seats={"w0": {"model": "scripted/fifo", "memory": "none"}})
    a, b = run(cfg, tmp_path / "a"), run(cfg, tmp_path / "b")

    def strip(p):
        return [{k: v for k, v in e.items() if k != "timestamp"} for e in events(p)]

    assert strip(a) == strip(b) and len(strip(a)) > 20


class Killed(Exception):
    pass


def test_resume_across_a_join(tmp_path):
    cfg = ScarceConfig(workers=3, subruns=3, model="scripted/random", mechanism="revisable", private_rounds=1,
                       seed=5, joins={"w2": 1}, leaves={"w0": 1})

    def runner(out: Path, sbx: Path, die_at: int | None = None) -> ScarceRunner:
        r = ScarceRunner(cfg, out, tasks=[toy_task(i) for i in range(3)], grade_fn=fake_grade,
                         sandbox=FakeSandbox(sbx))
        if die_at is not None:
            orig = r._contention

            async def contention(participants, tc):
                if r.world.k == die_at:
                    raise Killed(f"killed before contention {die_at}")
                return await orig(participants, tc)

            r._contention = contention
        return r

    full = run_sync(runner(tmp_path / "full", tmp_path / "sbx_full").arun())
    evs = events(full)
    joined_at = next(e["seq"] for e in evs if e["kind"] == "agent_joined")
    after = [e["round"] for e in evs if e["kind"] == "contention_start" and e["seq"] > joined_at]
    assert len(after) >= 2
    die_at = after[1]  # the second contention after the newcomer joined
    with pytest.raises(Killed):
        run_sync(runner(tmp_path / "broken", tmp_path / "sbx_a", die_at=die_at).arun())
    run_dir = tmp_path / "broken" / full.name
    assert read_manifest(run_dir).status == "failed"
    partial = events(run_dir)
    assert any(e["kind"] == "agent_joined" for e in partial)  # interrupted after the join
    run_sync(runner(tmp_path / "broken", tmp_path / "sbx_b").arun(resume=True))
    assert read_manifest(run_dir).status == "complete"

    def strip(p):
        return [{k: v for k, v in e.items() if k != "timestamp"} for e in events(p)]

    assert strip(run_dir) == strip(full)


def test_sl_run_plays_a_mixed_population_with_a_newcomer(tmp_path):
    import scarce_lab as sl

    cfg = ScarceConfig(workers=3, subruns=2, model="scripted/random", seed=4, joins={"w2": 1},
                       seats={"newcomer": "scripted/fifo", "*.negotiator": "scripted/strategic"})
    (run_dir,) = sl.run(cfg, out=tmp_path, tasks=[toy_task(0)], grade_fn=fake_grade,
                        sandbox=FakeSandbox(tmp_path / "sbx"))
    m = read_manifest(run_dir)
    assert m.status == "complete" and m.models["w2.solver"] == "scripted/fifo"
    assert m.models["w0.solver"] == "scripted/random" and m.models["w0.negotiator"] == "scripted/strategic"
    assert [e["agent"] for e in of(events(run_dir), "agent_joined")] == ["w2"]


def test_one_worker_remembers_across_subruns_the_other_nothing(tmp_path):
    cfg = ScarceConfig(workers=2, subruns=2, model="scripted/fifo", negotiator_model="fake/model", private_rounds=0,
                       seed=2, seats={"w0": {"memory": "cross"}, "w1": {"memory": "none"}})
    r = run(cfg, tmp_path, client=FakeClient())
    calls = [json.loads(x) for x in (r / "llm_calls.jsonl").read_text().splitlines()]
    first_of_subrun1 = min(e["round"] for e in of(events(r), "contention_start") if e["payload"]["subrun"] == 1)

    def prompts(agent):
        return ["\n".join(m["content"] for m in c["messages"]) for c in calls
                if c["agent"] == agent and c["round"] == first_of_subrun1]

    assert prompts("w0") and prompts("w1")
    assert all("Past contentions" in p for p in prompts("w0"))  # cross: subrun 0's contentions shown
    assert not any("Past contentions" in p for p in prompts("w1"))  # none
    assert read_manifest(r).notes["seats"]["w1"]["memory"] == "none"
