"""ProgramBench grading in the task's own docker image (ProgramBench's evaluation contract).

Steps: start ``task.image`` with the network disabled, all capabilities dropped,
``no-new-privileges``, memory and pids limits; put the submission files (collected
without following links) into ``/workspace``; ``./compile.sh``; then for each
non-ignored branch: wipe ``/workspace`` except ``executable``, copy ``tests/<branch>/``
in, run ``eval/run.sh``, read ``eval/results.xml`` (JUnit). Tests missing from the XML
count as failed. Score over non-ignored tests.

Limitation of ProgramBench's contract, stated: its test scripts run inside the
container next to the built executable, so these hidden tests are reachable from the
program under test while it runs. The shipped SCARCE tasks are graded by
:func:`scarce_lab.tasks.grading.grade` instead, where hidden tests never enter a sandbox.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import time
from pathlib import Path

from ..sandbox.base import SandboxError

__all__ = ["grade_programbench"]

OUTPUT_LIMIT = 4000


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


def _limited(result, limit: int = OUTPUT_LIMIT) -> str:
    return (result.output or b"")[-limit:].decode(errors="replace")


def grade_programbench(task, submission_dir, client=None, *, timeout_s: int = 2400,
                       memory_bytes: int = 4 << 30, pids_limit: int = 512):
    """Grade a submission for a ProgramBench task in the task's image (module docstring).

    Returns a :class:`scarce_lab.tasks.grading.GradeResult`. Raises SandboxError when no
    engine answers or the image is missing.
    """
    from ..sandbox.docker_image import engine_client
    from .grading import GradeResult, TestOutcome, check_submission, collect_submission, scores
    from .programbench import parse_junit, programbench_info

    info = programbench_info(task)
    t0 = time.perf_counter()
    files = collect_submission(task, submission_dir)
    scored = task.scored_tests()
    v = check_submission(task, files)
    if v:
        return GradeResult(task_id=task.id, total=len(scored), violation=v, isolation="docker")
    c = client or engine_client(start=True)
    try:
        ctr = c.containers.run(task.image, command=["sleep", "infinity"], detach=True, init=True,
                               network_disabled=True, working_dir="/workspace", cap_drop=["ALL"],
                               cap_add=["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"],
                               security_opt=["no-new-privileges"], mem_limit=memory_bytes,
                               memswap_limit=memory_bytes, pids_limit=pids_limit,
                               labels={"scarce_lab": "programbench-grade"})
    except Exception as e:  # noqa: BLE001
        raise SandboxError(f"could not start image {task.image!r}: {e}") from e
    try:
        ctr.exec_run(["sh", "-c", "rm -rf /workspace/* /workspace/.[!.]*"])
        ctr.put_archive("/workspace", _tar_dir(Path(submission_dir), files))
        b = ctr.exec_run(["timeout", "-s", "KILL", "900", "sh", "-c",
                          "chmod +x ./compile.sh && ./compile.sh && test -x ./executable "
                          "&& cp ./executable /tmp/.scarce-exe"], workdir="/workspace")
        log = _limited(b)
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
                          "chmod +x ./eval/run.sh && ./eval/run.sh >/dev/null 2>&1"], workdir="/workspace")
            r = ctr.exec_run(["head", "-c", "50000000", "/workspace/eval/results.xml"])
            if r.exit_code == 0:
                with contextlib.suppress(ValueError):
                    passed.update(parse_junit(r.output.decode(errors="replace"), branch))
        outcomes = [TestOutcome(id=t.id, passed=passed.get(t.id, False),
                                reason="" if passed.get(t.id) else "failed or missing from JUnit XML")
                    for t in scored]
        return GradeResult(task_id=task.id, total=len(scored), **scores(outcomes, len(scored)), build_ok=True,
                           build_log=log, isolation="docker", duration_s=time.perf_counter() - t0)
    finally:
        try:
            ctr.remove(force=True)
        except Exception:  # noqa: BLE001
            pass
