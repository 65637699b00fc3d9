"""Commands a worker sends that the kernel refuses to start.

A shell command reaches ``execve`` as one argument; over ``MAX_ARG_STRLEN`` (128 KiB)
the kernel answers ``E2BIG``, which surfaced as a ``SandboxError`` from ``run`` and, through
the ``run_command`` tool, ended the whole ``run_scarce`` (a 200 KB command from one
worker: the run failed, nobody's submission recorded). The one check is
``sandbox.base.command_problem``, made by both backends before a command starts: the
worker gets exit 2 and the reason, like the NUL-byte case.
"""

from __future__ import annotations

import json

import pytest

from scarce_lab.agents.decided import Decided
from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.scarce import runner as R
from scarce_lab.environments.scarce.agents.solvers import Solver
from scarce_lab.environments.scarce.agents.solvers import SolverAction as A
from scarce_lab.sandbox import make_sandbox
from scarce_lab.sandbox.base import MAX_ARG_BYTES, MAX_ARGV_BYTES
from scarce_lab.tasks.workspace import prepare_worker

from .conftest import needs


def test_command_at_and_over_the_kernel_limit(make_sb, rev):
    """The longest command the kernel takes runs; one byte more is refused with exit 2
    and a reason, and the sandbox goes on working (both backends)."""
    sb = make_sb()
    prepare_worker(rev, sb, "w0")
    sb.open_slot("w0", 60)
    head = ": "  # ':' ignores its argument; the command is exactly n bytes long
    fits = head + "a" * (MAX_ARG_BYTES - 1 - len(head))
    r = sb.run("w0", fits + "; echo ran")
    assert r.exit_code == 2 and "command too long" in r.stderr, (r.exit_code, r.stderr[:200])
    r = sb.run("w0", fits[: MAX_ARG_BYTES - 1 - len("; echo ran")] + "; echo ran")
    assert r.exit_code == 0 and r.stdout == "ran\n", (r.exit_code, r.stderr[:200])
    for cmd in ("echo " + "a" * 200_000, "echo " + "a" * 3_000_000):
        r = sb.run("w0", cmd)
        assert r.exit_code == 2 and "command too long" in r.stderr and not r.stdout, r.stderr[:200]
    r = sb.run("w0", "echo still-here")
    assert r.exit_code == 0 and r.stdout == "still-here\n"


def test_argv_total_over_the_bound_is_refused_not_raised():
    """An argv list (the grading boxes' form) of many arguments, each legal, but over
    ``MAX_ARGV_BYTES`` in all, is refused before ``execve`` (no backend needed)."""
    from scarce_lab.sandbox.base import command_problem

    argv = ["/bin/echo"] + ["a" * 60_000] * (MAX_ARGV_BYTES // 60_000 + 1)
    assert "command too long" in (command_problem(argv) or "")
    assert command_problem(["/bin/echo", "a" * 60_000]) is None
    assert "NUL" in (command_problem(["/bin/sh", "-c", "echo a\x00b"]) or "")


class _Script(Solver):
    def __init__(self, steps, seen):
        self.steps, self.i, self.seen = list(steps), 0, seen

    async def step(self, obs):
        if obs.transcript:
            self.seen.append(obs.transcript[-1]["result"])
        if self.i < len(self.steps):
            if not obs.in_slot:
                return Decided(A(tool="request_execution_slot", duration_seconds=20))
            self.i += 1
            return Decided(A(tool="run_command", command=self.steps[self.i - 1]))
        return Decided(A(tool="submit"))


@pytest.mark.slow
def test_long_command_through_the_agent_tool_leaves_the_run_whole(monkeypatch, tmp_path):
    """``run_command`` with a 200 KB command inside a real ``run_scarce`` (local): the
    worker is shown the refusal, its next command runs, the run completes and the
    honest worker's submission is recorded."""
    needs("local")
    seen: list[str] = []
    orig = R.ScarceRunner._agents

    def agents(self, w, task):
        solver, neg = orig(self, w, task)
        return (_Script(["echo " + "a" * 200_000, "echo after"], seen) if w == "w0" else solver), neg

    monkeypatch.setattr(R.ScarceRunner, "_agents", agents)
    cfg = R.ScarceConfig(workers=2, subruns=1, tasks=["rev"], scheduler="fifo", max_solver_steps=12)
    sb = make_sandbox("local")
    try:
        run = R.run_scarce(cfg, tmp_path, sandbox=sb)
    finally:
        sb.close()
    assert read_manifest(run).status == "complete"
    assert any("command too long" in s for s in seen), seen
    assert any("after" in s for s in seen), seen
    evs = [json.loads(x) for x in (run / "events.jsonl").read_bytes().split(b"\n") if x.strip()]
    subs = {e["agent"]: e["payload"] for e in evs if e["kind"] == "submission"}
    assert subs.get("w1", {}).get("score") == 1.0, subs
