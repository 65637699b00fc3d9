"""Docker sandbox backend (docker SDK): one container per run, shared by all workers.

Public API::

    docker_available(timeout_s=2.0) -> bool     # True when a Docker engine answers a ping
    sb = DockerSandbox(image="python:3.11-slim", limits=ResourceLimits(), output_limit=20_000,
                       cpus=2.0, memory_bytes=2 << 30, pids_limit=256, client=None)
    sb.workdir("w0") -> Path     # host folder, bind-mounted at /work/w0 in the container
    sb.open_slot / run / close_slot / close    # as the Sandbox ABC
    sb.container_kwargs() -> dict              # the settings used to start the container
    grade_programbench(task, submission_dir, client=None) -> GradeResult   # ProgramBench eval

The container: ``network_disabled=True``, CPU quota (``nano_cpus``), memory limit (no
extra swap), ``pids_limit``, all capabilities dropped except those needed to create the
worker folders, ``no-new-privileges``; its main process (``sleep infinity``) runs as
``nobody``. Each worker gets ``/work/<worker>`` (a bind mount of a host temp folder),
owned by its own uid (60001, 60002, ...; 0700), and its commands run as that uid with
``timeout -s KILL`` for the wall limit and ``ulimit`` for CPU seconds, address space and
file size. Closing a slot runs ``kill -9 -1`` as the worker's uid (kills every process
of that uid). Output is truncated to ``output_limit`` characters.

Tests of this backend skip when no engine answers (:func:`docker_available`).
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from .base import ExecResult, ResourceLimits, Sandbox, SandboxError, SlotNotActiveError
from .local import _WORKER_RE, WORKER_UID_BASE

__all__ = ["DockerSandbox", "docker_available", "grade_programbench"]

CONTAINER_WORK = "/work"


def docker_available(timeout_s: float = 2.0) -> bool:
    """True when a Docker engine answers (``docker.from_env().ping()``), else False."""
    try:
        import docker

        client = docker.from_env(timeout=max(1, int(timeout_s)))
        return bool(client.ping())
    except Exception:  # no SDK, no socket, engine down, permission denied
        return False


def _client(client=None):
    if client is not None:
        return client
    try:
        import docker

        c = docker.from_env()
        c.ping()
        return c
    except Exception as e:
        raise SandboxError(f"no Docker engine answers ({type(e).__name__}: {e})") from e


class DockerSandbox(Sandbox):
    """One container, per-worker folders and uids (see module docstring).

    Raises SandboxError at construction when no engine answers or the image is missing.
    """

    network_isolated = True

    def __init__(
        self,
        image: str = "python:3.11-slim",
        limits: ResourceLimits | None = None,
        output_limit: int = 20_000,
        cpus: float = 2.0,
        memory_bytes: int = 2 << 30,
        pids_limit: int = 256,
        client=None,
        root: str | Path | None = None,
    ) -> None:
        if cpus <= 0:
            raise ValueError(f"cpus must be > 0, got {cpus!r}")
        self.image = image
        self.limits = limits or ResourceLimits()
        self.output_limit = output_limit
        self.cpus = cpus
        self.memory_bytes = memory_bytes
        self.pids_limit = pids_limit
        self._owns_root = root is None
        self.root = Path(root if root is not None else tempfile.mkdtemp(prefix="scarce-dsbx-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self._uids: dict[str, int] = {}
        self._slots: dict[str, float] = {}
        self._lock = threading.Lock()
        self.client = _client(client)
        try:
            self.container = self.client.containers.run(**self.container_kwargs())
        except Exception as e:
            raise SandboxError(f"could not start container from image {image!r}: {e}") from e

    def container_kwargs(self) -> dict:
        """Arguments for ``client.containers.run`` (network off, limits, non-root)."""
        return {
            "image": self.image,
            "command": ["sleep", "infinity"],
            "detach": True,
            "auto_remove": False,
            "network_disabled": True,
            "nano_cpus": int(self.cpus * 1e9),
            "mem_limit": self.memory_bytes,
            "memswap_limit": self.memory_bytes,
            "pids_limit": self.pids_limit,
            "user": "65534:65534",
            "cap_drop": ["ALL"],
            "cap_add": ["CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL", "SETUID", "SETGID"],
            "security_opt": ["no-new-privileges"],
            "volumes": {str(self.root): {"bind": CONTAINER_WORK, "mode": "rw"}},
            "working_dir": CONTAINER_WORK,
            "labels": {"scarce_lab": "sandbox"},
        }

    def _exec_root(self, cmd: list[str]) -> None:
        r = self.container.exec_run(cmd, user="0")
        if r.exit_code != 0:
            raise SandboxError(f"container setup {cmd} failed: {r.output[:500]!r}")

    def workdir(self, worker: str) -> Path:
        if not _WORKER_RE.match(worker or ""):
            raise ValueError(f"worker must match {_WORKER_RE.pattern}, got {worker!r}")
        with self._lock:
            new = worker not in self._uids
            if new:
                self._uids[worker] = WORKER_UID_BASE + len(self._uids)
            uid = self._uids[worker]
        if new:
            inner = f"{CONTAINER_WORK}/{worker}"
            self._exec_root(["sh", "-c", f"mkdir -p {inner}/.tmp && chown -R {uid}:{uid} {inner} "
                                         f"&& chmod 700 {inner}"])
        return self.root / worker

    def chown_tree(self, worker: str) -> None:
        """Give ``worker``'s uid everything in its folder (after host-side writes)."""
        uid = self._uids.get(worker)
        if uid is not None:
            self._exec_root(["chown", "-R", f"{uid}:{uid}", f"{CONTAINER_WORK}/{worker}"])

    def open_slot(self, worker: str, duration_s: float) -> None:
        if duration_s <= 0:
            raise ValueError(f"duration_s must be > 0, got {duration_s!r}")
        self.workdir(worker)
        with self._lock:
            self._slots[worker] = time.monotonic() + float(duration_s)

    def slot_remaining(self, worker: str) -> float | None:
        d = self._slots.get(worker)
        return None if d is None else max(0.0, d - time.monotonic())

    def close_slot(self, worker: str) -> None:
        with self._lock:
            self._slots.pop(worker, None)
        uid = self._uids.get(worker)
        if uid is not None:
            try:
                self.container.exec_run(["sh", "-c", "kill -9 -1"], user=f"{uid}:{uid}")
            except Exception:
                pass

    def run(self, worker: str, command: str, limits: ResourceLimits | None = None) -> ExecResult:
        deadline = self._slots.get(worker)
        if deadline is None:
            raise SlotNotActiveError(f"worker {worker!r} has no active execution slot")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SlotNotActiveError(f"worker {worker!r}: its execution slot has expired")
        lim = limits or self.limits
        wall = max(0.1, min(lim.wall_seconds, remaining))
        uid = self._uids[worker]
        inner = f"{CONTAINER_WORK}/{worker}"
        script = (f"ulimit -t {int(lim.cpu_seconds)}; ulimit -v {lim.memory_bytes // 1024}; "
                  f"ulimit -f {lim.file_size_bytes // 512}; {command}")
        env = {"HOME": inner, "TMPDIR": f"{inner}/.tmp", "LC_ALL": "C", "LANG": "C",
               "PATH": "/usr/local/bin:/usr/bin:/bin"}
        t0 = time.perf_counter()
        r = self.container.exec_run(["timeout", "-s", "KILL", f"{wall:.3f}", "sh", "-c", script],
                                    user=f"{uid}:{uid}", workdir=inner, environment=env, demux=True)
        dur = time.perf_counter() - t0
        out, err = r.output if isinstance(r.output, tuple) else (r.output, b"")
        out, err = (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")
        timed_out = r.exit_code == 137 and dur >= wall - 0.05
        return ExecResult(
            command=command,
            exit_code=None if timed_out else r.exit_code,
            stdout=out[: self.output_limit],
            stderr=err[: self.output_limit],
            duration_s=dur,
            timed_out=timed_out,
            truncated=len(out) > self.output_limit or len(err) > self.output_limit,
            notes={"isolation": "docker", "image": self.image},
        )

    def close(self) -> None:
        for w in list(self._slots):
            self.close_slot(w)
        try:
            self.container.remove(force=True)
        except Exception:
            pass
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tar_dir(src: Path, files: dict[str, bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if files is not None:
            for rel, data in files.items():
                info = tarfile.TarInfo(rel)
                info.size = len(data)
                info.mode = 0o755
                tar.addfile(info, io.BytesIO(data))
        else:
            tar.add(str(src), arcname=".")
    return buf.getvalue()


def grade_programbench(task, submission_dir, client=None, *, timeout_s: int = 2400):
    """Grade a submission for a ProgramBench task in the task's image.

    Steps (ProgramBench's evaluation contract): start ``task.image`` with the network
    disabled; put the submission files into ``/workspace``; ``./compile.sh``; then for
    each non-ignored branch: wipe ``/workspace`` except ``executable``, copy
    ``tests/<branch>/`` in, run ``eval/run.sh``, read ``eval/results.xml`` (JUnit).
    Tests missing from the XML count as failed. Returns a
    :class:`scarce_lab.tasks.grading.GradeResult` (score over non-ignored tests).
    Raises SandboxError when no engine answers or the image is missing.
    """
    from ..tasks.anticheat import check_submission
    from ..tasks.grading import GradeResult, TestOutcome, collect_submission
    from ..tasks.programbench import parse_junit, programbench_info

    info = programbench_info(task)
    t0 = time.perf_counter()
    files = collect_submission(task, submission_dir)
    scored = task.scored_tests()
    v = check_submission(task, files)
    if v:
        return GradeResult(task_id=task.id, total=len(scored), violation=v, isolation="docker")
    c = _client(client)
    try:
        ctr = c.containers.run(task.image, command=["sleep", "infinity"], detach=True,
                               network_disabled=True, working_dir="/workspace")
    except Exception as e:
        raise SandboxError(f"could not start image {task.image!r}: {e}") from e
    try:
        ctr.exec_run(["sh", "-c", "rm -rf /workspace/* /workspace/.[!.]*"])
        ctr.put_archive("/workspace", _tar_dir(Path(submission_dir), files))
        b = ctr.exec_run(["timeout", "-s", "KILL", "900", "sh", "-c",
                          "chmod +x ./compile.sh && ./compile.sh && test -x ./executable "
                          "&& cp ./executable /tmp/.scarce-exe"], workdir="/workspace")
        log = (b.output or b"").decode(errors="replace")[-4000:]
        if b.exit_code != 0:
            return GradeResult(task_id=task.id, total=len(scored), build_log=log, isolation="docker",
                               duration_s=time.perf_counter() - t0)
        passed: dict[str, bool] = {}
        for branch in info.branches:
            if branch in info.ignored_branches:
                continue
            ctr.exec_run(["sh", "-c", "rm -rf /workspace/* /workspace/.[!.]* && "
                                      "cp /tmp/.scarce-exe /workspace/executable"])
            ctr.put_archive("/workspace", _tar_dir(info.task_dir / "tests" / branch))
            ctr.exec_run(["timeout", "-s", "KILL", str(timeout_s), "sh", "-c",
                          "chmod +x ./eval/run.sh && ./eval/run.sh"], workdir="/workspace")
            r = ctr.exec_run(["cat", "/workspace/eval/results.xml"])
            if r.exit_code == 0:
                try:
                    passed.update(parse_junit(r.output.decode(errors="replace"), branch))
                except ValueError:
                    pass
        outcomes = [TestOutcome(id=t.id, passed=passed.get(t.id, False),
                                reason="" if passed.get(t.id) else "failed or missing from JUnit XML")
                    for t in scored]
        n = sum(o.passed for o in outcomes)
        score = n / len(scored) if scored else 0.0
        return GradeResult(task_id=task.id, passed=n, total=len(scored), score=score,
                           resolved=bool(scored) and n == len(scored), almost_resolved=score >= 0.95,
                           build_ok=True, build_log=log, per_test=outcomes, isolation="docker",
                           duration_s=time.perf_counter() - t0)
    finally:
        try:
            ctr.remove(force=True)
        except Exception:
            pass
