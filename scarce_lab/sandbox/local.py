"""Local sandbox backend on bubblewrap (the default where no Docker engine is asked for).

What each worker gets (mode ``"bwrap"``, as root with bubblewrap installed):

* its own unprivileged uid (:mod:`.uids`), its own folder: a tmpfs of ``disk_bytes``
  and ``inodes`` owned by that uid (:mod:`.hostroot`);
* its box: new pid, ipc, net, uts and mount namespaces with a root built from an
  allowlist, started once per slot, whose first process (a root *zygote*) forks
  each command, which then runs as the worker's uid with ``no_new_privs`` and no
  capabilities (:mod:`.bwrap`, :mod:`.zygote`);
* totals over all its processes in its own cgroup: memory, processes, CPU seconds
  (:mod:`.cgroups`, :mod:`.process`); per process: file size, open files, no core files;
* when a command ends (exit, wall limit, CPU limit) every process of the worker but
  its box's two root processes is killed, when its slot closes and at :meth:`close`
  every one, the box included; each kill verified;
* the original program execute-only: a root-owned 0711 copy named after the program
  in its folder and bound over the program's system paths (readable by nobody but
  root, so no ``cat``, no ``ld.so``, and it runs non-dumpable: no ``/proc/<pid>/exe``);
  untraceable because the seccomp filter refuses ``ptrace`` and ``process_vm_*``
  (:mod:`.seccomp`; non-dumpable alone leaves register access to a tracer attached
  before the exec).

``isolation="none"`` is an explicit weak mode for machines without root: plain
subprocesses with rlimits in per-worker folders, no namespaces, no uid separation, no
totals; ``capabilities`` says so. ``"auto"`` never falls back to it silently: it
raises :class:`SandboxError` with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from . import fileio
from .base import (
    ExecResult,
    GradingBox,
    ResourceLimits,
    SandboxError,
    WorkerBox,
    WorkerSandbox,
    command_argv,
)
from .bwrap import BwrapSpec, bwrap_argv, bwrap_problem
from .cgroups import Cgroup, Guardian, detect, reap_stale, remove_sandbox_groups
from .hostroot import HostRoot
from .process import execute
from .seccomp import filter_fd
from .uids import UidLease, lease_uid
from .zygote import ZYGOTE, Box, BoxGone, python_for_box

__all__ = [
    "DEFAULT_PATH", "Capabilities", "LocalSandbox", "base_env", "default_hidden_paths",
    "detect_capabilities", "run_limited",
]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_ids = itertools.count()


@dataclass(frozen=True)
class Capabilities:
    """What isolation a LocalSandbox gives here.

    mode: ``"bwrap"`` (everything in the module docstring) or ``"none"``.
    network_isolated / private_mounts / uid_separation / totals: each guarantee.
    reason: why the machine cannot give ``"bwrap"`` ('' when it can).
    """

    network_isolated: bool
    private_mounts: bool
    uid_separation: bool
    mode: str
    reason: str = ""
    totals: bool = False


@functools.cache
def detect_capabilities() -> Capabilities:
    """Probe once: bubblewrap + root + cgroups -> mode ``"bwrap"``, else ``"none"``
    with the reason (a LocalSandbox in ``"auto"`` then refuses to start)."""
    why = bwrap_problem()
    if not why and python_for_box() is None:
        why = "no python3 under /usr/bin or /usr/local/bin for the worker boxes' zygote (sandbox/zygote.py)"
    if not why:
        cg = detect()
        if cg.version == 0:
            why = f"no usable cgroups for per-worker totals: {cg.reason}"
    if why:
        return Capabilities(False, False, False, "none", why)
    return Capabilities(True, True, True, "bwrap", "", totals=True)


def base_env(workdir: str | Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every command gets: ``PATH``, ``HOME`` (the folder), ``TMPDIR``
    (its ``.tmp``), ``LC_ALL=C`` (the locale the shipped tasks were recorded in)."""
    wd = str(workdir)
    env = {"PATH": DEFAULT_PATH, "HOME": wd, "TMPDIR": os.path.join(wd, ".tmp"), "LC_ALL": "C",
           "LANG": "C", "TERM": "dumb"}
    if extra:
        env.update(extra)
    return env


def default_hidden_paths() -> tuple[str, ...]:
    """Folders hidden inside sandboxes where they would be visible (e.g. when the
    package is installed under ``/usr``): the shipped suite (hidden tests, reference
    solutions) and, in a source checkout, the whole repository."""
    pkg = Path(__file__).resolve().parents[1]
    out = []
    if (pkg / "tasks" / "suite").is_dir():
        out.append(str(pkg / "tasks" / "suite"))
    if (pkg.parent / "pyproject.toml").is_file():
        out.append(str(pkg.parent))
    return tuple(out)


def run_limited(command: str | list[str], cwd: str | Path, limits: ResourceLimits, *,
                env: dict[str, str] | None = None, stdin: str | bytes = "",
                output_limit: int = 20_000) -> ExecResult:
    """Run a command *without isolation* (rlimits, process group kill, output limit).
    For tools and tests only: worker code goes through :class:`LocalSandbox`."""
    argv, shown, bad = command_argv(command)
    if bad:
        return ExecResult(command=shown, exit_code=2, stdout="", stderr=bad, duration_s=0.0,
                          notes={"isolation": "none"})
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return execute(argv, shown=shown, cwd=str(cwd), env=env or base_env(cwd), limits=limits, stdin=data,
                   output_limit=output_limit, notes={"isolation": "none"})


@dataclass
class _Worker:
    name: str
    folder: Path
    uid: int
    lease: UidLease | None
    cgroup: Cgroup | None
    exec_only: dict[str, str] = field(default_factory=dict)
    binds: dict[str, str] = field(default_factory=dict)
    path_override: str | None = None
    deadline: float | None = None
    reserved: int = 0  # run() calls past their slot check (close_slot waits for them)
    tmp_dir: Path | None = None  # grading boxes: /tmp, /var/tmp, /dev/shm, /run/lock from here
    box: Box | None = None  # the running box (one per slot; a grading box's for its life)
    box_lock: threading.Lock = field(default_factory=threading.Lock)  # one command at a time
    dropped: bool = False  # no box starts for a dropped worker
    slot: int = 0  # slots opened so far (a box serves one slot)
    prestart: threading.Thread | None = None  # starting the slot's box (open_slot)


class LocalSandbox(WorkerSandbox):
    """Bubblewrap sandbox with per-worker uids, folders and cgroups (module docstring).

    Args:
        root: folder for the worker folders; default a private root-owned folder under
            ``/run/scarce_lab/sandboxes`` removed at :meth:`close`. A given root is kept
            (worker files copied back into it as plain files at close).
        limits: default per-command :class:`ResourceLimits`.
        output_limit: characters kept of stdout and of stderr each.
        hidden_paths: folders covered inside sandboxes where a bound system folder
            would show them (default :func:`default_hidden_paths`).
        isolation: ``"auto"``/``"bwrap"`` (raises SandboxError with the reason when the
            machine cannot) or ``"none"`` (explicitly unisolated).
        disk_bytes, inodes: size and file count of each worker folder.
        tmp_bytes: size of each command's ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``.

    Thread-safe: :meth:`close_slot` from another thread kills a running command.
    """

    def __init__(self, root: str | Path | None = None, limits: ResourceLimits | None = None,
                 output_limit: int = 20_000, hidden_paths: tuple[str | Path, ...] | None = None,
                 isolation: str = "auto", disk_bytes: int = 256 << 20, inodes: int = 20_000,
                 tmp_bytes: int = 64 << 20) -> None:
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
        if output_limit <= 0:
            raise ValueError(f"output_limit must be > 0, got {output_limit!r}")
        for name, v in (("disk_bytes", disk_bytes), ("inodes", inodes), ("tmp_bytes", tmp_bytes)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if isolation == "none":
            self.capabilities = Capabilities(False, False, False, "none", "isolation='none' requested")
        else:
            self.capabilities = detect_capabilities()
            if self.capabilities.mode != "bwrap":
                raise SandboxError(f"the local sandbox cannot isolate workers here: {self.capabilities.reason}. "
                                   "Run as root with bubblewrap installed (scripts/install.sh), use "
                                   "--sandbox docker, or pass isolation='none' to run without isolation.")
        self.isolated = self.capabilities.mode == "bwrap"
        self.limits = limits or ResourceLimits()
        self.output_limit = output_limit
        self.disk_bytes, self.inodes, self.tmp_bytes = disk_bytes, inodes, tmp_bytes
        hp = default_hidden_paths() if hidden_paths is None else hidden_paths
        self.hidden_paths = tuple(str(Path(p).resolve()) for p in hp)
        if self.isolated:
            with contextlib.suppress(OSError):
                reap_stale()  # groups of sandboxes whose process died without close()
        self.host = HostRoot(root, tmpfs=self.isolated)
        self.root = self.host.path
        self._id = f"{os.getpid()}-{next(_ids)}"
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._grades = itertools.count()
        self._finalizer = weakref.finalize(self, remove_sandbox_groups, self._id) if self.isolated else None
        # nothing of a worker outlives the harness, even when it is killed (cgroups.Guardian)
        self._guardian = Guardian(self._id) if self.isolated else None

    @property
    def network_isolated(self) -> bool:
        """True when commands have no network (an empty network namespace)."""
        return self.capabilities.network_isolated

    # -- workers ----------------------------------------------------------------------
    def _new_worker(self, worker: str) -> _Worker:  # under the lock (WorkerSandbox._worker)
        if not self.isolated:
            folder = self.host.make_folder(worker, uid=os.geteuid(), size=self.disk_bytes, inodes=self.inodes)
            return _Worker(worker, folder, os.geteuid(), None, None)
        lease = lease_uid()
        try:
            folder = self.host.make_folder(worker, uid=lease.uid, size=self.disk_bytes, inodes=self.inodes)
            cg = Cgroup(detect(), f"scarce_lab/{self._id}/{worker}").create()
        except BaseException:
            lease.release()
            raise
        self.host.write_users({worker: lease.uid})
        return _Worker(worker, folder, lease.uid, lease, cg)

    def uid_of(self, worker: str) -> int | None:
        """The uid ``worker``'s commands run as (``None`` in mode ``"none"``)."""
        return self._worker(worker).uid if self.isolated else None

    def install_original(self, worker: str, name: str, source: str, paths: list[str]) -> None:
        """As :meth:`WorkerSandbox.install_original`; unisolated, the file is installed in
        the folder only."""
        if self.isolated:
            super().install_original(worker, name, source, paths)
        else:
            fileio.install_exec_only(self._worker(worker).folder, name, source)

    # -- slots ------------------------------------------------------------------------
    def open_slot(self, worker: str, duration_s: float) -> None:
        """As :meth:`WorkerSandbox.open_slot`; a new box for the slot starts in the
        background (nothing of the worker's ``/tmp`` or IPC passes from one slot to the
        next); its first command waits for it, or starts it if that failed."""
        super().open_slot(worker, duration_s)
        w = self._worker(worker)
        with self._lock:
            w.slot += 1
        if self.isolated:  # the box starts now, while the worker decides its first command
            w.prestart = threading.Thread(target=self._prestart, args=(w,), daemon=True, name=f"box-{worker}")
            w.prestart.start()

    def _prestart(self, w: _Worker) -> None:
        with w.box_lock:
            if not self._closing(w):
                with contextlib.suppress(SandboxError, OSError):  # the first command starts it again, loudly
                    self._box(w, self.limits)

    @staticmethod
    def _closing(w: _Worker) -> bool:
        """True when no box may start for ``w``: dropped, or a worker whose slot closed."""
        return w.dropped or (w.tmp_dir is None and w.deadline is None)

    def close_slot(self, worker: str) -> None:
        """End the window and kill everything of the worker (verified). A command whose
        slot check passed before this call is killed as it starts (the kills repeat
        until every :meth:`run` in flight has returned); one called after this returns
        is refused (:class:`SlotNotActiveError`): the check and the reservation are one
        step under the sandbox's lock."""
        w = self._workers.get(worker)
        if w is None:
            return
        with self._lock:
            w.deadline = None
        if w.prestart is not None:  # a box it is starting is killed below with the rest
            w.prestart.join(timeout=60)
        self._teardown(w)
        end = time.monotonic() + 30.0
        while w.reserved > 0 and time.monotonic() < end:
            self._teardown(w)
            time.sleep(0.005)

    def _teardown(self, w: _Worker) -> None:
        if w.cgroup is not None:
            w.cgroup.kill_all()

    def _exec(self, w: _Worker, command: str | list[str], lim: ResourceLimits, *, stdin: bytes,
              output_limit: int) -> ExecResult:
        argv, shown, bad = command_argv(command)
        iso = self.capabilities.mode
        if bad:
            return ExecResult(command=shown, exit_code=2, stdout="", stderr=bad, duration_s=0.0,
                              notes={"isolation": iso})
        env = base_env(w.folder, {"PATH": w.path_override} if w.path_override else None)
        if not self.isolated:
            return execute(argv, shown=shown, cwd=str(w.folder), env=env, limits=lim, stdin=stdin,
                           output_limit=output_limit, notes={"isolation": iso})
        notes = {"isolation": iso, "uid": w.uid}
        with w.box_lock:
            for _ in range(2):
                if self._closing(w):
                    break  # its slot's close (or the sandbox's) began: killed as it starts
                try:
                    box = self._box(w, lim)
                except SandboxError:
                    if self._closing(w):
                        break
                    raise
                totals = (lim.memory_bytes, lim.max_processes + len(box.keep))
                if box.totals != totals:  # (four file writes saved per command when unchanged)
                    w.cgroup.set_limits(memory_bytes=totals[0], max_processes=totals[1])
                    box.totals = totals
                try:
                    return execute(argv, shown=shown, cwd=str(w.folder), env=env, limits=lim, stdin=stdin,
                                   output_limit=output_limit, box=box, notes=notes)
                except BoxGone:  # ended before the command was forked (e.g. its slot closing)
                    box.stop()
                    w.box = None
        return ExecResult(command=shown, exit_code=-9, stdout="", duration_s=0.0, notes=notes,
                          stderr="[sandbox: the worker's box ended as the command started (its slot or "
                                 "the sandbox closing); not run]\n")

    def _box(self, w: _Worker, lim: ResourceLimits) -> Box:
        """``w``'s running box, started (after a verified kill of its cgroup) when there
        is none, it ended, or what it binds changed (under ``w.box_lock``)."""
        key = (w.slot, tuple(sorted(w.exec_only.items())), tuple(sorted(w.binds.items())))
        if w.box is not None and w.box.alive() and w.box.key == key:
            return w.box
        if w.box is not None:
            w.box.stop()
            w.box = None
        spec = BwrapSpec(workdir=str(w.folder), cwd="/", uid=w.uid, env={"PATH": DEFAULT_PATH},
                         etc_dir=str(self.host.users_dir(w.name)), exec_only=w.exec_only, binds=w.binds,
                         hidden=self.hidden_paths, tmp_bytes=self.tmp_bytes, proc_masks=self.host.proc_masks,
                         tmp_dir=None if w.tmp_dir is None else str(w.tmp_dir))
        zygote = [python_for_box(), "-I", "-S", "-c", ZYGOTE]
        w.cgroup.set_limits(memory_bytes=lim.memory_bytes, max_processes=lim.max_processes + 2)
        fd = filter_fd(grading=w.tmp_dir is not None)
        try:
            w.box = Box(lambda sock: bwrap_argv(spec, [*zygote, str(sock), str(w.uid)],
                                                seccomp_fd=fd, box=True), w.cgroup, pass_fds=(fd,), key=key)
        finally:
            os.close(fd)
        return w.box

    # -- grading ----------------------------------------------------------------------
    def grading_box(self, files: dict[str, bytes], *, masks: dict[str, str] | None = None,
                    binds: dict[str, str] | None = None, path_override: str | None = None) -> GradingBox:
        name = f"grade-{next(self._grades)}"
        w = self._worker(name)
        with self._lock:
            w.exec_only = dict(masks or {})
            w.binds = dict(binds or {})
            w.path_override = path_override
        if self.isolated:  # the box's temporary folders on a file system the grader can watch
            try:
                d = self.host.make_folder(f"{name}.tmp", uid=0, size=self.tmp_bytes, inodes=self.inodes)
                for sub in ("tmp", "var_tmp", "shm", "lock"):
                    (d / sub).mkdir()
                    os.chmod(d / sub, 0o1777)
                os.chmod(d, 0o755)
                w.tmp_dir = d
            except BaseException:
                self._drop(name)
                raise
        return _LocalBox(self, w).filled(files)

    def _drop(self, name: str, *, keep: bool = False) -> None:
        with self._lock:
            w = self._workers.pop(name, None)
        if w is None:
            return
        w.dropped = True
        if w.cgroup is not None:
            w.cgroup.kill_all()  # a command running in the box ends (its box is gone) ...
        with w.box_lock:  # ... and gives the box back
            if w.box is not None:
                w.box.stop()
        if w.cgroup is not None:
            w.cgroup.remove()
            w.cgroup.remove_parents(0)
        self.host.drop_folder(w.folder, keep=keep)
        if w.tmp_dir is not None:
            self.host.drop_folder(w.tmp_dir)
        self.host.drop_users(w.name)
        if w.lease is not None:
            w.lease.release()

    def _release(self) -> None:  # after every worker is dropped (WorkerSandbox.close)
        if self._finalizer is not None:
            self._finalizer()  # the sandbox's own cgroup folder (its workers' are gone)
        if self._guardian is not None:
            self._guardian.close()


class _LocalBox(WorkerBox):
    def writable_filesystems(self) -> list[Path]:
        """The box's folder and its temporary folders' file system: every place a
        command of the box can write a file (memfd is refused in grading boxes)."""
        return [self.folder, *([self.w.tmp_dir] if self.w.tmp_dir is not None else [])]
