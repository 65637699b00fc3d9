"""The sandbox interface shared by the local (bubblewrap) and docker backends.

One sandbox per SCARCE run, shared by all workers. Each worker has its own work
folder, its own unprivileged uid and its own resource totals. Commands run only
inside an *active slot* (granted by the scheduler); a command outside one is refused
with :class:`SlotNotActiveError`. Nothing of a worker outlives a command: when a
command ends (normally, at its wall limit, at its CPU limit), every process the worker
started is killed and the kill is verified (:class:`TeardownError` when it cannot be).

File tools (:meth:`Sandbox.list_files`, :meth:`Sandbox.read_file`,
:meth:`Sandbox.write_file`) work on the worker's folder from the host without ever
following a link the worker controls (see :mod:`.fileio`); a bad path is a
:class:`~.fileio.ToolError`, never an exception of another kind.

Source of the rules: the SCARCE paper's sandbox (one shared execution sandbox, slots
granted by contention) and this project's isolation boundary (docs/threat_model.md).
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self


class SandboxError(RuntimeError):
    """Base class of sandbox errors (setup failed, engine missing, bad state)."""


class SlotNotActiveError(SandboxError):
    """A worker ran a command outside its granted execution slot."""


class TeardownError(SandboxError):
    """Processes of a worker could not be verified gone (names the worker and pids)."""


#: longest single argument ``execve`` takes (``MAX_ARG_STRLEN``, 32 pages of 4 KiB,
#: ``linux/binfmts.h``), terminating NUL included: a shell command is one argument
MAX_ARG_BYTES = 32 * 4096
#: most bytes of all arguments together that a command may have (well under the
#: kernel's ``ARG_MAX`` of a quarter of an 8 MiB stack, with room for the wrappers'
#: own arguments and the environment)
MAX_ARGV_BYTES = 1 << 20


#: the names a worker may have (its folder, cgroup and user are named after it)
WORKER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def command_argv(command: str | list[str]) -> tuple[list[str], str, str | None]:
    """argv for a shell command or argv list (UTF-8 clean), the command as shown in its
    :class:`ExecResult`, and why it cannot start (:func:`command_problem`) or None."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    argv = [a.encode("utf-8", "replace").decode("utf-8") for a in argv]
    return argv, command if isinstance(command, str) else " ".join(command), command_problem(argv)


def command_problem(argv: list[str]) -> str | None:
    """Why ``argv`` (already UTF-8 clean) cannot be started, as a shell would say it,
    or ``None``. The one check both backends make before a worker's command reaches
    ``execve``: a NUL byte, one argument over ``MAX_ARG_BYTES`` with its NUL (the
    kernel's own test), or more than ``MAX_ARGV_BYTES`` in all. Without it the kernel's ``E2BIG`` surfaced as a
    :class:`SandboxError` and a worker's 200 KB command ended the whole run.
    """
    if any("\x00" in a for a in argv):
        return "command contains a NUL byte; not run\n"
    sizes = [len(a.encode("utf-8")) + 1 for a in argv]
    if max(sizes, default=0) > MAX_ARG_BYTES:
        return (f"command too long: an argument of {max(sizes) - 1} bytes (the kernel's limit is "
                f"{MAX_ARG_BYTES - 1}); not run (put long text in a file)\n")
    if sum(sizes) > MAX_ARGV_BYTES:
        return f"command too long: {sum(sizes)} bytes of arguments (limit {MAX_ARGV_BYTES}); not run\n"
    return None


@dataclass(frozen=True)
class ResourceLimits:
    """Limits of one command. Units: seconds, bytes, counts.

    wall_seconds: real time of the command (the sandbox also caps it by what is left
        of the slot and by ``max_wall_s``).
    cpu_seconds: CPU seconds summed over *all* processes the command starts (cgroup
        accounting; every process is killed when the sum reaches the limit).
    memory_bytes: memory of all the worker's processes together (cgroup; no address
        space limit, so a JVM's large reservations are fine).
    file_size_bytes: largest file one process may write (RLIMIT_FSIZE).
    max_processes: processes and threads of the worker at once (cgroup pids).
    open_files: open file descriptors per process (RLIMIT_NOFILE).
    network: must stay False: sandboxes have no network (kept for the interface).
    """

    wall_seconds: float = 60.0
    cpu_seconds: float = 60.0
    memory_bytes: int = 1 << 30
    file_size_bytes: int = 64 << 20
    max_processes: int = 64
    open_files: int = 1024
    network: bool = False

    def __post_init__(self) -> None:
        for name in ("wall_seconds", "cpu_seconds", "memory_bytes", "file_size_bytes",
                     "max_processes", "open_files"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"ResourceLimits.{name} must be a number > 0, got {v!r}")
        if self.network:
            raise ValueError("ResourceLimits.network=True: sandboxes never have network access")

    def capped(self, wall_s: float) -> ResourceLimits:
        """These limits with ``wall_seconds`` lowered to at most ``wall_s``."""
        return ResourceLimits(
            wall_seconds=max(0.001, min(self.wall_seconds, wall_s)), cpu_seconds=self.cpu_seconds,
            memory_bytes=self.memory_bytes, file_size_bytes=self.file_size_bytes,
            max_processes=self.max_processes, open_files=self.open_files,
        )


@dataclass
class ExecResult:
    """Outcome of one command.

    exit_code: the command's exit status; ``None`` when killed at its wall limit;
        ``128 + N`` when a process inside was killed by signal N (the shell's
        convention); ``-9`` when the sandbox killed it for its CPU limit.
    stdout, stderr: decoded output, each truncated to the sandbox's output limit.
    duration_s: measured real (wall) seconds from start to verified teardown.
    timed_out: killed at the wall limit. truncated: some output was dropped.
    cpu_s: CPU seconds used by all the command's processes (``None`` where not measured).
    killed_by: ``"timeout"``, ``"cpu"``, ``"memory"`` (an out-of-memory kill in the
        worker's cgroup) or ``None``.
    notes: backend details (isolation mode, image, slot seconds left...).
    """

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    cpu_s: float | None = None
    killed_by: str | None = None
    notes: dict = field(default_factory=dict)


class GradingBox(ABC):
    """A fresh, private folder and identity for building and testing one submission
    (see :meth:`Sandbox.grading_box`). The original program is absent: the paths given
    as masks hold a tripwire instead. Closing it kills everything and deletes the folder."""

    folder: Path

    @abstractmethod
    def run(self, argv: list[str], limits: ResourceLimits, *, stdin: bytes = b"",
            output_limit: int = 20_000) -> ExecResult:
        """Run ``argv`` in the box's folder under ``limits`` (verified teardown after)."""

    @abstractmethod
    def close(self) -> None:
        """Kill every process of the box (verified) and remove its folder."""

    def writable_filesystems(self) -> list[Path]:
        """Host paths on each file system where the box's commands can write files
        (the grader watches executions there); by default the box's folder only."""
        return [self.folder]

    def __enter__(self) -> GradingBox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def filled(self, files: dict[str, bytes]) -> GradingBox:
        """The box with ``files`` (relative path -> bytes) written into its folder
        without following links; closed again if a write fails.

        Raises:
            fileio.ToolError: a path the folder refuses (the box is closed)."""
        from . import fileio

        try:
            for rel, data in files.items():
                fileio.write_file(self.folder, rel, data)
        except BaseException:
            self.close()
            raise
        return self


@contextmanager
def slot_reservation(lock: Any, w: Any, worker: str) -> Iterator[float]:
    """Check ``worker``'s slot and reserve it in one step under ``lock`` (``w`` has
    ``deadline``, a ``time.monotonic()`` value or ``None``, and a ``reserved`` count):
    yields the slot's remaining real seconds; the reservation ends when the block does.
    ``close_slot`` waits until no reservation is left, so no command starts after it
    returns (both backends run commands through this).

    Raises:
        SlotNotActiveError: no slot, or it has expired.
    """
    with lock:
        if w.deadline is None:
            raise SlotNotActiveError(f"worker {worker!r} has no active execution slot")
        remaining = w.deadline - time.monotonic()
        if remaining <= 0:
            raise SlotNotActiveError(f"worker {worker!r}: its execution slot has expired")
        w.reserved += 1
    try:
        yield remaining
    finally:
        with lock:
            w.reserved -= 1


class Sandbox(ABC):
    """Abstract sandbox: per-worker folders, slot gating, limits, teardown."""

    network_isolated: bool = False
    """True when commands run without network access."""

    @abstractmethod
    def workdir(self, worker: str) -> Path:
        """Host path of ``worker``'s work folder (created on first use). Read and write it
        only through the file tools, never with plain host I/O."""

    @abstractmethod
    def open_slot(self, worker: str, duration_s: float) -> None:
        """Grant ``worker`` an execution window of ``duration_s`` real seconds."""

    @abstractmethod
    def close_slot(self, worker: str) -> None:
        """End ``worker``'s window and kill everything it still runs (verified)."""

    @abstractmethod
    def run(self, worker: str, command: str, limits: ResourceLimits | None = None) -> ExecResult:
        """Run a shell command in ``worker``'s folder. Backends also accept the keyword
        arguments ``max_wall_s`` (a further cap on real seconds) and ``stdin``.

        Raises:
            SlotNotActiveError: ``worker`` has no active slot, or it has expired.
        """

    @abstractmethod
    def close(self) -> None:
        """Release every resource (processes, containers, folders)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def slot_remaining(self, worker: str) -> float | None:
        """Seconds left in ``worker``'s window, or ``None`` without an open slot."""
        return None

    # -- file tools: never follow a worker-controlled link (see .fileio) -------------
    def list_files(self, worker: str) -> list[str]:
        """Relative paths of the regular files in ``worker``'s folder (sorted)."""
        from . import fileio

        return fileio.list_files(self.workdir(worker)).files

    def read_file(self, worker: str, rel: str, limit: int = 1 << 20) -> bytes:
        """First ``limit`` bytes of a regular file. Raises :class:`~.fileio.ToolError`."""
        from . import fileio

        return fileio.read_file(self.workdir(worker), rel, limit).data

    def write_file(self, worker: str, rel: str, data: bytes, *, executable: bool = False) -> int:
        """Write ``data`` (parents created), owned by the worker. Returns bytes written.
        Raises :class:`~.fileio.ToolError`."""
        from . import fileio

        return fileio.write_file(self.workdir(worker), rel, data, executable=executable)

    def install_original(self, worker: str, name: str, source: str, paths: list[str]) -> None:
        """Give ``worker`` the program at host path ``source`` to run but not read:
        ``./name`` in its folder and, where the backend can, over each of ``paths``
        inside its sandbox (:meth:`program_paths`). An unisolated sandbox installs an
        execute-only copy in the folder (as root) or a plain one."""
        from . import fileio

        fileio.install_exec_only(self.workdir(worker), name, source)

    def program_paths(self, candidates: list[str]) -> list[str]:
        """Where a program named by ``candidates`` (absolute paths) is reachable inside
        this sandbox's boxes: here, the candidates that exist on this machine, by real
        path, without repeats. Backends with their own file system override it."""
        import os

        seen: list[str] = []
        for c in candidates:
            if os.path.exists(c) and os.path.realpath(c) not in seen:
                seen.append(os.path.realpath(c))
        return seen

    def grading_box(self, files: dict[str, bytes], *, masks: dict[str, str] | None = None,
                    binds: dict[str, str] | None = None, path_override: str | None = None) -> GradingBox:
        """A fresh grading box holding ``files`` (relative path -> bytes).

        masks: sandbox path -> host file bound read-only over it (the tripwire over the
            original program's paths). binds: sandbox path -> host path bound as is
            (the tripwire's socket). path_override: ``PATH`` for commands (the path-shim
            fallback of an unisolated sandbox).
        """
        raise SandboxError(f"{type(self).__name__} cannot grade (no grading_box)")


class WorkerSandbox(Sandbox):
    """What the local and docker backends share: workers made on first use (a backend's
    ``_new_worker``, each with a ``folder``, an ``exec_only`` dict, a slot ``deadline``
    and a ``reserved`` count), slots, :meth:`run` through the backend's ``_exec``, the
    execute-only original, and :meth:`close` (then the backend's ``_release``)."""

    _workers: dict[str, Any]
    _lock: Any
    _closed: bool
    host: Any  # .hostroot.HostRoot
    limits: ResourceLimits
    output_limit: int

    def _worker(self, worker: str) -> Any:
        if not isinstance(worker, str) or not WORKER_RE.match(worker):
            raise ValueError(f"worker must match {WORKER_RE.pattern}, got {worker!r}")
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            w = self._workers.get(worker)
            if w is None:
                w = self._workers[worker] = self._new_worker(worker)
            return w

    def workdir(self, worker: str) -> Path:
        return self._worker(worker).folder

    def install_original(self, worker: str, name: str, source: str, paths: list[str]) -> None:
        """An execute-only copy of host ``source`` as ``./name`` in the worker's folder,
        also bound over each of ``paths`` (and the launcher's hidden folder) in the
        worker's sandboxes."""
        from . import fileio
        from .launcher import HIDDEN_DIR

        w = self._worker(worker)
        copy = self.host.exec_only_copy(source)
        fileio.install_exec_only(w.folder, name, copy)
        with self._lock:
            for p in self.program_paths(paths):
                w.exec_only[p] = copy
            w.exec_only[HIDDEN_DIR] = str(self.host.hidden)

    def open_slot(self, worker: str, duration_s: float) -> None:
        if not isinstance(duration_s, (int, float)) or duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s!r}")
        w = self._worker(worker)
        with self._lock:
            w.deadline = time.monotonic() + float(duration_s)

    def slot_remaining(self, worker: str) -> float | None:
        w = self._workers.get(worker)
        return None if w is None or w.deadline is None else max(0.0, w.deadline - time.monotonic())

    def run(self, worker: str, command: str, limits: ResourceLimits | None = None, *,
            max_wall_s: float | None = None, stdin: str | bytes = "") -> ExecResult:
        """Run ``command`` (``/bin/sh -c``) in the worker's folder inside its slot.

        The real time is at most ``min(limits.wall_seconds, slot remaining, max_wall_s)``;
        ``duration_s`` of the result is the measured real time.

        Raises:
            SlotNotActiveError: no slot, or it has expired.
            TeardownError: processes survived the kills (never silently ignored).
        """
        w = self._worker(worker)
        with slot_reservation(self._lock, w, worker) as remaining:  # close_slot waits for it
            lim = (limits or self.limits).capped(remaining if max_wall_s is None else min(remaining, max_wall_s))
            data = stdin.encode() if isinstance(stdin, str) else stdin
            res = self._exec(w, command, lim, stdin=data, output_limit=self.output_limit)
        rem = self.slot_remaining(worker)
        res.notes["slot_remaining_s"] = None if rem is None else round(rem, 3)
        return res

    def close(self) -> None:
        """Drop every worker (its processes killed, verified; its folder, cgroup, uid
        released; a given root keeps the workers' files), then what the backend holds
        (``_release``). Raises SandboxError naming every worker that failed to drop
        (the others are still dropped)."""
        with self._lock:
            if self._closed:
                return
            names = list(self._workers)
        errors = []
        for name in names:
            try:
                self._drop(name, keep=not self.host.owned)
            except SandboxError as exc:
                errors.append(str(exc))
        with self._lock:
            self._closed = True
        self._release()
        self.host.close()
        if errors:
            raise SandboxError("; ".join(errors))


class WorkerBox(GradingBox):
    """A grading box: a dedicated worker ``w`` of the sandbox ``sb``, with no slot gating."""

    def __init__(self, sb: Any, w: Any):
        self.sb, self.w, self.folder = sb, w, w.folder

    def run(self, argv: list[str], limits: ResourceLimits, *, stdin: bytes = b"",
            output_limit: int = 20_000) -> ExecResult:
        return self.sb._exec(self.w, list(argv), limits, stdin=stdin, output_limit=output_limit)

    def close(self) -> None:
        self.sb._drop(self.w.name)
