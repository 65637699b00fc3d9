"""Run one command under limits and tear everything down afterwards (verified).

:func:`execute` runs ``argv`` in its own session with per-process rlimits (CPU
seconds, file size, open files, no core files): isolated, forked by the worker's box
(:mod:`.zygote`: one bubblewrap box per slot, inside the worker's cgroup); unisolated,
as a plain child. A watchdog waits for the command's end (the box's socket, or a
pidfd: no polling latency) and every ``cpu_poll_s`` reads the cgroup's CPU total: at
the wall limit or when the CPU seconds of *all* the command's processes reach the
limit, the cgroup is frozen and killed. Whatever happens, the command ends with every
process of the worker but its box's own two gone, checked by reading the cgroup until
only those are left (:class:`~.base.TeardownError` otherwise); without a cgroup
(unisolated mode) the process group is killed instead, which a process that leaves
the group escapes.

Output: stdout and stderr are drained by threads, the first ``output_limit`` bytes of
each kept, the rest read and dropped (``truncated``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from .base import ExecResult, ResourceLimits, SandboxError
from .zygote import Box, BoxGone, ForkRefused, rlimits

__all__ = ["execute"]


def _drain(stream, limit: int, out: list, flag: list) -> None:
    kept = 0
    read = getattr(stream, "read1", stream.read)
    with contextlib.suppress(OSError, ValueError):
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


def _feed(stream, data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        if data:
            stream.write(data)
        stream.close()


def _rlimits(limits: ResourceLimits) -> Callable[[], None]:
    """``preexec_fn`` setting a command's per-process rlimits (:func:`.zygote.rlimits`)."""
    import resource

    vals = rlimits(limits)

    def preexec() -> None:
        for what, lim in vals:
            resource.setrlimit(what, lim)

    return preexec


def _display(argv_shown: str | list[str]) -> str:
    return argv_shown if isinstance(argv_shown, str) else " ".join(argv_shown)


def execute(
    argv: list[str],
    *,
    shown: str | list[str],
    cwd: str,
    env: dict[str, str],
    limits: ResourceLimits,
    stdin: bytes = b"",
    output_limit: int = 20_000,
    box: Box | None = None,
    cpu_poll_s: float = 0.02,
    teardown_timeout_s: float = 10.0,
    notes: dict | None = None,
) -> ExecResult:
    """Run ``argv`` (see module docstring), forked by ``box``'s zygote or, without a
    box (unisolated), as a plain child; ``shown`` is what the result reports as the
    command. Returns an :class:`~.base.ExecResult`.

    Raises:
        SandboxError: the command could not be started (names cwd and the reason).
        BoxGone: the box ended before the command was forked (the caller starts a new one).
        TeardownError: processes of the command survived the kills.
    """
    notes = dict(notes or {})
    cgroup = box.cgroup if box is not None else None
    cpu0 = cgroup.cpu_s() if cgroup is not None else 0.0
    oom0 = cgroup.oom_kills() if cgroup is not None else 0
    t0 = time.perf_counter()
    if box is not None:
        try:
            proc = _BoxRun(box, argv, cwd, env, limits)
        except ForkRefused as exc:
            return ExecResult(command=_display(shown), exit_code=126, stdout="", notes=notes,
                              stderr=f"sandbox: the command could not start: {exc}\n",
                              duration_s=time.perf_counter() - t0)
    else:
        try:  # exec the program itself (a non-executable file is exit 126, as in a shell)
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                close_fds=True, start_new_session=True, preexec_fn=_rlimits(limits),
            )
        except OSError as exc:
            if str(exc.filename) != cwd:  # the program itself cannot be executed: the shell's codes
                return ExecResult(command=_display(shown), exit_code=127 if isinstance(exc, FileNotFoundError) else 126,
                                  stdout="", stderr=f"{argv[0]}: cannot execute: {exc.strerror}\n",
                                  duration_s=time.perf_counter() - t0, notes=notes)
            raise SandboxError(f"could not start a command in {cwd}: {exc}") from exc
        except subprocess.SubprocessError as exc:
            raise SandboxError(f"could not start a command in {cwd}: {exc}") from exc
    outs: list[bytes] = []
    errs: list[bytes] = []
    tflag, eflag = [False], [False]
    threads = [
        threading.Thread(target=_drain, args=(proc.stdout, output_limit, outs, tflag), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, output_limit, errs, eflag), daemon=True),
        threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True),
    ]
    for th in threads:
        th.start()
    killed_by = None
    deadline = time.monotonic() + limits.wall_seconds
    try:
        waitfd = proc.fileno() if box is not None else os.pidfd_open(proc.pid)
    except OSError:
        waitfd = -1
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                killed_by = "timeout"
                break
            if cgroup is not None and cgroup.cpu_s() - cpu0 >= limits.cpu_seconds:
                killed_by = "cpu"
                break
            wait = min(cpu_poll_s if cgroup is not None else 0.25, deadline - now)
            if waitfd >= 0:
                select.select([waitfd], [], [], max(0.0, wait))
            else:
                time.sleep(max(0.0, min(wait, 0.005)))
    finally:
        if waitfd >= 0 and box is None:
            os.close(waitfd)
    # teardown: everything of the command goes, verified (also after a normal exit:
    # background processes never outlive their command)
    if box is not None:
        if proc.gone:  # the box ended under the command: all of it goes
            box.stop()
        cgroup.kill_all(keep=frozenset() if proc.gone else box.keep, timeout_s=teardown_timeout_s)
    else:
        if killed_by is None:
            proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    grace = time.monotonic() + (0.5 if cgroup is not None else 2.0)
    for th in threads:
        th.join(timeout=max(0.0, grace - time.monotonic()))
    dur = time.perf_counter() - t0
    cpu = cgroup.cpu_s() - cpu0 if cgroup is not None else None
    code = proc.returncode
    if cgroup is not None and killed_by is None and cgroup.oom_kills() > oom0:
        killed_by = "memory"
    if (cgroup is not None and killed_by is None and cpu is not None and cpu >= limits.cpu_seconds
            and code != 0):
        killed_by = "cpu"  # reached between two watchdog reads, killed by the per-process limit
    stdout = b"".join(outs).decode("utf-8", errors="replace")
    stderr = b"".join(errs).decode("utf-8", errors="replace")
    if killed_by == "cpu":
        stderr += f"\n[sandbox: killed at the CPU limit of {limits.cpu_seconds:g} s over all processes]\n"
        code = -9 if code is None else code
    elif killed_by == "memory":
        stderr += "\n[sandbox: a process was killed at the memory limit]\n"
    elif box is not None and proc.gone:
        stderr += "\n[sandbox: the worker's box ended under the command; every process of it was killed]\n"
        code = -9
    notes["oom_kills"] = (cgroup.oom_kills() - oom0) if cgroup is not None else None
    return ExecResult(
        command=_display(shown), exit_code=None if killed_by == "timeout" else code,
        stdout=stdout[:output_limit], stderr=stderr[: output_limit + 200],
        duration_s=dur, timed_out=killed_by == "timeout", truncated=tflag[0] or eflag[0],
        cpu_s=None if cpu is None else round(cpu, 4), killed_by=killed_by, notes=notes,
    )


class _BoxRun:
    """A command forked by a box's zygote, with the part of ``Popen``'s interface
    :func:`execute` uses (pipes, ``poll``, ``returncode``, ``fileno`` for select)."""

    def __init__(self, box: Box, argv: list[str], cwd: str, env: dict[str, str], limits: ResourceLimits):
        self.box, self.returncode, self.gone = box, None, False
        pipes = [os.pipe() for _ in range(3)]
        theirs = (pipes[0][0], pipes[1][1], pipes[2][1])
        try:
            self.seq = box.start(argv, cwd, env, limits, theirs)
        except BaseException:
            for r, w in pipes:
                os.close(r)
                os.close(w)
            raise
        for fd in theirs:
            os.close(fd)
        self.stdin = os.fdopen(pipes[0][1], "wb")
        self.stdout = os.fdopen(pipes[1][0], "rb")
        self.stderr = os.fdopen(pipes[2][0], "rb")

    def fileno(self) -> int:
        return self.box.fileno()

    def poll(self) -> int | None:
        if self.returncode is None and not self.gone:
            try:
                self.returncode = self.box.status(self.seq, 0.0)
            except BoxGone:
                self.gone = True
        return -9 if self.gone and self.returncode is None else self.returncode
