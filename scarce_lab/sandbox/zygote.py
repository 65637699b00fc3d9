"""A worker's box: one bubblewrap sandbox per slot whose first process (the *zygote*)
forks each command, instead of new namespaces, a cgroup join and rlimits per command.

A :class:`Box` (started when a slot opens, :meth:`.local.LocalSandbox.open_slot`, and
at a grading box's first command) is ``bwrap`` with the worker's root, namespaces and
seccomp filter (:mod:`.bwrap`, :mod:`.seccomp`), joined to the worker's cgroup before it
executes, running :data:`ZYGOTE` (``python3 -I -S`` from ``/usr``) as pid 1 of the box.
The zygote stays root with ``CAP_SETUID``/``CAP_SETGID`` only: it clears its
inheritable, ambient and bounding sets at start and checks them, ``NoNewPrivs`` and the
seccomp mode in ``/proc/self/status`` (it refuses to run otherwise). Per command the
harness sends argv, folder, environment and rlimits with the command's three pipes
(``SCM_RIGHTS``) over a socket only it holds; the zygote forks, and the child starts
its own session, closes every other descriptor, sets the rlimits, takes the worker's
uid and gid with no groups (the kernel then clears every capability: the credentials
``setpriv`` gave before) and executes the command. The zygote reaps every process of
the box and reports the command's exit status (``128 + N`` for signal N).

Why a long-lived root process in the box keeps every guarantee (the worker cannot
signal, trace or feed it; a dead zygote runs nothing; per-command teardown spares only
the box's two root processes; what lasts for a slot): docs/threat_model.md, "The
worker's box"; tests/security/test_worker_box.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import socket
import struct
import subprocess
import time

from .base import ResourceLimits, SandboxError
from .cgroups import Cgroup

__all__ = ["ZYGOTE", "Box", "BoxGone", "ForkRefused", "python_for_box", "rlimits"]

ZYGOTE = r'''
import ctypes, json, os, resource, select, signal, socket, struct, sys
s = socket.socket(fileno=int(sys.argv[1]))
os.set_inheritable(s.fileno(), False)
UID = int(sys.argv[2])
# keep CAP_SETGID and CAP_SETUID only (effective, permitted); nothing inheritable, ambient
# or in the bounding set: a command then has none at all once its uids are the worker's
libc = ctypes.CDLL(None, use_errno=True)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last capability)
libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
keep = (1 << 6) | (1 << 7)
libc.capset(struct.pack("=Ii", 0x20080522, 0), struct.pack("=6I", keep, keep, 0, 0, 0, 0))
want = {"CapInh": 0, "CapPrm": keep, "CapEff": keep, "CapBnd": 0, "CapAmb": 0, "NoNewPrivs": 1, "Seccomp": 2}
got = dict(l.split(":\t") for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
bad = {k: got.get(k) for k, v in want.items() if int(got.get(k, "-1").strip(), 16 if k.startswith("Cap") else 10) != v}
if bad:
    sys.stderr.write("zygote: credentials not as required: %r\n" % bad)
    sys.exit(3)
r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
signal.signal(signal.SIGCHLD, lambda *a: None)
cur = {}
def reap():
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in cur:
            c = os.waitstatus_to_exitcode(st)
            s.sendall(b"X %d %d\n" % (cur.pop(pid), 128 - c if c < 0 else c))
def exact(n, got=b""):
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b:
            os._exit(0)
        got += b
    return got
s.sendall(b"R\n")
while True:
    ready = select.select([s, r], [], [])[0]
    if r in ready:
        os.read(r, 4096)
        reap()
    if s not in ready:
        continue
    head, fds, _, _ = socket.recv_fds(s, 8, 3, socket.MSG_CMSG_CLOEXEC)
    if not head:
        os._exit(0)
    seq, n = struct.unpack("=II", exact(8, head))
    m = json.loads(exact(n))
    try:
        pid = os.fork()
    except OSError as e:
        s.sendall(b"E %d %s\n" % (seq, str(e).encode()))
        pid = None
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            for i, f in enumerate(fds):
                os.dup2(f, i)
            os.closerange(3, 1 << 30)  # nothing of the zygote's reaches the command (close_range)
            for k, lim in m["rl"]:
                resource.setrlimit(k, tuple(lim))
            os.setgroups([])
            os.setresgid(UID, UID, UID)
            os.setresuid(UID, UID, UID)  # all uids nonzero: the kernel clears every capability
            os.chdir(m["cwd"])
            os.execvpe(m["argv"][0], m["argv"], m["env"])
        except OSError as e:  # the shell's codes: 127 not found, 126 not executable
            os.write(2, b"%s: cannot execute: %s\n" % (m["argv"][0].encode(), e.strerror.encode()))
            os._exit(127 if isinstance(e, FileNotFoundError) else 126)
        except BaseException as e:
            os.write(2, b"sandbox: the command could not start: %s\n" % str(e).encode())
        os._exit(126)
    for f in fds:
        os.close(f)
    if pid:
        cur[pid] = seq
        s.sendall(b"S %d\n" % seq)
'''


class BoxGone(SandboxError):
    """The box ended (its zygote or bubblewrap is gone), or its zygote stopped answering."""


class ForkRefused(SandboxError):
    """The zygote could not fork the command (e.g. the worker's memory total is full):
    the command's failure, not the sandbox's."""


def python_for_box() -> str | None:
    """The system Python the zygote runs on (under ``/usr``, which every box binds
    read-only), or None when there is none."""
    return shutil.which("python3", path="/usr/bin:/usr/local/bin")


def rlimits(limits: ResourceLimits, cpu_margin_s: int = 0) -> list:
    """Per-process rlimits of a command: (resource, (soft, hard)); units seconds, bytes,
    count. In a box the CPU one is a backstop ``cpu_margin_s`` = 1 s above the limit:
    the cgroup total over all processes is the limit (the watchdog's), and the kernel's
    per-process CPU clock ran ahead of the cgroup's by up to 15% on the lab's VMs
    (SIGXCPU at 0.87 s of a 1 s limit)."""
    cpu = max(1, int(limits.cpu_seconds + 0.999)) + cpu_margin_s
    return [(resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_FSIZE, (int(limits.file_size_bytes),) * 2),
            (resource.RLIMIT_NOFILE, (int(limits.open_files),) * 2), (resource.RLIMIT_CORE, (0, 0))]


class Box:
    """One running box (module docstring). Not thread-safe: the sandbox runs one
    command of a worker at a time (``lock``).

    Args:
        make_argv: ``sock_fd -> argv`` of bubblewrap running the zygote with that socket.
        cgroup: the worker's cgroup (the box joins it; killed whole by :meth:`stop`).
        pass_fds: further descriptors bubblewrap needs (the seccomp filter).
        key: what the box was built from (a changed key means a new box).
        start_timeout_s: how long the zygote may take to say it is ready.

    Raises:
        SandboxError: the box did not start (bubblewrap's message), or a process of it
            is not uid 0.
    """

    def __init__(self, make_argv, cgroup: Cgroup, *, pass_fds: tuple[int, ...] = (), key=None,
                 start_timeout_s: float = 30.0):
        self.cgroup, self.key, self.seq, self.buf = cgroup, key, 0, b""
        self.totals: tuple | None = None  # the cgroup totals last set for its commands (by the sandbox)
        cgroup.kill_all()  # nothing of the worker is left when its box starts
        ours, theirs = socket.socketpair()
        self.sock = ours
        join = "".join(f"echo $$ > '{p}' || exit 125; " for p in cgroup.procs_files())
        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", join + 'exec "$@"', "box", *make_argv(theirs.fileno())], cwd="/",
                env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, close_fds=True, start_new_session=True,
                pass_fds=(theirs.fileno(), *pass_fds))
        except OSError as exc:
            ours.close()
            raise SandboxError(f"could not start a box: {exc}") from exc
        finally:
            theirs.close()
        try:
            if self._line(time.monotonic() + start_timeout_s) != b"R":
                raise BoxGone("the box's zygote sent no greeting")
            self.keep = frozenset(cgroup.pids())
            for pid in self.keep:
                if os.stat(f"/proc/{pid}").st_uid != 0:
                    raise SandboxError(f"process {pid} in a new box's cgroup is not root's")
                with contextlib.suppress(OSError), open(f"/proc/{pid}/oom_score_adj", "w") as f:
                    f.write("-1000")  # needs CAP_SYS_RESOURCE, which a container's root may lack
        except (SandboxError, OSError) as exc:
            err = b""
            with contextlib.suppress(Exception):
                self.stop()
                err = self.proc.stderr.read()[-500:]
            raise SandboxError(f"the box did not start ({exc}): {err.decode('utf-8', 'replace').strip()}") from exc
        self.proc.stderr.close()

    def alive(self) -> bool:
        """True while bubblewrap and the zygote run (checked before each command)."""
        return self.proc.poll() is None and self.sock.fileno() >= 0

    def fileno(self) -> int:
        """The socket, readable when the zygote has news (for ``select``)."""
        return self.sock.fileno()

    def _line(self, deadline: float | None) -> bytes | None:
        """The zygote's next message; None when none came before ``deadline``.
        Raises BoxGone at end of file."""
        while b"\n" not in self.buf:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.sock], [], [], wait)[0]:
                return None
            try:
                chunk = self.sock.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                raise BoxGone("the box ended")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def start(self, argv: list[str], cwd: str, env: dict[str, str], limits: ResourceLimits,
              fds: tuple[int, int, int], answer_s: float = 30.0) -> int:
        """Fork ``argv`` in the box with ``fds`` as its stdin/stdout/stderr. Returns the
        command's sequence number (for :meth:`status`).

        Raises:
            BoxGone: the box ended before the command was forked, or the zygote did not
                answer within ``answer_s`` (the caller kills the box).
            ForkRefused: the zygote could not fork (its reason)."""
        self.seq += 1
        body = json.dumps({"argv": argv, "cwd": cwd, "env": env, "rl": rlimits(limits, cpu_margin_s=1)}).encode()
        try:
            socket.send_fds(self.sock, [struct.pack("=II", self.seq, len(body))], list(fds))
            self.sock.sendall(body)
        except OSError as exc:
            raise BoxGone(f"the box ended: {exc}") from exc
        end = time.monotonic() + answer_s
        while True:
            line = self._line(end)
            if line is None:
                raise BoxGone(f"the box's zygote did not answer within {answer_s:g} s")
            kind, seq, rest = (line.split(b" ", 2) + [b""])[:3]
            if int(seq) != self.seq:
                continue  # a late exit report of an earlier (killed) command
            if kind == b"S":
                return self.seq
            raise ForkRefused(rest.decode("utf-8", "replace"))

    def status(self, seq: int, timeout_s: float) -> int | None:
        """Exit status of command ``seq`` if the zygote reports it within ``timeout_s``.
        Raises BoxGone when the box ends first."""
        end = time.monotonic() + timeout_s
        while True:
            line = self._line(end)
            if line is None:
                return None
            kind, s, code = (line.split(b" ", 2) + [b"", b""])[:3]
            if kind == b"X" and int(s) == seq:
                return int(code)

    def stop(self) -> None:
        """Kill every process of the cgroup, the box included (verified), and reap it."""
        with contextlib.suppress(OSError):
            self.sock.close()
        self.cgroup.kill_all()
        with contextlib.suppress(Exception):
            self.proc.kill()
        self.proc.wait()
