#!/usr/bin/env python3
"""Every speed goal of the project in one run: each row a figure of ours next to its
reference, measured in the same process tree, as a ratio, with the goal and whether it
is met.

    .venv/bin/python benchmarks/speed.py            # the full sizes (~30-60 min on 2 cores)
    .venv/bin/python benchmarks/speed.py --quick    # smaller sizes, the same rows (~10 min)
    .venv/bin/python benchmarks/speed.py --only calls,sandbox

Parts (each a script of its own under benchmarks/, whose ``main(argv)`` returns rows):

- ``calls``: client CPU per model call against the openai SDK, raw httpx and litellm
  alone; calls/s at concurrency 8/32/128 against a 200 ms fake server, as a share of the
  ideal (c / latency), against the best achievable on this machine (bare aiohttp
  requests alternating with ours) and against Inspect AI (installed by the script in its own
  virtualenv under the temp folder; a clear skip when it cannot be installed)
  (``bench_calls.py``).
- ``sandbox``: a command in the local sandbox against bubblewrap alone and a plain
  subprocess (``bench_sandbox.py``).
- ``tables``: SovSim Table 1 on 1M agent-rounds of the SovSim authors' published layout
  and of our own layout (~34k run folders), cold and warm, against plain-Python floors
  (and the authors' own metric code with ``--authors PATH`` to a checkout of
  abhilekhborah/sovsim) (``bench_analysis.py``).
- ``embedded``: an embedded decision through scarce_lab against llama.cpp direct,
  steady state and the first decision of a fresh process (``bench_embedded.py``;
  skipped with its reason without the embedded model).
- ``startup``: ``import scarce_lab`` and the help of ``scarce-lab``, ``run sovsim`` and
  ``table sovsim`` in fresh processes, and which heavy modules each imported (here).

Absolute times on a shared machine are noisy: read the ratios, which compare figures
taken side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUICK = {
    "calls": ["--calls", "80", "--waves", "3", "--rounds", "2"],
    "sandbox": ["-n", "20", "--tasks", "none"],
    "tables": ["--agent-rounds", "200000", "--runs-agent-rounds", "200000", "--games", "60"],
    "embedded": ["--reps", "1", "--first-runs", "1"],
}
FULL = {"calls": [], "sandbox": ["--tasks", "none"], "tables": [], "embedded": []}
SCRIPTS = {"calls": "bench_calls.py", "sandbox": "bench_sandbox.py", "tables": "bench_analysis.py",
           "embedded": "bench_embedded.py"}


def _module(name: str):
    path = ROOT / "benchmarks" / SCRIPTS[name]
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(r: Any) -> dict[str, Any]:
    """A part's row (a dict, or the tuple ``(what, ours, reference, ratio, goal, met)``)."""
    if isinstance(r, dict):
        return r
    what, ours, ref, ratio, goal, met = r
    return {"what": what, "ours": ours, "reference": ref, "ratio": ratio, "goal": goal, "met": met}


def startup_rows(reps: int = 3) -> list[dict[str, Any]]:
    """Fresh-process times of ``import scarce_lab`` and of the help of ``scarce-lab``,
    ``run sovsim`` and ``table sovsim`` (the console script's ``main``) next to a bare
    interpreter, and which of altair, scipy, litellm and openai each imported (goal: none)."""
    heavy = ("altair", "scipy", "litellm", "openai")
    probe = "import sys; {stmt}; print(','.join(m for m in " + repr(heavy) + " if m in sys.modules) or '-')"
    cli = ("from scarce_lab.cli import main; sys.argv = ['scarce-lab', {args}]\n"
           "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    cases = {
        "bare interpreter": "pass",
        "import scarce_lab": "import scarce_lab",
        "scarce-lab --help": cli.format(args="'--help'"),
        "scarce-lab run sovsim --help": cli.format(args="'run', 'sovsim', '--help'"),
        "scarce-lab table sovsim --help": cli.format(args="'table', 'sovsim', '--help'"),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    imported: dict[str, str] = {}
    for _ in range(reps):
        for name, stmt in cases.items():
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", probe.format(stmt=stmt)], capture_output=True,
                                 text=True, cwd=ROOT, check=True).stdout.split()
            times[name].append(time.perf_counter() - t)  # the whole process, as a user waits
            imported[name] = out[-1]
    bare = statistics.median(times["bare interpreter"])
    rows = []
    for name in list(cases)[1:]:
        t = statistics.median(times[name])
        rows.append({"what": f"{name} (fresh), imported {imported[name]}", "ours": t,
                     "reference": bare, "reference_name": "bare interpreter", "unit": "s",
                     "ratio": t / max(bare, 1e-9), "goal": "no altair/scipy/litellm", "met": imported[name] == "-"})
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (the same rows)")
    ap.add_argument("--only", default="calls,sandbox,tables,embedded,startup",
                    help="comma-separated parts: calls, sandbox, tables, embedded, startup")
    ap.add_argument("--authors", type=Path, default=None,
                    help="a checkout of abhilekhborah/sovsim: Table 1 also against the authors' metric code")
    a = ap.parse_args(argv)
    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - {*SCRIPTS, "startup"})
    if unknown:
        ap.error(f"--only: unknown part(s) {unknown}; choose from {sorted({*SCRIPTS, 'startup'})}")
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for part in parts:
        print(f"\n=== {part} " + "=" * 60, flush=True)
        if part == "startup":
            got = startup_rows()
        else:
            args = list((QUICK if a.quick else FULL)[part])
            if part == "tables" and a.authors is not None:
                args += ["--authors", str(a.authors)]
            try:
                got = _module(part).main(args) or []
            except Exception as exc:  # one part failing leaves the others' rows; said, never hidden
                print(f"{part}: FAILED: {type(exc).__name__}: {exc}")
                got = [{"what": f"{part}: failed ({type(exc).__name__}: {str(exc)[:80]})", "ours": None,
                        "reference": None, "ratio": None, "goal": "-", "met": False}]
        rows += [{**_row(r), "part": part} for r in got]
    print(f"\nAll rows ({platform.node()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"{time.perf_counter() - started:.0f} s; {'quick' if a.quick else 'full'} sizes)")
    print(f"{'part':9s} {'what':72s} {'ours':>10s} {'reference':>10s} {'ratio':>7s}  {'goal':26s} met?")
    for r in rows:
        def num(x, width=10):
            return f"{x:{width}.3g}" if isinstance(x, (int, float)) else f"{'-':>{width}s}"
        met = {True: "yes", False: "NO", None: "-"}[r.get("met")]
        what = str(r["what"]) + (f" [vs {r['reference_name']}]" if r.get("reference_name") else "")
        print(f"{r['part']:9s} {what[:72]:72s} {num(r.get('ours'))} {num(r.get('reference'))} "
              f"{num(r.get('ratio'), 7)}  {str(r.get('goal') or '-')[:26]:26s} {met}")
    for r in rows:  # a goal not met: the measured limit and what it would take
        if r.get("limit"):
            print(f"  not met, {r['what']}: {r['limit']}")
    return rows


if __name__ == "__main__":
    main()
