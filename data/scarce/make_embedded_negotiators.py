"""Make the runs in data/scarce/embedded_negotiators: the embedded model as NEGOTIATOR,
the scripted fifo solver doing the programming (see README.md in this folder).

These runs were made on 2026-11-30 by an earlier version of this script (then
``make_embedded.py``, writing to ``data/scarce/embedded``), with the model client's
per-call timeout raised to 3600 s, before the SCARCE paper's defaults were adopted: the
configurations below pin the settings they were made with (``memory="subrun"`` unless
named, ``private_rounds=1``); each is the CLI command in its comment. Re-running writes
new run folders: a memory save now costs no time, and the run ids' hashes cover settings
the config has gained since (see the card).

Usage (repository root): ``.venv/bin/python data/scarce/make_embedded_negotiators.py [N ...]``
(indexes into CONFIGS; default all, in order; complete runs are skipped).
"""

from __future__ import annotations

import sys
from pathlib import Path

from scarce_lab.environments.scarce.config import ScarceLLM
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.llm import LLMClient, LLMSettings

OUT = Path(__file__).resolve().parent / "embedded_negotiators"
COMMON = dict(model="scripted/fifo", negotiator_model="embedded/smollm2", subruns=1, seed=0, private_rounds=1)
SUB = dict(memory="subrun")
CONFIGS = [
    # scarce-lab run scarce --workers 2 --model scripted/fifo --negotiator-model embedded/smollm2
    #   --subruns 1 --deadline-min 5 --seed 0 [variant flags] --out data/scarce/embedded_negotiators
    #   (the shipped runs: --memory subrun --private-rounds 1, the defaults then)
    ScarceConfig(workers=2, deadline_min=5, **SUB, **COMMON),                           # reference
    ScarceConfig(workers=2, deadline_min=5, mechanism="revisable", **SUB, **COMMON),    # --mechanism revisable
    ScarceConfig(workers=2, deadline_min=5, memory="none", **COMMON),                   # --memory none
    ScarceConfig(workers=2, deadline_min=5, llm=ScarceLLM(reasoning_effort="low"), **SUB, **COMMON),   # --reasoning-effort low
    ScarceConfig(workers=2, deadline_min=5, llm=ScarceLLM(reasoning_effort="high"), **SUB, **COMMON),  # --reasoning-effort high
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
        settings = {k: v for k, v in cfg.llm.model_dump(exclude_none=True).items() if k in LLMSettings.model_fields}
        client = LLMClient(LLMSettings(**{**settings, "timeout_s": 3600.0, "max_retries": 1}))
        path = run_scarce(cfg, OUT, client=client)
        print(f"[{i}] run -> {path}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(len(CONFIGS))))
