#!/usr/bin/env python3
"""Sandbox overhead per command and grading time per task (issue 3, section 8).

Prints, for ``true`` run N times:
* plain ``subprocess.run(["/bin/true"])`` (baseline),
* ``run_limited`` without isolation (rlimits + output threads),
* the LocalSandbox (``sh -c`` + namespaces + uid drop, where available),
as mean and median milliseconds per command, then the overhead over the baseline;
and the wall seconds to grade each shipped task's reference solution.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py [-n 50] [--tasks rev,seq|all|none]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.sandbox import ResourceLimits  # noqa: E402
from scarce_lab.sandbox.local import LocalSandbox, detect_capabilities, run_limited  # noqa: E402


def timeit(fn, n: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=50, help="repetitions per variant")
    ap.add_argument("--tasks", default="all", help="'all', 'none' or comma-separated task ids")
    a = ap.parse_args(argv)
    caps = detect_capabilities()
    print(f"isolation: mode={caps.mode} network_isolated={caps.network_isolated} "
          f"private_mounts={caps.private_mounts} uid_separation={caps.uid_separation}")
    lim = ResourceLimits(wall_seconds=10)
    rows = []
    rows.append(("plain subprocess /bin/true", timeit(lambda: subprocess.run(["/bin/true"]), a.n)))
    with tempfile.TemporaryDirectory() as d:
        rows.append(("run_limited, no isolation", timeit(lambda: run_limited(["/bin/true"], d, lim), a.n)))
    with LocalSandbox(limits=lim) as sb:
        sb.open_slot("w0", 3600)
        rows.append((f"LocalSandbox.run('true') [{caps.mode}]", timeit(lambda: sb.run("w0", "true"), a.n)))
    with LocalSandbox(limits=lim, isolation="none") as sb:
        sb.open_slot("w0", 3600)
        rows.append(("LocalSandbox.run('true') [none]", timeit(lambda: sb.run("w0", "true"), a.n)))
    base = statistics.mean(rows[0][1])
    print(f"\nsandbox overhead per command (n={a.n}):")
    print(f"{'variant':44s} {'mean ms':>8s} {'median':>8s} {'overhead':>9s}")
    for name, xs in rows:
        print(f"{name:44s} {statistics.mean(xs):8.2f} {statistics.median(xs):8.2f} "
              f"{statistics.mean(xs) - base:+9.2f}")
    if a.tasks != "none":
        from scarce_lab.tasks import grade, load_task
        from scarce_lab.tasks.suite import list_task_ids

        ids = list_task_ids() if a.tasks == "all" else a.tasks.split(",")
        print("\ngrading time per task (reference solution):")
        print(f"{'task':8s} {'tests':>5s} {'score':>6s} {'seconds':>8s} {'ms/test':>8s}")
        for tid in ids:
            t = load_task(tid)
            g = grade(t, t.reference_dir)
            print(f"{tid:8s} {g.total:5d} {g.score:6.2f} {g.duration_s:8.2f} "
                  f"{1000 * g.duration_s / max(1, g.total):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
