"""Local sandbox backend: subprocesses in per-worker folders (the default backend).

Public API::

    sb = LocalSandbox(root=None, limits=ResourceLimits(), output_limit=20_000,
                      hidden_paths=None, isolation="auto")
    sb.workdir("w0") -> Path            # created on first use, owned by the worker's uid
    prepare_workspace(task, sb.workdir("w0")); sb.chown_tree("w0")   # host writes -> worker
    sb.open_slot("w0", duration_s=120)  # grant a window (wall seconds from now)
    sb.run("w0", "gcc -O2 x.c && ./a.out", limits=None) -> ExecResult
    sb.close_slot("w0")                 # kills every process the worker still runs
    sb.close()                          # closes all slots, removes the root if it owns it
    sb.capabilities -> Capabilities(network_isolated, private_mounts, uid_separation, mode)
    sb.network_isolated -> bool; sb.slot_remaining("w0") -> float | None

    run_limited(command, cwd, limits, *, env=None, stdin="", output_limit=20_000,
                isolation=Isolation()) -> ExecResult    # low-level, also used by grading
    detect_capabilities() -> Capabilities                # probed once per process

What it enforces (each command):

* wall-clock timeout: ``limits.wall_seconds``, capped by what remains of the slot; at
  timeout the whole process group is killed (SIGKILL) and ``timed_out=True``;
* ``setrlimit`` in the child: CPU seconds, address space (``memory_bytes``), file size,
  number of processes (only with uid separation: the limit counts per uid), no core
  files;
* outputs truncated to ``output_limit`` characters each (the rest is drained and
  dropped; ``truncated=True``);
* environment reset: ``PATH=/usr/local/bin:/usr/bin:/bin``, ``HOME`` and ``TMPDIR`` in
  the work folder, ``LC_ALL=C`` (the locale the shipped tasks were recorded in).

Isolation, probed at start-up (:func:`detect_capabilities`; ``isolation="auto"`` takes
the strongest mode that works, ``"none"`` forces the weakest):

* ``mode="root"`` (running as root, as on the lab machines): each command gets a new
  network namespace (only a downed loopback: no network), a new mount namespace with
  fresh empty tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (no shared scratch
  space between workers), empty read-only tmpfs over ``hidden_paths`` (by default the
  shipped task suite and the source checkout, so hidden tests, reference solutions,
  recorded runs and caches are unreadable), and
  drops to a per-worker uid (from a block of 64 unused uids that is distinct per
  sandbox, see :func:`allocate_uid_block`) that owns only its own 0700 work folder. Writes elsewhere (other workers' folders, the repo, /root)
  fail with EACCES. At slot close every process of that uid is killed, also those that
  left the process group.
* ``mode="userns"`` (unprivileged, where user namespaces are allowed): network and
  mount namespaces as above, but no uid separation (same uid for every worker).
* ``mode="none"``: rlimits, cwd and environment only. ``capabilities`` says so and the
  isolation tests skip with the reason.

Slot gating: :meth:`LocalSandbox.run` raises :class:`SlotNotActiveError` when the worker
has no open slot or its window (``duration_s`` wall seconds from ``open_slot``) has
passed. Addition to the ABC: ``slot_remaining(worker) -> float | None``.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .base import ExecResult, ResourceLimits, Sandbox, SandboxError, SlotNotActiveError

__all__ = [
    "Capabilities",
    "Isolation",
    "LocalSandbox",
    "default_hidden_paths",
    "detect_capabilities",
    "run_limited",
    "DEFAULT_PATH",
    "MASKED_SCRATCH",
]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
UID_BLOCK = 64  # uids per sandbox (max workers per sandbox)
MASKED_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
WORKER_UID_BASE = 60001  # first worker uid inside a docker container
_WORKER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


@dataclass(frozen=True)
class Capabilities:
    """What isolation this machine allows (probed once).

    network_isolated: commands run in an empty network namespace.
    private_mounts: fresh /tmp etc. and hidden paths per command.
    uid_separation: each worker runs as its own unprivileged uid.
    mode: ``"root"``, ``"userns"`` or ``"none"``; ``reason`` explains a weaker mode.
    """

    network_isolated: bool
    private_mounts: bool
    uid_separation: bool
    mode: str
    reason: str = ""


@dataclass(frozen=True)
class Isolation:
    """How one command is isolated (see module docstring).

    mode: ``"root"``, ``"userns"`` or ``"none"``.
    uid: uid (and gid) to drop to, root mode only; ``None`` keeps the caller's.
    keep_dirs: directories that must stay visible although they lie under a masked
        scratch dir (the work folder); re-bound after masking.
    hidden_paths: directories replaced by an empty read-only tmpfs (skipped when a
        keep_dir lies inside one).
    file_masks: ``(target, replacement)`` pairs: ``replacement`` is bind-mounted over
        the file ``target`` (used by grading to put a tripwire over the original).
    """

    mode: str = "none"
    uid: int | None = None
    keep_dirs: tuple[str, ...] = ()
    hidden_paths: tuple[str, ...] = ()
    file_masks: tuple[tuple[str, str], ...] = ()


_uid_counter = itertools.count()
_uid_lock = threading.Lock()


def allocate_uid_block() -> int:
    """First uid of a fresh block of ``UID_BLOCK`` unprivileged uids, distinct for every
    sandbox (and grading) in this process and, via the pid, across live processes:
    ``1_000_000 + (pid mod 2**19) * 4096 + (n mod 64) * 64``. Separate blocks keep
    parallel runs from reading each other's folders or killing each other's processes."""
    with _uid_lock:
        n = next(_uid_counter) % 64
    return 1_000_000 + (os.getpid() % (1 << 19)) * 4096 + n * UID_BLOCK


# ---------------------------------------------------------------- child setup
_libc = ctypes.CDLL(None, use_errno=True)


def _chk(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None) -> None:
    _chk(
        _libc.mount(
            src.encode() if src else None,
            dst.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {dst}",
    )


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _enter_namespaces(iso: Isolation, net: bool) -> None:
    """In the forked child: new namespaces, masks, then uid drop. Raises OSError."""
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNS | (_CLONE_NEWNET if net else 0)
    if iso.mode == "userns":
        flags |= _CLONE_NEWUSER
    _chk(_libc.unshare(flags), "unshare")
    if iso.mode == "userns":
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
    # keep_dirs under a scratch dir: hold them by fd (opened in this namespace) so they
    # can be re-bound after the scratch dir is covered by a fresh tmpfs.
    held = []
    for d in iso.keep_dirs:
        if any(_under(d, s) for s in MASKED_SCRATCH):
            held.append((d, os.open(d, os.O_PATH | os.O_DIRECTORY)))
    for s in MASKED_SCRATCH:
        if os.path.isdir(s):
            _mount("tmpfs", s, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=64m")
    for d, fd in held:
        os.makedirs(d, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", d, None, _MS_BIND, None)
        os.close(fd)
    for h in iso.hidden_paths:
        if os.path.isdir(h) and not any(_under(d, h) for d in iso.keep_dirs):
            _mount("tmpfs", h, "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV, "mode=755,size=4k")
    for target, repl in iso.file_masks:
        if os.path.exists(target):
            _mount(repl, target, None, _MS_BIND, None)


def _make_preexec(limits: ResourceLimits, iso: Isolation, cwd: str):
    import resource

    def preexec() -> None:
        os.setsid()
        if iso.mode in ("root", "userns"):
            _enter_namespaces(iso, net=not limits.network)
            os.chdir(cwd)  # re-resolve cwd inside the new mount namespace
        cpu = max(1, int(limits.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if iso.mode == "root" and iso.uid is not None:
            # RLIMIT_NPROC counts per real uid: meaningful only for a dedicated uid.
            n = limits.max_processes
            resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
            os.setgroups([])
            os.setgid(iso.uid)
            os.setuid(iso.uid)

    return preexec


# ---------------------------------------------------------------- running
def _drain(stream, limit: int, out: list, flag: list) -> None:
    """Read ``stream`` to EOF, keeping the first ``limit`` bytes (sets flag[0] if cut).

    Reads whatever is available (``read1``), so output already written is kept even
    when a process that escaped the group holds the pipe open past the wall limit."""
    kept = 0
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = read(65536)
            if not chunk:
                break
            if kept < limit:
                take = chunk[: limit - kept]
                out.append(take)
                kept += len(take)
                if len(take) < len(chunk):
                    flag[0] = True
            else:
                flag[0] = True
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _feed(stream, data: bytes) -> None:
    try:
        if data:
            stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except (BrokenPipeError, OSError):
            pass


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def base_env(workdir: str | Path, extra: dict | None = None) -> dict[str, str]:
    """The reset environment commands run with (see module docstring)."""
    wd = str(workdir)
    env = {
        "PATH": DEFAULT_PATH,
        "HOME": wd,
        "TMPDIR": os.path.join(wd, ".tmp"),
        "LC_ALL": "C",
        "LANG": "C",
        "TERM": "dumb",
    }
    if extra:
        env.update(extra)
    return env


def run_limited(
    command: str | list[str],
    cwd: str | Path,
    limits: ResourceLimits,
    *,
    env: dict[str, str] | None = None,
    stdin: str | bytes = "",
    output_limit: int = 20_000,
    isolation: Isolation | None = None,
    on_spawn=None,
) -> ExecResult:
    """Run one command (shell string via ``/bin/sh -c``, or argv list) with limits.

    Args:
        command: shell command text or argv list.
        cwd: working folder (must exist).
        limits: wall/CPU seconds, memory/file-size bytes, process count, network.
        env: full environment (default :func:`base_env` of ``cwd``).
        stdin: data written to the command's stdin (then closed).
        output_limit: max characters kept of stdout and of stderr each.
        isolation: see :class:`Isolation` (default: none).
        on_spawn: optional callback ``f(popen)`` (the sandbox uses it to track/kill).

    Returns an :class:`ExecResult`; ``exit_code`` is ``None`` when killed at timeout,
    negative ``-N`` when killed by signal N (e.g. CPU limit: SIGXCPU / SIGKILL).
    Raises SandboxError if the child could not be set up (e.g. namespaces refused).
    """
    iso = isolation or Isolation()
    cwd = str(cwd)
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    # Model-written commands may hold what exec cannot pass: a lone surrogate becomes
    # '?', a NUL byte fails the command like a shell syntax error (exit 2).
    argv = [a.encode("utf-8", "replace").decode("utf-8") for a in argv]
    if any("\x00" in a for a in argv):
        return ExecResult(
            command=command if isinstance(command, str) else " ".join(command),
            exit_code=2, stdout="", stderr="command contains a NUL byte; not run\n", duration_s=0.0,
            notes={"isolation": iso.mode},
        )
    data = stdin.encode() if isinstance(stdin, str) else stdin
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env if env is not None else base_env(cwd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_make_preexec(limits, iso, cwd),
            close_fds=True,
        )
    except subprocess.SubprocessError as e:
        raise SandboxError(f"could not start command in {cwd} (isolation {iso.mode}): {e}") from e
    except OSError as e:
        if e.filename is not None and str(e.filename) == cwd:
            raise SandboxError(f"could not start command in {cwd}: {e}") from e
        # The program itself cannot be executed (not a binary/script, no x bit, missing):
        # that is the command's failure, reported as a shell would (126, or 127 if absent).
        return ExecResult(
            command=command if isinstance(command, str) else " ".join(command),
            exit_code=127 if isinstance(e, FileNotFoundError) else 126,
            stdout="",
            stderr=f"{argv[0]}: cannot execute: {e.strerror}\n",
            duration_s=time.perf_counter() - t0,
            notes={"isolation": iso.mode},
        )
    if on_spawn is not None:
        on_spawn(proc)
    outs: list[bytes] = []
    errs: list[bytes] = []
    tflag, eflag = [False], [False]
    threads = [
        threading.Thread(target=_drain, args=(proc.stdout, output_limit, outs, tflag), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, output_limit, errs, eflag), daemon=True),
        threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True),
    ]
    for th in threads:
        th.start()
    # Wait on the output readers (they end when the pipes close), not on Popen.wait's
    # polling loop: this keeps the per-command overhead low.
    timed_out = False
    deadline = time.monotonic() + max(0.001, limits.wall_seconds)
    for th in threads[:2]:
        th.join(timeout=max(0.0, deadline - time.monotonic()))
    try:
        proc.wait(timeout=max(0.001, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        _killpg(proc.pid)
        proc.wait()
    # Processes left in the group (e.g. background jobs) would keep pipes open.
    _killpg(proc.pid)
    grace = time.monotonic() + 2.0  # readers still blocked: a process outside the group holds a pipe
    for th in threads:
        th.join(timeout=max(0.0, grace - time.monotonic()))
    dur = time.perf_counter() - t0
    stdout = b"".join(outs).decode("utf-8", errors="replace")
    stderr = b"".join(errs).decode("utf-8", errors="replace")
    return ExecResult(
        command=command if isinstance(command, str) else " ".join(command),
        exit_code=None if timed_out else proc.returncode,
        stdout=stdout[:output_limit],
        stderr=stderr[:output_limit],
        duration_s=dur,
        timed_out=timed_out,
        truncated=tflag[0] or eflag[0],
        notes={"isolation": iso.mode},
    )


# ---------------------------------------------------------------- capabilities
@functools.cache
def detect_capabilities() -> Capabilities:
    """Probe once which isolation mode works here (runs ``/bin/true`` under each)."""
    lim = ResourceLimits(wall_seconds=10, cpu_seconds=5)
    probe_dir = tempfile.mkdtemp(prefix="scarce-probe-")
    try:
        os.chmod(probe_dir, 0o755)
        reasons = []
        candidates = ["root"] if os.geteuid() == 0 else []
        candidates.append("userns")
        for mode in candidates:
            iso = Isolation(mode=mode, uid=allocate_uid_block() if mode == "root" else None,
                            keep_dirs=(probe_dir,))
            try:
                r = run_limited(["/bin/sh", "-c", "test -d /proc/self"], probe_dir, lim,
                                isolation=iso)
            except SandboxError as e:
                reasons.append(f"{mode}: {e}")
                continue
            if r.exit_code == 0:
                return Capabilities(True, True, mode == "root", mode,
                                    "; ".join(reasons))
            reasons.append(f"{mode}: probe exit {r.exit_code}: {r.stderr.strip()[:200]}")
        return Capabilities(False, False, False, "none",
                            "; ".join(reasons) or "namespaces unavailable")
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)


def default_hidden_paths() -> tuple[str, ...]:
    """Folders hidden from sandboxed commands by default: the shipped task suite
    (hidden tests, reference solutions) and, in a source checkout, the whole
    repository (run outputs with other workers' private budgets, LLM caches)."""
    pkg = Path(__file__).resolve().parents[1]
    out = []
    suite = pkg / "tasks" / "suite"
    if suite.is_dir():
        out.append(str(suite))
    if (pkg.parent / "pyproject.toml").is_file():
        out.append(str(pkg.parent))
    return tuple(out)


# ---------------------------------------------------------------- the sandbox
@dataclass
class _Slot:
    deadline: float  # time.monotonic() value
    procs: list = field(default_factory=list)


class LocalSandbox(Sandbox):
    """Subprocess sandbox with per-worker folders (see module docstring).

    Args:
        root: parent folder of the worker folders; default a fresh temp dir that
            :meth:`close` removes. A given root is kept on close.
        limits: default per-command :class:`ResourceLimits`.
        output_limit: characters kept of stdout and stderr each.
        hidden_paths: directories made unreadable (empty) inside commands; default
            :func:`default_hidden_paths` (task suite + source checkout). Runners should
            add their output folder (``(*default_hidden_paths(), out_dir)``) so workers
            cannot read the recorded trajectories. Only where ``private_mounts``; a
            hidden path that contains the worker folder is skipped.
        isolation: ``"auto"`` (strongest available) or ``"none"``.

    Thread-safe: ``close_slot`` from another thread kills a running command.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        limits: ResourceLimits | None = None,
        output_limit: int = 20_000,
        hidden_paths: tuple[str | Path, ...] | None = None,
        isolation: str = "auto",
    ) -> None:
        if isolation not in ("auto", "none"):
            raise ValueError(f"isolation must be 'auto' or 'none', got {isolation!r}")
        if output_limit <= 0:
            raise ValueError(f"output_limit must be > 0, got {output_limit!r}")
        self.capabilities = (
            detect_capabilities()
            if isolation == "auto"
            else Capabilities(False, False, False, "none", "isolation='none' requested")
        )
        self._owns_root = root is None
        self.root = Path(root if root is not None else tempfile.mkdtemp(prefix="scarce-sbx-"))
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.limits = limits or ResourceLimits()
        self.output_limit = output_limit
        hp = default_hidden_paths() if hidden_paths is None else hidden_paths
        self.hidden_paths = tuple(str(Path(p).resolve()) for p in hp)
        self._uid_base = allocate_uid_block()
        self._uids: dict[str, int] = {}
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def network_isolated(self) -> bool:
        """True when commands have no network (empty network namespace)."""
        return self.capabilities.network_isolated

    # -- folders
    def uid_of(self, worker: str) -> int | None:
        """The uid ``worker``'s commands run as (root mode), else ``None``."""
        return self._uids.get(worker) if self.capabilities.uid_separation else None

    def workdir(self, worker: str) -> Path:
        if not _WORKER_RE.match(worker or ""):
            raise ValueError(f"worker must match {_WORKER_RE.pattern}, got {worker!r}")
        d = self.root / worker
        with self._lock:
            if worker not in self._uids:
                if len(self._uids) >= UID_BLOCK:
                    raise SandboxError(f"at most {UID_BLOCK} workers per sandbox (worker {worker!r})")
                self._uids[worker] = self._uid_base + len(self._uids)
        if not d.exists():
            d.mkdir(parents=True)
            (d / ".tmp").mkdir()
        if self.capabilities.uid_separation:
            os.chmod(d, 0o700)
            self.chown_tree(worker)
        return d

    def chown_tree(self, worker: str) -> None:
        """Give ``worker``'s uid ownership of everything in its folder (call after the
        host wrote files there, e.g. :func:`scarce_lab.tasks.prepare_workspace`)."""
        uid = self._uids.get(worker)
        if uid is None or not self.capabilities.uid_separation:
            return
        d = self.root / worker
        for p in [d, *d.rglob("*")]:
            try:
                os.lchown(p, uid, uid)
            except FileNotFoundError:
                pass

    # -- slots
    def open_slot(self, worker: str, duration_s: float) -> None:
        if duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s!r}")
        if self._closed:
            raise SandboxError("sandbox is closed")
        self.workdir(worker)
        with self._lock:
            self._slots[worker] = _Slot(deadline=time.monotonic() + float(duration_s))

    def slot_remaining(self, worker: str) -> float | None:
        """Seconds left in ``worker``'s window, or ``None`` without an open slot."""
        s = self._slots.get(worker)
        return None if s is None else max(0.0, s.deadline - time.monotonic())

    def close_slot(self, worker: str) -> None:
        with self._lock:
            slot = self._slots.pop(worker, None)
        if slot is not None:
            for p in slot.procs:
                _killpg(p.pid)
        uid = self.uid_of(worker)
        if uid is not None:
            _kill_uid(uid)

    def run(self, worker: str, command: str, limits: ResourceLimits | None = None) -> ExecResult:
        slot = self._slots.get(worker)
        if slot is None:
            raise SlotNotActiveError(f"worker {worker!r} has no active execution slot")
        remaining = slot.deadline - time.monotonic()
        if remaining <= 0:
            raise SlotNotActiveError(f"worker {worker!r}: its execution slot has expired")
        lim = limits or self.limits
        wall = min(lim.wall_seconds, remaining)
        lim = ResourceLimits(
            wall_seconds=wall,
            cpu_seconds=lim.cpu_seconds,
            memory_bytes=lim.memory_bytes,
            file_size_bytes=lim.file_size_bytes,
            max_processes=lim.max_processes,
            network=lim.network,
        )
        wd = self.workdir(worker)
        iso = Isolation(
            mode=self.capabilities.mode,
            uid=self.uid_of(worker),
            keep_dirs=(str(wd.resolve()),),
            hidden_paths=self.hidden_paths,
        )

        def track(p):
            with self._lock:
                s = self._slots.get(worker)
                if s is None:  # slot closed while starting
                    _killpg(p.pid)
                else:
                    s.procs.append(p)

        res = run_limited(command, wd, lim, env=base_env(wd), output_limit=self.output_limit,
                          isolation=iso, on_spawn=track)
        res.notes["slot_remaining_s"] = round(max(0.0, slot.deadline - time.monotonic()), 3)
        with self._lock:
            s = self._slots.get(worker)
            if s is not None:
                s.procs = [p for p in s.procs if p.poll() is None]
        return res

    def close(self) -> None:
        for w in list(self._slots):
            self.close_slot(w)
        if self.capabilities.uid_separation:
            for uid in self._uids.values():
                _kill_uid(uid)
        self._closed = True
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_uid(uid: int) -> int:
    """SIGKILL every process whose real uid is ``uid`` (root mode). Returns the count."""
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            os.kill(int(entry), signal.SIGKILL)
                            n += 1
                        break
        except (OSError, ValueError):
            continue
    return n
