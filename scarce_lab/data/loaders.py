"""Load a folder of run directories into typed polars frames.

``load_dataset(path)`` finds every ``manifest.json`` below ``path`` (a single run
directory works too), validates every event against its environment's typed model
(:mod:`scarce_lab.data.events`; older schema versions are migrated on the fly) and
returns a :class:`Dataset`:

- ``runs``: one row per run (manifest fields; ``models``, ``config``,
  ``condition_settings`` and ``notes`` as JSON text for display; the typed manifests
  are in ``Dataset.manifests``).
- ``events``: one row per event, the envelope only (run id, environment, seq, round,
  phase, agent, kind, visibility, visible_to, t).
- ``payloads(kind)``: one row per event of that kind, the envelope's keys plus one
  typed column per payload field (nested records are structs, lists are lists).
- ``llm_calls``: one row per model call.

Environment-specific tidy tables (SovSim agent-rounds, SCARCE contentions, Economy
episodes) in :mod:`scarce_lab.data.tables` are built from these frames.
"""

from __future__ import annotations

import json
import types
import typing
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel

from .events import payload_types
from .events.base import EventEnvelope
from .jsonl import TrajectoryFileError, iter_json_objects, iter_lines
from .recorder import EVENTS, LLM_CALLS, MANIFEST, _file_version, read_manifest, validate_event_line
from .schema import RunManifest, RunStatus

RUN_COLUMNS = {
    "run_id": pl.String,
    "environment": pl.String,
    "condition": pl.String,
    "seed": pl.Int64,
    "status": pl.String,
    "schema_version": pl.Int64,
    "package_version": pl.String,
    "started_at": pl.String,
    "ended_at": pl.String,
    "models": pl.String,
    "condition_settings": pl.String,
    "config": pl.String,
    "notes": pl.String,
    "run_dir": pl.String,
}
EVENT_COLUMNS = {
    "run_id": pl.String,
    "environment": pl.String,
    "seq": pl.Int64,
    "round": pl.Int64,
    "phase": pl.String,
    "agent": pl.String,
    "kind": pl.String,
    "visibility": pl.String,
    "visible_to": pl.List(pl.String),
    "t": pl.Float64,
}
#: Envelope columns repeated in every payload frame (to join back to events and runs).
KEY_COLUMNS = ("run_id", "seq", "round", "phase", "agent", "t")
CALL_COLUMNS = {
    "run_id": pl.String,
    "call_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
    "purpose": pl.String,
    "model": pl.String,
    "messages_hash": pl.String,
    "messages": pl.String,
    "raw_response": pl.String,
    "parsed": pl.String,
    "error": pl.String,
    "outcome": pl.String,
    "finish_reason": pl.String,
    "attempt": pl.Int64,
    "fallback_used": pl.Boolean,
    "decision_id": pl.String,
    "decision_source": pl.String,
    "missing": pl.Boolean,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,
    "cost_usd": pl.Float64,
    "cache_hit": pl.Boolean,
}


# -- polars dtypes from the payload models ----------------------------------------------
def polars_dtype(annotation: Any) -> pl.DataType:
    """The polars dtype of a payload field's annotation (int -> Int64, float ->
    Float64, str/Literal/Enum -> String, bool -> Boolean, ``X | None`` -> X, ``list[X]``
    -> List, a pydantic model -> Struct).

    Raises:
        TypeError: an annotation the contract does not allow (e.g. a dict).
    """
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"payload field type {annotation!r}: only 'X | None' unions are allowed")
        return polars_dtype(args[0])
    if origin is typing.Literal:
        return pl.String
    if origin is list:
        (item,) = typing.get_args(annotation)
        return pl.List(polars_dtype(item))
    if isinstance(annotation, type):
        if issubclass(annotation, bool):
            return pl.Boolean
        if issubclass(annotation, int):
            return pl.Int64
        if issubclass(annotation, float):
            return pl.Float64
        if issubclass(annotation, str | Enum):
            return pl.String
        if issubclass(annotation, BaseModel):
            return pl.Struct(model_schema(annotation))
    raise TypeError(f"payload field type {annotation!r} has no fixed polars type (dicts are not allowed)")


def model_schema(model: type[BaseModel], *, exclude: tuple[str, ...] = ()) -> dict[str, pl.DataType]:
    """``field -> polars dtype`` for a pydantic model (see :func:`polars_dtype`)."""
    return {
        name: polars_dtype(f.annotation)
        for name, f in model.model_fields.items()
        if name not in exclude
    }


def payload_schema(environment: str, kind: str) -> dict[str, pl.DataType]:
    """The columns of ``Dataset.payloads(kind)`` for ``environment``: the envelope keys
    then one per payload field."""
    model = payload_types(environment)[kind]
    return {**{k: EVENT_COLUMNS[k] for k in KEY_COLUMNS}, **model_schema(model, exclude=("kind",))}


# -- the dataset -------------------------------------------------------------------------
@dataclass(frozen=True)
class Dataset:
    """A trajectory dataset: generic frames plus typed payload frames (all lazy).

    Attributes:
        runs, events, llm_calls: see the module docstring.
        manifests: the typed manifest of every run, in ``runs`` order.
    """

    runs: pl.LazyFrame
    events: pl.LazyFrame
    llm_calls: pl.LazyFrame
    manifests: tuple[RunManifest, ...] = ()
    _payloads: dict[tuple[str, str], pl.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def environments(self) -> list[str]:
        """The environments present, sorted."""
        return sorted({m.environment for m in self.manifests})

    def manifest(self, run_id: str) -> RunManifest:
        """The typed manifest of ``run_id``.

        Raises:
            KeyError: no such run in the dataset.
        """
        for m in self.manifests:
            if m.run_id == run_id:
                return m
        raise KeyError(f"run {run_id!r} is not in this dataset")

    def payloads(self, kind: str, environment: str | None = None) -> pl.LazyFrame:
        """Every event of ``kind``: envelope keys plus typed payload columns.

        ``environment`` may be omitted when the dataset holds one environment. An
        empty frame (with the right columns) is returned when no event of that kind
        exists.

        Raises:
            ValueError: ``environment`` omitted with several environments present.
            KeyError: ``kind`` is not a kind of that environment.
        """
        if environment is None:
            envs = self.environments
            if len(envs) != 1:
                raise ValueError(f"this dataset holds environments {envs}; pass environment=")
            environment = envs[0]
        kinds = payload_types(environment)
        if kind not in kinds:
            raise KeyError(f"{environment!r} has no event kind {kind!r} (kinds: {sorted(kinds)})")
        df = self._payloads.get((environment, kind))
        if df is None:
            df = pl.DataFrame(schema=payload_schema(environment, kind))
        return df.lazy()


def find_run_dirs(path: Path) -> list[Path]:
    """Every directory at or below ``path`` that holds a ``manifest.json``, sorted.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset path does not exist: {path}")
    if (path / MANIFEST).exists():
        return [path]
    return sorted(p.parent for p in path.rglob(MANIFEST))


def _json_text(value) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _frame(rows: list[dict], columns: dict) -> pl.DataFrame:
    return pl.DataFrame([{k: r.get(k) for k in columns} for r in rows], schema=columns, orient="row")


_PY_TYPES = {pl.String: {str}, pl.Int64: {int}, pl.Float64: {int, float}, pl.Boolean: {bool}}


def _check_types(obj: dict, columns: dict, path: Path, lineno: int, skip: tuple = ()) -> None:
    """Raise TrajectoryFileError naming path, line, field and value when a field of a
    JSONL record has the wrong type for its column (null is always allowed; exact JSON
    types, so ``true`` is not an integer)."""
    for k, dtype in columns.items():
        v = obj.get(k)
        if v is not None and k not in skip and type(v) not in _PY_TYPES[dtype]:
            raise TrajectoryFileError(path, lineno, f"field {k!r} must be {dtype}, got {v!r:.80}")


def call_errors(run_dirs: list[Path]) -> tuple[int, int, str | None]:
    """``(model calls, calls with a transport/provider error, first such error)`` over
    the ``llm_calls.jsonl`` of ``run_dirs``; lets a command warn when a model name is
    wrong and every decision failed. Validation failures of answers are not counted."""
    n = bad = 0
    first = None
    for rd in run_dirs:
        for _, obj in iter_json_objects(Path(rd) / LLM_CALLS):
            n += 1
            if obj.get("error") and obj.get("raw_response") is None and not obj.get("tool_calls"):
                bad += 1
                first = first or str(obj["error"]).splitlines()[0][:200]
    return n, bad, first


def _one_dir_per_run(run_dirs: list[Path]) -> list[tuple[Path, RunManifest]]:
    """``(run_dir, manifest)`` pairs with one directory per ``run_id`` (see load_dataset)."""
    by_id: dict[str, list[tuple[Path, RunManifest]]] = {}
    for rd in run_dirs:
        m = read_manifest(rd)
        by_id.setdefault(m.run_id, []).append((rd, m))
    kept = []
    for run_id, group in by_id.items():
        best = max(group, key=lambda g: (g[1].status == "complete", g[1].started_at, str(g[0])))
        skipped = [str(rd) for rd, _ in group if rd != best[0]]
        if skipped:
            warnings.warn(
                f"run_id {run_id!r} is held by several run directories; using {best[0]}, skipping {skipped}",
                stacklevel=3,
            )
        kept.append(best)
    return sorted(kept, key=lambda g: str(g[0]))


class _Collector:
    """Accumulates envelope rows and per-kind payload rows while reading."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.payloads: dict[tuple[str, str], list[dict]] = defaultdict(list)

    def add(self, environment: str, ev: EventEnvelope) -> None:
        row = {
            "run_id": ev.run_id, "environment": environment, "seq": ev.seq, "round": ev.round,
            "phase": ev.phase, "agent": ev.agent, "kind": ev.kind, "visibility": ev.visibility.value,
            "visible_to": ev.visible_to, "t": ev.t,
        }
        self.events.append(row)
        p = ev.payload.model_dump(exclude={"kind"})
        for k in KEY_COLUMNS:
            p[k] = row[k]
        self.payloads[(environment, ev.kind)].append(p)

    def frames(self) -> dict[tuple[str, str], pl.DataFrame]:
        out = {}
        for (env, kind), rows in self.payloads.items():
            schema = payload_schema(env, kind)
            out[(env, kind)] = pl.DataFrame(rows, schema=schema, orient="row")
        return out


def read_run_events(run_dir: Path, manifest: RunManifest, *, tolerant: bool) -> list[EventEnvelope]:
    """Every event of one run as typed events (older versions migrated).

    Raises:
        TrajectoryFileError: a corrupt line (path and line in the message); a torn
            last line is skipped with a warning when ``tolerant``.
    """
    from .events import event_model

    version = _file_version(run_dir)
    model = event_model(manifest.environment)
    path = Path(run_dir) / EVENTS
    return [
        validate_event_line(model, manifest.environment, raw, version, path, lineno)
        for lineno, raw in iter_lines(path, allow_torn_tail=tolerant)
    ]


def load_dataset(path: Path | str, *, include_incomplete: bool = True) -> Dataset:
    """Load every run below ``path`` (see the module docstring for the frames).

    Args:
        path: a run directory, any folder containing run directories, or a folder
            written by :func:`export_parquet`.
        include_incomplete: keep runs whose status is not ``complete``: their
            committed rounds are valid data (events after the last commit are left out).

    Several directories holding the same ``run_id`` (a re-run that moved an
    interrupted attempt aside to ``<run_id>.incomplete-<n>``) count once: the complete
    one is kept, else the one started last; the others are skipped with a
    ``UserWarning`` naming them, so no event is counted twice.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no run.
        TrajectoryFileError: a manifest or JSONL line is corrupt; the message names the
            file, the line, the field and the value. A torn *last* line of a run that is
            not complete (a killed writer) is skipped with a ``TornLineWarning``.
        SchemaVersionError: a file is newer than this package.
        UnknownEnvironmentError: a manifest names an unknown environment.
    """
    if (Path(path) / EXPORT_MARKER).exists():
        return load_parquet(path)
    run_dirs = find_run_dirs(Path(path))
    if not run_dirs:
        raise FileNotFoundError(f"no run directories (manifest.json) found below {path}")
    runs: list[dict] = []
    manifests: list[RunManifest] = []
    calls: list[dict] = []
    col = _Collector()
    for rd, m in _one_dir_per_run(run_dirs):
        if not include_incomplete and m.status != RunStatus.complete:
            continue
        row = m.model_dump(mode="json")
        for k in ("models", "config", "notes", "condition_settings"):
            row[k] = _json_text(row.get(k))
        row["run_dir"] = str(rd)
        runs.append(row)
        manifests.append(m)
        tolerant = m.status != RunStatus.complete
        events = read_run_events(rd, m, tolerant=tolerant)
        if tolerant:  # an unfinished run: only its committed rounds are data
            last = max((i for i, e in enumerate(events) if e.kind == "round_committed"), default=-1)
            events = events[: last + 1]
        for ev in events:
            if ev.run_id != m.run_id:
                raise TrajectoryFileError(rd / EVENTS, None, f"event seq {ev.seq} has run_id {ev.run_id!r}, "
                                          f"the manifest says {m.run_id!r}")
            col.add(m.environment, ev)
        for lineno, obj in iter_json_objects(rd / LLM_CALLS, allow_torn_tail=tolerant):
            _check_types(obj, CALL_COLUMNS, rd / LLM_CALLS, lineno, skip=("messages", "parsed"))
            for k in ("messages", "parsed"):
                obj[k] = _json_text(obj.get(k))
            calls.append(obj)
    return Dataset(
        runs=_frame(runs, RUN_COLUMNS).lazy(),
        events=pl.DataFrame(col.events, schema=EVENT_COLUMNS, orient="row").lazy(),
        llm_calls=_frame(calls, CALL_COLUMNS).lazy(),
        manifests=tuple(manifests),
        _payloads=col.frames(),
    )


# -- Parquet export ----------------------------------------------------------------------
EXPORT_MARKER = "scarce_lab_dataset.json"


def export_parquet(ds: Dataset, out_dir: Path | str) -> Path:
    """Write ``ds`` as Parquet files that :func:`load_dataset` reads back identically.

    Layout: ``runs.parquet``, ``events.parquet``, ``llm_calls.parquet``,
    ``payloads/<environment>/<kind>.parquet`` and ``manifests.jsonl`` (the typed
    manifests), plus a marker file naming the schema version.

    Raises:
        FileExistsError: ``out_dir`` exists and is not empty.
    """
    from .jsonl import write_atomic
    from .schema import SCHEMA_VERSION

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    (out / "payloads").mkdir(parents=True, exist_ok=True)
    ds.runs.collect().write_parquet(out / "runs.parquet")
    ds.events.collect().write_parquet(out / "events.parquet")
    ds.llm_calls.collect().write_parquet(out / "llm_calls.parquet")
    for (env, kind), df in ds._payloads.items():
        (out / "payloads" / env).mkdir(parents=True, exist_ok=True)
        df.write_parquet(out / "payloads" / env / f"{kind}.parquet")
    write_atomic(out / "manifests.jsonl", "".join(m.model_dump_json() + "\n" for m in ds.manifests))
    write_atomic(out / EXPORT_MARKER, json.dumps({"format": "scarce_lab-parquet", "schema_version": SCHEMA_VERSION}))
    return out


def load_parquet(path: Path | str) -> Dataset:
    """Load a folder written by :func:`export_parquet` (frames are lazy scans).

    Raises:
        TrajectoryFileError: the marker or a manifest line is corrupt.
        SchemaVersionError: written by a newer scarce_lab.
    """
    from .events.migrations import check_version
    from .jsonl import read_json_file

    path = Path(path)
    marker = read_json_file(path / EXPORT_MARKER)
    check_version(marker.get("schema_version") if isinstance(marker, dict) else None, str(path / EXPORT_MARKER))
    manifests = []
    for lineno, raw in iter_lines(path / "manifests.jsonl", allow_torn_tail=False):
        try:
            manifests.append(RunManifest.model_validate_json(raw))
        except ValueError as exc:
            raise TrajectoryFileError(path / "manifests.jsonl", lineno, f"invalid manifest: {exc}") from None
    payloads = {}
    for f in sorted((path / "payloads").glob("*/*.parquet")):
        payloads[(f.parent.name, f.stem)] = pl.read_parquet(f)
    return Dataset(
        runs=pl.scan_parquet(path / "runs.parquet"),
        events=pl.scan_parquet(path / "events.parquet"),
        llm_calls=pl.scan_parquet(path / "llm_calls.parquet"),
        manifests=tuple(manifests),
        _payloads=payloads,
    )
