"""SCARCE and Economy fork cost against a fresh run of the same length (docs/benchmarks.md, "Forks").

    .venv/bin/python benchmarks/bench_forks_scarce.py             # ~1 min on 2 cores
    .venv/bin/python benchmarks/bench_forks_scarce.py --latency 0.2

Measured in the same run, as wall time and (for the model run) requests the local fake
server counted (tests/fake_server.py, each answer after ``--latency`` seconds, no
response cache):

- SCARCE, ``openai/fake`` negotiators and scripted solvers (3 workers, 1 subrun): the
  fresh run is the parent's config played again into another folder (the same seed, so
  exactly the same length); ``fork at=k`` (``none``, seed 0: the same continuation) for
  the first, middle and last contention. The prefix's calls are answered from the
  parent's record (no request) but its solver steps, sandbox commands and grading are
  played again: SCARCE's prefix costs its sandbox time, not its model time.
- SCARCE scripted (the shipped ``scarce-institutions`` parent of data/forks/scarce): no
  model at all, so a fork costs what a fresh run costs plus the prefix check.
- Economy of Minds, scripted Blocks World (60 + 10 episodes): the same.

Ratios are the fork's over the fresh run's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.data.recorder import read_manifest  # noqa: E402
from scarce_lab.environments.economy.config import EconomyRunConfig  # noqa: E402
from scarce_lab.environments.scarce.config import ScarceConfig  # noqa: E402
from scarce_lab.forks.launch import fork  # noqa: E402
from scarce_lab.registry import get  # noqa: E402
from tests.fake_server import FakeOpenAIServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data/talk_institutions/scarce/scripted/scarce_ballots_fixed_mem-cross_scripted-skilled_s0_d6f4fbf1"


def _table(title: str, rows: list[dict]) -> None:
    fresh = rows[0]
    print(title)
    for r in rows:
        req = "" if r.get("requests") is None else (
            f", {r['requests']:3d} requests ({r['requests'] / max(1, fresh['requests']):.2f}x)")
        print(f"{r['what']:>14}: {r['wall_s']:6.2f} s ({r['wall_s'] / fresh['wall_s']:.2f}x){req}")


def main(latency: float = 0.05) -> dict[str, list[dict]]:
    """The rows per setting (what, wall s, requests), printed with ratios to the fresh run."""
    os.environ.setdefault("OPENAI_API_KEY", "none")
    out: dict[str, list[dict]] = {}
    with FakeOpenAIServer(latency_s=latency) as srv, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows: list[dict] = []

        def timed(what, f, count=True):
            n0, t0 = srv.stats()["requests"], time.perf_counter()
            f()
            rows.append({"what": what, "wall_s": time.perf_counter() - t0,
                         "requests": srv.stats()["requests"] - n0 if count else None})

        cfg = ScarceConfig(model="scripted/skilled:0.5", negotiator_model="openai/fake", seed=3, workers=3,
                           subruns=1, deadline_min=6, output_limit=100,
                           llm={"api_base": srv.url, "cache": False, "max_retries": 0})
        (parent,) = get("scarce").run(cfg, tmp / "parent")
        timed("fresh run", lambda: get("scarce").run(cfg, tmp / "fresh"))
        steps = get("scarce").fork_steps(parent)
        for k in sorted({steps[0], steps[len(steps) // 2], steps[-1]}):
            timed(f"fork at={k}", lambda k=k: fork(parent, at=k, seeds=0, out=tmp / f"f{k}"))
        out["scarce-openai"] = rows
        _table(f"SCARCE, openai/fake negotiators at {latency * 1000:.0f} ms, {len(steps)} contentions; "
               "fork = seed 0, 'none'", rows)

        rows = []
        sc = ScarceConfig.model_validate(read_manifest(SHIPPED).config)
        timed("fresh run", lambda: get("scarce").run(sc, tmp / "sfresh"), count=False)
        steps = get("scarce").fork_steps(SHIPPED)
        for k in sorted({steps[0], steps[len(steps) // 2], steps[-1]}):
            timed(f"fork at={k}", lambda k=k: fork(SHIPPED, at=k, seeds=0, out=tmp / f"s{k}"), count=False)
        out["scarce-scripted"] = rows
        _table(f"SCARCE scripted (shipped parent {SHIPPED.name}), {len(steps)} contentions", rows)

        rows = []
        ec = EconomyRunConfig(episodes=60, eval_episodes=10, seed=2)
        (eparent,) = get("economy").run(ec, tmp / "eparent")
        timed("fresh run", lambda: get("economy").run(ec, tmp / "efresh"), count=False)
        for k in (1, 35, 69):
            timed(f"fork at={k}", lambda k=k: fork(eparent, at=k, seeds=0, out=tmp / f"e{k}"), count=False)
        out["economy-scripted"] = rows
        _table("Economy of Minds, scripted Blocks World, 70 episodes", rows)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.05)
    main(ap.parse_args().latency)
