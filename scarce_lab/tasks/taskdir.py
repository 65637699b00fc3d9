"""Task directories (the format of the authors' CloudCast task, ``--task dir:PATH``):
a loader, and the verifier run inside the sandbox.

A task directory holds::

    task.toml          metadata and limits ([verifier] timeout_sec, [environment] memory_mb)
    instruction.md     the problem statement shown to the agents
    environment/       the workspace: the program to evolve (the one top-level *.py file,
                       or the file named by task.toml's [scarce_lab] program) and its data
    tests/compute_reward.py
                       the verifier: ``python3 tests/compute_reward.py --app-dir APP
                       --output-dir OUT`` writes ``OUT/reward.json`` with ``score`` in [0, 1]

The verifier never runs on the host: :class:`SandboxVerifier` copies the workspace
(with the current program) and ``tests/`` into a fresh grading box of the sandbox
(``local``: bubblewrap; ``docker``; ``auto``), runs it there under limits, and reads
``reward.json`` back link-safely. Whatever it writes, a score that is not a finite
number in [0, 1] is no score (the reason says why), never a made-up one.

Limits on what is loaded (a task directory is input, possibly hostile): at most
``MAX_FILES`` files of at most ``MAX_FILE_BYTES`` each, no links (an error), dot-files
left out.
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from scarce_lab.envs.economy.program import ProgramEpisode, ProgramState, Verification

MAX_FILES = 400
MAX_FILE_BYTES = 8 << 20
VERIFIER = "tests/compute_reward.py"


class TaskDirError(ValueError):
    """A task directory that does not have the format (names the path and the part)."""


@dataclass(frozen=True)
class TaskDir:
    """A loaded task directory: ``workspace`` and ``tests`` map relative paths to bytes;
    ``program`` is the workspace path of the program to evolve."""

    task_id: str
    path: Path
    instruction: str
    program: str
    workspace: dict[str, bytes]
    tests: dict[str, bytes]
    toml: dict = field(default_factory=dict)

    @property
    def program_text(self) -> str:
        return self.workspace[self.program].decode("utf-8")

    def timeout_s(self, cap: float) -> float:
        """The verifier's wall limit: task.toml's ``[verifier] timeout_sec``, at most ``cap``."""
        t = self.toml.get("verifier", {}).get("timeout_sec", cap)
        return min(float(t), cap) if isinstance(t, int | float) and not isinstance(t, bool) and t > 0 else cap

    def memory_bytes(self, cap: int = 4 << 30) -> int:
        """task.toml's ``[environment] memory_mb`` in bytes, at most ``cap``."""
        m = self.toml.get("environment", {}).get("memory_mb")
        if isinstance(m, int) and not isinstance(m, bool) and m > 0:
            return min(m << 20, cap)
        return 1 << 30


def _files(root: Path, part: str) -> dict[str, bytes]:
    """Regular files under ``root`` (dot-files left out); a link anywhere is an error."""
    import os

    from scarce_lab.sandbox.fileio import ToolError, collect

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            if os.path.islink(os.path.join(dirpath, name)):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                raise TaskDirError(f"{root}: {part}: {rel} is a link (a task directory holds regular files only)")

    try:
        got = collect(root, max_files=MAX_FILES, max_file_bytes=MAX_FILE_BYTES)
    except ToolError as exc:
        raise TaskDirError(f"{root}: {part}: {exc}") from None
    if got.skipped:
        raise TaskDirError(f"{root}: {part}: files left out: {'; '.join(got.skipped[:5])}")
    return dict(got.files)


def load_task_dir(path: Path | str) -> TaskDir:
    """Load and check a task directory (see module docstring).

    Raises:
        TaskDirError: a missing part (task.toml, instruction.md, environment/,
            tests/compute_reward.py), a task.toml that is not TOML, text that is not
            UTF-8, no program or several candidates, too many or too large files.
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise TaskDirError(f"{root}: not a task directory (no such folder)")
    for part in ("task.toml", "instruction.md"):
        if not (root / part).is_file() or (root / part).is_symlink():
            raise TaskDirError(f"{root}: {part} missing (a task directory has task.toml, instruction.md, "
                               "environment/, tests/compute_reward.py)")
    for part in ("environment", "tests"):
        if not (root / part).is_dir() or (root / part).is_symlink():
            raise TaskDirError(f"{root}: {part}/ missing or a link")
    try:
        toml = tomllib.loads((root / "task.toml").read_text(encoding="utf-8"))
        instruction = (root / "instruction.md").read_text(encoding="utf-8")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskDirError(f"{root}: task.toml / instruction.md: {exc}") from None
    workspace = _files(root / "environment", "environment/")
    tests = _files(root / "tests", "tests/")
    if VERIFIER.split("/", 1)[1] not in tests:
        raise TaskDirError(f"{root}: {VERIFIER} missing")
    named = toml.get("scarce_lab", {}).get("program")
    if named is not None:
        if not isinstance(named, str) or named not in workspace:
            raise TaskDirError(f"{root}: task.toml [scarce_lab] program = {named!r} is not a file of environment/")
        program = named
    else:
        tops = sorted(k for k in workspace if "/" not in k and k.endswith(".py"))
        if len(tops) != 1:
            raise TaskDirError(f"{root}: environment/ must hold exactly one top-level .py program (found {tops}); "
                               "or name it in task.toml: [scarce_lab] program = \"...\"")
        program = tops[0]
    try:
        workspace[program].decode("utf-8")
    except UnicodeDecodeError:
        raise TaskDirError(f"{root}: environment/{program} is not UTF-8 text") from None
    return TaskDir(root.resolve().name, root.resolve(), instruction, program, workspace, tests, toml)


def parse_reward(data: bytes | None) -> tuple[float | None, str]:
    """``(score, reason)`` from a verifier's ``reward.json`` bytes: the ``score`` field
    if it is a finite number in [0, 1], else None with the reason."""
    if data is None:
        return None, "no reward.json"
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"reward.json is not JSON ({exc})"
    if not isinstance(obj, dict):
        return None, f"reward.json holds {type(obj).__name__}, not an object"
    s = obj.get("score")
    if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or not 0.0 <= s <= 1.0:
        return None, f"reward.json score {s!r} is not a number in [0, 1]"
    reason = obj.get("reason", "")
    return float(s), reason if isinstance(reason, str) else ""


class SandboxVerifier:
    """Runs a task directory's verifier on a program inside the sandbox.

    ``sandbox``: ``local`` (bubblewrap), ``docker`` or ``auto``; ``image``: the docker
    image (None: the sandbox's own). A fresh sandbox and grading box per verification
    (nothing survives between runs).

    Raises (from :meth:`__call__`):
        scarce_lab.sandbox.SandboxError: the backend cannot isolate here (the run
            stops: a verifier never runs unsandboxed).
    """

    def __init__(self, task: TaskDir, *, sandbox: str = "local", timeout_s: float = 300.0, image: str | None = None):
        self.task = task
        self.kind = sandbox
        self.image = image
        self.timeout_s = task.timeout_s(timeout_s)

    def __call__(self, program: str) -> Verification:
        from scarce_lab.sandbox import ResourceLimits, make_sandbox
        from scarce_lab.sandbox.fileio import ToolError, read_file

        files = {f"app/{k}": v for k, v in self.task.workspace.items()}
        files[f"app/{self.task.program}"] = program.encode("utf-8")
        files.update({f"tests/{k}": v for k, v in self.task.tests.items()})
        limits = ResourceLimits(wall_seconds=self.timeout_s, cpu_seconds=self.timeout_s,
                                memory_bytes=self.task.memory_bytes())
        t0 = time.monotonic()
        sb = make_sandbox(self.kind, **({"image": self.image} if self.image else {}))
        backend = type(sb).__name__
        try:
            with sb.grading_box(files) as box:
                r = box.run(["python3", VERIFIER, "--app-dir", "app", "--output-dir", "out"], limits)
                try:
                    data = read_file(box.folder, "out/reward.json", limit=1 << 20).data
                except ToolError:
                    data = None
        finally:
            sb.close()
        score, reason = parse_reward(data)
        if r.timed_out:
            score, reason = None, f"verifier timed out after {self.timeout_s:g} s"
        elif data is None:
            reason = f"verifier exited {r.exit_code} without reward.json: {(r.stderr or '')[-300:]}"
        return Verification(score, reason, time.monotonic() - t0, backend, r.exit_code)


class ProgramTask:
    """The runner's handle on a task directory: one :class:`ProgramEpisode` per episode,
    the program carried over between episodes (checkpointed with :meth:`state`)."""

    def __init__(self, task: TaskDir, *, sandbox: str = "local", timeout_s: float = 300.0, max_steps: int = 10,
                 verify=None, image: str | None = None):
        self.task = task
        self.verify = verify or SandboxVerifier(task, sandbox=sandbox, timeout_s=timeout_s, image=image)
        self.max_steps = max_steps
        self.program = ProgramState(task.program_text)

    def episode(self, *, frozen: bool = False) -> ProgramEpisode:
        """The next episode; ``frozen`` (evaluation): on a copy, so nothing carries over."""
        import copy

        state = copy.deepcopy(self.program) if frozen else self.program
        return ProgramEpisode(self.task.instruction, state, self.verify, max_steps=self.max_steps)

    def info(self) -> dict:
        """The episode's task record: the task id (as ``item_id``) and the instruction."""
        return {"item_id": self.task.task_id, "question": self.task.instruction[:2000]}

    def state(self) -> dict:
        return {"program": self.program.program, "best_score": self.program.best_score,
                "verifications": list(self.program.verifications)}

    def load_state(self, state: dict) -> None:
        self.program = ProgramState(state["program"], state["best_score"], list(state["verifications"]))
