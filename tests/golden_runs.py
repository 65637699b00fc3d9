"""The golden runs: one tiny run per environment, deterministic (scripted agents, a
stub grader for SCARCE), so that the files they write pin the trajectory format."""

from __future__ import annotations

import json
from pathlib import Path

#: Volatile fields that differ between two identical runs.
VOLATILE = {"started_at", "ended_at", "package_version", "timestamp", "latency_s"}


def _sovsim(out: Path) -> None:
    from scarce_lab.environments.sovsim.runner.play import plan_sweep, run_sweep

    run_sweep(plan_sweep(["kcpr_m"], ["scripted/random"], 1, seed=7, rounds=3), out / "sovsim", progress=False)


def _economy(out: Path) -> None:
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy

    run_economy(EconomyRunConfig(agents=3, episodes=3, eval_episodes=1, seed=2,
                                 economy={"explore_interval": 1, "rent_interval": 1}), out / "economy")


def _scarce(out: Path) -> None:
    from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner
    from scarce_lab.runtime import run_sync
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/random", mechanism="revisable", seed=1)
    run_sync(ScarceRunner(cfg, out / "scarce", tasks=[toy_task(0)], grade_fn=fake_grade,
                          sandbox=FakeSandbox(out / ".sbx")).arun())


GOLDEN = {"sovsim": _sovsim, "economy": _economy, "scarce": _scarce}


def make_golden_runs(out: Path) -> None:
    """Write every golden run below ``out/<environment>/``."""
    import shutil

    for make in GOLDEN.values():
        make(Path(out))
    shutil.rmtree(Path(out) / ".sbx", ignore_errors=True)


def normalized(run_dir: Path) -> dict[str, object]:
    """A run's files as data with volatile fields removed (for comparisons)."""

    def clean(obj):
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items() if k not in VOLATILE}
        if isinstance(obj, list):
            return [clean(v) for v in obj]
        return obj

    out: dict[str, object] = {}
    for name in ("manifest.json", "events.jsonl", "llm_calls.jsonl"):
        p = Path(run_dir) / name
        text = p.read_text() if p.exists() else ""
        if name.endswith(".json"):
            out[name] = clean(json.loads(text))
        else:
            out[name] = [clean(json.loads(line)) for line in text.splitlines() if line.strip()]
    return out
