"""SCARCE benchmark (issue 3 section 8): contention rounds per second and model seconds.

Prints:

1. ``protocol``: four-phase contentions per second with scripted negotiators, the
   pure state machine + Borda aggregation + ledger (no runner, no sandbox).
2. ``runner``: contentions per second of whole scripted runs (runner, recorder with
   fsync per contention, solver steps) on an in-memory sandbox with a stub grader.
3. ``runner+local``: the same on the real local sandbox with real grading (what a
   user's scripted run costs; grading and subprocesses dominate).
4. ``embedded`` (with ``--embedded``): wall seconds per contention and per model call
   with ``embedded/smollm2`` negotiators (2 workers, no private round by default).

Usage::

    .venv/bin/python benchmarks/bench_scarce.py [--workers 5] [--contentions 200] [--embedded]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from scarce_lab.agents.scarce import NegotiationView, ScriptedNegotiator
from scarce_lab.envs.slots import (
    Contention,
    Ledger,
    Mechanism,
    MechanismConfig,
    Phase,
    Request,
    aggregate_ballots,
)
from scarce_lab.runners.scarce import ScarceConfig, run_scarce
from scarce_lab.sandbox.base import ExecResult, Sandbox, SlotNotActiveError
from scarce_lab.tasks.model import Task


class NullSandbox(Sandbox):
    """Commands succeed instantly inside a slot (measures the runner, not subprocesses)."""

    def __init__(self, root: Path):
        self.root, self.slots = root, set()

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
            raise SlotNotActiveError(worker)
        return ExecResult(command=command, exit_code=0, stdout="", stderr="", duration_s=0.0)

    def close(self):
        self.slots.clear()


class _Grade:
    score, resolved, passed, total, violation = 1.0, True, 1, 1, None


def _toy() -> Task:
    return Task(id="toy", name="toy", program="toy", documentation="toy",
                examples=[{"args": [], "stdin": "a", "stdout": "a"}] * 3)


async def _protocol(workers: int, n: int, policy: str = "random") -> float:
    names = [f"w{i}" for i in range(workers)]
    negs = {w: ScriptedNegotiator(policy, seed=1) for w in names}
    ledger = Ledger(dict.fromkeys(names, 10**9))
    cfg = MechanismConfig(mechanism=Mechanism.revisable, private_rounds=1)
    t0 = time.perf_counter()
    for k in range(n):
        c = Contention(k, [Request(worker=w, time_s=float(i), duration_s=60) for i, w in enumerate(names)], cfg)

        def view(w, c=c):
            return NegotiationView(worker=w, contention=c.private_view(w), own_budget=ledger.balance(w),
                                   own_remaining_s=900.0, private_round=c.private_round)

        while c.phase != Phase.closed:
            for w in names:
                v = view(w)
                if c.phase == Phase.declaration:
                    c.declare(w, (await negs[w].declare(v)).value)
                elif c.phase == Phase.reasoning:
                    c.reason(w, (await negs[w].reason(v)).value)
                elif c.phase == Phase.private:
                    m = (await negs[w].message(v)).value
                    if m:
                        c.send(w, *m)
                elif c.phase == Phase.revision:
                    c.revise(w, (await negs[w].revise(v)).value)
                else:
                    c.ballot(w, (await negs[w].ballot(v)).value)
            c.advance()
        s = aggregate_ballots(names, c.ballots, c.declarations, {w: float(i) for i, w in enumerate(names)},
                              mechanism=cfg.mechanism, final_bids=c.revised_bids, seed_key=str(k))
        for a in s.allocations:
            ledger.charge_capped(a.worker, a.price)
    return n / (time.perf_counter() - t0)


def _runner(workers: int, subruns: int, local: bool, runs: int = 1) -> tuple[float, int, float]:
    n, dt = 0, 0.0
    for seed in range(runs):
        out = Path(tempfile.mkdtemp(prefix="bench-scarce-"))
        cfg = ScarceConfig(workers=workers, subruns=subruns, model="scripted/random", seed=seed, private_rounds=1)
        kw = {} if local else {"tasks": [_toy()], "grade_fn": lambda t, f: _Grade(),
                               "sandbox": NullSandbox(out / "sbx")}
        if local:
            from scarce_lab.tasks.suite import load_suite

            kw["tasks"] = load_suite()
        t0 = time.perf_counter()
        run = run_scarce(cfg, out, **kw)
        dt += time.perf_counter() - t0
        evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
        n += sum(1 for e in evs if e["kind"] == "contention_start")
    return n / dt, n, dt


def _embedded(workers: int) -> tuple[float, float, int, int]:
    out = Path(tempfile.mkdtemp(prefix="bench-scarce-emb-"))
    cfg = ScarceConfig(workers=workers, subruns=1, model="scripted/fifo", negotiator_model="embedded/smollm2",
                       deadline_min=1.0, private_rounds=0, scripted_call_s=0, seed=0)
    from scarce_lab.llm import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(cache=False))
    t0 = time.perf_counter()
    run = run_scarce(cfg, out, tasks=[_toy()], grade_fn=lambda t, f: _Grade(), sandbox=NullSandbox(out / "sbx"),
                     client=client)
    dt = time.perf_counter() - t0
    evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    n = sum(1 for e in evs if e["kind"] == "contention_start")
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    lat = sum(c["latency_s"] for c in calls)
    return dt / max(n, 1), lat / max(len(calls), 1), n, len(calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--contentions", type=int, default=200)
    ap.add_argument("--subruns", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10, help="scripted runs timed (in-memory sandbox)")
    ap.add_argument("--no-local", action="store_true", help="skip the run on the real local sandbox")
    ap.add_argument("--embedded", action="store_true", help="also time embedded/smollm2 negotiators")
    ap.add_argument("--embedded-workers", type=int, default=2)
    a = ap.parse_args()
    rate = asyncio.run(_protocol(a.workers, a.contentions))
    print(f"protocol      : {rate:8.1f} contentions/s ({a.workers} scripted negotiators, 1 private round, revisable)")
    r, n, dt = _runner(a.workers, a.subruns, local=False, runs=a.runs)
    print(f"runner        : {r:8.1f} contentions/s ({n} contentions in {dt:.2f} s; in-memory sandbox, stub grader)")
    if not a.no_local:
        r, n, dt = _runner(a.workers, 1, local=True)
        print(f"runner+local  : {r:8.2f} contentions/s ({n} contentions in {dt:.2f} s; local sandbox, real grading)")
    if a.embedded:
        per_c, per_call, n, calls = _embedded(a.embedded_workers)
        print(f"embedded      : {per_c:8.1f} s/contention, {per_call:.2f} s/call "
              f"({n} contention(s), {calls} calls, {a.embedded_workers} workers, no private round)")


if __name__ == "__main__":
    main()
