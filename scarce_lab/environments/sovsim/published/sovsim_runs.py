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

from pathlib import Path

import polars as pl

from scarce_lab.data.jsonl import read_json_file
from scarce_lab.data.tables import settings_json

from ..agent_rounds import SOVSIM_ROLES, agent_round_frame, record_rows

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
    data = read_json_file(path)
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
    rows: list[dict] = []
    for k, rec in enumerate(data["rounds"]):
        lacking = [f for f in ROUND_FIELDS if f not in rec]
        if lacking:
            raise ValueError(f"{path}: round record {k} lacks field(s) {lacking}")
        try:
            rows += record_rows(rec, source="sovsim_run", run_id=run_id or f"sovsim_run:{model}/{condition}/{sim}",
                                model=model, condition=condition, settings=settings, simulation=sim,
                                remainder=rec.get("remaining_before_leader"))
        except ValueError as exc:
            raise ValueError(f"{path}: round record {k}: {exc}") from None
    return agent_round_frame(rows)
