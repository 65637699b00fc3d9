"""Economy of Minds benchmark: steps per second with rule agents on Blocks World.

Prints:

1. ``engine``: auction + bucket brigade + task steps per second (pure economy and
   engine, no recorder), with end-of-episode rent, bankruptcy and births.
2. ``runner``: steps per second of whole recorded runs (``detail=steps``: every
   auction, payment, step and reward event, fsync per episode).

Usage::

    .venv/bin/python benchmarks/bench_economy.py [--episodes 300] [--agents 12]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from scarce_lab.environments.economy.agents.rules import RulePolicy
from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy
from scarce_lab.environments.economy.world import Economy, EconomyConfig, run_episode
from scarce_lab.environments.economy.world.blocksworld import BlocksWorld, make_instance


def bench_engine(episodes: int, agents: int, seed: int = 0) -> tuple[int, float]:
    pol = RulePolicy("random-rules")
    eco = Economy(EconomyConfig())
    rng = random.Random(seed)
    for g in pol.founders(agents, rng):
        eco.add_agent(g, episode=0, bid=rng.randint(1, 10))
    steps = 0
    t0 = time.perf_counter()
    for e in range(episodes):
        n = rng.randint(2, 5)
        target, stacks = make_instance(n, 3, rng)
        res = run_episode(eco, BlocksWorld(target, stacks, max_steps=4 * (n + 1)),
                          trigger=lambda a, o: a.genome.fires(o), act=lambda a, o: a.genome.act(o),
                          training=True, rng=random.Random(e))
        steps += res.steps
        eco.end_episode(e, random.Random(10_000 + e), pol.mutate, pol.newcomer)
    return steps, time.perf_counter() - t0


def bench_runner(episodes: int, agents: int, seed: int = 0) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_dir = run_economy(EconomyRunConfig(agents=agents, episodes=episodes, eval_episodes=0, seed=seed),
                              Path(tmp))
        dt = time.perf_counter() - t0
        steps = sum(1 for line in (run_dir / "events.jsonl").open() if '"kind":"step"' in line)
    return steps, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=300)
    ap.add_argument("--agents", type=int, default=12)
    args = ap.parse_args()
    for name, fn in (("engine", bench_engine), ("runner", bench_runner)):
        steps, dt = fn(args.episodes, args.agents)
        print(f"{name:7s} {steps:6d} steps in {dt:6.2f} s = {steps / dt:9.0f} steps/s")


if __name__ == "__main__":
    main()
