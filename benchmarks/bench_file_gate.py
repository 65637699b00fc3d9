"""What the loaders' file checks cost (files as claims, bounds; docs/threat_model.md): load time of
run folders with the read gate (regular files only, size limits, lines streamed within
``LIMITS.line_bytes``, every record's ``run_id`` checked) against the code before it.

Datasets: ``data/`` as shipped (400 runs, mostly events), and one run whose
``llm_calls.jsonl`` is the shipped SovSim embedded run's 20 calls repeated ``--calls``
times (the per-line path: every call record is read, typed and checked).

Each measurement runs in its own Python process (imports excluded from the time) and
the variants are interleaved (baseline, gate, baseline, ...) so that load from other
users of a shared machine hits both alike; figures are the median and the range over
``--reps`` rounds, and the ratio gate / baseline of the medians.

- ``baseline``: the code at ``--baseline-rev`` (default ``main``), extracted with
  ``git archive`` into a temporary folder.
- ``gate``: this checkout.

Usage: ``python benchmarks/bench_file_gate.py [--reps 5] [--calls 2000]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data" / "sovsim" / "sovsim-kcpr_m-embedded-smollm2-s0-0"
CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from scarce_lab.data.loaders import load_dataset
t = time.perf_counter()
ds = load_dataset(sys.argv[2])
n = ds.events.collect().height + ds.llm_calls.collect().height
print(time.perf_counter() - t, n)
"""


def _calls_run(folder: Path, copies: int) -> Path:
    """The shipped run with its calls repeated ``copies`` times (new call ids)."""
    dst = folder / RUN.name
    shutil.copytree(RUN, dst)
    lines = (RUN / "llm_calls.jsonl").read_text().splitlines()
    with (dst / "llm_calls.jsonl").open("w") as fh:
        for k in range(copies):
            for line in lines:
                obj = json.loads(line)
                obj["call_id"] = f"{obj['call_id']}-{k}"
                fh.write(json.dumps(obj) + "\n")
    return dst


def _time(src: Path, data: Path) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), str(data)], capture_output=True, text=True,
                         check=True, cwd=src)
    secs, n = out.stdout.split()
    return float(secs), int(n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000, help="copies of the run's 20 call records")
    ap.add_argument("--baseline-rev", default="main")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.baseline_rev, "scarce_lab"], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        datasets = {"data/ (400 runs)": ROOT / "data", f"1 run, {20 * args.calls} calls": _calls_run(Path(tmp),
                                                                                                     args.calls)}
        for name, data in datasets.items():
            times: dict[str, list[float]] = {"baseline": [], "gate": []}
            rows = set()
            for _ in range(args.reps):
                for variant, src in (("baseline", base), ("gate", ROOT)):
                    secs, n = _time(src, data)
                    times[variant].append(secs)
                    rows.add(n)
            assert len(rows) == 1, f"{name}: the variants read different rows {rows}"
            med = {v: statistics.median(t) for v, t in times.items()}
            print(f"{name}: {rows.pop()} rows; " + "; ".join(
                f"{v} {med[v]:.3f} s ({min(t):.3f}..{max(t):.3f})" for v, t in times.items())
                + f"; gate / baseline {med['gate'] / med['baseline']:.2f}")


if __name__ == "__main__":
    main()
