"""Append-only run directories: manifest + events + llm calls, durable per round.

Usage (a runner, never an environment)::

    rec = RunRecorder.create(out_dir / run_id, manifest)
    rec.emit("extraction", round=1, phase="act", agent="a0", payload={...})
    rec.commit_round(1)          # flushes and fsyncs; the round is now durable
    rec.finish()                 # manifest status -> complete

An interrupted run is reopened with :meth:`RunRecorder.resume`, which drops every
event after the last ``round_committed`` marker (a half-written round, or a torn last
line) and returns the committed events so the runner can replay them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .schema import (
    ROUND_COMMITTED,
    Event,
    LLMCallRecord,
    RunManifest,
    RunStatus,
    utc_now,
)

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
LLM_CALLS = "llm_calls.jsonl"


class TrajectoryFileError(ValueError):
    """A trajectory file is corrupt; the message names the path and the 1-based line."""

    def __init__(self, path: Path, line: int | None, reason: str):
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


def read_manifest(run_dir: Path) -> RunManifest:
    """Read ``run_dir/manifest.json``.

    Raises:
        FileNotFoundError: no manifest in ``run_dir``.
        TrajectoryFileError: the manifest is not valid JSON or not a RunManifest.
    """
    path = Path(run_dir) / MANIFEST
    try:
        return RunManifest.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise TrajectoryFileError(path, None, f"invalid manifest: {exc}") from exc


def iter_jsonl(path: Path, *, allow_torn_tail: bool = False):
    """Yield ``(line_number, dict)`` for each line of a JSONL file.

    Raises:
        TrajectoryFileError: a line is not a JSON object (path and line in the message).
            A torn last line (no trailing newline) is skipped silently when
            ``allow_torn_tail`` is true: that is what a killed writer leaves behind.
    """
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    torn = not data.endswith(b"\n") and data != b""
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = i == len(lines)
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if is_last and torn and allow_torn_tail:
                return
            raise TrajectoryFileError(path, i, f"not valid JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise TrajectoryFileError(path, i, f"expected a JSON object, got {type(obj).__name__}")
        yield i, obj


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RunRecorder:
    """Writes one run directory. Not thread-safe: one recorder per run, one writer."""

    def __init__(self, run_dir: Path, manifest: RunManifest, next_seq: int = 0):
        self.run_dir = Path(run_dir)
        self.manifest = manifest
        self._seq = next_seq
        self._events: list[Event] = []
        self._calls: list[LLMCallRecord] = []

    # -- life cycle ---------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path, manifest: RunManifest) -> RunRecorder:
        """Start a new run directory.

        Raises:
            FileExistsError: ``run_dir`` already holds a manifest (use :meth:`resume`).
        """
        run_dir = Path(run_dir)
        if (run_dir / MANIFEST).exists():
            raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it")
        run_dir.mkdir(parents=True, exist_ok=True)
        rec = cls(run_dir, manifest)
        for name in (EVENTS, LLM_CALLS):
            (run_dir / name).touch()
        rec._write_manifest()
        return rec

    @classmethod
    def resume(cls, run_dir: Path) -> tuple[RunRecorder, list[Event]]:
        """Reopen an interrupted run; return the recorder and its committed events.

        Events after the last ``round_committed`` marker are removed from disk (they
        belong to a round that did not finish); LLM call records are kept whole (they
        are an audit log, and the response cache makes re-asking free).

        Raises:
            FileNotFoundError: no manifest.
            TrajectoryFileError: a committed line is corrupt.
        """
        run_dir = Path(run_dir)
        manifest = read_manifest(run_dir)
        events: list[Event] = []
        last_commit = -1
        for lineno, obj in iter_jsonl(run_dir / EVENTS, allow_torn_tail=True):
            try:
                ev = Event.model_validate(obj)
            except ValidationError as exc:
                raise TrajectoryFileError(run_dir / EVENTS, lineno, f"invalid event: {exc}") from exc
            events.append(ev)
            if ev.kind == ROUND_COMMITTED:
                last_commit = len(events) - 1
        committed = events[: last_commit + 1]
        _write_atomic(
            run_dir / EVENTS,
            "".join(e.model_dump_json() + "\n" for e in committed),
        )
        calls_path = run_dir / LLM_CALLS
        if calls_path.exists():
            good = [json.dumps(o) + "\n" for _, o in iter_jsonl(calls_path, allow_torn_tail=True)]
            _write_atomic(calls_path, "".join(good))
        next_seq = committed[-1].seq + 1 if committed else 0
        manifest.status = RunStatus.running
        manifest.ended_at = None
        manifest.error = None
        rec = cls(run_dir, manifest, next_seq=next_seq)
        rec._write_manifest()
        return rec, committed

    def finish(self, status: RunStatus = RunStatus.complete, error: str | None = None) -> None:
        """Flush what is buffered and close the manifest with ``status``."""
        self._flush()
        self.manifest.status = status
        self.manifest.error = error
        self.manifest.ended_at = utc_now()
        self._write_manifest()

    # -- writing ------------------------------------------------------------------
    def emit(
        self,
        kind: str,
        *,
        round: int | None = None,
        phase: str = "",
        agent: str | None = None,
        payload: dict[str, Any] | None = None,
        t: float | None = None,
    ) -> Event:
        """Buffer one event (written at the next :meth:`commit_round`)."""
        ev = Event(
            run_id=self.manifest.run_id,
            seq=self._seq,
            round=round,
            phase=phase,
            agent=agent,
            kind=kind,
            payload=payload or {},
            t=t,
        )
        self._seq += 1
        self._events.append(ev)
        return ev

    def record_calls(self, calls: list[LLMCallRecord]) -> None:
        """Buffer model-call records (stamped with this run's id)."""
        for c in calls:
            c.run_id = self.manifest.run_id
            self._calls.append(c)

    def commit_round(self, round: int | None, t: float | None = None) -> None:
        """Mark ``round`` complete and make everything buffered durable (fsync)."""
        self.emit(ROUND_COMMITTED, round=round, phase="commit", t=t)
        self._flush()

    # -- internals ----------------------------------------------------------------
    def _flush(self) -> None:
        if self._calls:
            self._append(LLM_CALLS, [c.model_dump_json() for c in self._calls])
            self._calls.clear()
        if self._events:
            self._append(EVENTS, [e.model_dump_json() for e in self._events])
            self._events.clear()

    def _append(self, name: str, lines: list[str]) -> None:
        with (self.run_dir / name).open("a") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())

    def _write_manifest(self) -> None:
        _write_atomic(self.run_dir / MANIFEST, self.manifest.model_dump_json(indent=2) + "\n")
