"""Append-only run directories: manifest + typed events + LLM calls, durable per round.

Usage (a runner, never an environment)::

    rec = RunRecorder.create(out_dir / run_id, manifest)
    rec.emit(Extraction(extraction=9, ...), round=1, phase="extract", agent="a0")
    rec.commit_round(1, state=game)   # fsync; the round is durable, ``game`` is the
                                      # state to resume from
    rec.finish()                      # manifest status -> complete

An interrupted run is reopened with :meth:`RunRecorder.resume`: events after the last
``round_committed`` marker whose checkpoint was written are dropped (a half-written
round, or a torn last line), and the checkpointed state is returned so the runner
continues exactly where the durable record ends. The checkpoint
(``.checkpoint.pkl``) is local working state: it is written atomically after the
round's events are fsynced, never exported, and deleted when the run completes. It is a
pickle sealed with this machine's key (:mod:`.sealed`): a checkpoint written elsewhere,
moved from another run or altered is refused, never unpickled.

Every file of the run folder is written under a descriptor of the folder, never
through a link, and a folder the harness did not make is refused (:mod:`.safeio`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .events import Payload, Visibility, event_model
from .events.base import EventEnvelope
from .jsonl import (
    TrajectoryFileError,
    iter_lines,
    jsonl_line,
)
from .runlock import (  # noqa: F401
    LOCK,
    RunInProgressError,
    acquire_lock,
    claim_lock,
    release_lock,
    run_in_progress,
)
from .safeio import RunFolder, RunFolderError  # noqa: F401
from .schema import (
    LLMCallRecord,
    RunManifest,
    RunStatus,
    package_version,
    scrub_surrogates,
    utc_now,
)

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
LLM_CALLS = "llm_calls.jsonl"
CHECKPOINT = ".checkpoint.pkl"
#: Every file the harness writes in a run folder.
RUN_FILES = (MANIFEST, EVENTS, LLM_CALLS, CHECKPOINT, LOCK)

__all__ = [
    "CHECKPOINT", "EVENTS", "LLM_CALLS", "LOCK", "MANIFEST",
    "Checkpoint", "RunFolderError", "RunInProgressError", "RunRecorder", "TrajectoryFileError",
    "read_manifest", "run_in_progress",
]


@dataclass
class Checkpoint:
    """The state a run can resume from: written after the commit of ``round`` whose
    marker event has sequence number ``seq``; ``state`` is whatever the runner saved."""

    seq: int
    round: int | None
    package_version: str
    state: Any


def _errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        got = "" if err["type"] == "json_invalid" else f" (got {err.get('input')!r:.80})"
        parts.append(f"{'field ' + repr(loc) + ': ' if loc else ''}{err['msg']}{got}")
    return "; ".join(parts)


def read_manifest(run_dir: Path) -> RunManifest:
    """Read ``run_dir/manifest.json`` (UTF-8, a byte-order mark is accepted), migrating
    an older schema version.

    Raises:
        FileNotFoundError: no manifest in ``run_dir``.
        TrajectoryFileError: the manifest is not valid JSON or not a RunManifest.
        SchemaVersionError: its ``schema_version`` is newer than this package or unknown.
        UnknownEnvironmentError: its ``environment`` is not registered (the message
            names the manifest file, the environment and the registered ones).
    """
    from .events.migrations import check_version, migrate_manifest
    from .events.registry import UnknownEnvironmentError, registration
    from .jsonl import read_json_file

    path = Path(run_dir) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no manifest.json in {run_dir}")
    obj = read_json_file(path)
    if not isinstance(obj, dict):
        raise TrajectoryFileError(path, None, f"invalid manifest: expected a JSON object, got {type(obj).__name__}")
    version = check_version(obj.get("schema_version", 1), str(path))
    obj = migrate_manifest(obj, version)
    try:
        manifest = RunManifest.model_validate(obj)
    except ValidationError as exc:
        raise TrajectoryFileError(path, None, "invalid manifest: " + _errors(exc)) from exc
    try:
        registration(manifest.environment)
    except UnknownEnvironmentError as exc:
        raise UnknownEnvironmentError(f"{path}: {exc}") from None
    return manifest


def read_events(run_dir: Path, manifest: RunManifest | None = None, *, allow_torn_tail: bool = True,
                file_version: int | None = None) -> list[EventEnvelope]:
    """Every event of a run, validated against its environment's typed model (older
    versions migrated).

    Raises:
        TrajectoryFileError: a line is not valid JSON or does not validate (path, line,
            field and value in the message).
        UnknownEnvironmentError: the manifest's environment is unknown.
    """

    run_dir = Path(run_dir)
    manifest = manifest or read_manifest(run_dir)
    version = file_version if file_version is not None else _file_version(run_dir)
    model = event_model(manifest.environment)
    path = run_dir / EVENTS
    return [validate_event_line(model, manifest.environment, raw, version, path, lineno)
            for lineno, raw in iter_lines(path, allow_torn_tail=allow_torn_tail)]


def validate_event_line(model, environment: str, raw: bytes, version: int, path: Path, lineno: int) -> EventEnvelope:
    """One line of ``events.jsonl`` as a typed event (migrated from ``version``).

    Raises:
        TrajectoryFileError: naming ``path``, ``lineno``, the field and the value.
    """
    import json

    from .events.migrations import EVENTS_UNCHANGED_SINCE, migrate_event
    from .events.registry import UnknownEnvironmentError

    try:
        if version >= EVENTS_UNCHANGED_SINCE:
            return model.model_validate_json(raw)
        obj = json.loads(raw)
        if not isinstance(obj, dict):
            raise TrajectoryFileError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
        return model.model_validate(migrate_event(environment, obj, version))
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise TrajectoryFileError(path, lineno, "not valid JSON") from None
        raise TrajectoryFileError(path, lineno, f"invalid event: {_errors(exc)}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TrajectoryFileError(path, lineno, f"not valid JSON ({exc})") from None
    except (TrajectoryFileError, UnknownEnvironmentError):
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a migration's refusal (migrate_event)
        raise TrajectoryFileError(path, lineno, f"cannot migrate this version-{version} event ({exc!r})") from None


def _file_version(run_dir: Path) -> int:
    """The schema version the run's files were written with (from the manifest as on
    disk, before migration)."""
    from .events.migrations import check_version
    from .jsonl import read_json_file

    obj = read_json_file(Path(run_dir) / MANIFEST)
    return check_version(obj.get("schema_version", 1) if isinstance(obj, dict) else None, str(Path(run_dir) / MANIFEST))


def _dump(record) -> str:
    """One JSON line for a pydantic record; strings that cannot be written as UTF-8
    (lone surrogates from a model's answer) are written with U+FFFD in their place."""
    import json

    try:
        if isinstance(record, EventEnvelope):
            return record.dump_line()
        return record.model_dump_json()
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        obj = record.model_dump(mode="json")
        if isinstance(record, EventEnvelope):
            obj["payload"].pop("kind", None)
        return json.dumps(scrub_surrogates(obj), ensure_ascii=False)


def _read_checkpoint(folder: RunFolder, run_id: str) -> Checkpoint | None:
    """The run's checkpoint, unsealed (:func:`.sealed.unseal`: refused unless this
    machine wrote it for this run).

    Raises:
        CheckpointRefusedError: written elsewhere, for another run, altered or unsigned.
        TrajectoryFileError: it verifies but cannot be unpickled (a class since removed).
    """
    from .sealed import CheckpointRefusedError, unseal

    path = folder.path / CHECKPOINT
    blob = folder.read(CHECKPOINT)
    if blob is None:
        return None
    try:
        ck = unseal(blob, f"run:{run_id}", path)
    except CheckpointRefusedError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means: unusable
        raise TrajectoryFileError(path, None, f"unreadable checkpoint ({type(exc).__name__}: {exc}); "
                                  "delete the run folder to restart it") from None
    if not isinstance(ck, Checkpoint):
        raise TrajectoryFileError(path, None, "not a scarce_lab checkpoint")
    return ck


class RunRecorder:
    """Writes one run directory. Not thread-safe: one recorder per run, one writer."""

    def __init__(self, folder: RunFolder, manifest: RunManifest, next_seq: int = 0, lock_fd: int | None = None):
        self.folder = folder
        self.run_dir = folder.path
        self.manifest = manifest
        self._model = event_model(manifest.environment)
        self._lock_fd = lock_fd
        claim_lock(lock_fd, self)
        self._seq = next_seq
        #: agent id -> the seat key its calls are governed by (set by a runner whose seats are
        #: recorded per seat, not per agent: the Economy's; ``None``: none, see :mod:`.sent`)
        self.seat_of: Any = None
        self._events: list[EventEnvelope] = []
        self._calls: list[LLMCallRecord] = []

    def pending(self) -> list[EventEnvelope]:
        """The events emitted since the last commit (not yet on disk), in order."""
        return list(self._events)

    # -- life cycle ---------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path, manifest: RunManifest) -> RunRecorder:
        """Start a new run directory.

        The recorder holds the directory's writer lock until :meth:`finish` (or its
        process ends), so a second process cannot resume or move it meanwhile.

        Raises:
            FileExistsError: ``run_dir`` already holds a manifest (resume it instead).
            RunFolderError: ``run_dir`` is a link, or holds a link, a FIFO or a folder
                where a run file goes, or (holding no run) files of something else.
            RunInProgressError: another process is creating the same run.
            UnknownEnvironmentError: the manifest's environment is unknown.
        """
        run_dir = Path(run_dir)
        event_model(manifest.environment)  # fail before writing anything
        folder = RunFolder.open(run_dir, RUN_FILES, manifest=MANIFEST, create=True)
        fd = None
        try:
            if folder.exists(MANIFEST):
                raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it")
            fd = acquire_lock(folder)
            if folder.exists(MANIFEST):  # another process created it meanwhile
                raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it")
            rec = cls(folder, manifest, lock_fd=fd)
            for name in (EVENTS, LLM_CALLS):
                folder.touch(name)
            folder.unlink(CHECKPOINT)
            rec._write_manifest()
        except BaseException:
            release_lock(fd)
            folder.close()
            raise
        return rec

    @classmethod
    def resume(cls, run_dir: Path) -> tuple[RunRecorder, Checkpoint | None]:
        """Reopen an interrupted run at its last checkpointed commit.

        Events after that commit are removed from disk (they belong to a round that did
        not finish, or were written after the last checkpoint); LLM call records are
        kept whole (they are an audit log, and the response cache makes re-asking free).
        Without a checkpoint every event is removed and the run restarts from its start
        under the same manifest.

        Returns:
            The recorder and the checkpoint (``None`` when the run restarts).

        Raises:
            FileNotFoundError: no manifest.
            RunFolderError: ``run_dir`` is a link, or holds a link, a FIFO or a folder
                where a run file goes.
            CheckpointRefusedError: the checkpoint was not written for this run on
                this machine (copied, moved or altered): resume stops, nothing is
                changed (:mod:`.sealed`).
            TrajectoryFileError: a committed line or the checkpoint is corrupt.
            RunInProgressError: another live process is still writing the run.
            ValueError: the checkpoint was written by another package version.
        """
        run_dir = Path(run_dir)
        folder = RunFolder.open(run_dir, RUN_FILES, manifest=MANIFEST, create=False)
        fd = None
        try:
            manifest = read_manifest(run_dir)
            fd = acquire_lock(folder)
            return cls._reopen(folder, manifest, fd)
        except BaseException:
            release_lock(fd)
            folder.close()
            raise

    @classmethod
    def _reopen(cls, folder: RunFolder, manifest: RunManifest, fd: int | None) -> tuple[RunRecorder, Checkpoint | None]:
        run_dir = folder.path
        ck = _read_checkpoint(folder, manifest.run_id)
        if ck is not None and ck.package_version != manifest.package_version:
            raise ValueError(
                f"{run_dir}: the checkpoint was written by scarce_lab {ck.package_version}, this run's "
                f"manifest says {manifest.package_version}; resume with the same version or restart"
            )
        version = _file_version(run_dir)
        if version < 2:
            raise ValueError(f"{run_dir}: a schema-version-{version} run cannot be resumed; "
                             "migrate it (scarce-lab migrate) or restart it")
        path = run_dir / EVENTS
        keep: list[bytes] = []
        last_seq = -1
        if ck is not None:
            for lineno, raw in iter_lines(path):
                ev = validate_event_line(event_model(manifest.environment), manifest.environment, raw,
                                         version, path, lineno)
                if ev.seq > ck.seq:
                    break
                keep.append(raw)
                last_seq = ev.seq
            if last_seq != ck.seq:
                raise TrajectoryFileError(path, None, f"the checkpoint is at event {ck.seq} but the file "
                                          f"ends at event {last_seq}; the run cannot be resumed")
        folder.replace(EVENTS, _lines(path, keep))
        calls = run_dir / LLM_CALLS
        if folder.exists(LLM_CALLS):  # drop a torn tail, keep every complete record
            folder.replace(LLM_CALLS, _lines(calls, [line for _, line in iter_lines(calls)]))
        manifest.status = RunStatus.running
        manifest.ended_at = None
        manifest.error = None
        rec = cls(folder, manifest, next_seq=last_seq + 1, lock_fd=fd)
        rec._write_manifest()
        return rec, ck

    def finish(self, status: RunStatus = RunStatus.complete, error: str | None = None) -> None:
        """Close the manifest with ``status``.

        A complete run flushes everything buffered and deletes its checkpoint. A run
        that ends otherwise drops the events of its unfinished round (they would reach
        datasets half-built; resume drops them too) but keeps its LLM call records,
        which are an audit log, and its checkpoint.
        """
        if status != RunStatus.complete:
            self._events.clear()
        self._flush()
        self.manifest.status = status
        self.manifest.n_events = self._seq if status == RunStatus.complete else None
        self.manifest.error = error
        self.manifest.ended_at = utc_now()
        self._write_manifest()
        if status == RunStatus.complete:
            self.folder.unlink(CHECKPOINT)
        if self._lock_fd is not None:  # the lock file is not data: leave no trace in datasets
            self.folder.unlink(LOCK)
        release_lock(self._lock_fd)  # releases the writer lock
        self._lock_fd = None
        self.folder.close()

    # -- writing ------------------------------------------------------------------
    def emit(
        self,
        payload: Payload,
        *,
        round: int | None = None,
        phase: str = "",
        agent: str | None = None,
        visibility: Visibility | None = None,
        visible_to: list[str] | None = None,
        t: float | None = None,
    ) -> EventEnvelope:
        """Buffer one event (written at the next :meth:`commit_round`).

        ``visibility`` defaults to the payload kind's default; a private event is
        visible to ``visible_to`` (default: ``[agent]``).

        Raises:
            pydantic.ValidationError: the payload is not one of this environment's kinds.
        """
        vis = visibility or type(payload).default_visibility
        if vis == Visibility.private:
            visible_to = list(visible_to) if visible_to else ([agent] if agent else [])
        else:
            visible_to = []
        ev = self._model(
            run_id=self.manifest.run_id, seq=self._seq, round=round, phase=phase, agent=agent,
            kind=payload.kind, visibility=vis, visible_to=visible_to, t=t, payload=payload,
        )
        self._seq += 1
        self._events.append(ev)
        return ev

    def record_calls(self, calls: list[LLMCallRecord]) -> None:
        """Write model-call records (stamped with this run's id) at once, durably: they
        are an audit log of what was sent and spent, which a crash between commit
        points must not lose. The structured-output modes they used are
        listed in the manifest's ``notes["structured_output"]`` (model -> modes) when
        the run finishes. Each call must send the condition settings that govern it
        (:func:`.sent.check_sent`, with the runner's ``seat_of`` (agent id -> seat key)
        when seats are recorded per seat; raises :class:`.sent.SentSettingError`)."""
        for c in calls:
            c.run_id = self.manifest.run_id
            mode = getattr(c, "structured_output", None)
            if mode:
                used = self.manifest.notes.setdefault("structured_output", {})
                if mode not in used.setdefault(c.model, []):
                    used[c.model] = sorted([*used[c.model], mode])
            self._calls.append(c)
        if self._calls:
            written = list(self._calls)
            self._append(LLM_CALLS, [_dump(c) for c in self._calls])
            self._calls.clear()
            from .sent import check_sent

            # the calls are written first (an audit log), then a setting recorded but not sent stops the run
            check_sent(self.manifest.condition_settings, written, self.seat_of)

    def commit_round(self, round: int | None, t: float | None = None, state: Any = None) -> None:
        """Mark ``round`` complete and make everything buffered durable (fsync); then
        save ``state`` (picklable) as the checkpoint to resume from, atomically, sealed
        for this run on this machine (:func:`.sealed.seal`)."""
        from .events import RoundCommitted

        marker = self.emit(RoundCommitted(), round=round, phase="commit", t=t)
        self._flush()
        if state is not None:
            ck = Checkpoint(seq=marker.seq, round=round, package_version=package_version(), state=state)
            from .sealed import seal

            self.folder.replace(CHECKPOINT, seal(ck, f"run:{self.manifest.run_id}"))

    # -- internals ----------------------------------------------------------------
    def _flush(self) -> None:
        if self._calls:
            self._append(LLM_CALLS, [_dump(c) for c in self._calls])
            self._calls.clear()
        if self._events:
            self._append(EVENTS, [_dump(e) for e in self._events])
            self._events.clear()

    def _append(self, name: str, lines: list[str]) -> None:
        self.folder.append(name, _lines(self.run_dir / name, lines))

    def _write_manifest(self) -> None:
        self.folder.replace(MANIFEST, _dump_manifest(self.manifest).encode("utf-8"))


def _lines(path: Path, lines: list) -> bytes:
    """``lines`` as JSONL bytes, each through :func:`.jsonl.jsonl_line` (a newline inside
    refused, naming ``path``)."""
    return b"".join(jsonl_line(line, path, i) for i, line in enumerate(lines))


def _dump_manifest(manifest: RunManifest) -> str:
    """The manifest as indented JSON; strings that cannot be written as UTF-8 (a lone
    surrogate in an error message quoting a non-UTF-8 file name or a model's answer, or
    in a config value) are written with U+FFFD in their place, so that :meth:`finish`
    always closes the run (before: ``PydanticSerializationError`` and a manifest left
    ``running``)."""
    import json

    try:
        return manifest.model_dump_json(indent=2) + "\n"
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        return json.dumps(scrub_surrogates(manifest.model_dump(mode="json")), indent=2, ensure_ascii=False) + "\n"
