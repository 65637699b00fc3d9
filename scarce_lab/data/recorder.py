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

import fcntl
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
    scrub_surrogates,
    utc_now,
)

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
LLM_CALLS = "llm_calls.jsonl"
LOCK = ".writer.lock"


class TrajectoryFileError(ValueError):
    """A trajectory file is corrupt; the message names the path and the 1-based line."""

    def __init__(self, path: Path, line: int | None, reason: str):
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


class RunInProgressError(FileExistsError):
    """Another live process is writing this run directory (it holds the writer lock)."""


#: Writer locks this process holds: real path of the run directory -> lock file fd.
_HELD: dict[str, int] = {}


def _lock(run_dir: Path) -> int | None:
    """Take the run directory's writer lock (an ``flock``, released by :meth:`finish`
    or when the process dies); ``None`` where the file system has no locks. A lock this
    process already holds is taken over (a runner restarting its own crashed run).

    Raises:
        RunInProgressError: another process holds it.
    """
    key = os.path.realpath(run_dir)
    if key in _HELD:
        return _HELD[key]
    try:
        fd = os.open(Path(run_dir) / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunInProgressError(
            f"{run_dir} is being written by another process (a run with the same id is in progress)"
        ) from None
    except OSError:
        os.close(fd)
        return None
    _HELD[key] = fd
    return fd


def _unlock(fd: int | None) -> None:
    if fd is None:
        return
    for key, held in list(_HELD.items()):
        if held == fd:
            del _HELD[key]
            os.close(fd)


def run_in_progress(run_dir: Path) -> bool:
    """True when another live process holds ``run_dir``'s writer lock (a runner must
    then neither move, resume nor restart it)."""
    path = Path(run_dir) / LOCK
    if os.path.realpath(run_dir) in _HELD or not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def read_manifest(run_dir: Path) -> RunManifest:
    """Read ``run_dir/manifest.json``.

    Raises:
        FileNotFoundError: no manifest in ``run_dir``.
        TrajectoryFileError: the manifest is not valid JSON or not a RunManifest.
    """
    path = Path(run_dir) / MANIFEST
    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            got = "" if err["type"] == "json_invalid" else f" (got {err.get('input')!r:.80})"
            parts.append(f"{'field ' + repr(loc) + ': ' if loc else ''}{err['msg']}{got}")
        raise TrajectoryFileError(path, None, "invalid manifest: " + "; ".join(parts)) from exc


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


def _dump(record) -> str:
    """One JSON line for a pydantic record; strings that cannot be written as UTF-8
    (lone surrogates from a model's answer) are written with U+FFFD in their place."""
    try:
        return record.model_dump_json()
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        return json.dumps(scrub_surrogates(record.model_dump(mode="json")), ensure_ascii=False)


class RunRecorder:
    """Writes one run directory. Not thread-safe: one recorder per run, one writer."""

    def __init__(self, run_dir: Path, manifest: RunManifest, next_seq: int = 0, lock_fd: int | None = None):
        self.run_dir = Path(run_dir)
        self.manifest = manifest
        self._lock_fd = lock_fd
        self._seq = next_seq
        self._events: list[Event] = []
        self._calls: list[LLMCallRecord] = []

    # -- life cycle ---------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path, manifest: RunManifest) -> RunRecorder:
        """Start a new run directory.

        The recorder holds the directory's writer lock until :meth:`finish` (or its
        process ends), so a second process cannot resume or move it meanwhile.

        Raises:
            FileExistsError: ``run_dir`` already holds a manifest (use :meth:`resume`).
            RunInProgressError: another process is creating the same run.
        """
        run_dir = Path(run_dir)
        if (run_dir / MANIFEST).exists():
            raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it")
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = _lock(run_dir)
        if (run_dir / MANIFEST).exists():  # another process created it meanwhile
            _unlock(fd)
            raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it")
        rec = cls(run_dir, manifest, lock_fd=fd)
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
            RunInProgressError: another live process is still writing the run.
        """
        run_dir = Path(run_dir)
        manifest = read_manifest(run_dir)
        fd = _lock(run_dir)
        try:
            return cls._reopen(run_dir, manifest, fd)
        except BaseException:
            _unlock(fd)
            raise

    @classmethod
    def _reopen(cls, run_dir: Path, manifest: RunManifest, fd: int | None) -> tuple[RunRecorder, list[Event]]:
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
        rec = cls(run_dir, manifest, next_seq=next_seq, lock_fd=fd)
        rec._write_manifest()
        return rec, committed

    def finish(self, status: RunStatus = RunStatus.complete, error: str | None = None) -> None:
        """Close the manifest with ``status``.

        A complete run flushes everything buffered. A run that ends otherwise drops the
        events of its unfinished round (they would reach datasets half-built; resume
        drops them too) but keeps its LLM call records, which are an audit log.
        """
        if status != RunStatus.complete:
            self._events.clear()
        self._flush()
        self.manifest.status = status
        self.manifest.error = error
        self.manifest.ended_at = utc_now()
        self._write_manifest()
        if self._lock_fd is not None:  # the lock file is not data: leave no trace in datasets
            (self.run_dir / LOCK).unlink(missing_ok=True)
        _unlock(self._lock_fd)  # releases the writer lock
        self._lock_fd = None

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
            self._append(LLM_CALLS, [_dump(c) for c in self._calls])
            self._calls.clear()
        if self._events:
            self._append(EVENTS, [_dump(e) for e in self._events])
            self._events.clear()

    def _append(self, name: str, lines: list[str]) -> None:
        with (self.run_dir / name).open("a") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())

    def _write_manifest(self) -> None:
        _write_atomic(self.run_dir / MANIFEST, self.manifest.model_dump_json(indent=2) + "\n")
