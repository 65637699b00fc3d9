"""The cost of running the program under test behind a proxy (tasks/program_proxy.py),
next to the verifier importing it into its own interpreter (the way before), in the
same run, in the local (bubblewrap) sandbox.

A made-up task directory: the program defines ``f(x) -> 2x + 1`` and ``g(xs) -> sum``;
its verifier loads ``app/program.py`` as the task format does, then times ``--calls``
calls of ``f`` and ``--calls // 10`` calls of ``g`` on a list of 1,000 ints, and writes
the per-call times in ``reward.json``'s reason.

- ``import``: the verifier and the real program in one box and one interpreter (what
  ``SandboxVerifier`` did before; emulated here with the same sandbox calls).
- ``proxy``: ``SandboxVerifier`` now: a second box for the program, calls relayed as
  JSON lines through the harness.
- ``pingpong``: the floor of any design with the program in another process: one JSON
  line sent to a forked process and echoed back over a socket pair (no sandbox, no relay).

Printed: per variant the median (min..max over ``--reps`` interleaved rounds) of one
verification's wall time, and of one call of ``f`` and of ``g`` in microseconds, and
the ratios proxy / import.

Usage: ``python benchmarks/bench_verifier_proxy.py [--calls 2000] [--reps 5]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

PROGRAM = "def f(x):\n    return 2 * x + 1\n\n\ndef g(xs):\n    return sum(xs)\n"
VERIFIER = '''import importlib.util, json, os, sys, time
app = sys.argv[sys.argv.index("--app-dir") + 1]
out = sys.argv[sys.argv.index("--output-dir") + 1]
spec = importlib.util.spec_from_file_location("program", os.path.join(app, "program.py"))
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
N = {calls}
t = time.perf_counter()
for i in range(N):
    assert mod.f(i) == 2 * i + 1
f_us = (time.perf_counter() - t) / N * 1e6
xs = list(range(1000))
t = time.perf_counter()
for i in range(N // 10):
    assert mod.g(xs) == 499500
g_us = (time.perf_counter() - t) / (N // 10) * 1e6
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "reward.json"), "w").write(json.dumps({{"score": 1.0, "reason": json.dumps([f_us, g_us])}}))
'''
TOML = "[verifier]\ntimeout_sec = 120.0\n[environment]\nmemory_mb = 512\n"


def make_task(root: Path, calls: int) -> Path:
    d = root / "bench-task"
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "task.toml").write_text(TOML)
    (d / "instruction.md").write_text("Benchmark task.\n")
    (d / "environment" / "program.py").write_text(PROGRAM)
    (d / "tests" / "compute_reward.py").write_text(VERIFIER.format(calls=calls))
    return d


def run_import(task) -> tuple[float, list[float]]:
    """The way before: the real program in the verifier's box and interpreter."""
    from scarce_lab.sandbox import ResourceLimits, make_sandbox
    from scarce_lab.sandbox.fileio import read_file
    from scarce_lab.tasks.taskdir import VERIFIER as VERIFIER_PATH
    from scarce_lab.tasks.taskdir import parse_reward

    files = {f"app/{k}": v for k, v in task.workspace.items()}
    files.update({f"tests/{k}": v for k, v in task.tests.items()})
    lim = ResourceLimits(wall_seconds=120, cpu_seconds=120, memory_bytes=task.memory_bytes())
    t0 = time.monotonic()
    sb = make_sandbox("local")
    try:
        with sb.grading_box(files) as box:
            box.run(["python3", VERIFIER_PATH, "--app-dir", "app", "--output-dir", "out"], lim)
            data = read_file(box.folder, "out/reward.json", limit=1 << 20).data
    finally:
        sb.close()
    score, reason = parse_reward(data)
    assert score == 1.0, reason
    return time.monotonic() - t0, json.loads(reason)


def run_proxy(task) -> tuple[float, list[float]]:
    from scarce_lab.tasks.taskdir import SandboxVerifier

    t0 = time.monotonic()
    r = SandboxVerifier(task, sandbox="local", timeout_s=120)(PROGRAM)
    assert r.score == 1.0 and not r.program, r
    return time.monotonic() - t0, json.loads(r.reason)


def pingpong(calls: int) -> float:
    """Microseconds of one round trip of a call-sized line to another process and back."""
    import os
    import socket

    a, b = socket.socketpair()
    line = b'{"op": "call", "name": "f", "args": [1], "kwargs": {}}\n'
    pid = os.fork()
    if pid == 0:
        f = b.makefile("rb")
        for _ in range(calls):
            b.sendall(f.readline())
        os._exit(0)
    f = a.makefile("rb")
    t = time.perf_counter()
    for _ in range(calls):
        a.sendall(line)
        f.readline()
    us = (time.perf_counter() - t) / calls * 1e6
    os.waitpid(pid, 0)
    a.close()
    b.close()
    return us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    from scarce_lab.tasks.taskdir import load_task_dir

    with tempfile.TemporaryDirectory() as tmp:
        task = load_task_dir(make_task(Path(tmp), args.calls))
        got: dict[str, list] = {"import": [], "proxy": []}
        pings = []
        for _ in range(args.reps):  # interleaved: load from others hits all alike
            got["import"].append(run_import(task))
            got["proxy"].append(run_proxy(task))
            pings.append(pingpong(args.calls))

    def med(xs):
        return f"{statistics.median(xs):9.1f} ({min(xs):.1f}..{max(xs):.1f})"

    print(f"{args.reps} rounds, {args.calls} calls of f(x), {args.calls // 10} of g(1,000 ints) per verification")
    print(f"{'variant':8} {'verification ms':>26} {'f call us':>26} {'g call us':>26}")
    for k, rows in got.items():
        print(f"{k:8} {med([r[0] * 1e3 for r in rows]):>26} {med([r[1][0] for r in rows]):>26} "
              f"{med([r[1][1] for r in rows]):>26}")

    def ratio(i, j=None):
        a = [r[0] if j is None else r[1][j] for r in got["proxy"]]
        b = [r[0] if j is None else r[1][j] for r in got["import"]]
        return statistics.median(a) / statistics.median(b)

    print(f"pingpong {'':>26} {med(pings):>26}")
    print(f"proxy / pingpong: f call x{statistics.median([r[1][0] for r in got['proxy']]) / statistics.median(pings):.1f}")
    print(f"proxy / import: verification x{ratio(0):.2f}, f call x{ratio(0, 0):.0f}, g call x{ratio(0, 1):.0f}")


if __name__ == "__main__":
    main()
