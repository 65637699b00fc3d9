"""SCARCE tidy tables from run directories (environment ``scarce``).

Three tables, each a polars DataFrame with a fixed schema:

- :func:`contentions_table` (:data:`CONTENTION_SCHEMA`): one row per worker per
  contention.
- :func:`submissions_table` (:data:`SUBMISSION_SCHEMA`): one row per worker per subrun.
- :func:`messages_table` (:data:`MESSAGE_SCHEMA`): one row per worker per contention
  with its public reasoning, the private messages it sent and received and the
  context it saw (the input of the communication judge, issue 4).

Every function takes a run directory, a folder of runs, or a
:class:`~scarce_lab.data.loaders.Dataset`. ``model`` is the negotiator's model (the
agent whose behaviour the tables describe), ``solver_model`` the solver's.

Event kinds written by :mod:`scarce_lab.runners.scarce`
----------------------------------------------------------
Every event has ``round`` = the run-wide contention index it belongs to (solver
events between contentions carry the index of the next contention), ``t`` =
seconds since the subrun started, and ``payload.subrun`` (0-based).
``payload.visibility`` says who could see the content during the run:
``public`` (all participants), ``private`` (the agent itself; for private messages
sender and recipient, listed in ``visible_to``), ``scheduler`` (the mechanism only),
``researcher`` (nobody in the game).

==================  ========  =================================================================
kind                agent     payload (besides ``subrun``, ``visibility``)
==================  ========  =================================================================
run_config          --        workers, budgets (credits), deadlines_s, scheduler, mechanism,
                              memory, clock (costs in s), slot_cap_s, private_rounds
subrun_start        worker    task_id, program, budget, deadline_s
solver_action       worker    step, tool, args (path/content/command/...), violation,
                              fallback_used
tool_error          worker    tool, error
memory_save         worker    text
slot_request        worker    duration_s (clamped to the cap), asked_s, reason
contention_start    --        participants, queue [{worker, request_time_s, requested_duration_s}],
                              scheduler
declaration         worker    desired_position, desired_duration_seconds, bid_price (credits),
                              violation, fallback_used
reasoning           worker    text, violation, fallback_used
private_message     sender    sender, recipient, text, round (1-based), visible_to, violation
private_silence     worker    round, violation, fallback_used
protocol_violation  worker    error (e.g. a message to a non-participant)
bid_revision        worker    bid_price, previous (revisable mechanism)
ballot              worker    entries [{worker, duration_seconds, price}] in ranked order,
                              violation, fallback_used
schedule            --        rule, random_tiebreak, negotiation_s,
                              allocations [{worker, position, duration_s, price, borda,
                              first_votes}]
payment             worker    payer, sink, requested, amount, capped, balance_after (credits)
slot_start          worker    start_s, end_s, position, contention, waited_s (request -> start)
execution           worker    command, refused, error | exit_code, duration_s (measured wall),
                              cost_s (timeline), timed_out, stdout, stderr (truncated), truncated
slot_end            worker    end_s, contention
submission          worker    task_id, reason (submit|deadline|step_limit), deadline_missed,
                              deadline_s, score (0 if missed and zero_score_on_miss),
                              score_as_is, resolved, almost_resolved, passed, total, violation,
                              steps, contentions, files, budget_left
subrun_end          --        conserved, sink, sink_balance, balances
round_committed     --        (recorder marker)
==================  ========  =================================================================
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from ..loaders import Dataset, load_dataset
from ..recorder import TrajectoryFileError

CONTENTION_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "condition": pl.String,
    "model": pl.String,
    "solver_model": pl.String,
    "scheduler": pl.String,
    "mechanism": pl.String,
    "subrun": pl.Int64,
    "contention": pl.Int64,
    "worker": pl.String,
    "n_participants": pl.Int64,
    "request_time_s": pl.Float64,
    "requested_duration_s": pl.Int64,
    "desired_position": pl.Int64,
    "desired_duration_s": pl.Int64,
    "declared_bid": pl.Int64,
    "final_bid": pl.Int64,
    "position": pl.Int64,
    "allocated_duration_s": pl.Int64,
    "price": pl.Int64,
    "payment": pl.Int64,
    "payment_capped": pl.Boolean,
    "won": pl.Boolean,
    "private_sent": pl.Int64,
    "private_received": pl.Int64,
    "reasoning_chars": pl.Int64,
    "wait_s": pl.Float64,
    "budget_initial": pl.Int64,
    "deadline_s": pl.Float64,
    "violations": pl.Int64,
    "fallbacks": pl.Int64,
}

SUBMISSION_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "condition": pl.String,
    "model": pl.String,
    "solver_model": pl.String,
    "subrun": pl.Int64,
    "worker": pl.String,
    "task_id": pl.String,
    "score": pl.Float64,
    "score_as_is": pl.Float64,
    "resolved": pl.Boolean,
    "almost_resolved": pl.Boolean,
    "deadline_missed": pl.Boolean,
    "reason": pl.String,
    "passed": pl.Int64,
    "total": pl.Int64,
    "violation": pl.String,
    "steps": pl.Int64,
    "contentions": pl.Int64,
    "t_finish_s": pl.Float64,
    "deadline_s": pl.Float64,
    "budget_initial": pl.Int64,
    "budget_left": pl.Int64,
}

MESSAGE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "condition": pl.String,
    "model": pl.String,
    "subrun": pl.Int64,
    "contention": pl.Int64,
    "worker": pl.String,
    "participants": pl.String,
    "declaration": pl.String,
    "reasoning": pl.String,
    "private_sent": pl.String,
    "private_received": pl.String,
    "context": pl.String,
    "position": pl.Int64,
    "won": pl.Boolean,
}


def _dataset(source: Path | str | Dataset) -> Dataset:
    return source if isinstance(source, Dataset) else load_dataset(Path(source))


def _runs_and_events(source) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    ds = _dataset(source)
    runs = {}
    for r in ds.runs.filter(pl.col("environment") == "scarce").collect().iter_rows(named=True):
        cfg = json.loads(r["config"] or "{}")
        models = json.loads(r["models"] or "{}")
        runs[r["run_id"]] = {"condition": r["condition"], "cfg": cfg, "models": models}
        runs[r["run_id"]]["run_dir"] = r["run_dir"]
    ev = ds.events.filter(pl.col("run_id").is_in(list(runs))).sort(["run_id", "seq"]).collect()
    events: dict[str, list[dict]] = defaultdict(list)
    for e in ev.iter_rows(named=True):
        e["payload"] = json.loads(e["payload"] or "{}")
        missing = [k for k in _REQUIRED.get(e["kind"], ()) if k not in e["payload"]]
        if missing:
            where = Path(runs[e["run_id"]]["run_dir"] or e["run_id"]) / "events.jsonl"
            raise TrajectoryFileError(where, None, f"event seq {e['seq']} ({e['kind']}): payload lacks {missing}")
        events[e["run_id"]].append(e)
    return runs, events


#: Payload keys the tables read without a default, per event kind.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "subrun_start": ("subrun", "budget", "deadline_s"),
    "contention_start": ("subrun", "queue"),
    "declaration": ("desired_position", "desired_duration_seconds", "bid_price"),
    "reasoning": ("text",),
    "private_message": ("sender", "recipient", "round", "text"),
    "bid_revision": ("bid_price",),
    "payment": ("amount", "capped"),
    "schedule": ("allocations",),
    "slot_start": ("contention", "waited_s"),
    "submission": ("subrun", "task_id", "score", "score_as_is", "resolved", "deadline_missed", "reason",
                   "deadline_s"),
}


def _frame(rows: list[dict], schema: dict) -> pl.DataFrame:
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def _run_meta(info: dict) -> dict[str, Any]:
    return {
        "condition": info["condition"],
        "model": info["models"].get("negotiator"),
        "solver_model": info["models"].get("solver"),
        "scheduler": info["cfg"].get("scheduler"),
        "mechanism": info["cfg"].get("mechanism"),
    }


def contentions_table(source) -> pl.DataFrame:
    """One row per worker per contention (columns in :data:`CONTENTION_SCHEMA`;
    credits for bids/prices/payments, seconds for times). ``won`` is position 1;
    ``final_bid`` is the revised bid under ``revisable`` bids, else the declared one;
    ``wait_s`` is request time to slot start (null if the slot never started)."""
    runs, events = _runs_and_events(source)
    rows: list[dict] = []
    for run_id, evs in events.items():
        meta = _run_meta(runs[run_id])
        budget0: dict[tuple[int, str], int] = {}
        deadline: dict[tuple[int, str], float] = {}
        by_c: dict[int, dict[str, dict]] = defaultdict(dict)
        starts: dict[tuple[int, str], float] = {}
        for e in evs:
            p, k, w, kind = e["payload"], e["round"], e["agent"], e["kind"]
            if kind == "subrun_start":
                budget0[(p["subrun"], w)] = p["budget"]
                deadline[(p["subrun"], w)] = p["deadline_s"]
            elif kind == "contention_start":
                for q in p["queue"]:
                    by_c[k][q["worker"]] = {
                        "run_id": run_id, **meta, "subrun": p["subrun"], "contention": k, "worker": q["worker"],
                        "n_participants": len(p["queue"]), "request_time_s": q["request_time_s"],
                        "requested_duration_s": q["requested_duration_s"], "private_sent": 0,
                        "private_received": 0, "reasoning_chars": 0, "violations": 0, "fallbacks": 0,
                        "won": False,
                    }
            elif k in by_c and kind in ("declaration", "reasoning", "private_message", "private_silence",
                                        "bid_revision", "ballot", "payment"):
                row = by_c[k].get(w)
                if row is None:
                    continue
                row["violations"] += 1 if p.get("violation") else 0
                row["fallbacks"] += 1 if p.get("fallback_used") else 0
                if kind == "declaration":
                    row.update(desired_position=p["desired_position"],
                               desired_duration_s=p["desired_duration_seconds"],
                               declared_bid=p["bid_price"], final_bid=p["bid_price"])
                elif kind == "reasoning":
                    row["reasoning_chars"] = len(p.get("text") or "")
                elif kind == "private_message":
                    row["private_sent"] += 1
                    if p["recipient"] in by_c[k]:
                        by_c[k][p["recipient"]]["private_received"] += 1
                elif kind == "bid_revision":
                    row["final_bid"] = p["bid_price"]
                elif kind == "payment":
                    row.update(payment=p["amount"], payment_capped=p["capped"])
            elif kind == "schedule":
                for a in p["allocations"]:
                    row = by_c[k].get(a["worker"])
                    if row is not None:
                        row.update(position=a["position"], allocated_duration_s=a["duration_s"],
                                   price=a["price"], won=a["position"] == 1)
            elif kind == "slot_start":
                starts[(p["contention"], w)] = p["waited_s"]
        for k, ws in by_c.items():
            for w, row in ws.items():
                row["wait_s"] = starts.get((k, w))
                row["budget_initial"] = budget0.get((row["subrun"], w))
                row["deadline_s"] = deadline.get((row["subrun"], w))
                rows.append(row)
    return _frame(rows, CONTENTION_SCHEMA).sort(["run_id", "contention", "worker"])


def submissions_table(source) -> pl.DataFrame:
    """One row per worker per subrun (:data:`SUBMISSION_SCHEMA`); ``score`` is the
    partial score in [0, 1] (0 for a missed deadline under the default rule)."""
    runs, events = _runs_and_events(source)
    rows = []
    for run_id, evs in events.items():
        meta = _run_meta(runs[run_id])
        budget0 = {(e["payload"]["subrun"], e["agent"]): e["payload"]["budget"]
                   for e in evs if e["kind"] == "subrun_start"}
        for e in evs:
            if e["kind"] != "submission":
                continue
            p = e["payload"]
            rows.append({
                "run_id": run_id, **meta, "subrun": p["subrun"], "worker": e["agent"], "task_id": p["task_id"],
                "score": p["score"], "score_as_is": p["score_as_is"], "resolved": p["resolved"],
                "almost_resolved": p.get("almost_resolved"), "deadline_missed": p["deadline_missed"],
                "reason": p["reason"], "passed": p.get("passed"), "total": p.get("total"),
                "violation": p.get("violation"), "steps": p.get("steps"), "contentions": p.get("contentions"),
                "t_finish_s": e["t"], "deadline_s": p["deadline_s"],
                "budget_initial": budget0.get((p["subrun"], e["agent"])), "budget_left": p.get("budget_left"),
            })
    return _frame(rows, SUBMISSION_SCHEMA).sort(["run_id", "subrun", "worker"])


def messages_table(source) -> pl.DataFrame:
    """One row per worker per contention with its communication (issue 4's input).

    ``declaration`` is JSON ``{desired_position, desired_duration_seconds, bid_price}``;
    ``private_sent`` / ``private_received`` are JSON lists of ``{round, to|from, text}``;
    ``context`` is JSON of what the worker could see when it spoke: the queue, every
    participant's declaration and public reasoning, and the previous contention's
    public outcome. Budgets and deadlines are not in ``context`` (they were private).
    """
    runs, events = _runs_and_events(source)
    rows = []
    for run_id, evs in events.items():
        meta = _run_meta(runs[run_id])
        cur: dict[int, dict] = {}
        last_outcome = None
        for e in evs:
            p, k, kind, w = e["payload"], e["round"], e["kind"], e["agent"]
            if kind == "contention_start":
                cur[k] = {"subrun": p["subrun"], "queue": p["queue"], "decl": {}, "reason": {}, "sent": defaultdict(list),
                          "recv": defaultdict(list), "prev": last_outcome, "pos": {}}
            elif k in cur and kind == "declaration":
                cur[k]["decl"][w] = {x: p[x] for x in ("desired_position", "desired_duration_seconds", "bid_price")}
            elif k in cur and kind == "reasoning":
                cur[k]["reason"][w] = p["text"]
            elif k in cur and kind == "private_message":
                cur[k]["sent"][p["sender"]].append({"round": p["round"], "to": p["recipient"], "text": p["text"]})
                cur[k]["recv"][p["recipient"]].append({"round": p["round"], "from": p["sender"], "text": p["text"]})
            elif k in cur and kind == "schedule":
                cur[k]["pos"] = {a["worker"]: a["position"] for a in p["allocations"]}
                last_outcome = [{"worker": a["worker"], "position": a["position"], "duration_s": a["duration_s"]}
                                for a in p["allocations"]]
        for k, c in cur.items():
            participants = [q["worker"] for q in c["queue"]]
            context = json.dumps({"queue": c["queue"], "declarations": c["decl"], "reasoning": c["reason"],
                                  "previous_outcome": c["prev"]}, ensure_ascii=False)
            for w in participants:
                rows.append({
                    "run_id": run_id, "condition": meta["condition"], "model": meta["model"], "subrun": c["subrun"],
                    "contention": k, "worker": w, "participants": json.dumps(participants),
                    "declaration": json.dumps(c["decl"].get(w)), "reasoning": c["reason"].get(w, ""),
                    "private_sent": json.dumps(c["sent"].get(w, []), ensure_ascii=False),
                    "private_received": json.dumps(c["recv"].get(w, []), ensure_ascii=False),
                    "context": context, "position": c["pos"].get(w), "won": c["pos"].get(w) == 1,
                })
    return _frame(rows, MESSAGE_SCHEMA).sort(["run_id", "contention", "worker"])
