"""Make the embedded-model SCARCE runs in data/scarce/embedded (see README.md).

Same runner and configuration as ``scarce-lab run scarce`` (each config below is the
CLI command in the comment), with one difference the CLI does not expose yet: the model
client's per-call timeout is raised from 120 s to 3600 s. The embedded model is
serialised machine-wide by a lock; on a shared 2-core machine a call can wait minutes
for its turn, and with the default timeout those decisions became TimeoutError
fallbacks instead of model answers.

Usage (repository root): ``.venv/bin/python data/scarce/make_embedded.py [N ...]``
(indexes into CONFIGS; default all, in order; complete runs are skipped). The shipped
runs were made in the order 0 1 6 2 5 3 4 7.

These runs predate the paper's defaults (cross-subrun memory, two private rounds, free
memory saves): the configs pin the settings they were made with (``memory="subrun"``
unless named, ``private_rounds=1``). A re-run today differs in two ways: a memory save
costs no time, and the config now records the negotiator's model-client settings among
the condition settings (so its run ids differ from the shipped ones, and the shipped
runs are kept). Issue 15 replaces this dataset.
"""

from __future__ import annotations

import sys
from pathlib import Path

from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.runners.scarce import ScarceConfig, run_scarce

OUT = Path(__file__).resolve().parent / "embedded"
COMMON = dict(model="scripted/fifo", negotiator_model="embedded/smollm2", subruns=1, seed=0, private_rounds=1)
SUB = dict(memory="subrun")
CONFIGS = [
    # scarce-lab run scarce --workers 2 --model scripted/fifo --negotiator-model embedded/smollm2
    #   --subruns 1 --deadline-min 5 --seed 0 [variant flags] --out data/scarce/embedded
    #   (the shipped runs: --memory subrun --private-rounds 1, the defaults then)
    ScarceConfig(workers=2, deadline_min=5, **SUB, **COMMON),                           # reference
    ScarceConfig(workers=2, deadline_min=5, mechanism="revisable", **SUB, **COMMON),    # --mechanism revisable
    ScarceConfig(workers=2, deadline_min=5, memory="none", **COMMON),                   # --memory none
    ScarceConfig(workers=2, deadline_min=5, llm={"reasoning_effort": "low"}, **SUB, **COMMON),   # --reasoning-effort low
    ScarceConfig(workers=2, deadline_min=5, llm={"reasoning_effort": "high"}, **SUB, **COMMON),  # --reasoning-effort high
    ScarceConfig(workers=2, deadline_min=5, memory="cross", **(COMMON | {"subruns": 2})),  # --memory cross --subruns 2
    # 3 workers so that requests overlap (contested contentions, private messages):
    # scarce-lab run scarce --workers 3 ... --subruns 1 --deadline-min 8 --seed 0
    ScarceConfig(workers=3, deadline_min=8, **SUB, **COMMON),
    # ... --workers 3 --subruns 1 --deadline-min 8 --rich-worker-budget 3000 --seed 0
    ScarceConfig(workers=3, deadline_min=8, rich_worker_budget=3000, **SUB, **COMMON),
]


def main(which: list[int]) -> None:
    for i in which:
        cfg = CONFIGS[i]
        client = LLMClient(LLMSettings(temperature=cfg.llm.temperature, reasoning_effort=cfg.reasoning_effort,
                                       timeout_s=3600.0, max_retries=1))
        path = run_scarce(cfg, OUT, client=client)
        print(f"[{i}] run -> {path}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(len(CONFIGS))))
