"""Build and score a submission against a task's hidden tests.

Scoring (ProgramBench's contract): ``score = passed / total`` (a fraction in [0, 1])
over the task's scored tests (``ignored`` tests excluded); resolved = 100 %; almost
resolved >= 95 %. A violation scores 0.

Procedure:

1. Collect the submission (:func:`collect_submission`): the worker's regular files,
   read from the host without following any link (:mod:`scarce_lab.sandbox.fileio`);
   dot-files and dot-folders, ``docs.txt``, ``examples.json``, files not owned by the
   folder's owner (the root-owned execute-only copy of the original) are left out.
   A folder too deep or too large is reported in the build log, never raised.
2. Sure static check (:func:`~.anticheat.check_submission`): a file that is or embeds
   the original program.
3. Build artifacts (ELF files, ``*.o``) are dropped; the rest (at most 200 files,
   2 MB) goes into a fresh grading box of the sandbox (same kind as the workers':
   own uid, namespaces, cgroup totals; the original absent, the
   :class:`~.anticheat.Tripwire` on its paths). ``bash compile.sh`` runs there
   (wall ``build_timeout_s``, 2 GiB memory, 128 processes); it must leave a regular
   file ``./executable``. Every file the build produced or changed is checked for
   the original's bytes.
4. Every scored test runs as ``./executable *args`` with its stdin, a wall limit of
   ``test.timeout_s`` and the sandbox's reset environment (``LC_ALL=C``). A call of
   the original anywhere in build or tests is a violation.
   While the tests run, every file opened or executed on the box's writable file
   systems is checked against the original before the kernel lets it proceed
   (:class:`~.anticheat.ExecGuard`); one that is or embeds it is refused and is a
   violation.

Hidden tests never enter a sandbox: each test's arguments and stdin are passed to its
command, expected outputs stay in the grader.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..sandbox import fileio, gate
from ..sandbox.base import ResourceLimits, Sandbox
from .anticheat import (
    ExecGuard,
    Tripwire,
    candidate_paths,
    check_submission,
    contains_original,
    original_paths,
)
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
    ``"stdout differs"``, ``"exit code 1 != 0"``, ``"timeout"``. Seconds: ``duration_s``."""

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
    its stdout+stderr (truncated to 4000 characters) and what collecting left out;
    per_test: one TestOutcome per scored test (empty when the build failed or a static
    violation stopped grading); isolation: where build and tests ran (``"bwrap"``,
    ``"docker"``, ``"path-shim"``, or ``"static"`` when the static check stopped it);
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


def _collect(submission_dir: str | Path) -> gate.Gathered:
    root = Path(submission_dir)
    if not root.is_dir() or root.is_symlink():
        raise FileNotFoundError(f"submission_dir {root} is not a folder")
    return gate.gather(root, gate.SUBMISSION, owner_only=True)


def _filter(task: Task, got: gate.Gathered) -> dict[str, bytes]:
    out = {}
    for k, v in got.files.items():
        if k in WORKSPACE_FILES:
            continue
        if k == task.program and (contains_original(v, task) or "").startswith("byte-identical"):
            continue  # the workspace copy of the original, left where it was put
        out[k] = v
    return out


def collect_submission(task: Task, submission_dir: str | Path) -> dict[str, bytes]:
    """Files of ``submission_dir`` that are graded: relative posix path -> bytes (see
    the module docstring). Never follows a link.

    Raises FileNotFoundError if the folder is missing.
    """
    return _filter(task, _collect(submission_dir))


def is_build_artifact(name: str, data: bytes) -> bool:
    """ELF binaries (e.g. a previously built ``./executable``) and object files are
    build outputs, not source: they are not copied to the build folder."""
    base = name.rsplit("/", 1)[-1]
    return data[:4] == b"\x7fELF" or base.endswith((".o", ".so", ".a"))


def _result(task: Task, total: int, **kw) -> GradeResult:
    return GradeResult(task_id=task.id, total=total, **kw)


def grade(task: Task, submission_dir: str | Path, *, sandbox: Sandbox | None = None,
          build_timeout_s: float = 120.0, isolation: str = "auto") -> GradeResult:
    """Build ``submission_dir`` and run ``task``'s hidden tests (module docstring).

    Args:
        task: the task (its ``tests``; ``program``/``program_path`` for the anti-cheat).
        submission_dir: the agent's folder (source files + ``compile.sh``).
        sandbox: where build and tests run (a grading box of it); default a fresh
            :class:`~scarce_lab.sandbox.local.LocalSandbox`, closed afterwards.
        build_timeout_s: wall seconds allowed for ``bash compile.sh``.
        isolation: without ``sandbox``: ``"auto"`` (bubblewrap; raises SandboxError
            with the reason where the machine cannot) or ``"path-shim"`` (explicitly
            unisolated, the tripwire only on ``PATH``).

    Returns a :class:`GradeResult`. Never raises for a bad submission (a missing
    compile.sh, a deep or huge folder is a failed build); raises FileNotFoundError for
    a missing folder.
    """
    if isolation not in ("auto", "path-shim"):
        raise ValueError(f"isolation must be 'auto' or 'path-shim', got {isolation!r}")
    t0 = time.perf_counter()
    scored = task.scored_tests()
    total = len(scored)
    got = _collect(submission_dir)
    files = _filter(task, got)
    notes = "".join(f"[left out: {s}]\n" for s in got.left_out[:10])
    if got.left_out_count > 10:
        notes += f"[left out: {got.left_out_count - 10} more]\n"
    violation = check_submission(task, files)
    if got.over_budget and not violation:
        violation = f"the submission folder is {got.over_budget}"
    if violation:
        return _result(task, total, violation=violation, isolation="static", build_log=notes,
                       duration_s=time.perf_counter() - t0)
    files = {k: v for k, v in files.items() if not is_build_artifact(k, v)}
    size = sum(map(len, files.values()))
    if len(files) > MAX_FILES or size > MAX_BYTES:
        return _result(task, total, build_log=notes + f"submission too large: {len(files)} files, {size} bytes "
                       f"(limits {MAX_FILES}, {MAX_BYTES})", duration_s=time.perf_counter() - t0)
    if "compile.sh" not in files:
        return _result(task, total, build_log=notes + "no compile.sh in submission",
                       duration_s=time.perf_counter() - t0)
    own = sandbox is None
    if own:
        from ..sandbox.local import LocalSandbox

        sandbox = LocalSandbox(isolation="none" if isolation == "path-shim" else "auto")
    shim = getattr(sandbox, "isolated", True) is False
    try:
        with Tripwire(task, shim=shim) as trip:
            paths = sandbox_original_paths(sandbox, task)
            try:
                box = sandbox.grading_box(files, masks=trip.masks(paths), binds=trip.binds(),
                                          path_override=str(trip.shim_dir) if shim else None)
            except fileio.ToolError as exc:  # a path the box refuses: the worker's failed build
                return _result(task, total, build_log=notes + f"the submission could not be copied: {exc}",
                               isolation="static", duration_s=time.perf_counter() - t0)
            with box:
                res = _build_and_test(task, box, files, scored, trip, build_timeout_s, notes)
        mode = "path-shim" if shim else getattr(sandbox, "kind", None) or getattr(
            getattr(sandbox, "capabilities", None), "mode", "sandbox")
        return _result(task, total, isolation=mode, duration_s=time.perf_counter() - t0, **res)
    finally:
        if own:
            sandbox.close()


def sandbox_original_paths(sandbox: Sandbox, task: Task) -> list[str]:
    """Paths of the original program inside ``sandbox``'s boxes (the backend decides,
    e.g. an image's layout), else those on this machine."""
    return sandbox.program_paths(candidate_paths(task)) or original_paths(task)


def _build_and_test(task, box, files, scored, trip, build_timeout_s, notes) -> dict:
    blim = ResourceLimits(wall_seconds=build_timeout_s, cpu_seconds=build_timeout_s + 1,
                          memory_bytes=2 << 30, file_size_bytes=64 << 20, max_processes=128)
    b = box.run(["bash", "compile.sh"], blim, output_limit=BUILD_LOG_LIMIT)
    log = notes + (b.stdout + ("\n" if b.stdout and b.stderr else "") + b.stderr)[:BUILD_LOG_LIMIT]
    after = gate.gather(box.folder, gate.BUILD_OUTPUT, skip_dot=False)
    if after.over_budget:  # what the build left cannot all be checked: not graded
        return {"violation": f"the build's output is {after.over_budget}", "build_ok": False, "build_log": log}
    exe = after.files.get("executable")
    build_ok = b.exit_code == 0 and exe is not None
    if b.timed_out:
        log = (log + f"\n[build timed out after {build_timeout_s} s]")[-BUILD_LOG_LIMIT:]
    elif b.exit_code == 0 and not build_ok:
        log = (log + "\n[compile.sh did not produce ./executable (a regular file)]")[-BUILD_LOG_LIMIT:]
    for rel, data in sorted(after.files.items()):
        if files.get(rel) == data:
            continue  # a submitted file, unchanged (already checked)
        hit = contains_original(data, task)
        if hit:
            return {"violation": f"the build produced {rel}: {hit}", "build_ok": build_ok, "build_log": log}
    outcomes: list[TestOutcome] = []
    guard_hit = ""
    if build_ok:
        with ExecGuard(task, box.writable_filesystems()) as guard:
            for t in scored:
                outcomes.append(_run_test(t, box))
            guard_hit = guard.hits()
        if guard.problem:
            log = (log + f"\n[grading: files run by the tests are not checked: {guard.problem}]")[-BUILD_LOG_LIMIT:]
    if guard_hit:
        return {"violation": guard_hit, "build_ok": build_ok, "build_log": log, "per_test": outcomes}
    hit = trip.attempts()
    if hit:
        return {"violation": f"reached for the original program {task.program!r}: {hit}", "build_ok": build_ok,
                "build_log": log, "per_test": outcomes}
    return {**scores(outcomes, len(scored)), "build_ok": build_ok, "build_log": log}


def scores(outcomes: list[TestOutcome], total: int) -> dict:
    """The score fields of a :class:`GradeResult` for ``outcomes`` of ``total`` scored
    tests (the module docstring's rule; also ProgramBench grading's)."""
    passed = sum(o.passed for o in outcomes)
    score = passed / total if total else 0.0
    return {"passed": passed, "score": score, "resolved": total > 0 and passed == total,
            "almost_resolved": score >= ALMOST_RESOLVED, "per_test": outcomes}


def _run_test(t, box) -> TestOutcome:
    lim = ResourceLimits(wall_seconds=t.timeout_s, cpu_seconds=max(1.0, t.timeout_s + 1),
                         memory_bytes=1 << 30, file_size_bytes=16 << 20, max_processes=32)
    limit = max(65536, 2 * len(t.expected_stdout) + 1024, 2 * len(t.expected_stderr or "") + 1024)
    r = box.run(["./executable", *t.args], lim, stdin=t.stdin.encode("utf-8", "surrogateescape"),
                output_limit=limit)
    if r.timed_out:
        reason = "timeout"
    elif r.exit_code != t.expected_exit_code:
        reason = f"exit code differs from the expected {t.expected_exit_code}"
    elif r.stdout != t.expected_stdout:
        reason = "stdout differs"
    elif t.compare_stderr and r.stderr != (t.expected_stderr or ""):
        reason = "stderr differs"
    else:
        reason = ""
    # the submission's own exit code is kept only when it is the expected one: a failing
    # code is chosen by the submission and could carry a byte of the hidden stdin
    return TestOutcome(id=t.id, passed=not reason, exit_code=r.exit_code if r.exit_code == t.expected_exit_code
                       else None, timed_out=r.timed_out,
                       reason=reason, duration_s=r.duration_s)

