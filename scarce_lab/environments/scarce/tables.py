"""SCARCE tidy tables from run directories (environment ``scarce``).

Three tables, each a polars DataFrame with a fixed schema:

- :func:`contentions_table` (:data:`CONTENTION_SCHEMA`): one row per worker per
  contention.
- :func:`submissions_table` (:data:`SUBMISSION_SCHEMA`): one row per worker per subrun.
- :func:`messages_table` (:data:`MESSAGE_SCHEMA`): one row per worker per contention
  with its public reasoning, the private messages it sent and received and the
  context it saw (the input of the communication judge).

Every function takes a run directory, a folder of runs, or a
:class:`~scarce_lab.data.loaders.Dataset`. ``model`` is the negotiator's model (the
agent whose behaviour the tables describe), ``solver_model`` the solver's.

The view ``ds.scarce`` (:class:`ScarceTables`) holds the three tables with condition
labels unique over the dataset and the run settings (:func:`run_settings`) beside each row.

Every table carries the condition columns of :mod:`scarce_lab.data.tables`
(``base_condition`` is ``<scheduler>_<mechanism>_mem-<memory>``). The events they
read are the typed payloads of :mod:`scarce_lab.environments.scarce.events`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from ...analysis.layout import _need
from ...data.loaders import Dataset, load_dataset
from ...data.schema import is_scripted
from ...data.tables import label_conditions, settings_json

#: Settings the ``base_condition`` label already names (with seats and joins/leaves:
#: :func:`_membership_label`), never repeated by :func:`label_conditions`.
_BASE_KEYS = ("scheduler", "mechanism", "memory", "seats", "joins", "leaves")

#: The run columns every table starts with.
_RUN = {"run_id": pl.String, "condition": pl.String, "base_condition": pl.String, "settings": pl.String,
        "model": pl.String}
CONTENTION_SCHEMA: dict[str, pl.DataType] = {
    **_RUN, "solver_model": pl.String, "scheduler": pl.String, "mechanism": pl.String, "subrun": pl.Int64,
    "contention": pl.Int64, "worker": pl.String, "n_participants": pl.Int64, "request_time_s": pl.Float64,
    "requested_duration_s": pl.Int64, "desired_position": pl.Int64, "desired_duration_s": pl.Int64,
    "declared_bid": pl.Int64, "final_bid": pl.Int64, "position": pl.Int64, "allocated_duration_s": pl.Int64,
    "price": pl.Int64, "payment": pl.Int64, "payment_capped": pl.Boolean, "won": pl.Boolean,
    "private_sent": pl.Int64, "private_received": pl.Int64, "reasoning_chars": pl.Int64, "wait_s": pl.Float64,
    "budget_initial": pl.Int64, "deadline_s": pl.Float64, "violations": pl.Int64, "fallbacks": pl.Int64}
SUBMISSION_SCHEMA: dict[str, pl.DataType] = {
    **_RUN, "solver_model": pl.String, "subrun": pl.Int64, "worker": pl.String, "task_id": pl.String,
    "score": pl.Float64, "score_as_is": pl.Float64, "resolved": pl.Boolean, "almost_resolved": pl.Boolean,
    "deadline_missed": pl.Boolean, "reason": pl.String, "passed": pl.Int64, "total": pl.Int64,
    "violation": pl.String, "steps": pl.Int64, "contentions": pl.Int64, "t_finish_s": pl.Float64,
    "deadline_s": pl.Float64, "budget_initial": pl.Int64, "budget_left": pl.Int64}
MESSAGE_SCHEMA: dict[str, pl.DataType] = {
    **_RUN, "subrun": pl.Int64, "contention": pl.Int64, "worker": pl.String, "participants": pl.String,
    "declaration": pl.String, "reasoning": pl.String, "private_sent": pl.String, "private_received": pl.String,
    "context": pl.String, "position": pl.Int64, "won": pl.Boolean, "intended_tactics": pl.String}


def _dataset(source: Path | str | Dataset) -> Dataset:
    return source if isinstance(source, Dataset) else load_dataset(Path(source))


#: Event kinds the tables read.
_KINDS = ("subrun_start", "contention_start", "declaration", "reasoning", "private_message", "private_silence",
          "bid_revision", "ballot", "payment", "schedule", "slot_start", "submission", "tactic_intent")
_KEYS = ("run_id", "seq", "round", "phase", "agent", "t")


#: Model-client settings that define a SCARCE condition when an agent is a model.
_LLM_KEYS = ("temperature", "max_tokens", "reasoning_effort")


def condition_settings(manifest) -> dict[str, Any]:
    """The run's condition settings. Manifests written before the config kept the model
    client's settings for a scripted solver with a model negotiator lack ``llm.*``
    (so runs differing only in reasoning effort looked alike); for those they are read
    back from the manifest's ``config`` (``llm`` block, or the version-1 top-level
    ``reasoning_effort``), so such runs are never taken for one condition."""
    out = dict(manifest.condition_settings)
    neg = str(manifest.models.get("negotiator") or manifest.config.get("negotiator_model") or "")
    if neg and not is_scripted(neg) and not any(k.startswith("llm.") for k in out):
        llm = manifest.config.get("llm") or {}
        for k in _LLM_KEYS:
            out[f"llm.{k}"] = llm.get(k, manifest.config.get(k))
    return out


def _runs_and_events(source) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """Run metadata (from the typed manifests) and each run's events of :data:`_KINDS`
    in ``seq`` order, payloads as typed values (from :meth:`Dataset.payloads`)."""
    ds = _dataset(source)
    runs = {}
    for m in ds.manifests:
        if m.environment != "scarce":
            continue
        cfg = m.config
        base = f"{cfg.get('scheduler')}_{cfg.get('mechanism')}_mem-{cfg.get('memory')}" + _membership_label(m)
        runs[m.run_id] = {"condition": m.condition, "base_condition": base,
                          "settings": settings_json(condition_settings(m)) if m.condition_settings else None,
                          "cfg": cfg, "models": m.models}
    events: dict[str, list[dict]] = defaultdict(list)
    if not runs:
        return runs, events
    for kind in _KINDS:
        for row in ds.payloads(kind, "scarce").collect().to_dicts():
            e = {k: row.pop(k) for k in _KEYS}
            e["kind"], e["payload"] = kind, row
            events[e["run_id"]].append(e)
    for evs in events.values():
        evs.sort(key=lambda e: e["seq"])
    return runs, events


def _membership_label(manifest) -> str:
    """The readable part of a run's condition that names its seats and joins/leaves
    (``,seats=[w0=gpt-4o, others=fifo],joins=[w3@1]``; ``""`` without them): part of
    ``base_condition``, so two compositions never share a label (their settings differ
    in ``seats`` too, so they are never pooled)."""
    cfg, notes = manifest.config, manifest.notes or {}
    out = ""
    if cfg.get("seats"):
        out += f",seats=[{notes.get('composition') or json.dumps(cfg['seats'], sort_keys=True)}]"
    for k in ("joins", "leaves"):
        if cfg.get(k):
            out += f",{k}=[{' '.join(f'{w}@{n}' for w, n in sorted(cfg[k].items()))}]"
    return out


def _seat_models(rows: list[dict], runs: dict[str, dict]) -> list[dict]:
    """Each row's ``model`` / ``solver_model`` from its worker's seat where the run
    gives one (manifest ``models``: ``w0.negotiator``, ``w0.solver``), so a mixed run's
    rows name each worker's own models."""
    for r in rows:
        models = runs[r["run_id"]]["models"]
        w = r.get("worker")
        if w is not None and f"{w}.negotiator" in models:
            r["model"], r["solver_model"] = models[f"{w}.negotiator"], models[f"{w}.solver"]
    return rows


def _frame(rows: list[dict], schema: dict, runs: dict[str, dict] | None = None) -> pl.DataFrame:
    if runs is not None:
        rows = _seat_models(rows, runs)
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def _run_meta(info: dict) -> dict[str, Any]:
    return {"condition": info["condition"], "base_condition": info["base_condition"], "settings": info["settings"],
            "model": info["models"].get("negotiator"), "solver_model": info["models"].get("solver"),
            "scheduler": info["cfg"].get("scheduler"), "mechanism": info["cfg"].get("mechanism")}


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
    return label_conditions(_frame(rows, CONTENTION_SCHEMA, runs), skip=_BASE_KEYS).sort(["run_id", "contention", "worker"])


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
            p = e["payload"]  # its fields named as the schema's columns (_frame keeps those)
            rows.append({**p, "run_id": run_id, **meta, "worker": e["agent"], "t_finish_s": e["t"],
                         "budget_initial": budget0.get((p["subrun"], e["agent"]))})
    return label_conditions(_frame(rows, SUBMISSION_SCHEMA, runs), skip=_BASE_KEYS).sort(["run_id", "subrun", "worker"])


def messages_table(source) -> pl.DataFrame:
    """One row per worker per contention with its communication (the judge's input).

    ``declaration`` is JSON ``{desired_position, desired_duration_seconds, bid_price}``;
    ``private_sent`` / ``private_received`` are JSON lists of ``{round, to|from, text}``;
    ``context`` is JSON of what the worker could see when it spoke: the queue, every
    participant's declaration and public reasoning, and the previous contention's
    public outcome. Budgets and deadlines are not in ``context`` (they were private).
    ``intended_tactics`` is the ground truth of runs whose scripted negotiators record
    what they meant (``tactic_intent`` events): a JSON list of taxonomy ids (``[]`` when
    the worker's texts meant none), null in runs that record none (models, simple
    scripted policies).
    """
    runs, events = _runs_and_events(source)
    rows = []
    for run_id, evs in events.items():
        meta = _run_meta(runs[run_id])
        cur: dict[int, dict] = {}
        last_outcome = None
        records_intent = any(e["kind"] == "tactic_intent" for e in evs)
        for e in evs:
            p, k, kind, w = e["payload"], e["round"], e["kind"], e["agent"]
            if kind == "contention_start":
                cur[k] = {"subrun": p["subrun"], "queue": p["queue"], "decl": {}, "reason": {}, "sent": defaultdict(list),
                          "recv": defaultdict(list), "prev": last_outcome, "pos": {}, "meant": defaultdict(set)}
            elif k in cur and kind == "declaration":
                cur[k]["decl"][w] = {x: p[x] for x in ("desired_position", "desired_duration_seconds", "bid_price")}
            elif k in cur and kind == "reasoning":
                cur[k]["reason"][w] = p["text"]
            elif k in cur and kind == "private_message":
                cur[k]["sent"][p["sender"]].append({"round": p["private_round"], "to": p["recipient"], "text": p["text"]})
                cur[k]["recv"][p["recipient"]].append({"round": p["private_round"], "from": p["sender"],
                                                       "text": p["text"]})
            elif k in cur and kind == "tactic_intent":
                cur[k]["meant"][w].update(p["tactics"])
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
                    "run_id": run_id, **meta, "subrun": c["subrun"], "contention": k, "worker": w, "participants": json.dumps(participants),
                    "declaration": json.dumps(c["decl"].get(w)), "reasoning": c["reason"].get(w, ""),
                    "private_sent": json.dumps(c["sent"].get(w, []), ensure_ascii=False),
                    "private_received": json.dumps(c["recv"].get(w, []), ensure_ascii=False),
                    "context": context, "position": c["pos"].get(w), "won": c["pos"].get(w) == 1,
                    "intended_tactics": json.dumps(sorted(c["meant"].get(w, ()))) if records_intent else None,
                })
    return label_conditions(_frame(rows, MESSAGE_SCHEMA, runs), skip=_BASE_KEYS).sort(["run_id", "contention", "worker"])


# -- run settings and the view ds.scarce ---------------------------------------------
RUN_SETTINGS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String, "seed": pl.Int64, "workers": pl.Int64, "subruns": pl.Int64, "memory": pl.String,
    "mechanism": pl.String, "scheduler": pl.String, "reasoning_effort": pl.String, "rich_worker_budget": pl.Int64,
    "mixed_deadlines": pl.Boolean, "negotiator": pl.String}


def _run_negotiator(row: dict, cfg: dict) -> str | None:
    """The run's negotiator model: ``negotiator_model`` or else ``model``; with seats
    (``config.seats``), the manifest's ``models["negotiator"]`` (one model every worker's
    negotiator shares, or ``mixed``)."""
    if cfg.get("seats"):
        models = json.loads(row.get("models") or "{}") if isinstance(row.get("models"), str) else (row.get("models") or {})
        return models.get("negotiator") or "mixed"
    return cfg.get("negotiator_model") or cfg.get("model")


def scarce_run_configs(runs: pl.DataFrame | pl.LazyFrame) -> list[tuple[dict, dict]]:
    """``(row, config)`` for every SCARCE run of a ``runs`` frame (columns ``run_id``,
    ``seed``, ``config``: the manifest's config JSON, read into a dict; other
    environments' rows left out). The one reader of per-run settings for
    :func:`run_settings` and the institutions' settings.

    Raises:
        ValueError: a missing column (named)."""
    if isinstance(runs, pl.LazyFrame):
        runs = runs.collect()
    _need(runs, ("run_id", "seed", "config"), "runs")
    if "environment" in runs.columns:
        runs = runs.filter(pl.col("environment") == "scarce")
    return [(r, json.loads(r["config"] or "{}")) for r in runs.iter_rows(named=True)]


def run_settings(runs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per SCARCE run with the settings the experiments split by
    (:data:`RUN_SETTINGS_SCHEMA`), read from the manifest's ``config`` JSON (the
    ``runs`` frame of :func:`~scarce_lab.data.loaders.load_dataset`).
    ``reasoning_effort`` is ``llm.reasoning_effort`` (``reasoning_effort`` in
    version-1 configs), ``"default"`` when none was passed; ``negotiator`` is the
    negotiator model (``negotiator_model`` or else ``model``; ``mixed`` for a run whose
    seats give workers different negotiators)."""
    rows = []
    for r, c in scarce_run_configs(runs):
        rows.append({
            "run_id": r["run_id"], "seed": r["seed"], "workers": c.get("workers"), "subruns": c.get("subruns"),
            "memory": c.get("memory"), "mechanism": c.get("mechanism"), "scheduler": c.get("scheduler"),
            "reasoning_effort": (c.get("llm") or {}).get("reasoning_effort") or c.get("reasoning_effort") or "default",
            "rich_worker_budget": c.get("rich_worker_budget"), "mixed_deadlines": bool(c.get("mixed_deadlines")),
            "negotiator": _run_negotiator(r, c),
        })
    return pl.DataFrame(rows, schema=RUN_SETTINGS_SCHEMA, orient="row")


def with_settings(df: pl.DataFrame, settings: pl.DataFrame, cols: Sequence[str] | None = None) -> pl.DataFrame:
    """``df`` left-joined on ``run_id`` with setting columns (default: all not in ``df``)."""
    cols = [c for c in (cols or settings.columns) if c != "run_id" and c not in df.columns]
    return df.join(settings.select("run_id", *cols), on="run_id", how="left")


class ScarceTables:
    """The SCARCE view of a dataset (``ds.scarce``, :class:`~scarce_lab.data.loaders.Dataset`):
    its tidy tables, each computed when first read and joined with the run settings.

    Attributes:
        settings: one row per run (:func:`run_settings`).
        contentions, submissions, messages: the tables of this module, with condition
            labels unique per settings over the whole dataset (the scheduler, mechanism
            and memory are in the base condition) and the ``settings`` columns beside them.
    """

    def __init__(self, ds: Any) -> None:
        self.dataset = ds

    @cached_property
    def settings(self) -> pl.DataFrame:
        return run_settings(self.dataset.runs).unique(subset=["run_id"], maintain_order=True)

    @cached_property
    def contentions(self) -> pl.DataFrame:
        return self._labelled(contentions_table(self.dataset))

    @cached_property
    def submissions(self) -> pl.DataFrame:
        return self._labelled(submissions_table(self.dataset))

    @cached_property
    def messages(self) -> pl.DataFrame:
        return self._labelled(messages_table(self.dataset))

    def _labelled(self, df: pl.DataFrame) -> pl.DataFrame:
        labelled = label_conditions(df.unique(maintain_order=True), skip=("scheduler", "mechanism", "memory"))
        return with_settings(labelled, self.settings)

    def __repr__(self) -> str:
        return (f"ScarceTables({self.settings.height} runs, {self.contentions.height} participations, "
                f"{self.submissions.height} submissions)")
