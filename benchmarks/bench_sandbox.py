#!/usr/bin/env python3
"""Sandbox overhead per command and per grade, for both backends next to a plain
subprocess and bubblewrap alone (goal: our part <= 3 ms over bubblewrap alone).

Per command: ``true`` run N times, interleaved round-robin (A B C A B C ...) so that
load from other processes on the machine affects every variant alike:

* plain ``subprocess.run(["/bin/true"])`` (the baseline),
* ``bwrap only``: the bubblewrap command line the local backend used per command before
  its boxes (namespaces, root, seccomp filter, ``setpriv``), started by a plain
  ``subprocess.run``: what one sandboxed command costs at the least when each command
  gets its own namespaces (the reference),
* ``LocalSandbox.run("true")`` in a slot whose box runs (the zygote forks the command:
  :mod:`scarce_lab.sandbox.zygote`; slot check, cgroup limits, watchdog and verified
  teardown included),
* ``new slot``: ``open_slot`` + at once the first ``run("true")`` + ``close_slot`` of
  another worker: the box's start and end, paid once per slot (the box starts at
  ``open_slot``, so a first command that comes later, after the worker's model has
  answered, waits less or not at all),
* ``DockerSandbox.run("true")`` (exec in the worker's running container) where an
  engine answers,

as medians (ms), with the parent's CPU per command (all its threads). Per grade: the
wall seconds to grade each task's reference solution on each backend, and the same
tests run as plain subprocesses.

``main()`` prints and returns the rows ``{what, ours, reference, ratio, goal, met}``
(``met`` None where a row has no goal), for a command gathering every benchmark.

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


def _print_rows(rows: list[dict]) -> None:
    print(f"\n{'what':58s} {'ours':>10s} {'reference':>10s} {'ratio':>6s}  {'goal':22s} met?")
    for r in rows:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
        print(f"{r['what']:58s} {r['ours']:10.2f} {r['reference']:10.2f} {r['ratio']:6.2f}  {r['goal']:22s} {met}")


def main(argv=None) -> list[dict]:
    """Run the benchmark (arguments as the command line's), print its table and rows,
    and return the rows ``{what, ours, reference, ratio, goal, met}`` (milliseconds)."""
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
        sb.run("w0", "true")  # warm-up (starts the worker's box / container)
        sandboxes[kind] = sb
    plain_name = "plain subprocess /bin/true"
    variants = {plain_name: lambda: subprocess.run(["/bin/true"], check=True)}
    if "local" in sandboxes:
        variants["bwrap only (same argv)"] = _bwrap_only(sandboxes["local"])

        def new_slot(sb=sandboxes["local"]):
            sb.open_slot("w1", 3600)
            sb.run("w1", "true")
            sb.close_slot("w1")

        variants["new slot: open + at once run + close"] = new_slot
    for sb in sandboxes.values():
        variants[f"{type(sb).__name__}.run('true')"] = lambda sb=sb: sb.run("w0", "true")
    times = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    for _ in range(a.n):
        for name, fn in variants.items():
            c0 = time.process_time()
            times[name].append(_ms(fn))
            cpu[name].append((time.process_time() - c0) * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    plain = med[plain_name]
    print(f"\nper command (n={a.n}, interleaved; the machine may be shared):")
    print(f"{'variant':38s} {'median ms':>9s} {'p90':>8s} {'overhead':>9s} {'parent CPU ms':>14s}")
    for name, xs in times.items():
        p90 = sorted(xs)[int(0.9 * (len(xs) - 1))]
        print(f"{name:38s} {med[name]:9.1f} {p90:8.1f} {med[name] - plain:+9.1f} {cmed[name]:14.2f}")
    rows = []
    if "local" in sandboxes:
        full, bw = med["LocalSandbox.run('true')"], med["bwrap only (same argv)"]
        ours, ref = full - plain, bw - plain
        print(f"\nlocal backend, medians: plain {plain:.1f} ms; bubblewrap alone +{ref:.1f} ms; ours +{ours:.1f} ms; "
              f"our part over bubblewrap alone {full - bw:+.1f} ms (goal <= +3 ms)")
        rows.append({"what": "sandbox command overhead over plain, ms (local, `true`)", "ours": ours,
                     "reference": ref, "ratio": ours / ref if ref > 0 else float("nan"),
                     "goal": "ours - ref <= 3 ms", "met": full - bw <= 3.0})
        rows.append({"what": "parent CPU per command, ms (local vs plain subprocess)",
                     "ours": cmed["LocalSandbox.run('true')"], "reference": cmed[plain_name],
                     "ratio": cmed["LocalSandbox.run('true')"] / max(cmed[plain_name], 1e-9), "goal": "-",
                     "met": None})
        slot = med["new slot: open + at once run + close"]
        rows.append({"what": "new slot (box start + at once first command + close), ms", "ours": slot - plain,
                     "reference": ref, "ratio": (slot - plain) / ref if ref > 0 else float("nan"),
                     "goal": "- (once per slot)", "met": None})
    if "docker" in sandboxes:
        d = med["DockerSandbox.run('true')"] - plain
        rows.append({"what": "docker command overhead over plain, ms (`true`)", "ours": d, "reference": plain,
                     "ratio": med["DockerSandbox.run('true')"] / plain, "goal": "-", "met": None})
    _print_rows(rows)
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
    return rows


if __name__ == "__main__":
    main()
