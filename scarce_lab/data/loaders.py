"""Load a folder of run directories into polars frames.

``load_dataset(path)`` finds every ``manifest.json`` below ``path`` (a single run
directory works too) and returns a :class:`Dataset` of three LazyFrames:

- ``runs``: one row per run (manifest fields; ``config``/``models``/``notes`` as JSON text).
- ``events``: one row per event (``payload`` as JSON text; decode with
  ``pl.col("payload").str.json_decode(dtype)`` or use an environment's tidy table).
- ``llm_calls``: one row per model call (messages as JSON text).

Environment-specific tidy tables (SovSim agent-rounds, SCARCE contentions, Economy
steps) live in :mod:`scarce_lab.data.tables` and are built from these frames.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .recorder import EVENTS, LLM_CALLS, MANIFEST, TrajectoryFileError, iter_jsonl, read_manifest

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
    "config": pl.String,
    "notes": pl.String,
    "run_dir": pl.String,
}
EVENT_COLUMNS = {
    "run_id": pl.String,
    "seq": pl.Int64,
    "round": pl.Int64,
    "phase": pl.String,
    "agent": pl.String,
    "kind": pl.String,
    "payload": pl.String,
    "t": pl.Float64,
}
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
    "attempt": pl.Int64,
    "fallback_used": pl.Boolean,
    "outcome": pl.String,
    "finish_reason": pl.String,
    "decision_id": pl.String,
    "decision_source": pl.String,
    "missing": pl.Boolean,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,
    "cost_usd": pl.Float64,
    "cache_hit": pl.Boolean,
}


@dataclass(frozen=True)
class Dataset:
    """The three generic frames of a trajectory dataset (all lazy)."""

    runs: pl.LazyFrame
    events: pl.LazyFrame
    llm_calls: pl.LazyFrame


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
    return pl.DataFrame(
        [{k: r.get(k) for k in columns} for r in rows], schema=columns, orient="row"
    )


_PY_TYPES = {pl.String: {str}, pl.Int64: {int}, pl.Float64: {int, float}, pl.Boolean: {bool}}


def _check_types(obj: dict, columns: dict, path: Path, lineno: int, skip: tuple = ()) -> None:
    """Raise TrajectoryFileError naming path, line, field and value when a field of a
    JSONL record has the wrong type for its column (null is always allowed; exact JSON
    types, so ``true`` is not an integer)."""
    for k, dtype in columns.items():
        v = obj.get(k)
        if v is not None and type(v) not in _PY_TYPES[dtype] and k not in skip:
            raise TrajectoryFileError(path, lineno, f"field {k!r} must be {dtype}, got {v!r:.80}")


def call_errors(run_dirs: list[Path]) -> tuple[int, int, str | None]:
    """``(model calls, calls with a transport/provider error, first such error)`` over
    the ``llm_calls.jsonl`` of ``run_dirs``; lets a command warn when a model name is
    wrong and every decision fell back. Validation failures of answers are not counted."""
    n = bad = 0
    first = None
    for rd in run_dirs:
        for _, obj in iter_jsonl(Path(rd) / LLM_CALLS, allow_torn_tail=True):
            n += 1
            if obj.get("error") and obj.get("raw_response") is None and not obj.get("tool_calls"):
                bad += 1
                first = first or str(obj["error"]).splitlines()[0][:200]
    return n, bad, first


def _one_dir_per_run(run_dirs: list[Path]) -> list[tuple[Path, object]]:
    """``(run_dir, manifest)`` pairs with one directory per ``run_id`` (see load_dataset)."""
    by_id: dict[str, list[tuple[Path, object]]] = {}
    for rd in run_dirs:
        m = read_manifest(rd)
        by_id.setdefault(m.run_id, []).append((rd, m))
    kept = []
    for run_id, group in by_id.items():
        best = max(group, key=lambda g: (g[1].status == "complete", g[1].started_at, str(g[0])))
        skipped = [str(rd) for rd, _ in group if rd != best[0]]
        if skipped:
            warnings.warn(
                f"run_id {run_id!r} is held by several run directories; using {best[0]}, "
                f"skipping {skipped}",
                stacklevel=3,
            )
        kept.append(best)
    return sorted(kept, key=lambda g: str(g[0]))


def load_dataset(path: Path, *, include_incomplete: bool = True) -> Dataset:
    """Load every run below ``path`` (see module docstring for the frames).

    Args:
        path: a run directory or any folder containing run directories.
        include_incomplete: keep runs whose status is not ``complete`` (their
            committed rounds are still valid data).

    Several directories holding the same ``run_id`` (a re-run that moved an
    interrupted attempt aside to ``<run_id>.incomplete-<n>``) count once: the complete
    one is kept, else the one started last; the others are skipped with a
    ``UserWarning`` naming them, so no event is counted twice.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no run.
        TrajectoryFileError: a manifest or JSONL line is corrupt; the message names the
            file and line. A torn *last* line of a running/failed run (a killed
            writer) is skipped.
    """
    run_dirs = find_run_dirs(path)
    if not run_dirs:
        raise FileNotFoundError(f"no run directories (manifest.json) found below {path}")
    runs, events, calls = [], [], []
    for rd, m in _one_dir_per_run(run_dirs):
        if not include_incomplete and m.status != "complete":
            continue
        row = m.model_dump(mode="json")
        for k in ("models", "config", "notes"):
            row[k] = _json_text(row.get(k))
        row["run_dir"] = str(rd)
        runs.append(row)
        tolerant = m.status != "complete"
        for lineno, obj in iter_jsonl(rd / EVENTS, allow_torn_tail=tolerant):
            if "kind" not in obj or "seq" not in obj:
                raise TrajectoryFileError(rd / EVENTS, lineno, "event lacks 'kind' or 'seq'")
            _check_types(obj, EVENT_COLUMNS, rd / EVENTS, lineno, skip=("payload",))
            if not isinstance(obj.get("payload", {}), dict):
                raise TrajectoryFileError(rd / EVENTS, lineno, f"field 'payload' must be an object, got {obj['payload']!r:.80}")
            obj["payload"] = _json_text(obj.get("payload", {}))
            events.append(obj)
        for lineno, obj in iter_jsonl(rd / LLM_CALLS, allow_torn_tail=tolerant):
            _check_types(obj, CALL_COLUMNS, rd / LLM_CALLS, lineno, skip=("messages", "parsed"))
            for k in ("messages", "parsed"):
                obj[k] = _json_text(obj.get(k))
            calls.append(obj)
    return Dataset(
        runs=_frame(runs, RUN_COLUMNS).lazy(),
        events=_frame(events, EVENT_COLUMNS).lazy(),
        llm_calls=_frame(calls, CALL_COLUMNS).lazy(),
    )
