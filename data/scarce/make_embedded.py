"""Make the runs in data/scarce/embedded: the embedded model (embedded/smollm2) as
SOLVER AND NEGOTIATOR (see README.md in this folder).

Every configuration is a plain ``scarce-lab run scarce`` command (in its comment); this
script runs the same configurations through the runner, in order, skipping complete
runs. The five reference runs (seeds 0-4) are also the runs of
``benchmarks/bench_scarce.py --only-embedded --embedded-out data/scarce/embedded`` (same
configurations, same run ids; the benchmark turns the response cache off to time real
calls).

Usage (repository root): ``.venv/bin/python data/scarce/make_embedded.py [N ...]``
(indexes into CONFIGS; default all).
"""

from __future__ import annotations

import sys
from pathlib import Path

from scarce_lab.environments.scarce.config import ScarceLLM
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce

OUT = Path(__file__).resolve().parent / "embedded"
# scarce-lab run scarce --workers 2 --subruns 1 --model embedded/smollm2 --task rev --task tac
#   --seed S [variant flags] --out data/scarce/embedded
COMMON = dict(model="embedded/smollm2", subruns=1, tasks=["rev", "tac"])
CONFIGS = [
    *(ScarceConfig(workers=2, seed=s, **COMMON) for s in range(5)),                  # reference, seeds 0-4
    ScarceConfig(workers=2, seed=0, mechanism="revisable", **COMMON),                # --mechanism revisable
    ScarceConfig(workers=2, seed=0, memory="none", **COMMON),                        # --memory none
    ScarceConfig(workers=2, seed=0, memory="cross", **(COMMON | {"subruns": 2})),    # --subruns 2 (cross memory, the default)
    ScarceConfig(workers=2, seed=0, llm=ScarceLLM(reasoning_effort="low"), **COMMON),   # --reasoning-effort low
    ScarceConfig(workers=2, seed=0, llm=ScarceLLM(reasoning_effort="high"), **COMMON),  # --reasoning-effort high
    # 3 workers: --workers 3 --seed 0 [--rich-worker-budget 1500 (the paper's richer worker)]
    ScarceConfig(workers=3, seed=0, **COMMON),
    ScarceConfig(workers=3, seed=0, rich_worker_budget=1500, **COMMON),
]


def main(which: list[int]) -> None:
    for i in which:
        path = run_scarce(CONFIGS[i], OUT)
        print(f"[{i}] run -> {path}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(len(CONFIGS))))
