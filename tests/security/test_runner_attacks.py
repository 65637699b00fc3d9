"""Kind: attacks through a whole SCARCE run (the runner's public entry point, agents
swapped in as a careless or hostile model would act): reading other workers' budgets
and code from the run's output folder, holding the sandbox for more real time than the
slot, ending the run with a folder the harness cannot handle.
Cases: ../shared/cases/sandbox/budgets_readable_from_out_dir.py,
steal_code_from_live_run.py, slot_cap_real_time.py, deep_paths_crash_harness.py."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from scarce_lab.agents.decided import Decided
from scarce_lab.environments.scarce import runner as R
from scarce_lab.environments.scarce.agents.solvers import Solver
from scarce_lab.environments.scarce.agents.solvers import SolverAction as A

from .conftest import REPO


def _swap_solver(monkeypatch, make):
    """Worker ``w0`` gets the solver ``make()``; the others keep theirs."""
    orig = R.ScarceRunner._agents

    def agents(self, w, task):
        solver, neg = orig(self, w, task)
        return (make() if w == "w0" else solver), neg

    monkeypatch.setattr(R.ScarceRunner, "_agents", agents)


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("where", ["run", "checkout"])
@pytest.mark.slow
def test_run_output_is_unreachable(monkeypatch, make_sb, where):
    """A snooping solver looks for every events.jsonl it can see (other workers'
    budgets) and copies another worker's main.py from the trajectory (code theft)."""
    seen: list[str] = []
    steal = ("f=$(find / -xdev \\( -path /proc -o -path /usr -o -path /sys \\) -prune -o -name events.jsonl -print "
             "2>/dev/null | head -3); echo \"found:$f\"; grep -ho '.budgets.:{[^}]*}' $f 2>/dev/null; "
             "python3 -c \"import json,sys\nfor f in sys.argv[1:]:\n for e in map(json.loads, open(f)):\n"
             "  a=(e.get('payload') or {}).get('args') or {}\n  if e.get('agent')!='w0' and a.get('path')=='main.py':"
             " open('main.py','w').write(a['content'])\" $f; ls")

    class Snoop(Solver):
        n = 0

        async def step(self, obs):
            self.n += 1
            if obs.transcript:
                seen.append(obs.transcript[-1]["result"])
            if self.n < 40 and not obs.in_slot:
                return Decided(A(tool="list_files") if self.n < 30 else
                               A(tool="request_execution_slot", duration_seconds=30))
            if obs.in_slot and self.n < 60:
                return Decided(A(tool="run_command", command=steal))
            if self.n < 60:
                return Decided(A(tool="write_file", path="compile.sh",
                                 content="cp main.py executable && chmod +x executable\n"))
            return Decided(A(tool="submit"))

    _swap_solver(monkeypatch, Snoop)
    base = Path("/run") if where == "run" else REPO / "runs"
    base.mkdir(exist_ok=True)
    out = base / f"sec-out-{os.getpid()}-{time.monotonic_ns()}"
    try:
        cfg = R.ScarceConfig(workers=3, subruns=1, tasks=["rev"], task_assignment="shared", scheduler="fifo",
                             worker_budgets={"w1": 77, "w2": 4321}, max_solver_steps=80)
        run = R.run_scarce(cfg, out, sandbox=make_sb())
        evs = _events(run)
        subs = {e["agent"]: e["payload"] for e in evs if e["kind"] == "submission"}
        assert subs["w1"]["score"] == 1.0  # the honest scripted workers did write main.py
        runs = [r for r in seen if "found:" in r]
        assert runs, seen[-3:]
        assert all("budgets" not in r and "4321" not in r for r in seen), runs[:2]
        assert all("found:\\n" in r for r in runs), runs[:2]  # found nothing (repr'd newline)
        assert subs["w0"]["score"] == 0.0 and not subs["w0"]["resolved"], subs["w0"]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_slot_bounds_real_time(monkeypatch, make_sb, tmp_path):
    """A 4 s slot and commands of 3 s: the second command gets the 1 s left, so the
    slot holds the sandbox about 4 real seconds; each command is charged its real
    duration when that is more than the configured 0.5 s."""
    sb = make_sb()
    times = {}
    real_open, real_close = sb.open_slot, sb.close_slot

    def open_slot(w, d):
        times.setdefault("open", time.monotonic())
        return real_open(w, d)

    def close_slot(w):
        times.setdefault("close", time.monotonic())
        return real_close(w)

    sb.open_slot, sb.close_slot = open_slot, close_slot

    class Hog(Solver):
        async def step(self, obs):
            if not obs.transcript:
                return Decided(A(tool="request_execution_slot", duration_seconds=4))
            return Decided(A(tool="run_command", command="sleep 3") if obs.in_slot else A(tool="submit"))

    _swap_solver(monkeypatch, Hog)
    cfg = R.ScarceConfig(workers=1, subruns=1, tasks=["rev"], slot_cap_s=4, scheduler="fifo", command_s=0.5,
                         scripted_call_s=0.0)
    run = R.run_scarce(cfg, tmp_path, sandbox=sb)
    held = times["close"] - times["open"]
    ex = [e["payload"] for e in _events(run) if e["kind"] == "execution" and not e["payload"].get("refused")]
    assert ex and all(p["cost_s"] >= p["duration_s"] - 1e-3 for p in ex), ex
    assert ex[0]["cost_s"] >= 2.9 and ex[0]["duration_s"] >= 2.9
    # about 4 s, not two commands' 6: a second command (when the slot still had time for
    # one) got only what was left of it and was cut there. (Checked on the commands, not
    # on the real seconds held: a loaded machine adds seconds of sandbox start-up.)
    assert len(ex) <= 2 and all(p["timed_out"] for p in ex[1:]), ex
    assert held < 4 + 60, f"the slot held the sandbox {held:.1f} real seconds"  # bounds a hang


@pytest.mark.slow
def test_a_worker_cannot_end_the_run(monkeypatch, make_sb, tmp_path):
    """Deep folders, long names, a FIFO and links in the folder: the run completes,
    every odd path is a tool error for that worker only."""
    attack = ("n=$(printf %0200d 0); (for i in $(seq 25); do mkdir $n && cd $n || break; done; touch f); "
              "(for i in $(seq 300); do mkdir d && cd d || break; done; touch g); mkfifo compile.sh.fifo; "
              "ln -s /etc/shadow shadow; ln -s / root; mkfifo examples.json.new")

    class Wrecker(Solver):
        n = 0

        async def step(self, obs):
            self.n += 1
            if self.n == 1:
                return Decided(A(tool="request_execution_slot", duration_seconds=30))
            if obs.in_slot and self.n < 4:
                return Decided(A(tool="run_command", command=attack))
            acts = [A(tool="read_file", path="/".join(["0" * 200] * 25) + "/f"),
                    A(tool="read_file", path="compile.sh.fifo"), A(tool="read_file", path="shadow"),
                    A(tool="write_file", path="root/etc/x", content="x"), A(tool="read_file", path="a" * 5000),
                    A(tool="write_file", path="d/" * 300 + "x", content="x"), A(tool="list_files"), A(tool="submit")]
            return Decided(acts[min(self.n - 4, len(acts) - 1)] if self.n >= 4 else A(tool="list_files"))

    _swap_solver(monkeypatch, Wrecker)
    cfg = R.ScarceConfig(workers=2, subruns=1, tasks=["rev"], scheduler="fifo", max_solver_steps=30)
    run = R.run_scarce(cfg, tmp_path, sandbox=make_sb())
    evs = _events(run)
    from scarce_lab.data.recorder import read_manifest

    assert read_manifest(run).status == "complete"
    errors = [e["payload"]["error"] for e in evs if e["kind"] == "tool_error" and e["agent"] == "w0"]
    assert len(errors) >= 5, errors
    subs = {e["agent"]: e["payload"] for e in evs if e["kind"] == "submission"}
    assert subs["w1"]["score"] == 1.0 and subs["w0"]["score"] == 0.0
