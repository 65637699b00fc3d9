"""Adapter: SovSim's released ``rationales.json`` -> the agent-round table.

Layout (see shared ``sovsim_format_sample/SOURCE.md``): the path is
``agent_rationales/<model>/<condition>/rationales.json``; the file is a flat JSON list
of round records ordered by ``simulation_id`` then ``round`` (1-based), each with
``pool_before``, ``extractions`` (4 ints, index 3 is the leader: boss or king; in cpr
the fourth citizen), ``final_pool`` (floored at 0), ``payoffs``, ``collapsed``,
``reasonings`` (4 strings); kcpr_m adds ``announced_pool``. The remainder the leader
saw is derived as ``max(0, pool_before - sum of extractions 0..2)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ..agent_rounds import SOVSIM_ROLES, agent_round_frame

REQUIRED = ("simulation_id", "round", "pool_before", "extractions", "final_pool", "payoffs", "collapsed")


def read_rationales(
    path: Path | str, *, model: str | None = None, condition: str | None = None, run_prefix: str | None = None
) -> pl.DataFrame:
    """Read one ``rationales.json`` into the agent-round table.

    ``model`` and ``condition`` default to the two parent folder names. Run ids are
    ``sovsim_json:<run_prefix>/<simulation_id>``; ``run_prefix`` defaults to
    ``<model>/<condition>`` (the loader passes the folder relative to the loaded root,
    so that two trees holding the same model never share a run id).

    Raises:
        ValueError: the condition folder is not cpr/bcpr/kcpr/kcpr_m, the file is not a
            JSON list, or a record lacks a field (message names file, record index, field).
    """
    path = Path(path)
    condition = condition or path.parent.name
    model = model or path.parent.parent.name
    if condition not in SOVSIM_ROLES:
        raise ValueError(
            f"{path}: condition folder must be one of {sorted(SOVSIM_ROLES)}, got {condition!r}"
        )
    records = json.loads(path.read_text())
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of round records, got {type(records).__name__}")
    sub_role, lead_role = SOVSIM_ROLES[condition]
    has_leader = condition != "cpr"
    rows: list[dict] = []
    for k, rec in enumerate(records):
        missing = [f for f in REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"{path}: record {k} lacks field(s) {missing}")
        z = [float(x) for x in rec["extractions"]]
        n = len(z)
        pool = float(rec["pool_before"])
        announced = rec.get("announced_pool")
        remainder = max(0.0, pool - sum(z[:-1])) if has_leader else None
        reasons = rec.get("reasonings") or [None] * n
        sim = int(rec["simulation_id"])
        for i in range(n):
            leader = has_leader and i == n - 1
            hidden = condition == "kcpr_m" and not leader and announced is not None
            rows.append(
                {
                    "source": "sovsim_json",
                    "run_id": f"sovsim_json:{run_prefix or f'{model}/{condition}'}/{sim}",
                    "model": model,
                    "condition": condition,
                    "base_condition": condition,
                    "settings": None,
                    "simulation": sim,
                    "round": int(rec["round"]),
                    "agent": f"a{i}",
                    "agent_index": i,
                    "role": lead_role if leader else sub_role,
                    "is_leader": leader,
                    "n_agents": n,
                    "pool_before": pool,
                    "announced_pool": None if announced is None else float(announced),
                    "pool_seen": float(announced) if hidden else pool,
                    "remainder_seen": remainder if leader else None,
                    "extraction": z[i],
                    "payoff": float(rec["payoffs"][i]),
                    "remaining": float(rec["final_pool"]),
                    "collapsed": bool(rec["collapsed"]),
                    "reasoning": reasons[i] if i < len(reasons) else None,
                    "valid": None,
                    "fallback_used": None,
                }
            )
    return agent_round_frame(rows)
