"""Adapter: the SovSim authors' run files (``sim_XX.json``) -> the agent-round table.

Layout, as the authors' ``run.py`` writes it: ``<output_dir>/<model>/<condition>/
sim_01.json ... sim_NN.json`` and ``summary.json``. Each ``sim_XX.json`` holds ``model``,
``condition``, ``simulation_id``, ``rounds`` (one record per round: ``round``,
``pool_before``, ``extractions`` (index 3 is the leader), ``remaining_before_leader``,
``final_pool``, ``payoffs``, ``collapsed``; KCPR-M adds ``announced_pool``; optional
``reasonings``) and ``config`` (``initial_pool``, ``carrying_capacity``,
``extraction_step``, ``max_extraction``, ``regen_multiplier``, ``collapse_threshold``,
``max_rounds``, ``temperature``, ``history_window``, ``compress_history``,
``payoff_formula``). Unlike the released ``rationales.json`` these files carry the run's
settings: the whole ``config`` becomes the ``settings`` of the run, so runs made with
different temperatures or history windows are different conditions. The sampling
temperature is stored as ``llm.temperature`` (a setting of the model, like our runs'
``llm.*``); the other keys keep their names.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from scarce_lab.data.tables import settings_json

from ..agent_rounds import SOVSIM_ROLES, agent_round_frame

REQUIRED = ("model", "condition", "simulation_id", "rounds", "config")
#: ``config`` keys that are settings of the model (stored under ``llm.``).
MODEL_KEYS = ("temperature",)
ROUND_FIELDS = ("round", "pool_before", "extractions", "final_pool", "payoffs", "collapsed")


def read_sim_file(path: Path | str, *, run_id: str | None = None) -> pl.DataFrame:
    """One ``sim_XX.json`` as agent-round rows (source ``sovsim_run``). ``run_id``
    defaults to ``sovsim_run:<model>/<condition>/<simulation_id>``; the loader passes
    the file's path relative to the loaded root, so that runs never share an id.

    Raises:
        ValueError: not a JSON object with :data:`REQUIRED` keys, an unknown condition,
            or a round record lacking a field (the message names file, round and field).
    """
    path = Path(path)
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object (a SovSim sim_XX.json), got {type(data).__name__}")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: not a SovSim run file: lacks {missing}")
    condition, model = str(data["condition"]), str(data["model"])
    if condition not in SOVSIM_ROLES:
        raise ValueError(f"{path}: condition must be one of {sorted(SOVSIM_ROLES)}, got {condition!r}")
    if not isinstance(data["config"], dict):
        raise ValueError(f"{path}: config must be an object, got {type(data['config']).__name__}")
    settings = settings_json({f"llm.{k}" if k in MODEL_KEYS else k: v for k, v in data["config"].items()})
    sim = int(data["simulation_id"])
    sub_role, lead_role = SOVSIM_ROLES[condition]
    has_leader = condition != "cpr"
    rows: list[dict] = []
    for k, rec in enumerate(data["rounds"]):
        lacking = [f for f in ROUND_FIELDS if f not in rec]
        if lacking:
            raise ValueError(f"{path}: round record {k} lacks field(s) {lacking}")
        z = [float(v) for v in rec["extractions"]]
        n = len(z)
        pool = float(rec["pool_before"])
        announced = rec.get("announced_pool")
        remainder = rec.get("remaining_before_leader")
        if has_leader and remainder is None:
            remainder = max(0.0, pool - sum(z[:-1]))
        reasons = rec.get("reasonings") or [None] * n
        for i in range(n):
            leader = has_leader and i == n - 1
            hidden = condition == "kcpr_m" and not leader and announced is not None
            rows.append({
                "source": "sovsim_run", "run_id": run_id or f"sovsim_run:{model}/{condition}/{sim}", "model": model,
                "condition": condition, "base_condition": condition, "settings": settings, "simulation": sim,
                "round": int(rec["round"]), "agent": f"a{i}", "agent_index": i,
                "role": lead_role if leader else sub_role, "is_leader": leader, "n_agents": n, "pool_before": pool,
                "announced_pool": None if announced is None else float(announced),
                "pool_seen": float(announced) if hidden else pool,
                "remainder_seen": float(remainder) if leader else None, "extraction": z[i],
                "payoff": float(rec["payoffs"][i]), "remaining": float(rec["final_pool"]),
                "collapsed": bool(rec["collapsed"]), "reasoning": reasons[i] if i < len(reasons) else None,
                "valid": None, "fallback_used": None,
            })
    return agent_round_frame(rows)
