"""Coverage of the share intervals of selection chains (``scarce_lab.runners.selection.
share_summary``: ``stats.bounded_mean_ci`` over chains, bounds 0 and 1) at 2-30 chains.

Chains are simulated with the shipped rules (``replicator_step``, ``eom_step``) on
synthetic payoffs of 4 seats and 3 models, generations 1-5 (generation 0 is the dealt
assignment, the same in every chain up to the seat order):

- ``dominant``: a seat's payoff is its model's level (3, 2, 1) plus ``N(0, 1)``, floored
  at 0 (one model better than the others).
- ``commons``: frequency-dependent, like SovSim's greedy / random / sustainable: with
  ``k`` greedy seats a greedy seat gains ``30 - 4 (k - 1)``, a sustainable one
  ``20 - 5 k``, a random one the mean of the two; plus ``N(0, 2)``, floored at 0.
- ``neutral``: every model's level 2 plus ``N(0, 1)`` (drift only).

Each scenario under ``replicator`` and ``eom`` (initial wealth 0 and 2, rent: the
generation's mean). The true mean share of a model at a generation is its mean over
``--pool`` simulated chains; a dataset is ``k`` chains drawn from the pool; coverage is
the share of nominal-95% intervals holding the truth, the worst over scenarios, rules,
models and generations (a share that piles up at 0 and 1 once a model is fixed or lost
is the hard case). ``share_summary`` prints intervals from ``selection.MIN_CHAINS``
chains, the smallest count whose worst coverage here is at least 0.95.

Usage: ``python benchmarks/bench_selection_coverage.py [--sims 1000] [--pool 20000] [--seed 0]``
(a few minutes on one core at the defaults). The Monte Carlo error of a coverage near
0.95 is about ``sqrt(0.95 * 0.05 / sims)`` (0.7 points at 1000).
"""

from __future__ import annotations

import argparse
import math
import random

import numpy as np

from scarce_lab.analysis import stats
from scarce_lab.runners import selection

MODELS = ("m/a", "m/b", "m/c")
SEATS = ("s0", "s1", "s2", "s3")
GENERATIONS = 5
COUNTS = (2, 3, 4, 5, 8, 10, 20, 30)


def _dominant(assignment, rng):
    level = {"m/a": 3.0, "m/b": 2.0, "m/c": 1.0}
    return {s: max(0.0, level[m] + rng.gauss(0, 1)) for s, m in assignment.items()}


def _commons(assignment, rng):
    k = sum(m == "m/a" for m in assignment.values())
    greedy, sustainable = 30 - 4 * (k - 1), 20 - 5 * k
    level = {"m/a": greedy, "m/b": (greedy + sustainable) / 2, "m/c": sustainable}
    return {s: max(0.0, level[m] + rng.gauss(0, 2)) for s, m in assignment.items()}


def _neutral(assignment, rng):
    return {s: max(0.0, 2.0 + rng.gauss(0, 1)) for s in assignment}


SCENARIOS = {"dominant": _dominant, "commons": _commons, "neutral": _neutral}
RULES = {"replicator": None, "eom w0=0": 0.0, "eom w0=2": 2.0}


def chain_shares(payoff, rule_wealth, rng) -> np.ndarray:
    """``(generations, models)`` shares of one simulated chain, generations 1..5."""
    assignment = selection.initial_assignment(SEATS, MODELS, rng)
    wealth = dict.fromkeys(SEATS, rule_wealth or 0.0)
    out = np.zeros((GENERATIONS, len(MODELS)))
    for g in range(GENERATIONS):
        payoffs = payoff(assignment, rng)
        if rule_wealth is None:
            assignment, _ = selection.replicator_step(assignment, payoffs, rng)
        else:
            step = selection.eom_step(assignment, payoffs, wealth, rng, initial_wealth=rule_wealth)
            assignment, wealth = step.assignment, step.wealth
        out[g] = [sum(a == m for a in assignment.values()) / len(SEATS) for m in MODELS]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    nrng = np.random.default_rng(args.seed)
    worst = dict.fromkeys(COUNTS, 1.0)
    where = dict.fromkeys(COUNTS, "")
    for sname, payoff in SCENARIOS.items():
        for rname, w0 in RULES.items():
            pool = np.stack([chain_shares(payoff, w0, rng) for _ in range(args.pool)])  # (pool, G, M)
            truth = pool.mean(0)
            for k in COUNTS:
                hits = np.zeros((GENERATIONS, len(MODELS)))
                for _ in range(args.sims):
                    sample = pool[nrng.integers(0, args.pool, k)]
                    for g in range(GENERATIONS):
                        for j in range(len(MODELS)):
                            _, lo, hi = stats.bounded_mean_ci(sample[:, g, j], 0.0, 1.0)
                            hits[g, j] += lo - 1e-12 <= truth[g, j] <= hi + 1e-12
                cov = hits / args.sims
                g, j = np.unravel_index(np.argmin(cov), cov.shape)
                if cov[g, j] < worst[k]:
                    worst[k] = float(cov[g, j])
                    where[k] = f"{sname}, {rname}, {MODELS[j]} at generation {g + 1} (truth {truth[g, j]:.3f})"
    mc = math.sqrt(0.95 * 0.05 / args.sims)
    print(f"share intervals (bounded_mean_ci over chains), worst coverage over {len(SCENARIOS)} scenarios x "
          f"{len(RULES)} rules x {len(MODELS)} models x {GENERATIONS} generations; {args.sims} datasets per cell, "
          f"pool {args.pool} chains; Monte Carlo error ~{mc:.3f}")
    for k in COUNTS:
        flag = "" if worst[k] >= 0.95 - 2 * mc else "  (below 0.95)"
        print(f"  {k:>2} chains: {worst[k]:.3f}  worst: {where[k]}{flag}")
    print(f"printed by share_summary from selection.MIN_CHAINS = {selection.MIN_CHAINS} chains")


if __name__ == "__main__":
    main()
