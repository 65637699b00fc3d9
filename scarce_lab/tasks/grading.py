"""Build and score a submission against a task's hidden tests.

Public API::

    grade(task, submission_dir, *, build_timeout_s=120.0, work_root=None,
          isolation="auto") -> GradeResult
    collect_submission(task, submission_dir) -> dict[str, bytes]   # files that get graded
    check_submission(task, files) -> str | None                     # static anti-cheat

Scoring (ProgramBench's contract): ``score = passed / total`` (a fraction in [0, 1])
over the task's scored tests (``ignored`` tests excluded); resolved = 100 %; almost
resolved >= 95 %. A violation scores 0.

Procedure:

1. Collect the submission (:func:`collect_submission`): the regular files of
   ``submission_dir`` (recursively; hidden dot-folders such as ``.tmp`` skipped),
   without what the task itself put there (``docs.txt``, ``examples.json`` and the
   workspace copy of the original named ``task.program``).
2. Static anti-cheat (:func:`check_submission`, see :mod:`.anticheat`).
3. Drop build artifacts (ELF files such as a stale ``./executable``, ``*.o``); the rest
   (at most 200 files, 2 MB, else the build fails) is the submission: source files
   and ``compile.sh``. Copy it to a fresh temp folder (the original is not there) and
   run ``bash compile.sh`` under limits (wall ``build_timeout_s``, 2 GiB memory); the
   build must leave an executable ``./executable``.
4. Run every scored test as ``./executable *args`` with its stdin, a wall timeout of
   ``test.timeout_s`` and the reset environment of the sandbox (``LC_ALL=C``).
   Build and tests run where the original is out of reach (see :mod:`.anticheat`):
   with namespaces, a tripwire script is bind-mounted over the original program (and
   the shipped suite folder is hidden), so calling it by name, by path, or via a copy
   made at build time hits the tripwire, which records the attempt; that is a
   violation. Without namespaces, a PATH of shims is used instead (weaker).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..sandbox.base import ResourceLimits
from ..sandbox.local import (
    Isolation,
    allocate_uid_block,
    base_env,
    detect_capabilities,
    run_limited,
)
from .anticheat import Tripwire, check_submission
from .model import Task

__all__ = ["GradeResult", "TestOutcome", "check_submission", "collect_submission", "grade"]

MAX_FILES = 200
MAX_BYTES = 2 << 20
MAX_FILE_BYTES = 8 << 20
WORKSPACE_FILES = ("docs.txt", "examples.json")
BUILD_LOG_LIMIT = 4000
ALMOST_RESOLVED = 0.95


class TestOutcome(BaseModel):
    """Result of one hidden test: ``reason`` is ``""`` when passed, else e.g.
    ``"stdout differs"``, ``"exit code 1 != 0"``, ``"timeout"``."""

    __test__ = False
    id: str
    passed: bool
    exit_code: int | None = None
    timed_out: bool = False
    reason: str = ""
    duration_s: float = 0.0


class GradeResult(BaseModel):
    """Outcome of grading one submission.

    passed/total: scored tests passed / scored tests; score = passed/total in [0, 1]
    (0 on a violation or failed build); resolved: score == 1; almost_resolved:
    score >= 0.95; violation: why the submission was disqualified (None if clean);
    build_ok: ``bash compile.sh`` exited 0 and produced ``./executable``; build_log:
    its stdout+stderr (truncated to 4000 characters); per_test: one TestOutcome per
    scored test (empty when the build failed or a static violation stopped grading);
    isolation: the anti-cheat mode used (``"namespaces"`` or ``"path-shim"``);
    duration_s: wall seconds of the whole grading.
    """

    task_id: str
    passed: int = 0
    total: int = 0
    score: float = 0.0
    resolved: bool = False
    almost_resolved: bool = False
    violation: str | None = None
    build_ok: bool = False
    build_log: str = ""
    per_test: list[TestOutcome] = Field(default_factory=list)
    isolation: str = ""
    duration_s: float = 0.0


def collect_submission(task: Task, submission_dir: str | Path) -> dict[str, bytes]:
    """Files of ``submission_dir`` that are graded: relative posix path -> bytes.

    Skips dot-folders/files at any level (``.tmp``, ``.git``), the workspace files
    (``docs.txt``, ``examples.json``) and the copy of the original named
    ``task.program`` at the top level (a byte-identical copy under another name is
    kept, and :func:`check_submission` flags it). Symlinks are skipped.

    Raises FileNotFoundError if the folder is missing. Files over 8 MB are skipped.
    """
    root = Path(submission_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"submission_dir {root} is not a folder")
    files: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if p.is_symlink() or not p.is_file():
            continue
        key = rel.as_posix()
        if key in WORKSPACE_FILES or key == task.program:
            continue
        if p.stat().st_size > MAX_FILE_BYTES:
            continue
        files[key] = p.read_bytes()
    return files


def is_build_artifact(name: str, data: bytes) -> bool:
    """ELF binaries (e.g. a previously built ``./executable``) and object files are
    build outputs, not source: they are not copied to the build folder."""
    base = name.rsplit("/", 1)[-1]
    return data[:4] == b"\x7fELF" or base.endswith((".o", ".so", ".a"))


def _write_files(dest: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _result(task: Task, total: int, **kw) -> GradeResult:
    return GradeResult(task_id=task.id, total=total, **kw)


def grade(
    task: Task,
    submission_dir: str | Path,
    *,
    build_timeout_s: float = 120.0,
    work_root: str | Path | None = None,
    isolation: str = "auto",
) -> GradeResult:
    """Build ``submission_dir`` and run ``task``'s hidden tests (see module docstring).

    Args:
        task: the task (its ``tests`` are used; ``program``/``program_path`` for the
            anti-cheat).
        submission_dir: the agent's folder (source files + ``compile.sh``).
        build_timeout_s: wall seconds allowed for ``bash compile.sh``.
        work_root: where the temp build folder goes (default: system temp).
        isolation: ``"auto"`` (namespaces when available, else PATH shims) or
            ``"path-shim"`` (force the weaker mode; used by tests).

    Returns a :class:`GradeResult`. Never raises for a bad submission (a missing
    compile.sh is a failed build); raises FileNotFoundError for a missing folder.
    """
    if isolation not in ("auto", "path-shim"):
        raise ValueError(f"isolation must be 'auto' or 'path-shim', got {isolation!r}")
    t0 = time.perf_counter()
    scored = task.scored_tests()
    total = len(scored)
    files = collect_submission(task, submission_dir)
    violation = check_submission(task, files)
    if violation:
        return _result(task, total, violation=violation, isolation="static",
                       duration_s=time.perf_counter() - t0)
    files = {k: v for k, v in files.items() if not is_build_artifact(k, v)}
    if len(files) > MAX_FILES or sum(map(len, files.values())) > MAX_BYTES:
        return _result(task, total, build_log=f"submission too large: {len(files)} files, "
                       f"{sum(map(len, files.values()))} bytes (limits {MAX_FILES}, {MAX_BYTES})",
                       duration_s=time.perf_counter() - t0)
    if "compile.sh" not in files:
        return _result(task, total, build_log="no compile.sh in submission",
                       duration_s=time.perf_counter() - t0)

    caps = detect_capabilities()
    use_ns = isolation == "auto" and caps.private_mounts
    tmp = Path(tempfile.mkdtemp(prefix="scarce-grade-", dir=work_root))
    try:
        tmp.chmod(0o755)
        build = tmp / "build"
        build.mkdir()
        _write_files(build, files)
        (build / ".tmp").mkdir()
        trip = Tripwire.create(tmp / "guard", task, namespaces=use_ns)
        uid = allocate_uid_block() if (use_ns and caps.uid_separation) else None
        if uid is not None:
            for p in [build, *build.rglob("*")]:
                os.lchown(p, uid, uid)
        if use_ns:
            iso = Isolation(
                mode=caps.mode,
                uid=uid,
                keep_dirs=(str(build), str(trip.folder)),
                hidden_paths=trip.hidden_paths(),
                file_masks=trip.file_masks(),
            )
            env = base_env(build)
            mode = "namespaces"
        else:
            iso = Isolation(mode="none")
            env = base_env(build, {"PATH": str(trip.shim_dir)})
            mode = "path-shim"

        blim = ResourceLimits(wall_seconds=build_timeout_s, cpu_seconds=int(build_timeout_s) + 1,
                              memory_bytes=2 << 30, file_size_bytes=64 << 20, max_processes=128)
        b = run_limited(["bash", "compile.sh"] if use_ns else [trip.bash, "compile.sh"],
                        build, blim, env=env, output_limit=BUILD_LOG_LIMIT, isolation=iso)
        log = (b.stdout + ("\n" if b.stdout and b.stderr else "") + b.stderr)[:BUILD_LOG_LIMIT]
        exe = build / "executable"
        build_ok = b.exit_code == 0 and exe.is_file() and not exe.is_symlink()
        if b.timed_out:
            log = (log + f"\n[build timed out after {build_timeout_s} s]")[-BUILD_LOG_LIMIT:]
        elif b.exit_code == 0 and not build_ok:
            log = (log + "\n[compile.sh did not produce ./executable]")[-BUILD_LOG_LIMIT:]
        if build_ok and exe.read_bytes()[:4] == b"\x7fELF":
            v = trip.check_binary(exe.read_bytes())
            if v:
                return _result(task, total, violation=v, build_ok=True, build_log=log,
                               isolation=mode, duration_s=time.perf_counter() - t0)
        outcomes: list[TestOutcome] = []
        if build_ok:
            for t in scored:
                outcomes.append(_run_test(t, build, env, iso))
        hit = trip.attempts()
        if hit:
            return _result(task, total, violation=f"reached for the original program "
                           f"{task.program!r}: {hit}", build_ok=build_ok, build_log=log,
                           per_test=outcomes, isolation=mode,
                           duration_s=time.perf_counter() - t0)
        passed = sum(o.passed for o in outcomes)
        score = passed / total if total else 0.0
        return _result(task, total, passed=passed, score=score, resolved=total > 0 and passed == total,
                       almost_resolved=score >= ALMOST_RESOLVED, build_ok=build_ok,
                       build_log=log, per_test=outcomes, isolation=mode,
                       duration_s=time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_test(t, build: Path, env: dict, iso: Isolation) -> TestOutcome:
    lim = ResourceLimits(wall_seconds=t.timeout_s, cpu_seconds=max(1, int(t.timeout_s) + 1),
                         memory_bytes=1 << 30, file_size_bytes=16 << 20, max_processes=32)
    limit = max(65536, 2 * len(t.expected_stdout) + 1024,
                2 * len(t.expected_stderr or "") + 1024)
    r = run_limited(["./executable", *t.args], build, lim, env=env, stdin=t.stdin,
                    output_limit=limit, isolation=iso)
    if r.timed_out:
        reason = "timeout"
    elif r.exit_code != t.expected_exit_code:
        reason = f"exit code {r.exit_code} != {t.expected_exit_code}"
    elif r.stdout != t.expected_stdout:
        reason = "stdout differs"
    elif t.compare_stderr and r.stderr != (t.expected_stderr or ""):
        reason = "stderr differs"
    else:
        reason = ""
    return TestOutcome(id=t.id, passed=not reason, exit_code=r.exit_code,
                       timed_out=r.timed_out, reason=reason, duration_s=r.duration_s)
