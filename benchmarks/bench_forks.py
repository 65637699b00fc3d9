"""Fork cost against a fresh run of the same length (docs/benchmarks.md, "Forks").

    .venv/bin/python benchmarks/bench_forks.py             # ~30 s on 2 cores
    .venv/bin/python benchmarks/bench_forks.py --latency 0.2 --rounds 12

A SovSim game of ``openai/fake`` at the local fake server (tests/fake_server.py, each
answer after ``--latency`` seconds, no response cache) is the parent. Measured in the
same run, each as wall time and requests the server counted:

- the fresh run: the parent's config with another sweep seed (every round live);
- ``fork at=k`` for k = 2, half the rounds, the last round (seed 1: rounds >= k live,
  re-seeded); rounds < k replay the parent's record (no request).

Ratios are the fork's over the fresh run's. The game never collapses
(``collapse_threshold=0``), so every run plays every round.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.environments.sovsim.config import SovSimConfig  # noqa: E402
from scarce_lab.forks.launch import fork  # noqa: E402
from scarce_lab.registry import get  # noqa: E402
from tests.fake_server import FakeOpenAIServer  # noqa: E402


def main(latency: float = 0.05, rounds: int = 8) -> list[dict]:
    """The rows (what, wall s, requests, ratio of wall, ratio of requests), printed."""
    os.environ.setdefault("OPENAI_API_KEY", "none")
    rows = []
    with FakeOpenAIServer(latency_s=latency) as srv, tempfile.TemporaryDirectory() as tmp:
        def cfg(seed: int) -> SovSimConfig:
            return SovSimConfig(condition="cpr", model="openai/fake", seed=seed,
                                game={"rounds": rounds, "collapse_threshold": 0},
                                llm={"api_base": srv.url, "cache": False, "max_concurrency": 8})

        def timed(what, f):
            n0, t0 = srv.stats()["requests"], time.perf_counter()
            f()
            rows.append({"what": what, "wall_s": time.perf_counter() - t0, "requests": srv.stats()["requests"] - n0})

        (parent,) = get("sovsim").run(cfg(0), Path(tmp) / "parent")
        timed("fresh run", lambda: get("sovsim").run(cfg(1), Path(tmp) / "fresh"))
        for k in sorted({2, rounds // 2, rounds}):
            timed(f"fork at={k}", lambda k=k: fork(parent, at=k, seeds=1, out=Path(tmp) / f"f{k}"))
    fresh = rows[0]
    for r in rows:
        r["wall_ratio"] = r["wall_s"] / fresh["wall_s"]
        r["request_ratio"] = r["requests"] / fresh["requests"]
    print(f"SovSim cpr, {rounds} rounds, openai/fake at {latency * 1000:.0f} ms; fork = seed 1, 'none'")
    for r in rows:
        print(f"{r['what']:>12}: {r['wall_s']:6.2f} s ({r['wall_ratio']:.2f}x), {r['requests']:3d} requests "
              f"({r['request_ratio']:.2f}x)")
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args()
    main(a.latency, a.rounds)
