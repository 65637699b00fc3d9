"""Adapter: GovSim fishing ``log_env.json`` runs -> the agent-round table.

Layout (see shared ``govsim_fishing_v7/SOURCE.md``): ``<model>/<run>/log_env.json``, a
list of event records (pandas ``orient="records"``); harvest rows have
``action == "harvesting"``, ``agent_id`` (``persona_k``), ``round`` counted from 0,
``resource_in_pool_before_harvesting``, ``resource_in_pool_after_harvesting`` (after
all fishers), ``resource_collected`` and ``wanted_resource``. Values may be stored as
strings, so every number is parsed with ``float(str(v))``.

Game: 5 fishers, pool 100, regeneration min(100, 2 x remaining), collapse when fewer
than :data:`COLLAPSE_BELOW` tons remain. Mapping: ``round`` + 1, ``extraction`` =
``payoff`` = tons collected, no leader (role ``fisher``), condition from the run's
``config.yaml`` (``experiment.env.name``) or ``fishing``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from ..agent_rounds import agent_round_frame

COLLAPSE_BELOW = 5.0


def _num(v, field: str, path: Path, k: int) -> float:
    try:
        return float(str(v))
    except (TypeError, ValueError):
        raise ValueError(f"{path}: record {k} field {field!r} is not a number: {v!r}") from None


def _condition(run_dir: Path) -> str:
    cfg = run_dir / "config.yaml"
    if cfg.exists():
        import yaml

        try:
            data = yaml.safe_load(cfg.read_text()) or {}
            name = data.get("experiment", {}).get("env", {}).get("name")
            if name:
                return str(name)
        except yaml.YAMLError:
            pass
    return "fishing"


def read_govsim_log(path: Path | str, *, model: str | None = None, simulation: int = 0) -> pl.DataFrame:
    """One ``log_env.json`` as agent-round rows (``model`` defaults to the grandparent folder).

    Raises:
        ValueError: not a JSON list, or a harvest record with a non-numeric field.
    """
    path = Path(path)
    run_dir = path.parent
    model = model or run_dir.parent.name
    condition = _condition(run_dir)
    records = json.loads(path.read_text())
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    harvest = [(k, r) for k, r in enumerate(records) if r.get("action") == "harvesting"]
    agents = sorted({str(r["agent_id"]) for _, r in harvest}, key=lambda a: (len(a), a))
    n = len(agents)
    rows: list[dict] = []
    for k, r in harvest:
        rnd = int(_num(r["round"], "round", path, k)) + 1
        after = _num(r["resource_in_pool_after_harvesting"], "resource_in_pool_after_harvesting", path, k)
        before = _num(r["resource_in_pool_before_harvesting"], "resource_in_pool_before_harvesting", path, k)
        got = _num(r["resource_collected"], "resource_collected", path, k)
        a = str(r["agent_id"])
        rows.append(
            {
                "source": "govsim_log",
                "run_id": f"govsim:{model}/{run_dir.name}",
                "model": model,
                "condition": condition,
                "base_condition": condition,
                "settings": None,
                "simulation": simulation,
                "round": rnd,
                "agent": a,
                "agent_index": agents.index(a),
                "role": "fisher",
                "is_leader": False,
                "n_agents": n,
                "pool_before": before,
                "announced_pool": None,
                "pool_seen": before,
                "remainder_seen": None,
                "extraction": got,
                "payoff": got,
                "remaining": after,
                "collapsed": after < COLLAPSE_BELOW,
                "reasoning": None,
                "valid": None,
                "fallback_used": None,
            }
        )
    return agent_round_frame(rows)


def read_govsim_logs(paths: Iterable[Path | str]) -> pl.DataFrame:
    """Several logs; ``simulation`` numbers runs 0.. within each model (sorted by path)."""
    frames = []
    counters: dict[str, int] = {}
    for p in sorted(Path(x) for x in paths):
        model = p.parent.parent.name
        i = counters.get(model, 0)
        counters[model] = i + 1
        frames.append(read_govsim_log(p, model=model, simulation=i))
    if not frames:
        return agent_round_frame([])
    return pl.concat(frames)
