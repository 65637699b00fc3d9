"""SovSim tidy table: one row per agent-round, from any supported layout.

:func:`load_agent_rounds` detects the layout below a path and returns one polars
DataFrame with :data:`AGENT_ROUND_SCHEMA`:

- our run directories (``manifest.json`` + ``events.jsonl``, environment ``sovsim``),
- SovSim's released ``agent_rationales/<model>/<condition>/rationales.json``
  (:mod:`scarce_lab.data.adapters.sovsim_json`),
- GovSim ``log_env.json`` runs (:mod:`scarce_lab.data.adapters.govsim_log`).

Columns (pool units unless stated): ``source`` (layout), ``run_id`` (one per
simulation), ``model``, ``condition``, ``simulation``, ``round`` (1-based), ``agent``,
``agent_index``, ``role``, ``is_leader``, ``n_agents``, ``pool_before`` (true pool at
the start of the round), ``announced_pool`` (kcpr_m), ``pool_seen`` (the pool as
presented to the agent: the announcement for kcpr_m subordinates), ``remainder_seen``
(leader rows: pool minus the subordinates' extractions, floored at 0),
``extraction``, ``payoff`` (points; GovSim: tons harvested), ``remaining`` (pool after
all extractions), ``collapsed`` (the round ended in collapse), ``reasoning``,
``valid`` / ``fallback_used`` (model answer validity, null where unknown).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

AGENT_ROUND_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String,
    "run_id": pl.String,
    "model": pl.String,
    "condition": pl.String,
    "simulation": pl.Int64,
    "round": pl.Int64,
    "agent": pl.String,
    "agent_index": pl.Int64,
    "role": pl.String,
    "is_leader": pl.Boolean,
    "n_agents": pl.Int64,
    "pool_before": pl.Float64,
    "announced_pool": pl.Float64,
    "pool_seen": pl.Float64,
    "remainder_seen": pl.Float64,
    "extraction": pl.Float64,
    "payoff": pl.Float64,
    "remaining": pl.Float64,
    "collapsed": pl.Boolean,
    "reasoning": pl.String,
    "valid": pl.Boolean,
    "fallback_used": pl.Boolean,
}

SORT_KEYS = ("source", "model", "condition", "run_id", "round", "agent_index")

#: Canonical SovSim roles per condition: (subordinate, leader); the leader is the last agent.
SOVSIM_ROLES = {
    "cpr": ("citizen", "citizen"),
    "bcpr": ("worker", "boss"),
    "kcpr": ("peasant", "king"),
    "kcpr_m": ("peasant", "king"),
}


def agent_round_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows (dicts) -> a DataFrame with exactly :data:`AGENT_ROUND_SCHEMA`, sorted."""
    df = pl.DataFrame(
        [{k: r.get(k) for k in AGENT_ROUND_SCHEMA} for r in rows],
        schema=AGENT_ROUND_SCHEMA,
        orient="row",
    )
    return df.sort(*SORT_KEYS)


def from_events(runs: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Agent-round table from our generic frames (``load_dataset(...).collect()``-ed).

    Uses the ``round`` events (one row per agent; they carry the announced pool) joined
    with each agent's ``extraction`` event (reasoning, validity, pool seen). Runs whose environment is
    not ``sovsim`` are ignored.
    """
    runs = runs.filter(pl.col("environment") == "sovsim")
    meta = {r["run_id"]: r for r in runs.iter_rows(named=True)}
    ev = events.filter(pl.col("run_id").is_in(list(meta)))
    decisions: dict[tuple[str, int, str], dict] = {}
    round_rows: list[tuple[str, int, dict]] = []
    for e in ev.iter_rows(named=True):
        kind = e["kind"]
        if kind == "extraction":
            decisions[(e["run_id"], e["round"], e["agent"])] = json.loads(e["payload"])
        elif kind == "round":
            round_rows.append((e["run_id"], e["round"], json.loads(e["payload"])))
    rows: list[dict] = []
    for run_id, rnd, p in round_rows:
        m = meta[run_id]
        models = json.loads(m["models"] or "{}")
        config = json.loads(m["config"] or "{}")
        notes = json.loads(m["notes"] or "{}")
        roles = notes.get("roles", {})
        leader = notes.get("leader")
        distinct = sorted(set(models.values()))
        model = distinct[0] if len(distinct) == 1 else "+".join(distinct)
        agents = p["agents"]
        for i, a in enumerate(agents):
            d = decisions.get((run_id, rnd, a), {})
            is_leader = a == leader
            rows.append(
                {
                    "source": "scarce_lab",
                    "run_id": run_id,
                    "model": model,
                    "condition": m["condition"],
                    "simulation": config.get("simulation"),
                    "round": rnd,
                    "agent": a,
                    "agent_index": i,
                    "role": roles.get(a),
                    "is_leader": is_leader,
                    "n_agents": len(agents),
                    "pool_before": p["pool_before"],
                    "announced_pool": p.get("announced_pool"),
                    "pool_seen": d.get("pool_seen", p["pool_before"]),
                    "remainder_seen": p.get("remainder_seen") if is_leader else None,
                    "extraction": p["extractions"][i],
                    "payoff": p["payoffs"][i],
                    "remaining": p["remaining"],
                    "collapsed": p["collapsed"],
                    "reasoning": d.get("reasoning"),
                    "valid": d.get("valid"),
                    "fallback_used": d.get("fallback_used"),
                }
            )
    return agent_round_frame(rows)


def detect_layouts(path: Path) -> dict[str, list[Path]]:
    """Files of each supported layout at or below ``path``.

    Returns ``{"runs": [...run dirs], "sovsim_json": [...rationales.json],
    "govsim_log": [...log_env.json]}`` (lists may be empty).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset path does not exist: {path}")
    if path.is_file():
        name = path.name
        return {
            "runs": [path.parent] if name == "manifest.json" else [],
            "sovsim_json": [path] if name == "rationales.json" else [],
            "govsim_log": [path] if name == "log_env.json" else [],
        }
    return {
        "runs": sorted(p.parent for p in path.rglob("manifest.json")),
        "sovsim_json": sorted(path.rglob("rationales.json")),
        "govsim_log": sorted(path.rglob("log_env.json")),
    }


def load_agent_rounds(path: Path | str, *, include_incomplete: bool = True) -> pl.DataFrame:
    """The agent-round table for every supported file at or below ``path``.

    Layouts are detected from file names (``manifest.json`` run directories,
    ``rationales.json``, ``log_env.json``); several layouts below one folder are
    concatenated.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no supported file.
        TrajectoryFileError / ValueError: a file is corrupt (message names the file).
    """
    from ..adapters.govsim_log import read_govsim_logs
    from ..adapters.sovsim_json import read_rationales
    from ..loaders import load_dataset

    found = detect_layouts(Path(path))
    frames: list[pl.DataFrame] = []
    if found["runs"]:
        root = Path(path) if Path(path).is_dir() else Path(path).parent
        ds = load_dataset(root, include_incomplete=include_incomplete)
        runs = ds.runs.filter(pl.col("environment") == "sovsim").collect()
        if runs.height:
            events = ds.events.filter(pl.col("run_id").is_in(runs["run_id"].implode())).collect()
            frames.append(from_events(runs, events))
    if found["sovsim_json"]:
        frames.append(pl.concat([read_rationales(p) for p in found["sovsim_json"]]))
    if found["govsim_log"]:
        frames.append(read_govsim_logs(found["govsim_log"]))
    if not frames:
        raise FileNotFoundError(
            f"no SovSim data below {path}: expected run directories (manifest.json), "
            "rationales.json or log_env.json files"
        )
    return pl.concat(frames).sort(*SORT_KEYS)
