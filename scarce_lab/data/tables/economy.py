"""Tidy tables of Economy of Minds runs, derived from events (see
:mod:`scarce_lab.runners.economy` for the event kinds and payloads).

All money columns are integer credits. ``round`` is the run-wide episode index
(training first, then frozen evaluation); ``episode`` is the index within its
``phase`` (``train`` | ``eval``).

- :func:`runs`: one row per run (task, condition, ablation, baseline, model, seed).
- :func:`episodes`: one row per episode (solved, steps, reward, end, n_blocks).
- :func:`population`: one row per population snapshot (size, wealth list, bank...).
- :func:`agent_episodes`: one row per agent and episode it won at least one step in
  (wins, paid, received, reward; realised = received + reward).
- :func:`wins`: one row per agent, episode and step kind (wins).
- :func:`steps`: one row per step (only for runs recorded with ``detail="steps"``).
- :func:`births`, :func:`deaths`: one row per birth / removal.
"""

from __future__ import annotations

import json

import polars as pl

from ..loaders import Dataset

_RUN_KEYS = ["run_id", "task", "condition", "ablation", "baseline", "model", "seed"]


def _events(ds: Dataset, kind: str) -> list[dict]:
    df = (
        ds.events.filter(pl.col("kind") == kind)
        .select("run_id", "seq", "round", "phase", "agent", "payload")
        .collect()
    )
    out = []
    for r in df.iter_rows(named=True):
        r["payload"] = json.loads(r["payload"]) if r["payload"] else {}
        out.append(r)
    return out


def runs(ds: Dataset) -> pl.DataFrame:
    """One row per economy run: ``task`` (blocksworld | arithmetic | jsonl), condition..."""
    df = ds.runs.filter(pl.col("environment") == "economy").collect()
    rows = []
    for r in df.iter_rows(named=True):
        cfg = json.loads(r["config"] or "{}")
        task = cfg.get("task", "")
        rows.append({
            "run_id": r["run_id"],
            "task": "jsonl" if task.startswith("jsonl:") else task,
            "condition": r["condition"],
            "ablation": cfg.get("ablation", "none"),
            "baseline": cfg.get("baseline", "none"),
            "model": cfg.get("model", ""),
            "seed": r["seed"],
            "status": r["status"],
        })
    schema = {k: pl.String for k in _RUN_KEYS} | {"seed": pl.Int64, "status": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _with_runs(ds: Dataset, df: pl.DataFrame) -> pl.DataFrame:
    return runs(ds).select(_RUN_KEYS).join(df, on="run_id", how="inner")


def episodes(ds: Dataset) -> pl.DataFrame:
    """One row per episode: run keys, phase, episode, round, solved, steps, reward,
    end, n_blocks (Blocks World; null otherwise)."""
    starts = {(e["run_id"], e["round"]): e["payload"].get("task", {}) for e in _events(ds, "episode_start")}
    rows = []
    for e in _events(ds, "episode_end"):
        p = e["payload"]
        task = starts.get((e["run_id"], e["round"])) or p.get("task", {})
        rows.append({
            "run_id": e["run_id"], "phase": e["phase"], "episode": p["episode"], "round": e["round"],
            "solved": bool(p["solved"]), "steps": p["steps"], "reward": p["reward"], "end": p["end"],
            "n_blocks": task.get("n_blocks"),
        })
    schema = {
        "run_id": pl.String, "phase": pl.String, "episode": pl.Int64, "round": pl.Int64,
        "solved": pl.Boolean, "steps": pl.Int64, "reward": pl.Int64, "end": pl.String, "n_blocks": pl.Int64,
    }
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row")).sort("run_id", "round")


def population(ds: Dataset) -> pl.DataFrame:
    """One row per snapshot: size, wealth (list of agent wealths), bids (list), bank,
    rent_sink, total (the ledger sum, always 0)."""
    rows = []
    for e in _events(ds, "population"):
        p = e["payload"]
        w = p.get("wealth", {})
        rows.append({
            "run_id": e["run_id"], "phase": e["phase"], "round": e["round"], "size": len(w),
            "wealth": [int(v) for v in w.values()], "bids": [int(v) for v in p.get("bids", {}).values()],
            "bank": p["bank"], "rent_sink": p["rent_sink"], "total": p["total"],
        })
    schema = {
        "run_id": pl.String, "phase": pl.String, "round": pl.Int64, "size": pl.Int64,
        "wealth": pl.List(pl.Int64), "bids": pl.List(pl.Int64), "bank": pl.Int64,
        "rent_sink": pl.Int64, "total": pl.Int64,
    }
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row")).sort("run_id", "round")


def agent_episodes(ds: Dataset) -> pl.DataFrame:
    """One row per (episode, agent that won a step): n_wins, paid, received, reward,
    realised (= received + reward), bid (the agent's own bid, from its birth)."""
    bids = {(b["run_id"], b["payload"]["agent"]): b["payload"]["bid"] for b in _events(ds, "birth")}
    rows = []
    for e in _events(ds, "episode_agents"):
        for agent, a in e["payload"]["agents"].items():
            rows.append({
                "run_id": e["run_id"], "phase": e["phase"], "round": e["round"], "agent": agent,
                "n_wins": sum(a["wins"].values()), "paid": a["paid"], "received": a["received"],
                "reward": a["reward"], "realised": a["received"] + a["reward"],
                "bid": bids.get((e["run_id"], agent)),
            })
    schema = {
        "run_id": pl.String, "phase": pl.String, "round": pl.Int64, "agent": pl.String,
        "n_wins": pl.Int64, "paid": pl.Int64, "received": pl.Int64, "reward": pl.Int64,
        "realised": pl.Int64, "bid": pl.Int64,
    }
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row"))


def wins(ds: Dataset) -> pl.DataFrame:
    """One row per (episode, agent, step kind): wins (steps the agent won)."""
    rows = []
    for e in _events(ds, "episode_agents"):
        for agent, a in e["payload"]["agents"].items():
            for kind, n in a["wins"].items():
                rows.append({"run_id": e["run_id"], "phase": e["phase"], "round": e["round"],
                             "agent": agent, "step_kind": kind, "wins": n})
    schema = {"run_id": pl.String, "phase": pl.String, "round": pl.Int64, "agent": pl.String,
              "step_kind": pl.String, "wins": pl.Int64}
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row"))


def steps(ds: Dataset) -> pl.DataFrame:
    """One row per step (runs recorded with ``detail="steps"``): winner, price, number
    of bidders, step kind, reward, done, solved, action (JSON text)."""
    auctions = {(a["run_id"], a["round"], a["payload"]["step"]): a["payload"] for a in _events(ds, "auction")}
    rows = []
    for e in _events(ds, "step"):
        p = e["payload"]
        a = auctions.get((e["run_id"], e["round"], p["step"]), {})
        rows.append({
            "run_id": e["run_id"], "phase": e["phase"], "round": e["round"], "step": p["step"],
            "agent": e["agent"], "step_kind": p["step_kind"], "price": a.get("price"),
            "n_bidders": len(a.get("bids", {})), "reward": p["reward"], "done": p["done"],
            "solved": p["solved"], "action": json.dumps(p["action"], sort_keys=True),
        })
    schema = {
        "run_id": pl.String, "phase": pl.String, "round": pl.Int64, "step": pl.Int64, "agent": pl.String,
        "step_kind": pl.String, "price": pl.Int64, "n_bidders": pl.Int64, "reward": pl.Int64,
        "done": pl.Boolean, "solved": pl.Boolean, "action": pl.String,
    }
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row")).sort("run_id", "round", "step")


def births(ds: Dataset) -> pl.DataFrame:
    """One row per birth: agent, origin (founder | child | newcomer), parent, bid,
    endowment, funder, genome (JSON text), genome_text (short description)."""
    rows = []
    for e in _events(ds, "birth"):
        p = e["payload"]
        g = p.get("genome") or {}
        text = g.get("text") or (f"{g.get('capability')} on {','.join(g.get('wake_on', []))}" if g else None)
        rows.append({
            "run_id": e["run_id"], "round": e["round"], "agent": p["agent"], "origin": p["origin"],
            "parent": p.get("parent"), "bid": p["bid"], "endowment": p["endowment"], "funder": p["funder"],
            "genome": json.dumps(g, sort_keys=True), "genome_text": text,
        })
    schema = {
        "run_id": pl.String, "round": pl.Int64, "agent": pl.String, "origin": pl.String, "parent": pl.String,
        "bid": pl.Int64, "endowment": pl.Int64, "funder": pl.String, "genome": pl.String,
        "genome_text": pl.String,
    }
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row"))


def deaths(ds: Dataset) -> pl.DataFrame:
    """One row per removal: agent, cause (bankruptcy), wealth at removal, age (episodes)."""
    rows = [
        {"run_id": e["run_id"], "round": e["round"], "agent": e["payload"]["agent"],
         "cause": e["payload"]["cause"], "wealth": e["payload"]["wealth"], "age": e["payload"]["age"]}
        for e in _events(ds, "death")
    ]
    schema = {"run_id": pl.String, "round": pl.Int64, "agent": pl.String, "cause": pl.String,
              "wealth": pl.Int64, "age": pl.Int64}
    return _with_runs(ds, pl.DataFrame(rows, schema=schema, orient="row"))
