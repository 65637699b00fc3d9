#!/usr/bin/env python3
"""Sandbox overhead per command and per grade, for both backends next to a plain
subprocess (target: the local backend under 50 ms per command).

Per command: ``true`` run N times, interleaved round-robin (A B C A B C ...) so that
load from other processes on the machine affects every variant alike:

* plain ``subprocess.run(["/bin/true"])`` (the baseline),
* ``LocalSandbox.run("true")`` (bwrap namespaces + uid drop + cgroup + verified teardown),
* ``DockerSandbox.run("true")`` (exec in the worker's container + verified teardown),
* for the local backend, its two parts apart: ``bwrap only`` (the same bubblewrap
  command line, seccomp filter included, started by a plain ``subprocess.run``: the
  cost of bubblewrap, setpriv and the kernel's namespaces) and ``ours`` (the rest:
  slot check, cgroup limits, the launcher that joins the cgroup and sets rlimits, the
  watchdog, the verified cgroup teardown) = full run - bwrap only,

as mean and median milliseconds and the overhead over the baseline. Per grade: the
wall seconds to grade each task's reference solution on each backend (also
interleaved), and the same tests run as plain subprocesses for comparison.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py [-n 40] [--tasks rev,tac|all|none]
        [--backends local,docker]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.sandbox import ResourceLimits, SandboxError, make_sandbox  # noqa: E402
from scarce_lab.sandbox.local import run_limited  # noqa: E402


def _ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _plain_grade(task) -> float:
    """Seconds to build the reference and run every test as plain subprocesses."""
    t0 = time.perf_counter()
    d = Path(tempfile.mkdtemp())
    try:
        for p in Path(task.reference_dir).iterdir():
            shutil.copy(p, d / p.name)
        run_limited(["bash", "compile.sh"], d, ResourceLimits(wall_seconds=60))
        for t in task.scored_tests():
            run_limited(["./executable", *t.args], d, ResourceLimits(wall_seconds=t.timeout_s), stdin=t.stdin)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return time.perf_counter() - t0


def _bwrap_only(sb):
    """A callable running ``true`` with the exact bubblewrap command line the local
    backend builds for worker ``w0`` (seccomp filter included), with nothing of ours
    around it (no cgroup, launcher, watchdog or teardown)."""
    import os

    from scarce_lab.sandbox.bwrap import BwrapSpec, bwrap_argv
    from scarce_lab.sandbox.local import base_env
    from scarce_lab.sandbox.seccomp import filter_fd

    w = sb._worker("w0")
    spec = BwrapSpec(workdir=str(w.folder), cwd=str(w.folder), uid=w.uid, env=base_env(w.folder),
                     etc_dir=str(sb.host.users_dir(w.name)), exec_only=w.exec_only, binds=w.binds,
                     hidden=sb.hidden_paths, tmp_bytes=sb.tmp_bytes, proc_masks=sb.host.proc_masks)

    def run():
        fd = filter_fd()
        try:
            subprocess.run(bwrap_argv(spec, ["/bin/sh", "-c", "true"], seccomp_fd=fd), pass_fds=(fd,),
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.close(fd)

    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=40, help="repetitions per variant")
    ap.add_argument("--tasks", default="rev,tac,seq", help="'all', 'none' or comma-separated task ids")
    ap.add_argument("--backends", default="local,docker")
    a = ap.parse_args(argv)
    if a.n < 1:
        ap.error(f"-n must be >= 1, got {a.n}")
    sandboxes = {}
    for kind in a.backends.split(","):
        try:
            sb = make_sandbox(kind)
        except SandboxError as exc:
            print(f"[{kind}] unavailable: {exc}")
            continue
        sb.open_slot("w0", 3600)
        sb.run("w0", "true")  # warm-up (the docker backend starts the worker's container here)
        sandboxes[kind] = sb
    variants = {"plain subprocess /bin/true": lambda: subprocess.run(["/bin/true"], check=True)}
    if "local" in sandboxes:
        variants["bwrap only (same argv)"] = _bwrap_only(sandboxes["local"])
    for sb in sandboxes.values():
        variants[f"{type(sb).__name__}.run('true')"] = lambda sb=sb: sb.run("w0", "true")
    times = {k: [] for k in variants}
    for _ in range(a.n):
        for name, fn in variants.items():
            times[name].append(_ms(fn))
    base = statistics.mean(times["plain subprocess /bin/true"])
    print(f"\noverhead per command (n={a.n}, interleaved; the machine may be shared):")
    print(f"{'variant':34s} {'mean ms':>8s} {'median':>8s} {'p90':>8s} {'overhead':>9s}")
    for name, xs in times.items():
        p90 = sorted(xs)[int(0.9 * (len(xs) - 1))]
        print(f"{name:34s} {statistics.mean(xs):8.1f} {statistics.median(xs):8.1f} {p90:8.1f} "
              f"{statistics.mean(xs) - base:+9.1f}")
    if "local" in sandboxes:
        med = {k: statistics.median(v) for k, v in times.items()}
        full, bw, plain = med["LocalSandbox.run('true')"], med["bwrap only (same argv)"], med["plain subprocess /bin/true"]
        print(f"\nlocal backend, medians: plain {plain:.1f} ms; bubblewrap part {bw - plain:.1f} ms "
              f"(bwrap only - plain); ours {full - bw:.1f} ms (full run - bwrap only); total overhead "
              f"{full - plain:.1f} ms")
    if a.tasks != "none":
        from scarce_lab.tasks import grade, load_task
        from scarce_lab.tasks.suite import list_task_ids

        ids = list_task_ids() if a.tasks == "all" else a.tasks.split(",")
        print("\nseconds per grade (reference solution; plain = build + tests as plain subprocesses):")
        print(f"{'task':8s} {'tests':>5s} {'plain':>7s} " + " ".join(f"{k:>8s}" for k in sandboxes) + "  scores")
        for tid in ids:
            t = load_task(tid)
            plain = _plain_grade(t)
            row, scores = [], []
            for sb in sandboxes.values():
                g = grade(t, t.reference_dir, sandbox=sb)
                row.append(g.duration_s)
                scores.append(f"{g.score:.2f}")
            print(f"{tid:8s} {len(t.scored_tests()):5d} {plain:7.2f} " + " ".join(f"{x:8.2f}" for x in row)
                  + "  " + "/".join(scores))
    for sb in sandboxes.values():
        sb.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
