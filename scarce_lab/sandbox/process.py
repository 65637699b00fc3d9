"""Run one command under limits and tear everything down afterwards (verified).

:func:`execute` starts ``argv`` (already wrapped by :mod:`.bwrap` where isolated), in
its own session, with per-process rlimits (CPU seconds, file size, open files, no core
files, processes per uid) and, where given, inside the worker's cgroup, joined by the
child before it executes anything. A watchdog waits on the process (a pidfd, no
polling latency) and every ``cpu_poll_s`` reads the cgroup's CPU total: at the wall
limit or when the CPU seconds of *all* the command's processes reach the limit, the
whole cgroup is frozen and killed. Whatever happens, the command ends with every
process of the worker gone, checked by reading the cgroup until it is empty
(:class:`~.base.TeardownError` otherwise); without a cgroup (unisolated mode) the
process group is killed instead, which a process that leaves the group escapes.

Output: stdout and stderr are drained by threads, the first ``output_limit`` bytes of
each kept, the rest read and dropped (``truncated``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from .base import ExecResult, ResourceLimits, SandboxError
from .cgroups import Cgroup

__all__ = ["execute", "launcher"]


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


@functools.cache
def _sh_is_dash() -> bool:
    return os.path.basename(os.path.realpath("/bin/sh")) == "dash"


def launcher(limits: ResourceLimits, procs_files: list[str] | None = None) -> list[str]:
    """argv prefix that joins the cgroup (writes its pid to each ``cgroup.procs``),
    then sets the per-process rlimits (units: seconds, bytes, count) and executes the
    rest. A shell instead of a Python ``preexec_fn`` keeps ``fork`` cheap
    (vfork/posix_spawn) and the child free of Python code. Where ``/bin/sh`` is dash
    the shell's own ``ulimit`` sets the limits (one ``exec`` less per command than
    ``prlimit``; dash counts ``-f`` in 512-byte blocks, so the file size limit is
    rounded down to a multiple of 512 bytes); elsewhere ``prlimit`` does."""
    cpu = max(1, int(limits.cpu_seconds + 0.999))
    join = "".join(f"echo $$ > {shlex.quote(p)} || exit 125; " for p in procs_files or ())
    if _sh_is_dash():
        blocks = max(1, int(limits.file_size_bytes) // 512)
        lim = (f"ulimit -S -t {cpu} && ulimit -H -t {cpu + 1} && ulimit -f {blocks} && "
               f"ulimit -n {int(limits.open_files)} && ulimit -c 0 || exit 125; ")
        return ["/bin/sh", "-c", join + lim + 'exec "$@"', "launch"]
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin") or "prlimit"
    return ["/bin/sh", "-c", join + 'exec "$@"', "launch", prlimit, f"--cpu={cpu}:{cpu + 1}",
            f"--fsize={int(limits.file_size_bytes)}", f"--nofile={int(limits.open_files)}", "--core=0", "--"]


def _rlimits(limits: ResourceLimits) -> Callable[[], None]:
    """``preexec_fn`` setting the same per-process rlimits as :func:`launcher`."""
    import resource

    cpu = max(1, int(limits.cpu_seconds + 0.999))
    vals = ((resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_FSIZE, (int(limits.file_size_bytes),) * 2),
            (resource.RLIMIT_NOFILE, (int(limits.open_files),) * 2), (resource.RLIMIT_CORE, (0, 0)))

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
    cgroup: Cgroup | None = None,
    cpu_poll_s: float = 0.02,
    on_spawn: Callable[[subprocess.Popen], None] | None = None,
    teardown_timeout_s: float = 10.0,
    notes: dict | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ExecResult:
    """Run ``argv`` (see module docstring); ``shown`` is what the result reports as the
    command. Returns an :class:`~.base.ExecResult`.

    Raises:
        SandboxError: the command could not be started (names cwd and the reason).
        TeardownError: processes of the command survived the kills.
    """
    notes = dict(notes or {})
    cpu0 = cgroup.cpu_s() if cgroup is not None else 0.0
    oom0 = cgroup.oom_kills() if cgroup is not None else 0
    t0 = time.perf_counter()
    try:
        if cgroup is not None:
            proc = subprocess.Popen(
                [*launcher(limits, cgroup.procs_files()), *argv], cwd=cwd, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                start_new_session=True, pass_fds=pass_fds,
            )
        else:  # unisolated: exec the program itself (a non-executable file is exit 126, as in a shell)
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                close_fds=True, start_new_session=True, preexec_fn=_rlimits(limits),
            )
    except OSError as exc:
        if cgroup is None and str(exc.filename) != cwd:
            # the program itself cannot be executed (unisolated mode): the shell's codes
            return ExecResult(command=_display(shown), exit_code=127 if isinstance(exc, FileNotFoundError) else 126,
                              stdout="", stderr=f"{argv[0]}: cannot execute: {exc.strerror}\n",
                              duration_s=time.perf_counter() - t0, notes=notes)
        raise SandboxError(f"could not start a command in {cwd}: {exc}") from exc
    except subprocess.SubprocessError as exc:
        raise SandboxError(f"could not start a command in {cwd}: {exc}") from exc
    if on_spawn is not None:
        on_spawn(proc)
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
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        pidfd = -1
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
            if pidfd >= 0:
                select.select([pidfd], [], [], max(0.0, wait))
            else:
                time.sleep(max(0.0, min(wait, 0.005)))
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    # teardown: everything of the command goes, verified (also after a normal exit:
    # background processes never outlive their command)
    if killed_by is None:
        proc.wait()  # reap it first: the pid namespace is gone with its first process
    if cgroup is not None:
        cgroup.kill_all(timeout_s=teardown_timeout_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    grace = time.monotonic() + (0.5 if cgroup is not None else 2.0)
    for th in threads:
        th.join(timeout=max(0.0, grace - time.monotonic()))
    dur = time.perf_counter() - t0
    cpu = cgroup.cpu_s() - cpu0 if cgroup is not None else None
    if cgroup is not None and killed_by is None and cgroup.oom_kills() > oom0:
        killed_by = "memory"
    if (cgroup is not None and killed_by is None and cpu is not None and cpu >= limits.cpu_seconds
            and proc.returncode != 0):
        killed_by = "cpu"  # reached between two watchdog reads, killed by the per-process limit
    stdout = b"".join(outs).decode("utf-8", errors="replace")
    stderr = b"".join(errs).decode("utf-8", errors="replace")
    if killed_by == "cpu":
        stderr += f"\n[sandbox: killed at the CPU limit of {limits.cpu_seconds:g} s over all processes]\n"
    elif killed_by == "memory":
        stderr += "\n[sandbox: a process was killed at the memory limit]\n"
    code = None if killed_by == "timeout" else proc.returncode
    notes["oom_kills"] = (cgroup.oom_kills() - oom0) if cgroup is not None else None
    return ExecResult(
        command=_display(shown), exit_code=code, stdout=stdout[:output_limit], stderr=stderr[: output_limit + 200],
        duration_s=dur, timed_out=killed_by == "timeout", truncated=tflag[0] or eflag[0],
        cpu_s=None if cpu is None else round(cpu, 4), killed_by=killed_by, notes=notes,
    )
