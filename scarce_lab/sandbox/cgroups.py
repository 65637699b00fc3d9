"""Per-worker cgroups: totals over all of a worker's processes, and verified teardown.

A worker's processes all live in one cgroup (created here, joined by the command's
first process before it executes anything). The cgroup gives:

* a memory total (v1 ``memory.limit_in_bytes`` + ``memsw``, v2 ``memory.max`` +
  ``memory.swap.max = 0``); the kernel kills inside the group when it is reached;
* a process/thread total (``pids.max``);
* CPU time summed over every process (v1 ``cpuacct.usage``, v2 ``cpu.stat``
  ``usage_usec``), read by the command's watchdog;
* teardown: freeze the group, SIGKILL every member, thaw, and check that the group
  is empty, repeated until it is or ``timeout_s`` passes (then :class:`TeardownError`
  with the pids). cgroup v2 uses ``cgroup.kill`` where the kernel has it.

Both layouts exist in the wild: cgroup v1 (one hierarchy per controller; the lab
machines mount memory, pids, cpu/cpuacct and freezer) and v2 (one unified
hierarchy). :func:`detect` picks what the machine has; groups are created below this
process's own cgroup so the machine's limits on us also bound the workers.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .base import SandboxError, TeardownError

__all__ = ["Cgroup", "CgroupSupport", "Guardian", "detect", "reap_stale", "remove_sandbox_groups"]

V1_CONTROLLERS = ("memory", "pids", "cpuacct", "freezer")
V2_CONTROLLERS = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class CgroupSupport:
    """What this machine offers. version: 1, 2 or 0 (none usable); dirs: controller ->
    the folder of *this process's* cgroup in that hierarchy (v2: key ``"unified"``);
    reason: why not usable (empty when usable)."""

    version: int
    dirs: dict
    reason: str = ""
    v2_root: str = ""  # v2: the hierarchy's mount point (fallback parent, see Cgroup.create)


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(rfields) < 3:
                continue
            out.append((fields[4], rfields[0], set(rfields[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrls == "":
                own["unified"] = path
            for c in ctrls.split(","):
                if c:
                    own[c] = path
    return own


def _inside(mount: str, rel: str) -> str:
    d = os.path.join(mount, rel.lstrip("/"))
    return d if os.path.isdir(d) else mount


@functools.cache
def detect() -> CgroupSupport:
    """Probe once: cgroup v2 when ``/sys/fs/cgroup`` is a unified hierarchy with the
    memory, pids and cpu controllers, else v1 when memory, pids, cpuacct and freezer
    are mounted; else version 0 with the reason."""
    if os.geteuid() != 0:
        return CgroupSupport(0, {}, "cgroups need root")
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as exc:
        return CgroupSupport(0, {}, f"cannot read /proc: {exc}")
    v2 = [m for m, fstype, _ in mounts if fstype == "cgroup2"]
    v1 = {}
    for mnt, fstype, opts in mounts:
        if fstype == "cgroup":
            for c in V1_CONTROLLERS:
                if c in opts and c not in v1:
                    v1[c] = _inside(mnt, own.get(c, "/"))
    if all(c in v1 for c in V1_CONTROLLERS):
        return CgroupSupport(1, v1)
    for mnt in v2:
        base = _inside(mnt, own.get("unified", "/"))
        try:
            have = set(Path(mnt, "cgroup.controllers").read_text().split())
        except OSError:
            continue
        if set(V2_CONTROLLERS) <= have:
            return CgroupSupport(2, {"unified": base}, v2_root=mnt)
    missing = [c for c in V1_CONTROLLERS if c not in v1]
    return CgroupSupport(0, {}, f"no cgroup v2 with {V2_CONTROLLERS} and cgroup v1 lacks {missing}")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class Cgroup:
    """One worker's cgroup (all controllers). ``relpath``: below this process's cgroup,
    e.g. ``scarce_lab/<sandbox id>/<worker>``. :meth:`create` makes it (and parents)."""

    def __init__(self, support: CgroupSupport, relpath: str, *, dirs: dict | None = None):
        if support.version not in (1, 2):
            raise SandboxError(f"cgroups unavailable: {support.reason}")
        self.support = support
        self.version = support.version
        self.relpath = relpath
        self.dirs = dirs or {c: Path(base, relpath) for c, base in support.dirs.items()}

    @classmethod
    def of_pid(cls, pid: int) -> Cgroup:
        """The existing cgroup of process ``pid`` (e.g. a container's), for reading its
        CPU time and killing its members. Raises SandboxError if not found."""
        sup = detect()
        if sup.version == 0:
            raise SandboxError(f"cgroups unavailable: {sup.reason}")
        dirs = {}
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for mnt, fstype, opts in _mounts():
                    if sup.version == 2 and fstype == "cgroup2" and ctrls == "":
                        dirs["unified"] = Path(mnt, path.lstrip("/"))
                    elif sup.version == 1 and fstype == "cgroup":
                        for c in V1_CONTROLLERS:
                            if c in opts and c in ctrls.split(",") and c not in dirs:
                                dirs[c] = Path(mnt, path.lstrip("/"))
        need = ["unified"] if sup.version == 2 else list(V1_CONTROLLERS)
        if not all(c in dirs and dirs[c].is_dir() for c in need):
            raise SandboxError(f"cgroup of pid {pid} not found in this mount namespace ({dirs})")
        return cls(sup, "", dirs=dirs)

    # -- lifecycle ------------------------------------------------------------------
    def create(self) -> Cgroup:
        """Make the group (and its parents); v2 enables memory/pids/cpu down the path.
        Raises SandboxError naming the folder when the kernel refuses."""
        try:
            if self.version == 1:
                for d in self.dirs.values():
                    d.mkdir(parents=True, exist_ok=True)
            else:
                self._create_v2()
        except OSError as exc:
            raise SandboxError(f"cannot create cgroup {self.relpath!r}: {exc} (cgroup v{self.version})") from exc
        return self

    def _create_v2(self) -> None:
        """Enable memory/pids/cpu down the path. Below this process's own cgroup first;
        the kernel refuses controllers in a cgroup that holds processes (not the root),
        so the hierarchy's mount point is tried next. (Not exercised on the lab
        machines, which have cgroup v1.)"""
        errors = []
        for base in dict.fromkeys([self.support.dirs["unified"], self.support.v2_root or self.support.dirs["unified"]]):
            try:
                cur = Path(base)
                for part in Path(self.relpath).parts:
                    ctl = cur / "cgroup.subtree_control"
                    if not set(V2_CONTROLLERS) <= set(ctl.read_text().split()):
                        _write(ctl, " ".join(f"+{c}" for c in V2_CONTROLLERS))
                    cur = cur / part
                    cur.mkdir(exist_ok=True)
                self.dirs = {"unified": cur}
                return
            except OSError as exc:
                errors.append(f"under {base}: {exc}")
        raise OSError("; ".join(errors) + " (delegate a cgroup v2 subtree with memory, pids and cpu to this process)")

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a new process writes its pid to (to join)."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def set_limits(self, *, memory_bytes: int, max_processes: int) -> None:
        """Totals for the group: memory (no swap) and processes/threads."""
        mem = str(int(memory_bytes))
        try:
            if self.version == 1:
                m = self.dirs["memory"]
                sw = m / "memory.memsw.limit_in_bytes"
                for order in ((m / "memory.limit_in_bytes", sw), (sw, m / "memory.limit_in_bytes")):
                    try:
                        for f in order:
                            if f.exists():
                                _write(f, mem)
                        break
                    except OSError:
                        continue
                else:
                    raise OSError(f"memory limits {mem} refused")
                _write(self.dirs["pids"] / "pids.max", str(int(max_processes)))
            else:
                u = self.dirs["unified"]
                _write(u / "memory.max", mem)
                if (u / "memory.swap.max").exists():
                    _write(u / "memory.swap.max", "0")
                _write(u / "pids.max", str(int(max_processes)))
        except OSError as exc:
            raise SandboxError(f"cannot set limits on cgroup {self.relpath!r}: {exc}") from exc

    # -- reading --------------------------------------------------------------------
    def cpu_s(self) -> float:
        """CPU seconds used by all members since the group was created."""
        with contextlib.suppress(OSError, ValueError):
            if self.version == 1:
                return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
            for line in (self.dirs["unified"] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
        return 0.0

    def oom_kills(self) -> int:
        """Processes the kernel killed for the group's memory limit so far."""
        with contextlib.suppress(OSError, ValueError):
            f = (self.dirs["memory"] / "memory.oom_control") if self.version == 1 else \
                (self.dirs["unified"] / "memory.events")
            for line in f.read_text().splitlines():
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    return int(v)
        return 0

    def pids(self) -> set[int]:
        """Members (processes) of the group, over every controller."""
        out: set[int] = set()
        for d in self.dirs.values():
            try:
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return out

    # -- teardown -------------------------------------------------------------------
    def _freeze(self, on: bool) -> None:
        with contextlib.suppress(OSError):
            if self.version == 1:
                _write(self.dirs["freezer"] / "freezer.state", "FROZEN" if on else "THAWED")
                if on:
                    end = time.monotonic() + 1.0
                    while time.monotonic() < end:
                        if (self.dirs["freezer"] / "freezer.state").read_text().strip() == "FROZEN":
                            break
                        time.sleep(0.002)
            else:
                _write(self.dirs["unified"] / "cgroup.freeze", "1" if on else "0")

    def kill_all(self, *, keep: frozenset[int] = frozenset(), timeout_s: float = 10.0) -> int:
        """SIGKILL every member except ``keep`` (a container's own init), verified.

        Freeze, kill, thaw, re-read; repeated until only ``keep`` is left.
        Returns how many pids were signalled. Raises TeardownError (with the pids left)
        after ``timeout_s``."""
        killed = 0
        end = time.monotonic() + timeout_s
        u = self.dirs.get("unified")
        while True:
            left = self.pids() - set(keep)
            if not left:
                return killed
            if time.monotonic() > end:
                raise TeardownError(f"cgroup {self.relpath or self.dirs}: processes {sorted(left)[:20]} "
                                    f"still alive after {timeout_s} s of kills")
            if u is not None and not keep and (u / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    _write(u / "cgroup.kill", "1")
                    killed += len(left)
            else:
                self._freeze(True)
                for pid in left:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
                self._freeze(False)
            time.sleep(0.001)

    def remove(self, *, timeout_s: float = 10.0) -> None:
        """Kill what is left (verified) and delete the group folders."""
        self.kill_all(timeout_s=timeout_s)
        for d in self.dirs.values():
            end = time.monotonic() + 2.0
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > end:
                        break  # zombies being reaped; the folder is empty of live tasks
                    time.sleep(0.01)

    def remove_parents(self, upto: int) -> None:
        """Delete up to ``upto`` empty parent folders of the group (best effort)."""
        for d in self.dirs.values():
            p = d.parent
            for _ in range(upto):
                try:
                    p.rmdir()
                except OSError:
                    break
                p = p.parent


def remove_sandbox_groups(sandbox_id: str, prefix: str = "scarce_lab") -> bool:
    """Kill (verified) and delete every worker group of one sandbox, then its folder.
    True when the sandbox's folder is gone."""
    sup = detect()
    if sup.version == 0:
        return False
    gone = True
    for d in {Path(x, prefix, sandbox_id) for x in sup.dirs.values()}:
        if not d.is_dir():
            continue
        for child in [c for c in d.iterdir() if c.is_dir()]:
            with contextlib.suppress(SandboxError):
                Cgroup(sup, f"{prefix}/{sandbox_id}/{child.name}").remove(timeout_s=5.0)
        try:
            d.rmdir()
        except OSError:
            gone = False
    return gone


def reap_stale(prefix: str = "scarce_lab") -> int:
    """Remove the groups of sandboxes whose process is gone (``<prefix>/<pid>-<n>/``):
    their members are killed (verified) first. Returns how many sandboxes were reaped."""
    sup = detect()
    if sup.version == 0:
        return 0
    ids = set()
    for d in sup.dirs.values():
        base = Path(d, prefix)
        if base.is_dir():
            for sbx in base.iterdir():
                pid = sbx.name.split("-", 1)[0]
                if sbx.is_dir() and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                    ids.add(sbx.name)
    return sum(remove_sandbox_groups(i, prefix) for i in sorted(ids))


_GUARDIAN = r"""
trap '' INT TERM HUP QUIT PIPE
cat >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  left=0
  for d in "$@" $(cat "$LIST" 2>/dev/null); do
    [ -d "$d" ] || continue
    [ -e "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null
    for f in $(find "$d" -name cgroup.procs 2>/dev/null); do
      for p in $(cat "$f" 2>/dev/null); do kill -9 "$p" 2>/dev/null; left=1; done
    done
  done
  [ "$left" = 0 ] && break
  sleep 0.1
done
for d in "$@"; do find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; done
exit 0
"""


class Guardian:
    """Kills every process of a sandbox when the harness dies, however it dies.

    Why: ``bwrap --die-with-parent`` does not reach the worker's command. ``setpriv
    --reuid`` clears the parent-death signal (a credential change does), and setting
    it again does not help: the command is pid 1 of its pid namespace, which the
    kernel does not let a parent-death SIGKILL kill. So a killed harness used to leave
    the worker's shell and daemons running until a later sandbox reaped them.

    How: a small ``/bin/sh`` process in its own session (so a Ctrl-C or a kill of the
    harness's process group does not reach it; it ignores INT, TERM, HUP) blocks
    reading a pipe whose only writer is the harness. When the harness exits, normally
    or by SIGKILL, the kernel closes the pipe; the guardian then writes ``cgroup.kill``
    (v2) and SIGKILLs every member (v1, and v2 without ``cgroup.kill``) of the
    sandbox's groups (``<prefix>/<sandbox id>/`` in every hierarchy) and of the extra
    group folders listed, one per line, in ``list_file`` (the docker backend's
    containers), repeating until they are empty (at most 2 s), then exits.
    :meth:`close` (the sandbox's own close) just closes the pipe the same way.

    Args:
        sandbox_id: the sandbox's cgroup folder name. list_file: optional host file of
            further cgroup folders. prefix: as :func:`remove_sandbox_groups`.
    """

    def __init__(self, sandbox_id: str, *, list_file: str | Path | None = None, prefix: str = "scarce_lab"):
        import subprocess

        sup = detect()
        dirs = [str(Path(x, prefix, sandbox_id)) for x in sup.dirs.values()] if sup.version else []
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(["/bin/sh", "-c", _GUARDIAN, "scarce-guardian", *dirs], stdin=r,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True,
                                         env={"PATH": "/usr/bin:/bin", "LIST": str(list_file or "/dev/null")})
        finally:
            os.close(r)
        self._w = w
        os.set_inheritable(w, False)

    def close(self, wait_s: float = 3.0) -> None:
        """Close the pipe (the guardian kills what is left, if anything) and reap it."""
        if self._w >= 0:
            os.close(self._w)
            self._w = -1
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=wait_s)
