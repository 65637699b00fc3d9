"""Docker sandbox backend: containers from the offline-built task image.

ProgramBench tasks are graded by :func:`.programbench_grade.grade_programbench`.

``image=None`` starts an engine if none answers and builds the task image if missing
(:mod:`.docker_image`); SandboxError says why when neither can be done.

Isolation: the sandbox of a run holds one container per worker *slot* (created at the
worker's first command in a slot, removed when the slot closes) and one per grading:
SysV IPC, ``/tmp``, ``/run`` and ``/dev/shm`` are then never shared between workers,
and the container's cgroup holds the worker's totals. Each container: network
disabled, read-only root, tmpfs ``/tmp`` ``/var/tmp`` ``/run``, memory (no extra
swap), pids and CPU-rate limits, all capabilities dropped, ``no-new-privileges``, the
project's seccomp profile (:func:`.seccomp.docker_profile`: no ``ptrace``, which Docker's
default profile allows; the same rules as the local backend), the
worker's own uid (no account in the image: a bare uid), an init that reaps zombies;
the worker's folder (a size-limited tmpfs on the host, shared with the local backend's
layout, :mod:`.hostroot`) bound read-write at the same path; execute-only copies of
the original bound over its paths. CPU seconds are summed over all the worker's
processes from the container's cgroup on the host; at a command's end (normal, wall
limit, CPU limit) every process but the container's init is killed, verified.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .base import (
    ExecResult,
    GradingBox,
    ResourceLimits,
    SandboxError,
    WorkerBox,
    WorkerSandbox,
    command_argv,
)
from .cgroups import Cgroup, Guardian
from .hostroot import HostRoot
from .local import base_env
from .seccomp import docker_profile
from .uids import UidLease, lease_uid

__all__ = ["DockerSandbox", "docker_available"]

IO_DIR = "/run/scarce/io"
_ids = itertools.count()


def docker_available(timeout_s: float = 2.0) -> bool:
    """True when a Docker engine answers a ping now (nothing is started)."""
    try:
        import docker

        return bool(docker.from_env(timeout=max(1, int(timeout_s))).ping())
    except Exception:  # noqa: BLE001 - no SDK, no socket, engine down, permission denied
        return False


@dataclass
class _DWorker:
    name: str
    folder: Path
    uid: int
    lease: UidLease
    io: Path
    exec_only: dict[str, str] = field(default_factory=dict)
    binds: dict[str, str] = field(default_factory=dict)
    deadline: float | None = None
    container: object | None = None
    cgroup: Cgroup | None = None
    keep: frozenset[int] = frozenset()
    prlimit: bool = True
    reserved: int = 0  # run() calls past their slot check (close_slot waits for them)


class DockerSandbox(WorkerSandbox):
    """Per-worker containers from the task image (see module docstring).

    Raises SandboxError at construction when no engine answers (and none can be
    started), the image is missing (and cannot be built), or this process is not root
    (the worker folders are size-limited tmpfs mounts owned by per-worker uids).
    """

    network_isolated = True
    kind = "docker"

    def __init__(self, image: str | None = None, limits: ResourceLimits | None = None,
                 output_limit: int = 20_000, cpus: float = 1.0, client=None, root: str | Path | None = None,
                 disk_bytes: int = 256 << 20, inodes: int = 20_000, tmp_bytes: int = 64 << 20,
                 start_engine: bool = True) -> None:
        from .docker_image import engine_client, ensure_image

        if cpus <= 0:
            raise ValueError(f"cpus must be > 0, got {cpus!r}")
        if output_limit <= 0:
            raise ValueError(f"output_limit must be > 0, got {output_limit!r}")
        if os.geteuid() != 0:
            raise SandboxError("the docker sandbox gives each worker a size-limited folder and its own uid, "
                               f"which needs root (euid is {os.geteuid()})")
        self.client = client or engine_client(start=start_engine)
        if image is None:
            self.image = ensure_image(self.client)
        else:
            self.image = image
            try:
                self.client.images.get(image)
            except Exception as exc:  # noqa: BLE001
                raise SandboxError(f"image {image!r} is not available to the engine: {exc}") from exc
        self.limits = limits or ResourceLimits()
        self.output_limit = output_limit
        self.cpus = cpus
        self.disk_bytes, self.inodes, self.tmp_bytes = disk_bytes, inodes, tmp_bytes
        self.host = HostRoot(root, tmpfs=True)
        self.root = self.host.path
        (self.root / "io").mkdir(exist_ok=True)
        self._id = f"{os.getpid()}-{next(_ids)}"
        self._workers: dict[str, _DWorker] = {}
        self._lock = threading.RLock()
        self._grades = itertools.count()
        self._closed = False
        # nothing of a worker outlives the harness: the guardian kills every container's
        # cgroup listed here when this process dies, however it dies (cgroups.Guardian)
        self._cg_list = self.root / "cgroups.list"
        self._cg_list.touch(mode=0o600)
        self._guardian = Guardian(f"docker-{self._id}", list_file=self._cg_list)

    # -- workers ----------------------------------------------------------------------
    def _new_worker(self, worker: str) -> _DWorker:  # under the lock (WorkerSandbox._worker)
        lease = lease_uid()
        try:
            folder = self.host.make_folder(worker, uid=lease.uid, size=self.disk_bytes, inodes=self.inodes)
        except BaseException:
            lease.release()
            raise
        io = self.root / "io" / worker
        io.mkdir(mode=0o755)
        return _DWorker(worker, folder, lease.uid, lease, io)

    def uid_of(self, worker: str) -> int:
        """The uid ``worker``'s commands run as."""
        return self._worker(worker).uid

    def program_paths(self, candidates: list[str]) -> list[str]:
        """Inside the image every candidate path may hold the program: all are covered."""
        return list(dict.fromkeys(candidates))

    def container_kwargs(self, worker: str) -> dict:
        """Arguments of ``client.containers.run`` for ``worker``'s container."""
        import docker

        w = self._worker(worker)
        lim = self.limits
        tmp = f"size={self.tmp_bytes},mode=1777,nosuid,nodev"
        volumes = {str(w.folder): {"bind": str(w.folder), "mode": "rw"},
                   str(w.io): {"bind": IO_DIR, "mode": "ro"}}
        # one host file may cover several paths: mounts, not the volumes dict
        mounts = [docker.types.Mount(dest, src, type="bind", read_only=True) for dest, src in w.exec_only.items()]
        mounts += [docker.types.Mount(dest, src, type="bind", read_only=False) for dest, src in w.binds.items()]
        # runc lets only a few /proc files be covered (its checkProcMount list): the
        # load and uptime are; the boot id is not (a residual risk, docs/threat_model.md)
        mounts += [docker.types.Mount(dest, src, type="bind", read_only=True)
                   for dest, src in self.host.proc_masks.items() if dest in ("/proc/loadavg", "/proc/uptime")]
        return {
            "image": self.image, "command": ["sleep", "infinity"], "detach": True, "init": True,
            "user": f"{w.uid}:{w.uid}", "network_disabled": True, "read_only": True,
            "tmpfs": {"/tmp": tmp, "/var/tmp": tmp, "/run": f"size={self.tmp_bytes},mode=755,nosuid,nodev"},
            "mem_limit": lim.memory_bytes, "memswap_limit": lim.memory_bytes, "pids_limit": lim.max_processes,
            "nano_cpus": int(self.cpus * 1e9), "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges", f"seccomp={docker_profile(grading=w.name.startswith('grade-'))}"],
            "ipc_mode": "private", "hostname": "sandbox", "working_dir": str(w.folder),
            "volumes": volumes, "mounts": mounts, "environment": base_env(w.folder),
            "labels": {"scarce_lab.sandbox": self._id, "scarce_lab.worker": w.name},
            "ulimits": [docker.types.Ulimit(name="core", soft=0, hard=0)],
        }

    def _container(self, w: _DWorker):
        if w.container is not None:
            return w.container
        try:
            c = self.client.containers.run(**self.container_kwargs(w.name))
            c.reload()
            pid = c.attrs["State"]["Pid"]
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"could not start a container from {self.image!r} for {w.name!r}: {exc}") from exc
        cg = Cgroup.of_pid(pid)
        with open(self._cg_list, "a") as f:
            f.write("".join(f"{p}\n" for p in cg.dirs.values()))
        end = time.monotonic() + 5
        while len(cg.pids()) < 2 and time.monotonic() < end:  # init + sleep
            time.sleep(0.01)
        w.container, w.cgroup, w.keep = c, cg, frozenset(cg.pids())
        probe = c.exec_run(["/bin/sh", "-c", "command -v prlimit"], user=f"{w.uid}:{w.uid}")
        w.prlimit = probe.exit_code == 0  # images of others (ProgramBench) may lack util-linux
        cg.kill_all(keep=w.keep)
        return c

    def _remove_container(self, w: _DWorker) -> None:
        c, w.container, w.cgroup = w.container, None, None
        if c is None:
            return
        try:
            c.remove(force=True)
        except Exception as exc:  # noqa: BLE001
            import docker

            if not isinstance(exc, docker.errors.NotFound):
                raise SandboxError(f"could not remove the container of {w.name!r}: {exc}") from exc

    # -- slots ------------------------------------------------------------------------
    def close_slot(self, worker: str) -> None:
        """End the window: the worker's container is removed with all its processes.
        A :meth:`run` whose slot check passed before this call is killed (its container
        removed again) until it has returned; one called after this returns is refused."""
        w = self._workers.get(worker)
        if w is None:
            return
        with self._lock:
            w.deadline = None
        self._remove_container(w)
        end = time.monotonic() + 60.0
        while w.reserved > 0 and time.monotonic() < end:
            cg = w.cgroup
            if cg is not None:
                with contextlib.suppress(SandboxError):
                    cg.kill_all(keep=w.keep, timeout_s=2.0)
            time.sleep(0.01)
        self._remove_container(w)

    def _exec(self, w: _DWorker, command: str | list[str], lim: ResourceLimits, *, stdin: bytes,
              output_limit: int) -> ExecResult:
        argv, shown, bad = command_argv(command)
        if bad:
            return ExecResult(command=shown, exit_code=2, stdout="", stderr=bad, duration_s=0.0,
                              notes={"isolation": "docker"})
        self._container(w)
        cg = w.cgroup
        cg.set_limits(memory_bytes=lim.memory_bytes, max_processes=lim.max_processes + len(w.keep))
        (w.io / "stdin").write_bytes(stdin)
        cpu = max(1, int(lim.cpu_seconds + 0.999))
        feed = ["/bin/sh", "-c", f'exec "$@" < {IO_DIR}/stdin', "sh", *argv]
        if w.prlimit:
            wrapped = ["prlimit", f"--cpu={cpu}:{cpu + 1}", f"--fsize={int(lim.file_size_bytes)}",
                       f"--nofile={int(lim.open_files)}", "--core=0", "--", *feed]
        else:  # the shell's ulimit (no file-size limit: block units differ between shells)
            wrapped = ["/bin/sh", "-c", f"ulimit -t {cpu}; ulimit -n {int(lim.open_files)}; ulimit -c 0; "
                       f'exec "$@" < {IO_DIR}/stdin', "sh", *argv]
        api = self.client.api
        cpu0, oom0 = cg.cpu_s(), cg.oom_kills()
        t0 = time.perf_counter()
        ex = api.exec_create(w.container.id, wrapped, user=f"{w.uid}:{w.uid}", workdir=str(w.folder),
                             environment=base_env(w.folder))
        outs: dict[int, list[bytes]] = {1: [], 2: []}
        kept = {1: 0, 2: 0}
        cut = [False]
        done = threading.Event()

        def reader():
            try:
                for out, err in api.exec_start(ex["Id"], stream=True, demux=True):
                    for fd, chunk in ((1, out), (2, err)):
                        if chunk:
                            room = output_limit - kept[fd]
                            if room > 0:
                                outs[fd].append(chunk[:room])
                                kept[fd] += min(room, len(chunk))
                            if len(chunk) > max(room, 0):
                                cut[0] = True
            except Exception:  # noqa: BLE001 - the stream ends with the exec (or its kill)
                pass
            finally:
                done.set()

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        killed_by = None
        deadline = time.monotonic() + lim.wall_seconds
        ticks = 0
        while not done.wait(timeout=min(0.02, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                killed_by = "timeout"
                break
            if cg.cpu_s() - cpu0 >= lim.cpu_seconds:
                killed_by = "cpu"
                break
            ticks += 1
            if ticks % 5 == 0 and api.exec_inspect(ex["Id"]).get("Running") is False:
                break  # the main process ended; background processes hold the stream: killed below
        cg.kill_all(keep=w.keep)  # teardown: nothing but the container's init survives
        done.wait(timeout=10)
        dur = time.perf_counter() - t0
        code = api.exec_inspect(ex["Id"]).get("ExitCode")
        used = cg.cpu_s() - cpu0
        if killed_by is None and cg.oom_kills() > oom0:
            killed_by = "memory"
        if killed_by is None and used >= lim.cpu_seconds and code != 0:
            killed_by = "cpu"
        stderr = b"".join(outs[2]).decode("utf-8", "replace")
        if killed_by == "cpu":
            stderr += f"\n[sandbox: killed at the CPU limit of {lim.cpu_seconds:g} s over all processes]\n"
        elif killed_by == "memory":
            stderr += "\n[sandbox: a process was killed at the memory limit]\n"
        return ExecResult(
            command=shown, exit_code=None if killed_by == "timeout" else code,
            stdout=b"".join(outs[1]).decode("utf-8", "replace"), stderr=stderr, duration_s=dur,
            timed_out=killed_by == "timeout", truncated=cut[0], cpu_s=round(used, 4), killed_by=killed_by,
            notes={"isolation": "docker", "image": self.image, "uid": w.uid},
        )

    # -- grading ----------------------------------------------------------------------
    def grading_box(self, files: dict[str, bytes], *, masks: dict[str, str] | None = None,
                    binds: dict[str, str] | None = None, path_override: str | None = None) -> GradingBox:
        if path_override:
            raise SandboxError("the docker sandbox does not use a PATH shim")
        w = self._worker(f"grade-{next(self._grades)}")
        with self._lock:
            w.exec_only, w.binds = dict(masks or {}), dict(binds or {})
        return _DockerBox(self, w).filled(files)

    def _drop(self, name: str, *, keep: bool = False) -> None:
        with self._lock:
            w = self._workers.pop(name, None)
        if w is None:
            return
        self._remove_container(w)
        self.host.drop_folder(w.folder, keep=keep)
        with contextlib.suppress(OSError):
            (w.io / "stdin").unlink()
            w.io.rmdir()
        w.lease.release()

    def _release(self) -> None:  # after every worker is dropped (WorkerSandbox.close)
        """Remove any container of this sandbox the engine still lists (by label)."""
        with contextlib.suppress(Exception):
            for c in self.client.containers.list(all=True, filters={"label": f"scarce_lab.sandbox={self._id}"}):
                c.remove(force=True)
        self._cg_list.write_text("")  # the containers are gone; nothing for the guardian to kill
        self._guardian.close()


class _DockerBox(WorkerBox):
    def writable_filesystems(self) -> list[Path]:
        """The box's folder and, once its container runs, the container's own tmpfs
        (``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``) reached through its init's
        ``/proc/<pid>/root`` (memfd is refused by the grading profile)."""
        out = [self.folder]
        c = self.w.container
        if c is not None:
            with contextlib.suppress(Exception):
                pid = c.attrs["State"]["Pid"]
                out += [Path(f"/proc/{pid}/root{p}") for p in ("/tmp", "/var/tmp", "/run", "/dev/shm")
                        if os.path.isdir(f"/proc/{pid}/root{p}")]
        return out
