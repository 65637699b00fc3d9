"""The writer lock of a run directory: one writer per run, across processes (``flock``)
and inside one process (a live recorder is never taken over; a gone one is).

:class:`~scarce_lab.data.recorder.RunRecorder` takes the lock when it creates or
resumes a run and releases it in :meth:`~scarce_lab.data.recorder.RunRecorder.finish`;
runners ask :func:`run_in_progress` before moving, resuming or restarting a run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .safeio import RunFolder, RunFolderError

#: The lock file in a run directory (not data: removed when the run finishes).
LOCK = ".writer.lock"


class RunInProgressError(FileExistsError):
    """Another live process is writing this run directory (it holds the writer lock)."""


@dataclass
class _Hold:
    """A writer lock this process holds: its fd, the thread that took it and the
    recorder writing under it (a weak reference, set once the recorder exists)."""

    fd: int
    thread: threading.Thread
    owner: weakref.ref | None = None

    def live(self) -> bool:
        """A recorder is still writing: it exists, has not finished and its thread runs."""
        rec = self.owner() if self.owner is not None else None
        return rec is not None and rec._lock_fd is not None and self.thread.is_alive()


#: Writer locks this process holds: real path of the run directory -> hold.
_HELD: dict[str, _Hold] = {}


def acquire_lock(folder: RunFolder) -> int | None:
    """Take the run folder's writer lock (an ``flock`` on ``.writer.lock``, opened under
    the folder's descriptor without following a link; released by :meth:`finish` or
    when the process dies); ``None`` where the file system has no locks. A lock this
    process already holds is taken over only when its writer is gone (a runner
    restarting its own crashed run: the recorder was dropped, or its thread ended, as
    a notebook's interrupted call's does).

    Raises:
        RunInProgressError: another process holds it, or a live recorder of this
            process writes the run (the same run twice in one sweep, or a second call
            while an interrupted one still runs in its thread).
        RunFolderError: ``.writer.lock`` is a link, a FIFO or a folder.
    """
    run_dir = folder.path
    key = os.path.realpath(run_dir)
    held = _HELD.get(key)
    if held is not None:
        if held.live():
            raise RunInProgressError(
                f"{run_dir} is being written by this process (thread {held.thread.name!r}): a run with the "
                "same id is in progress; wait for it to end (an interrupted notebook call may still be running)"
            )
        held.thread, held.owner = threading.current_thread(), None
        return held.fd
    try:
        fd = folder.open_file(LOCK, os.O_CREAT | os.O_RDWR)
    except RunFolderError:
        raise
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
    _HELD[key] = _Hold(fd, threading.current_thread())
    return fd


def claim_lock(fd: int | None, recorder: Any) -> None:
    """Name ``recorder`` as the writer under lock ``fd``."""
    for held in _HELD.values():
        if held.fd == fd:
            held.owner = weakref.ref(recorder)


def release_lock(fd: int | None) -> None:
    if fd is None:
        return
    for key, held in list(_HELD.items()):
        if held.fd == fd:
            del _HELD[key]
            os.close(fd)


def _forget_locks_after_fork() -> None:
    """In a forked child: the parent's locks are the parent's (closing the child's copies
    leaves the parent's ``flock`` in place; the child never writes those runs)."""
    for held in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(held.fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_locks_after_fork)


def run_in_progress(run_dir: Path) -> bool:
    """True when a live writer holds ``run_dir``'s writer lock: another process, or a
    recorder of this process that is still writing (a runner must then neither move,
    resume nor restart it)."""
    path = Path(run_dir) / LOCK
    held = _HELD.get(os.path.realpath(run_dir))
    if held is not None:  # this process: in progress while its recorder writes
        return held.live()
    if not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # a link planted as the lock is no writer
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


@contextlib.contextmanager
def folder_lock(folder: Path, name: str, busy: Callable[[Path], Exception]) -> Iterator[None]:
    """Hold ``folder/name``, an advisory ``flock`` released when the block ends or the
    process does (a kill included): one writer of a folder that several runs fill (a
    study's, a selection chain's).

    Raises:
        the exception ``busy(lock path)`` gives: another process holds it.
    """
    path = Path(folder) / name
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy(path) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
