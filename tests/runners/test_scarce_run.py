"""SCARCE runs end to end: scripted agents, budgets, deadlines with queue waits, privacy."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data.recorder import read_manifest
from scarce_lab.data.schema import LLMCallRecord, messages_hash
from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner, run_scarce
from scarce_lab.environments.scarce.tables import (
    contentions_table,
    messages_table,
    submissions_table,
)
from scarce_lab.llm import DecisionOutcome
from scarce_lab.sandbox.base import ExecResult, Sandbox, SlotNotActiveError
from scarce_lab.tasks.model import Task


class FakeSandbox(Sandbox):
    """In-memory sandbox: commands succeed instantly, only inside an open slot."""

    def __init__(self, root: Path):
        self.root = root
        self.slots: set[str] = set()
        self.commands: list[tuple[str, str]] = []

    def workdir(self, worker):
        d = self.root / worker
        d.mkdir(parents=True, exist_ok=True)
        return d

    def open_slot(self, worker, duration_s):
        self.slots.add(worker)

    def close_slot(self, worker):
        self.slots.discard(worker)

    def run(self, worker, command, limits=None):
        if worker not in self.slots:
            raise SlotNotActiveError(f"worker {worker!r} has no active execution slot")
        self.commands.append((worker, command))
        return ExecResult(command=command, exit_code=0, stdout="ok", stderr="", duration_s=0.001)

    def close(self):
        self.slots.clear()


class Grade:
    def __init__(self, score):
        self.score, self.resolved, self.passed, self.total, self.violation = score, score == 1.0, int(score * 4), 4, None


def fake_grade(task, folder):
    """1.0 when the scripted solver wrote compile.sh, else 0.0 (no real build: plumbing tests)."""
    return Grade(1.0 if (Path(folder) / "compile.sh").exists() else 0.0)


def toy_task(i: int = 0) -> Task:
    return Task(id=f"toy{i}", name=f"toy {i}", program="toy", documentation="toy prints its input",
                examples=[{"args": [], "stdin": "a\n", "stdout": "a\n"}] * 3)


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def of(evs, kind):
    return [e for e in evs if e["kind"] == kind]


def test_queue_waits_count_against_deadlines(tmp_path):
    # Decisions cost 0 s, commands 5 s: all four request at t=0; FIFO by name; 20 s slots
    # back to back: w0 [0,20], w1 [20,40], w2 [40,60], w3 would start at 60 = its deadline.
    cfg = ScarceConfig(workers=4, subruns=1, model="scripted/fifo", scheduler="fifo", scripted_call_s=0,
                       command_s=5, worker_deadlines_min={"w3": 1.0}, seed=3)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    evs = events(run)
    starts = {e["agent"]: (e["payload"]["start_s"], e["payload"]["waited_s"]) for e in of(evs, "slot_start")}
    assert starts == {"w0": (0.0, 0.0), "w1": (20.0, 20.0), "w2": (40.0, 40.0)}
    subs = {e["agent"]: e for e in of(evs, "submission")}
    assert subs["w3"]["payload"]["deadline_missed"] and subs["w3"]["t"] == 60.0
    assert subs["w3"]["payload"]["score"] == 0.0 and subs["w3"]["payload"]["reason"] == "deadline"
    assert not any(subs[w]["payload"]["deadline_missed"] for w in ("w0", "w1", "w2"))
    assert subs["w2"]["t"] == 60.0  # its slot ended at 60 s, then it submitted (decisions cost 0)
    assert read_manifest(run).status == "complete"


def test_scripted_ballot_run_budgets_conserved_and_tables(tmp_path):
    cfg = ScarceConfig(workers=4, subruns=2, model="scripted/random", private_rounds=2, mechanism="revisable",
                       budget=150, rich_worker_budget=900, seed=7, deadline_min=8)
    sbx = FakeSandbox(tmp_path / "sbx")
    run = run_scarce(cfg, tmp_path, tasks=[toy_task(i) for i in range(3)], grade_fn=fake_grade, sandbox=sbx)
    evs = events(run)
    # every worker finishes every subrun exactly once
    assert sorted((e["payload"]["subrun"], e["agent"]) for e in of(evs, "submission")) == [
        (k, f"w{i}") for k in range(2) for i in range(4)
    ]
    # credits conserved per subrun; nobody below zero; payments never above the price
    for end in of(evs, "subrun_end"):
        k = end["payload"]["subrun"]
        pays = [e["payload"] for e in of(evs, "payment") if e["payload"]["subrun"] == k]
        assert end["payload"]["conserved"]
        assert sum(p["amount"] for p in pays) == end["payload"]["sink_balance"]
        assert sum(b["credits"] for b in end["payload"]["balances"]) + end["payload"]["sink_balance"] == 3 * 150 + 900
        assert all(p["amount"] <= p["requested"] and p["balance_after"] >= 0 for p in pays)
    # every contention is committed and has one winner
    contention_ids = {e["round"] for e in of(evs, "contention_start")}
    assert contention_ids <= {e["round"] for e in of(evs, "round_committed")}
    ct = contentions_table(run)
    assert ct.height == sum(len(e["payload"]["participants"]) for e in of(evs, "contention_start"))
    wins = ct.group_by("contention").agg(pl.col("won").sum().alias("w"))
    assert wins["w"].to_list() == [1] * len(contention_ids)
    assert int(ct["payment"].sum()) == sum(e["payload"]["sink_balance"] for e in of(evs, "subrun_end"))
    # private messages: the random policy talks; counts match the events
    n_private = len(of(evs, "private_message"))
    assert n_private > 0 and int(ct["private_sent"].sum()) == n_private == int(ct["private_received"].sum())
    mt = messages_table(run)
    assert mt.height == ct.height
    assert sum(len(json.loads(x)) for x in mt["private_sent"]) == n_private
    st = submissions_table(run)
    assert st.height == 8 and st["budget_initial"].to_list().count(900) == 2
    # commands ran only inside slots (the fake sandbox refuses otherwise)
    assert len(sbx.commands) == len(of(evs, "execution")) > 0
    assert all(not e["payload"]["refused"] for e in of(evs, "execution"))


def test_same_seed_same_trajectory(tmp_path):
    def run(sub):
        cfg = ScarceConfig(workers=3, subruns=1, model="scripted/random", seed=11, private_rounds=1)
        d = run_scarce(cfg, tmp_path / sub, tasks=[toy_task()], grade_fn=fake_grade,
                       sandbox=FakeSandbox(tmp_path / sub / "sbx"))
        return [(e["kind"], e["agent"], e["t"], json.dumps(e["payload"], sort_keys=True)) for e in events(d)]

    assert run("a") == run("b")


def test_sweep_skips_complete_run(tmp_path):
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", seed=1)
    kw = {"tasks": [toy_task()], "grade_fn": fake_grade}
    first = run_scarce(cfg, tmp_path, sandbox=FakeSandbox(tmp_path / "s1"), **kw)
    mtime = (first / "events.jsonl").stat().st_mtime_ns
    again = run_scarce(cfg, tmp_path, sandbox=FakeSandbox(tmp_path / "s2"), **kw)
    assert again == first and (first / "events.jsonl").stat().st_mtime_ns == mtime


class _RogueSolver:
    """Tries a command before holding a slot, then submits."""

    scripted, model = True, "scripted/rogue"

    def __init__(self):
        self.n = 0

    async def step(self, obs):
        from scarce_lab.agents.decided import Decided
        from scarce_lab.environments.scarce.agents import SolverAction

        self.n += 1
        if self.n == 1:
            return Decided(SolverAction(tool="run_command", command="echo hi"))
        if self.n == 2:
            return Decided(SolverAction(tool="write_file", path="../escape.txt", content="x"))
        return Decided(SolverAction(tool="submit"))


def test_command_outside_slot_refused_and_path_escape_blocked(tmp_path):
    cfg = ScarceConfig(workers=1, subruns=1, model="scripted/fifo", seed=0)
    runner = ScarceRunner(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    orig = runner._agents
    runner._agents = lambda w, task: (_RogueSolver(), orig(w, task)[1])
    from scarce_lab.llm.client import run_sync

    evs = events(run_sync(runner.arun()))
    ex = of(evs, "execution")
    assert len(ex) == 1 and ex[0]["payload"]["refused"] and "no active execution slot" in ex[0]["payload"]["error"]
    assert of(evs, "tool_error")[0]["payload"]["error"].startswith("path: '../escape.txt' is outside")
    assert not (tmp_path / "sbx" / "escape.txt").exists()


# -- privacy: scan the prompts an LLM negotiator is shown --------------------------------
class FakeClient:
    """Answers like a model: declares, explains, sends a traceable private message, ballots."""

    async def adecide(self, *, model, messages, schema, fallback, seed, context, **kw):
        phase = context.purpose.split(":")[1]
        if phase == "declaration":
            d = schema(desired_position=1, desired_duration_seconds=20, bid_price=0)
        elif phase == "reasoning":
            d = schema(reasoning=f"{context.agent} needs the sandbox")
        elif phase == "private":
            to = typing.get_args(schema.model_fields["to"].annotation)[0]
            d = schema(to=to, text=f"SECRET-{context.agent}-TO-{to}-C{context.round}")
        else:
            d = fallback
        rec = LLMCallRecord(call_id=f"{context.agent}-{seed}", agent=context.agent, round=context.round,
                            purpose=context.purpose, model=model, messages=messages,
                            messages_hash=messages_hash(messages), raw_response=d.model_dump_json(),
                            parsed=d.model_dump(),
                            # what it was asked to send, as a client records it (the record gate compares)
                            params={k: kw[k] for k in ("temperature", "max_tokens", "reasoning_effort")
                                    if kw.get(k) is not None})
        return DecisionOutcome(decision=d, valid=True, repaired=False, fallback_used=False, violation=None,
                               calls=[rec])


def test_no_private_information_in_other_workers_prompts(tmp_path):
    budgets = {"w0": 1111, "w1": 2222, "w2": 3333}
    # 690, 765, 816 s: pairwise gaps are not multiples of the 20 s phase cost, so one
    # worker's remaining time never equals another's by construction
    deadlines_min = {"w0": 11.5, "w1": 12.75, "w2": 13.6}
    cfg = ScarceConfig(workers=3, subruns=1, model="scripted/fifo", negotiator_model="fake/model",
                       worker_budgets=budgets, worker_deadlines_min=deadlines_min, private_rounds=1, seed=5)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade,
                     sandbox=FakeSandbox(tmp_path / "sbx"), client=FakeClient())
    evs = events(run)
    tc = {e["round"]: e["t"] for e in of(evs, "contention_start")}
    secrets = [(e["payload"]["text"], {e["payload"]["sender"], e["payload"]["recipient"]})
               for e in of(evs, "private_message")]
    assert secrets, "the fake model sent private messages"
    calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert calls
    seen_own_budget = seen_secret = 0
    for c in calls:
        me, k = c["agent"], c["round"]
        text = "\n".join(m["content"] for m in c["messages"])
        for other in budgets:
            if other == me:
                continue
            dl = deadlines_min[other] * 60
            remaining = [str(int(round(dl - tc[k] - 20 * j))) for j in range(4)]  # at each phase
            for forbidden in (str(budgets[other]), str(int(dl)), *remaining):
                assert forbidden not in text, f"{me}'s prompt shows {other}'s private number {forbidden}"
        seen_own_budget += str(budgets[me]) in text
        for secret, allowed in secrets:
            if secret in text:
                assert me in allowed, f"{me} saw private message {secret}"
                seen_secret += 1
    assert seen_own_budget == len(calls)  # positive control: own budget is shown
    assert seen_secret > 0  # positive control: recipients do see their messages


@pytest.mark.parametrize("memory", ["none", "subrun", "cross"])
def test_memory_horizon_in_negotiator_prompts(tmp_path, memory):
    cfg = ScarceConfig(workers=2, subruns=2, model="scripted/fifo", negotiator_model="fake/model",
                       memory=memory, private_rounds=0, seed=2)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade,
                     sandbox=FakeSandbox(tmp_path / "sbx"), client=FakeClient())
    evs = events(run)
    first_k = {}
    for e in of(evs, "contention_start"):
        first_k.setdefault(e["payload"]["subrun"], e["round"])
    calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]

    def prompts(k):
        return ["\n".join(m["content"] for m in c["messages"]) for c in calls if c["round"] == k]

    later_same_subrun = [k for k in {e["round"] for e in of(evs, "contention_start")}
                         if first_k[0] < k < first_k[1]]
    assert later_same_subrun, "the scripted routine asks for two slots per subrun"
    within = prompts(later_same_subrun[0])
    across = prompts(first_k[1])  # first contention of subrun 1
    assert all(("Past contentions" in p) == (memory != "none") for p in within)
    assert all(("Past contentions" in p) == (memory == "cross") for p in across)
    assert all(("Your saved notes" in p) == (memory == "cross") for p in across)


def test_wall_clock_run(tmp_path):
    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/sjf", clock="wall", seed=0)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    evs = events(run)
    assert read_manifest(run).status == "complete" and len(of(evs, "submission")) == 2
    # measured decision and command times are tiny; the timeline is driven by the 20 s + 30 s slots
    assert all(e["t"] < 200 for e in of(evs, "submission"))
    assert all(e["payload"]["cost_s"] < 1 for e in of(evs, "execution"))
