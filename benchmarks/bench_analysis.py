"""SovSim Table 1 at scale: a million agent-rounds, from JSON and from Parquet, next to
the naive baseline it replaces.

The dataset is the SovSim release *format sample* (``../shared/data/sovsim_format_sample``:
two conditions, made-up numbers following the game's rules) replicated until it holds
``--agent-rounds`` agent-rounds: ``model-NNN/<condition>/rationales.json`` files, each
holding the sample's simulations many times under new simulation ids. It measures
reading and analysis speed only; its numbers mean nothing about any model.

Each measurement runs in its own Python process (so its peak memory is its own) and
the variants are interleaved (baseline, JSON, Parquet, baseline, ...) so that load
from other users of a shared machine hits all of them alike; the figures are the
median and the spread (min..max) over ``--reps`` rounds. Wall time counts reading the
files and computing Table 1 (imports excluded); memory is the process's peak RSS.

- ``baseline``: the code before the vectorised statistics and fast readers (``--baseline-rev``, extracted with
  ``git archive`` into a temporary folder): one Python dict per agent-round per file,
  Gini through ``map_elements``, the survival-drop bootstrap in a Python loop of
  ``random.choices``.
- ``json``: this checkout, reading the JSON files (polars with an explicit schema).
- ``parquet``: this checkout, reading the Parquet cache of the agent-round table
  (partitioned by source and model; written once before the timings) as a lazy scan,
  so Table 1 reads only the columns it uses (not the reasoning texts). Its "read"
  time is the cache check; the Parquet reading falls in "Table 1".
- ``--notebooks``: also times ``scarce-lab report 01 -p DATASET=<data>`` (the SovSim
  notebook, executed with its charts) once per round.

Usage: ``python benchmarks/bench_analysis.py [--agent-rounds 1000000] [--reps 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT.parent / "shared" / "data" / "sovsim_format_sample"
BASELINE_REV = "9b70195"  # main before the vectorised statistics and fast readers

CHILD = r"""
import json, resource, sys, time, os
mode, data, out = sys.argv[1], sys.argv[2], sys.argv[3]
import polars as pl
from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table
from scarce_lab.environments.sovsim.tables import load_agent_rounds
t0 = time.perf_counter()
if mode == "parquet":  # a lazy scan of the cache: Table 1 reads only the columns it needs
    df = load_agent_rounds(data, cache=True, lazy=True)
else:
    df = load_agent_rounds(data)
t1 = time.perf_counter()
table = sovsim_table(df)
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
table.write_parquet(out)
lf = df.lazy()
rows, sims = lf.select(pl.len(), pl.col("run_id").n_unique()).collect().row(0)
print(json.dumps({"read_s": t1 - t0, "table_s": t2 - t1, "wall_s": t2 - t0, "rss_mb": rss,
                  "rows": rows, "sims": sims}))
"""


def make_dataset(out: Path, agent_rounds: int, models: int) -> int:
    """Replicate the format sample into ``out``; return the agent-rounds written."""
    files = {p.parent.name: json.loads(p.read_text()) for p in sorted(SAMPLE.glob("*/*/rationales.json"))}
    if not files:
        raise SystemExit(f"format sample not found at {SAMPLE}")
    per_copy = sum(len(r["extractions"]) for recs in files.values() for r in recs)
    copies = max(1, round(agent_rounds / per_copy / models))
    total = 0
    for m in range(models):
        for cond, recs in files.items():
            sims = sorted({r["simulation_id"] for r in recs})
            out_recs = []
            for c in range(copies):
                for r in recs:
                    out_recs.append({**r, "simulation_id": c * len(sims) + sims.index(r["simulation_id"]) + 1})
            d = out / f"model-{m:03d}" / cond
            d.mkdir(parents=True, exist_ok=True)
            (d / "rationales.json").write_text(json.dumps(out_recs))
            total += sum(len(r["extractions"]) for r in out_recs)
    (out / "BENCHMARK_DATA.md").write_text(
        f"Replicated SovSim format sample ({copies} copies x {models} models); benchmark input, not data.\n")
    return total


def make_runs(out: Path, agent_rounds: int, games: int) -> int:
    """Our run-folder format: ``games`` scripted SovSim games played by the runner (4
    conditions x 4 scripted policies), then copied under new run ids until the folder
    holds about ``agent_rounds`` agent-rounds. Returns the agent-rounds written."""
    sys.path.insert(0, str(ROOT))
    from scarce_lab.environments.sovsim.runner.play import plan_sweep, run_sweep

    seed_dir = out.parent / f"{out.name}-seed"
    policies = ["scripted/greedy", "scripted/sustainable", "scripted/conditional", "scripted/greedy_leader"]
    if not seed_dir.exists():
        run_sweep(plan_sweep(["all"], policies, simulations=max(1, games // 16)), seed_dir, progress=False)
    originals = sorted(p.parent for p in seed_dir.glob("*/manifest.json"))
    per_pass = 0
    for rd in originals:
        for line in (rd / "events.jsonl").read_text().splitlines():
            if '"kind":"round"' in line:
                per_pass += len(json.loads(line)["payload"]["agents"])
    copies = max(1, round(agent_rounds / per_pass))
    for c in range(copies):
        for rd in originals:
            new_id = f"{rd.name}-r{c}"
            dest = out / new_id
            dest.mkdir(parents=True, exist_ok=True)
            for f in ("manifest.json", "events.jsonl", "llm_calls.jsonl"):
                src = rd / f
                if src.exists():
                    text = src.read_text()
                    (dest / f).write_text(text.replace(f'"{rd.name}"', f'"{new_id}"'))
    (out / "BENCHMARK_DATA.md").write_text(
        f"{len(originals)} scripted SovSim games copied {copies} times under new run ids; benchmark input, not data.\n")
    return per_pass * copies


def baseline_tree(rev: str) -> Path:
    """The package as it was at ``rev`` (``git archive``), in a temporary folder."""
    dest = Path(tempfile.mkdtemp(prefix="scarce_lab_baseline-"))
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "scarce_lab"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch.stdout, check=True)
    return dest


def run_child(src: Path, mode: str, data: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "SCARCE_LAB_CACHE_DIR": str(data.parent / "cache")}
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(data), str(out)], capture_output=True,
                         text=True, env=env, cwd=str(src))
    if res.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_notebook(data: Path, out: Path) -> float | None:
    """Wall seconds of ``scarce-lab report 01`` on ``data``; ``None`` (and the error
    printed) when the notebook fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([sys.executable, "-m", "scarce_lab", "report", "01", "-p", f"DATASET={data}",
                          "-p", f"OUT_DIR={out / 'figures'}", "-p", f"SHARED_DATA={out / 'no_shared'}",
                          "-o", str(out / "01.ipynb")], capture_output=True, text=True, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t
    if res.returncode != 0:
        err = [ln for ln in (res.stdout + res.stderr).splitlines() if "Error" in ln]
        print(f"  notebook 01 FAILED after {wall:.1f} s: {(err[-1] if err else res.stderr[-300:]).strip()[:300]}")
        return None
    return wall


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.2f} ({min(xs):.2f}..{max(xs):.2f})"


def compare_tables(a: Path, b: Path) -> str:
    """Largest difference between two Table 1 frames: deterministic columns (means,
    t and Wilson intervals) and the bootstrap columns separately."""
    import polars as pl

    x, y = pl.read_parquet(a), pl.read_parquet(b)
    if x.select("model", "condition").rows() != y.select("model", "condition").rows():
        return "ROWS DIFFER"
    det, boot = 0.0, 0.0
    for c in x.columns:
        if x.schema[c] not in (pl.Float64, pl.Int64):
            continue
        d = (x[c].cast(pl.Float64) - y[c].cast(pl.Float64)).abs().max()
        d = 0.0 if d is None else float(d)
        if c.startswith("survival_drop_ci"):
            boot = max(boot, d)
        else:
            det = max(det, d)
    return f"max |diff| deterministic columns {det:.3g}, survival-drop bootstrap CI ends {boot:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent-rounds", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "scarce_lab_bench_analysis")
    ap.add_argument("--baseline-rev", default=BASELINE_REV)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--notebooks", action="store_true", help="also time notebook 01 on the dataset")
    ap.add_argument("--runs-agent-rounds", type=int, default=0,
                    help="also benchmark our run-folder format with about this many agent-rounds (0: skip)")
    ap.add_argument("--games", type=int, default=160, help="scripted games played to seed the run folders")
    ap.add_argument("--skip-release", action="store_true", help="skip the release-layout dataset")
    args = ap.parse_args()

    base_src = None if args.no_baseline else baseline_tree(args.baseline_rev)
    datasets = []
    if not args.skip_release:
        data = args.work / f"sovsim_{args.agent_rounds}"
        if not (data / "BENCHMARK_DATA.md").exists():
            shutil.rmtree(data, ignore_errors=True)
            t = time.perf_counter()
            n = make_dataset(data, args.agent_rounds, args.models)
            print(f"dataset: {n:,} agent-rounds written to {data} in {time.perf_counter() - t:.1f} s")
        size = sum(p.stat().st_size for p in data.rglob("rationales.json"))
        print(f"dataset: {data} ({len(list(data.rglob('rationales.json')))} files, {size / 1e6:.0f} MB of JSON)")
        datasets.append(("SovSim release layout (rationales.json)", data, {"json": 10.0, "parquet": 2.0}))
    if args.runs_agent_rounds:
        runs = args.work / f"runs_{args.runs_agent_rounds}"
        if not (runs / "BENCHMARK_DATA.md").exists():
            shutil.rmtree(runs, ignore_errors=True)
            t = time.perf_counter()
            n = make_runs(runs, args.runs_agent_rounds, args.games)
            print(f"dataset: {n:,} agent-rounds in run folders written to {runs} in {time.perf_counter() - t:.1f} s")
        n_runs = len(list(runs.glob("*/manifest.json")))
        size = sum(p.stat().st_size for p in runs.rglob("events.jsonl"))
        print(f"dataset: {runs} ({n_runs} run folders, {size / 1e6:.0f} MB of events.jsonl)")
        datasets.append((f"our run folders ({n_runs} runs, events.jsonl)", runs, {}))
    for title, data, goals in datasets:
        bench_one(title, data, goals, args, base_src)
    if base_src is not None:
        shutil.rmtree(base_src, ignore_errors=True)


def bench_one(title: str, data: Path, goals: dict[str, float], args, base_src: Path | None) -> None:
    """Interleaved rounds of every variant on one dataset; prints the table."""
    print(f"\n== {title}: {data}")
    shutil.rmtree(args.work / "cache", ignore_errors=True)
    first = run_child(ROOT, "parquet", data, args.work / "warm.parquet")  # writes the cache
    print(f"parquet cache written (first read, from JSON, + write: {first['read_s']:.2f} s)")
    variants = ["json", "parquet"] if base_src is None else ["baseline", "json", "parquet"]
    results: dict[str, list[dict]] = {v: [] for v in variants}
    nb: list[float] = []
    for rep in range(args.reps):
        for v in variants:
            src = base_src if v == "baseline" else ROOT
            mode = "json" if v == "baseline" else v
            r = run_child(src, mode, data, args.work / f"table_{v}.parquet")
            results[v].append(r)
            print(f"  round {rep + 1} {v:8s} read {r['read_s']:6.2f} s  table {r['table_s']:6.2f} s  "
                  f"total {r['wall_s']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB", flush=True)
        if args.notebooks:
            t = run_notebook(data, args.work / "report")
            if t is not None:
                nb.append(t)
                print(f"  round {rep + 1} notebook 01: {t:.1f} s", flush=True)
    rows = results[variants[-1]][0]["rows"]
    sims = results[variants[-1]][0]["sims"]
    print(f"\nSovSim Table 1 from {rows:,} agent-rounds ({sims:,} simulations), {title}; {args.reps} interleaved "
          f"rounds, {os.cpu_count()} CPUs (shared machine: load average {os.getloadavg()[0]:.1f}); median (min..max)")
    print(f"{'variant':10s} {'read s':>22s} {'Table 1 s':>22s} {'total s':>22s} {'peak RSS MB':>22s}")
    for v in variants:
        rs = results[v]
        print(f"{v:10s} {spread([r['read_s'] for r in rs]):>22s} {spread([r['table_s'] for r in rs]):>22s} "
              f"{spread([r['wall_s'] for r in rs]):>22s} {spread([r['rss_mb'] for r in rs]):>22s}")
    for v, goal in goals.items():
        med = statistics.median(r["wall_s"] for r in results[v])
        peak = max(r["rss_mb"] for r in results[v])
        print(f"goal {v}: total under {goal:.0f} s -> {'met' if med < goal else 'NOT met'} ({med:.2f} s); "
              f"memory under 1 GB -> {'met' if peak < 1024 else 'NOT met'} ({peak:.0f} MB)")
    if "baseline" in results:
        b = statistics.median(r["wall_s"] for r in results["baseline"])
        for v in ("json", "parquet"):
            print(f"speed-up {v} vs baseline: {b / statistics.median(r['wall_s'] for r in results[v]):.1f}x")
        print("tables, baseline vs json: " + compare_tables(args.work / "table_baseline.parquet",
                                                            args.work / "table_json.parquet"))
    print("tables, json vs parquet: " + compare_tables(args.work / "table_json.parquet",
                                                       args.work / "table_parquet.parquet"))
    if nb:
        print(f"notebook 01 on this dataset: {spread(nb)} s (goal under 30 s: "
              f"{'met' if statistics.median(nb) < 30 else 'NOT met'})")


if __name__ == "__main__":
    main()
