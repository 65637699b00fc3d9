"""What every run needs once: seeds, running coroutines from sync code, opening a run
folder with the one resume rule shared by SovSim, SCARCE and the Economy of Minds.

The resume rule (:func:`open_run`):

- no run folder yet: a new run is created;
- a *complete* run with the same id: it is skipped (nothing is rerun);
- an unfinished run (killed, failed, or a missing model decision stopped it): with
  ``resume=True`` it continues from the state checkpointed at its last durable round
  (SovSim round, SCARCE contention, Economy episode); events after that point are
  dropped, the LLM call log is kept. Without ``resume`` it is an error that says so;
- an existing run whose condition-defining settings differ from the requested ones is
  never resumed or skipped silently: that is an error naming the settings.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._sync import run_sync
from .data.recorder import (
    MANIFEST,
    RUN_FILES,
    Checkpoint,
    RunFolder,
    RunInProgressError,
    RunRecorder,
    read_manifest,
    run_in_progress,
)
from .data.schema import RunManifest, RunStatus, package_version

__all__ = [
    "RunHandle", "RunMismatchError", "derive_seed", "open_run", "package_version", "record_calls_of", "run_sync",
    "step_seed",
]


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from ``parts`` (e.g. run seed, round, agent, phase), stable across
    processes, platforms and Python versions (SHA-256 of the parts joined by ``:``)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def step_seed(cfg: Any, step: int, *parts: object) -> int:
    """The seed of one decision at ``step`` (SovSim round, SCARCE contention, Economy
    episode) of the run of ``cfg``: ``derive_seed(cfg.run_seed, step, *parts)``, except
    in a fork (``cfg.fork``, :mod:`scarce_lab.forks`) with seed ``j > 0`` from its step on,
    where it is ``derive_seed(cfg.run_seed, "fork", j, step, *parts)`` (the prefix keeps
    the parent's seeds, so its recorded answers replay; fork seed 0 is the parent's
    stream throughout). Every runner calls this, never ``derive_seed(cfg.run_seed, ...)``."""
    fork = getattr(cfg, "fork", None)
    if fork is None or fork.seed == 0 or step < fork.at:
        return derive_seed(cfg.run_seed, step, *parts)
    return derive_seed(cfg.run_seed, "fork", fork.seed, step, *parts)


@dataclass
class RunHandle:
    """An opened run folder.

    Attributes:
        run_dir: the folder.
        recorder: where to write (``None`` when ``skipped``).
        checkpoint: the state to resume from (``None`` for a new or restarted run).
        skipped: the run was already complete; nothing to do.
        resumed: an unfinished run was reopened.
    """

    run_dir: Path
    recorder: RunRecorder | None
    checkpoint: Checkpoint | None = None
    skipped: bool = False
    resumed: bool = False

    @property
    def state(self) -> Any:
        """The checkpointed state, or ``None``."""
        return None if self.checkpoint is None else self.checkpoint.state


class RunMismatchError(ValueError):
    """An existing run folder holds a run with other condition-defining settings."""


def open_run(run_dir: Path, manifest: RunManifest, *, resume: bool = False) -> RunHandle:
    """Open ``run_dir`` for ``manifest`` under the module's resume rule.

    Raises:
        FileExistsError: an unfinished run is there and ``resume`` is false.
        RunMismatchError: the run there has another environment or other
            condition-defining settings or seed (the message lists them).
        RunInProgressError: another live process is writing it.
        RunFolderError: ``run_dir`` is a link or holds what a run does not
            (:mod:`scarce_lab.data.safeio`).
        CheckpointRefusedError: its checkpoint was not written here for this run
            (:mod:`scarce_lab.data.sealed`).
    """
    run_dir = Path(run_dir)
    mark_humans(manifest)
    if os.path.lexists(run_dir):  # a link, FIFO or foreign file is refused before anything is read
        RunFolder.open(run_dir, RUN_FILES, manifest=MANIFEST, create=False).close()
    if not (run_dir / MANIFEST).exists():
        return RunHandle(run_dir, RunRecorder.create(run_dir, manifest))
    if run_in_progress(run_dir):
        raise RunInProgressError(f"{run_dir} is being written by another process; not touching it")
    old = read_manifest(run_dir)
    _check_same_run(run_dir, old, manifest)
    if old.status == RunStatus.complete:
        return RunHandle(run_dir, None, skipped=True)
    if not resume:
        raise FileExistsError(
            f"{run_dir} holds an unfinished run (status {old.status.value}"
            + (f": {old.error}" if old.error else "")
            + "); pass --resume to continue it from its last durable round"
        )
    rec, ck = RunRecorder.resume(run_dir)
    return RunHandle(run_dir, rec, checkpoint=ck, resumed=True)


def mark_humans(manifest: RunManifest) -> None:
    """Say in the manifest which seats a person played: ``notes.humans`` = seat ->
    ``{"person", "time_limit_s"}`` for every ``human/<name>`` of ``manifest.models``
    (nothing for a run without one, so other manifests are written as before). The
    one place every environment's runs pass (:func:`open_run`)."""
    from .data.schema import is_human
    from .llm.human import DEFAULT_TIME_LIMIT_S

    humans = {a: m for a, m in (manifest.models or {}).items() if is_human(m)}
    if humans:
        limit = (manifest.config or {}).get("human_time_limit_s", DEFAULT_TIME_LIMIT_S)
        manifest.notes["humans"] = {a: {"person": m.removeprefix("human/"), "time_limit_s": limit}
                                    for a, m in humans.items()}


def _check_same_run(run_dir: Path, old: RunManifest, new: RunManifest) -> None:
    diffs = []
    for field in ("environment", "seed"):
        if getattr(old, field) != getattr(new, field):
            diffs.append(f"{field}: {getattr(old, field)!r} there, {getattr(new, field)!r} asked")
    keys = sorted(set(old.condition_settings) | set(new.condition_settings))
    for k in keys:
        a, b = old.condition_settings.get(k), new.condition_settings.get(k)
        if a != b:
            diffs.append(f"{k}: {a!r} there, {b!r} asked")
    if diffs:
        raise RunMismatchError(
            f"{run_dir} holds a run with other settings ({'; '.join(diffs)}); use another output folder"
        )


def record_calls_of(rec: RunRecorder, *results: Any) -> None:
    """Record the model calls carried by agent results, successful (``Decided``) or
    not (an exception such as ``MissingDecisionError`` carries ``calls`` too), once
    each: a missing decision stops the run, but its calls are an audit log."""
    for res in results:
        calls = getattr(res, "calls", None)
        if calls and not getattr(res, "_calls_recorded", False):
            rec.record_calls(list(calls))
            try:
                res._calls_recorded = True
            except AttributeError:  # an object that takes no new attributes
                pass
