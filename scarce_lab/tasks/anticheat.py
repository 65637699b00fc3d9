"""Anti-cheat for SCARCE grading: a submission must not wrap, copy or call the original
program (the shipped tasks come from programs installed on the machine).

By construction first, checks second:

* **Execute-only original.** In a worker's sandbox the original is a root-owned copy
  with mode 0711 (in its folder and over the program's system paths): the worker can
  run it, not read it (no ``cat``, no ``ld.so``, no ``/proc/<pid>/exe`` of the
  non-dumpable process) and not trace it (the seccomp filter of both backends refuses
  ``ptrace`` and ``process_vm_*``: non-dumpable alone still lets a tracer attached
  before the exec rewrite registers and make the process dump itself). Copies,
  encoded or not, cannot be made from inside.
* **Original absent during grading.** Build and tests run in the same kind of sandbox
  as the workers, in a fresh folder, as a fresh uid, and every path of the original
  holds the :class:`Tripwire` instead: executing it by name, by path, through a copy
  made at build time or from a shell, Python or C program reports to a socket the
  grader listens on, and the submission scores 0 with a violation naming the call.
  Only what is *executed* counts: the program's name or path in string literals,
  comments or expected error text, a function of the same name, and files the build
  never uses are not judged.
* **Byte checks that are sure** (:func:`contains_original`): a file that is the
  original byte for byte, or holds at least 5 of 8 sampled 48-byte windows of it
  (a copy with bytes appended or patched), in the submitted files or among the files
  the build produced, is a violation. An honest program shares no such windows.

* **Files the tests open or run** (:class:`ExecGuard`): while the hidden tests run,
  every file opened or executed on the box's writable file systems is checked the
  same way before the kernel lets it proceed; a copy is refused and is a violation.

Residual gaps (stated, not hidden; docs/threat_model.md): code a submission maps
from a file opened before the original's bytes were written into it, or loads into
anonymous memory itself, is not seen by the grader; it cannot arise from a sandbox
where the original is execute-only and untraceable. In the unisolated mode
(``isolation="none"``) the tripwire is only a ``PATH`` shim (calls by name), as
``GradeResult.isolation`` says.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

from .model import Task

__all__ = ["BIN_DIRS", "TRIPWIRE_SOCKET", "ExecGuard", "Tripwire", "check_submission", "contains_original",
           "original_paths", "candidate_paths"]

BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
TRIPWIRE_SOCKET = "/run/scarce/tripwire.sock"
WINDOWS, WINDOW_BYTES, WINDOWS_NEEDED = 8, 48, 5
SHIM_TOOLS = (
    "sh", "bash", "dash", "cc", "gcc", "g++", "c++", "cpp", "as", "ld", "make", "python3",
    "perl", "cat", "cp", "mv", "rm", "mkdir", "chmod", "ls", "echo", "printf", "test", "[",
    "true", "false", "sed", "grep", "awk", "env", "head", "tail", "sort", "uniq", "touch",
    "dirname", "basename", "ln", "install", "strip", "java", "javac", "base64",
)


def candidate_paths(task: Task) -> list[str]:
    """Every path under which the task's original may be reachable: ``program_path``
    and the program's name in each of :data:`BIN_DIRS` (existing or not)."""
    out = [f"{d}/{task.program}" for d in BIN_DIRS]
    if task.program_path:
        out.append(task.program_path)
    return list(dict.fromkeys(out))


def original_paths(task: Task) -> list[str]:
    """Existing host paths of the original program (deduplicated by real path)."""
    cands = []
    if task.program_path:
        cands += [task.program_path, os.path.realpath(task.program_path)]
    cands += [f"{d}/{task.program}" for d in BIN_DIRS]
    seen, out = set(), []
    for c in cands:
        if os.path.isfile(c):
            rp = os.path.realpath(c)
            if rp not in seen:
                seen.add(rp)
                out.append(rp)
    return out


@functools.lru_cache(maxsize=32)
def _original_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _windows(orig: bytes, n: int = WINDOWS, size: int = WINDOW_BYTES) -> list[bytes]:
    """``n`` deterministic, non-trivial byte windows sampled across ``orig``."""
    out = []
    for k in range(n):
        off = len(orig) * (k + 1) // (n + 2)
        for shift in range(0, 4096, 64):  # skip padding / low-entropy regions
            w = orig[off + shift: off + shift + size]
            if len(w) == size and len(set(w)) > 16:
                out.append(w)
                break
    return out


def contains_original(data: bytes, task: Task) -> str | None:
    """Violation text if ``data`` is the original or embeds it (>= 5 of 8 sampled
    48-byte windows), else None."""
    for p in original_paths(task):
        orig = _original_bytes(p)
        if data == orig:
            return f"byte-identical copy of the original {p}"
        wins = _windows(orig)
        hits = sum(w in data for w in wins)
        if wins and hits >= min(WINDOWS_NEEDED, len(wins)):
            return f"embeds the original {p} ({hits}/{len(wins)} sampled windows)"
    return None


def check_submission(task: Task, files: dict[str, bytes]) -> str | None:
    """The static check that is sure: a submitted file that is or embeds the original.

    Returns a violation text naming the file, or ``None``. Calls of the original are
    judged where they happen (the :class:`Tripwire`), never from the text of a file.
    """
    for name, data in sorted(files.items()):
        hit = contains_original(data, task)
        if hit:
            return f"{name}: {hit}"
    return None


_TRIPWIRE = """#!/usr/bin/python3 -I
import os, socket, sys
msg = b"\\0".join(os.fsencode(a) for a in sys.argv)[:4096]
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect({sock!r})
    s.sendall(msg)
    s.close()
except OSError:
    with open({log!r}, "ab") as f:
        f.write(msg + b"\\n")
sys.stderr.write("scarce-lab: the original program is not available during grading\\n")
sys.exit(126)
"""


class Tripwire:
    """Grading-time guard for one task (see module docstring).

    Host folder (root-owned 0755): ``tripwire`` (0755 script bound over every path
    of the original), ``tripwire.sock`` (a listening unix socket bound at
    :data:`TRIPWIRE_SOCKET` in the box; each connection is one attempt, kept by the
    grader's thread, so the submission cannot erase it) and, for the unisolated
    mode, ``shim/`` (a ``PATH`` of allowed tools with the tripwire under the program's
    name). Use as a context manager.
    """

    def __init__(self, task: Task, *, shim: bool = False):
        self.task = task
        self.folder = Path(tempfile.mkdtemp(prefix="scarce-trip-"))
        os.chmod(self.folder, 0o755)
        self.sock_path = self.folder / "tripwire.sock"
        self.log = self.folder / "fallback.log"
        self._hits: list[str] = []
        self._lock = threading.Lock()
        self.script = self.folder / "tripwire"
        target = str(self.sock_path) if shim else TRIPWIRE_SOCKET
        self.script.write_text(_TRIPWIRE.format(sock=target, log=str(self.log) if shim else "/dev/null"))
        os.chmod(self.script, 0o755)
        self._srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._srv.bind(str(self.sock_path))
        os.chmod(self.sock_path, 0o777)
        self._srv.listen(64)
        self._stop = False
        self._token = os.urandom(16).hex().encode()
        self._synced = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self.shim_dir: Path | None = None
        if shim:
            self.shim_dir = self.folder / "shim"
            self.shim_dir.mkdir()
            for tool in SHIM_TOOLS:
                src = shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin")
                if src and tool != task.program:
                    (self.shim_dir / tool).symlink_to(src)
            (self.shim_dir / task.program).symlink_to(self.script)

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._srv.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                chunks = []
                with contextlib.suppress(OSError):
                    while len(chunks) < 8:
                        b = conn.recv(512)
                        if not b:
                            break
                        chunks.append(b)
                msg = b"".join(chunks)
                if msg == self._token:
                    self._synced.set()
                    continue
                with self._lock:
                    self._hits.append(self._describe(msg))

    def _describe(self, msg: bytes) -> str:
        """A record of one call of the original that carries no worker-chosen bytes:
        the name it was called by only when that is the program's own name or path,
        the number of arguments and a hash of the argv (the arguments may hold hidden
        test input that the submission passed on; the record goes into shared datasets)."""
        import hashlib

        parts = msg.split(b"\0")
        argv0 = parts[0].decode("utf-8", "replace")
        known = {self.task.program, f"./{self.task.program}", *candidate_paths(self.task)}
        name = argv0 if argv0 in known else "another name"
        digest = hashlib.sha256(msg).hexdigest()[:16]
        return f"{name} with {len(parts) - 1} argument(s) (argv sha256 {digest})"

    def _sync(self) -> None:
        """Wait until every connection made so far has been read (a token of ours
        goes through the same queue last)."""
        self._synced.clear()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(str(self.sock_path))
            c.sendall(self._token)
        if not self._synced.wait(timeout=10.0):
            with self._lock:
                self._hits.append("(the tripwire channel did not drain in 10 s: flooded by the submission)")

    def masks(self, paths: list[str]) -> dict[str, str]:
        """Sandbox path -> tripwire, for each path of the original."""
        return {p: str(self.script) for p in paths}

    def binds(self) -> dict[str, str]:
        """Sandbox path -> host path of the socket."""
        return {TRIPWIRE_SOCKET: str(self.sock_path)}

    def attempts(self) -> str:
        """The first recorded calls of the original ('' if it was never reached)."""
        self._sync()
        with self._lock:
            hits = list(self._hits)
        with contextlib.suppress(OSError):
            hits += [self._describe(x) for x in self.log.read_bytes().split(b"\n") if x]
        text = "; ".join(hits[:3])
        return text + (f" (+{len(hits) - 3} more)" if len(hits) > 3 else "")

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self._srv.shutdown(socket.SHUT_RDWR)
        self._srv.close()
        self._thread.join(timeout=2)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Tripwire:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ExecGuard:
    """Defence in depth while the hidden tests run: every file opened for execution,
    or opened at all, on the grading box's writable file systems is checked against
    the original (:func:`contains_original`) *before* the kernel lets it proceed.

    How: fanotify (``FAN_CLASS_CONTENT``) with ``FAN_OPEN_EXEC_PERM | FAN_OPEN_PERM``
    marks on each file system of ``GradingBox.writable_filesystems()`` (the box's
    folder and the tmpfs behind its ``/tmp``, ``/var/tmp``, ``/dev/shm`` and
    ``/run/lock`` (local) or the container's own tmpfs (docker); ``memfd_create`` is
    refused in grading boxes, so an anonymous file cannot be executed either). A thread answers each permission
    event: a regular file that is or embeds the original is refused (the program
    gets EPERM) and recorded; a file over :data:`MAX_BYTES` is refused unread (it
    cannot be checked within the harness's budget) and recorded; everything else is
    allowed. Verdicts are cached by (inode, size, mtime, ctime). Records name no
    worker-chosen bytes (a sha256 prefix of the file).

    What it does not see (docs/threat_model.md): code the submission maps from a file
    it opened *before* writing the original's bytes into it, and code it loads into
    anonymous memory itself. Copies cannot be made in a sandbox in the first place
    (execute-only, untraceable original); this is the second line.

    Needs root and fanotify; otherwise :attr:`problem` says why and nothing is watched.
    """

    MAX_BYTES = 64 << 20
    _FAN_CLOEXEC, _FAN_NONBLOCK, _FAN_CLASS_CONTENT = 0x01, 0x02, 0x04
    _FAN_MARK_ADD, _FAN_MARK_FILESYSTEM = 0x01, 0x100
    _FAN_OPEN_PERM, _FAN_OPEN_EXEC_PERM = 0x00010000, 0x00040000
    _FAN_ALLOW, _FAN_DENY = 0x01, 0x02

    def __init__(self, task: Task, filesystems: list[str | Path]):
        import ctypes

        self.task = task
        self.problem = ""
        self._hits: list[str] = []
        self._cache: dict[tuple, str | None] = {}
        self._stop = threading.Event()
        self._fd = -1
        self._thread: threading.Thread | None = None
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        fd = libc.fanotify_init(self._FAN_CLASS_CONTENT | self._FAN_CLOEXEC | self._FAN_NONBLOCK,
                                os.O_RDONLY | os.O_LARGEFILE | os.O_CLOEXEC)
        if fd < 0:
            self.problem = f"fanotify unavailable: {os.strerror(ctypes.get_errno())}"
            return
        for path in filesystems:
            r = libc.fanotify_mark(fd, self._FAN_MARK_ADD | self._FAN_MARK_FILESYSTEM,
                                   self._FAN_OPEN_PERM | self._FAN_OPEN_EXEC_PERM, -100, os.fsencode(str(path)))
            if r != 0:
                self.problem = f"fanotify mark on {path} failed: {os.strerror(ctypes.get_errno())}"
                os.close(fd)
                return
        self._fd = fd
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _judge(self, efd: int) -> str | None:
        """Why the file behind ``efd`` may not be opened (None: allowed)."""
        import hashlib
        import stat as st_

        st = os.fstat(efd)
        if not st_.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key in self._cache:
            return self._cache[key]
        if st.st_size > self.MAX_BYTES:
            why = f"a file of {st.st_size} bytes (over {self.MAX_BYTES}) was opened while the tests ran"
        else:
            chunks, got = [], 0
            while got < st.st_size:
                b = os.pread(efd, min(1 << 20, st.st_size - got), got)
                if not b:
                    break
                chunks.append(b)
                got += len(b)
            data = b"".join(chunks)
            hit = contains_original(data, self.task)
            why = (f"a file opened while the tests ran {hit.split(' (')[0].replace('byte-identical copy', 'is a copy')}"
                   f" (sha256 {hashlib.sha256(data).hexdigest()[:16]})") if hit else None
        self._cache[key] = why
        return why

    def _serve(self) -> None:
        import select
        import struct

        meta = struct.Struct("=IBBHQii")
        while not self._stop.is_set():
            r, _, _ = select.select([self._fd], [], [], 0.2)
            if not r:
                continue
            try:
                buf = os.read(self._fd, 64 * meta.size)
            except BlockingIOError:
                continue
            except OSError:
                return
            i = 0
            while i + meta.size <= len(buf):
                ln, _ver, _r, _ml, _mask, efd, _pid = meta.unpack_from(buf, i)
                i += max(ln, meta.size)
                if efd < 0:
                    continue
                verdict = self._FAN_DENY
                try:
                    why = self._judge(efd)
                    if why is None:
                        verdict = self._FAN_ALLOW
                    else:
                        with contextlib.suppress(Exception):
                            if len(self._hits) < 100 and why not in self._hits:
                                self._hits.append(why)
                except Exception as exc:  # noqa: BLE001 - fail closed, and say so
                    self._hits.append(f"a file opened while the tests ran could not be checked ({type(exc).__name__})")
                finally:
                    with contextlib.suppress(OSError):
                        os.write(self._fd, struct.pack("=iI", efd, verdict))
                    os.close(efd)

    def hits(self) -> str:
        """The first refused files ('' when none)."""
        return "; ".join(self._hits[:3]) + (f" (+{len(self._hits) - 3} more)" if len(self._hits) > 3 else "")

    def close(self) -> None:
        """Stop watching (pending events are allowed by the kernel when the fd closes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ExecGuard:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
