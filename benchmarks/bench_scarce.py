"""SCARCE benchmark: contention rounds per second and model seconds.

Prints:

1. ``protocol``: four-phase contentions per second with scripted negotiators, the
   pure state machine + Borda aggregation + ledger (no runner, no sandbox).
2. ``runner``: contentions per second of whole scripted runs (runner, recorder with
   fsync per contention, solver steps) on an in-memory sandbox with a stub grader.
3. ``runner+local``: the same on the real local sandbox with real grading (what a
   user's scripted run costs; grading and subprocesses dominate).
4. ``embedded`` (with ``--embedded``): ``embedded/smollm2`` as solver AND
   negotiator over 5 seeds of 2 workers x 1 subrun on the tasks ``rev`` and ``tac``
   with default steps, on the local sandbox with real grading and no response cache:
   share of runs reaching at least one contention, contentions per run, commands
   executed, submissions that build (the grader's ``build_ok``), mean score, stuck
   outcomes, seconds per run (one line per run, then the totals). About 10-30
   minutes per run on a shared 2-core machine.

Usage::

    .venv/bin/python benchmarks/bench_scarce.py [--workers 5] [--contentions 200] [--embedded]
    .venv/bin/python benchmarks/bench_scarce.py --only-embedded [--embedded-seeds 5] [--embedded-out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from scarce_lab.environments.scarce.agents import NegotiationView, ScriptedNegotiator
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.environments.scarce.world import (
    Contention,
    Ledger,
    Mechanism,
    MechanismConfig,
    Phase,
    Request,
    aggregate_ballots,
)
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


def _embedded_run(seed: int, out: Path, tasks: tuple[str, ...]) -> dict:
    """One run with ``embedded/smollm2`` as solver and negotiator (2 workers, 1 subrun,
    the shipped ``tasks``, default steps), on the local sandbox with real grading;
    returns its figures. ``build_ok`` comes from the grader (not recorded in events)."""
    from scarce_lab.llm import LLMClient, LLMSettings
    from scarce_lab.tasks.grading import grade
    from scarce_lab.tasks.suite import load_suite

    grades: list = []

    def grade_fn(task, folder):
        g = grade(task, folder)
        grades.append(g)
        return g

    cfg = ScarceConfig(workers=2, subruns=1, model="embedded/smollm2", tasks=list(tasks), seed=seed)
    # the run's own client settings, without the response cache: timings of real calls
    settings = {k: v for k, v in cfg.llm.model_dump(exclude_none=True).items() if k in LLMSettings.model_fields}
    client = LLMClient(LLMSettings(**{**settings, "cache": False}))
    t0 = time.perf_counter()
    run = run_scarce(cfg, out, tasks=load_suite(list(tasks)), grade_fn=grade_fn, client=client)
    dt = time.perf_counter() - t0
    evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    subs = [e["payload"] for e in evs if e["kind"] == "submission"]
    return {
        "seed": seed, "run": run.name, "seconds": dt,
        "contentions": sum(1 for e in evs if e["kind"] == "contention_start"),
        "contested": sum(1 for e in evs if e["kind"] == "contention_start" and len(e["payload"]["participants"]) > 1),
        "commands": sum(1 for e in evs if e["kind"] == "execution" and not e["payload"]["refused"]),
        "refused": sum(1 for e in evs if e["kind"] == "execution" and e["payload"]["refused"]),
        "submissions": len(subs), "builds": sum(bool(g.build_ok) for g in grades),
        "score": sum(p["score"] for p in subs) / max(len(subs), 1),
        "stuck": sum(p["reason"] == "stuck" for p in subs),
        "reasons": ",".join(sorted(p["reason"] for p in subs)),
        "violations": sum(1 for e in evs if e["payload"].get("violation")),
        "calls": len(calls), "call_s": sum(c.get("latency_s") or 0 for c in calls) / max(len(calls), 1),
    }


def _embedded(seeds: int, out: Path | None, tasks: tuple[str, ...] = ("rev", "tac")) -> None:
    """Print the embedded-model progress figures over ``seeds`` runs."""
    out = out or Path(tempfile.mkdtemp(prefix="bench-scarce-emb-"))
    rows = []
    for seed in range(seeds):
        r = _embedded_run(seed, out, tasks)
        rows.append(r)
        print(f"  seed {seed}: {r['contentions']} contention(s) ({r['contested']} contested), {r['commands']} "
              f"command(s) run ({r['refused']} refused), builds {r['builds']}/{r['submissions']}, mean score "
              f"{r['score']:.3f}, stuck {r['stuck']}, ends [{r['reasons']}], {r['calls']} model calls "
              f"({r['call_s']:.1f} s/call), {r['seconds']:.0f} s", flush=True)
    n = len(rows)
    reached = sum(r["contentions"] > 0 for r in rows)
    ran = sum(r["commands"] > 0 for r in rows)
    built = sum(r["builds"] > 0 for r in rows)
    subs = sum(r["submissions"] for r in rows)
    secs = [r["seconds"] for r in rows]
    print(f"embedded      : {n} runs (seeds 0-{n - 1}; 2 workers x 1 subrun; tasks {', '.join(tasks)}; "
          f"embedded/smollm2 solver and negotiator; default steps; local sandbox, real grading; runs in {out})")
    print(f"  runs reaching >= 1 contention : {reached}/{n} ({100 * reached / n:.0f} %)")
    print(f"  contentions per run           : {sum(r['contentions'] for r in rows) / n:.1f} "
          f"({sum(r['contested'] for r in rows) / n:.1f} contested)")
    print(f"  commands executed             : {sum(r['commands'] for r in rows)} in all, "
          f"{sum(r['commands'] for r in rows) / n:.1f} per run; runs with >= 1: {ran}/{n}")
    print(f"  submissions that build        : {sum(r['builds'] for r in rows)}/{subs}; runs with >= 1: {built}/{n}")
    print(f"  mean score                    : {sum(r['score'] for r in rows) / n:.3f}")
    print(f"  stuck outcomes                : {sum(r['stuck'] for r in rows)}/{subs}")
    print(f"  seconds per run               : {sum(secs) / n:.0f} (min {min(secs):.0f}, max {max(secs):.0f}; "
          f"shared 2-core machine, model calls serialised machine-wide)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--contentions", type=int, default=200)
    ap.add_argument("--subruns", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10, help="scripted runs timed (in-memory sandbox)")
    ap.add_argument("--no-local", action="store_true", help="skip the run on the real local sandbox")
    ap.add_argument("--embedded", action="store_true",
                    help="also run the embedded model as solver and negotiator (its progress figures; slow)")
    ap.add_argument("--embedded-seeds", type=int, default=5)
    ap.add_argument("--embedded-out", type=Path, default=None, help="keep the embedded runs in this folder")
    ap.add_argument("--only-embedded", action="store_true", help="skip the scripted figures")
    a = ap.parse_args()
    if not a.only_embedded:
        rate = asyncio.run(_protocol(a.workers, a.contentions))
        print(f"protocol      : {rate:8.1f} contentions/s ({a.workers} scripted negotiators, 1 private round, revisable)")
        r, n, dt = _runner(a.workers, a.subruns, local=False, runs=a.runs)
        print(f"runner        : {r:8.1f} contentions/s ({n} contentions in {dt:.2f} s; in-memory sandbox, stub grader)")
        if not a.no_local:
            r, n, dt = _runner(a.workers, 1, local=True)
            print(f"runner+local  : {r:8.2f} contentions/s ({n} contentions in {dt:.2f} s; local sandbox, real grading)")
    if a.embedded or a.only_embedded:
        _embedded(a.embedded_seeds, a.embedded_out)

if __name__ == "__main__":
    main()
