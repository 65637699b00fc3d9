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
number in [0, 1] is no score (the reason says why), never a made-up one. The program
under test is not in that box: it runs in a box of its own and the verifier's
``import`` gets a proxy that forwards calls as JSON data (:mod:`.program_proxy`), so
the program cannot reach the verifier's memory, files or processes to set its score.

Limits on what is loaded (a task directory is input, possibly hostile): at most
``MAX_FILES`` files of at most ``MAX_FILE_BYTES`` each, no links, FIFOs or devices (an
error), dot-files left out; task.toml at most ``MAX_TOML_BYTES`` and checked where this
loader reads it (:func:`check_task_toml`), instruction.md at most ``MAX_INSTRUCTION_BYTES``.
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILES = 400
MAX_FILE_BYTES = 8 << 20
MAX_DEPTH = 32
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
        """The verifier's wall limit: task.toml's ``[verifier] timeout_sec`` (checked by
        :func:`check_task_toml`), at most ``cap``; ``cap`` when the task names none."""
        t = self.toml.get("verifier", {}).get("timeout_sec")
        return cap if t is None else min(float(t), cap)

    def memory_bytes(self, cap: int = 4 << 30) -> int:
        """task.toml's ``[environment] memory_mb`` in bytes, at most ``cap``; 1 GiB when
        the task names none."""
        m = self.toml.get("environment", {}).get("memory_mb")
        return 1 << 30 if m is None else min(int(m) << 20, cap)


@dataclass(frozen=True)
class Verification:
    """One verifier run (what :class:`SandboxVerifier` returns): ``score`` in [0, 1] or
    None (no usable score), ``reason`` (the verifier's or ours), ``seconds`` of wall
    time, the sandbox ``backend`` (its class name), the verifier's ``exit_code``
    (None when it never ran to an end), ``program``: how the program under test failed
    ('' when it answered every call: a timeout, an answer over the limit, its process
    ending, an import error), ``calls``: requests the verifier made to it."""

    score: float | None
    reason: str
    seconds: float = 0.0
    backend: str = ""
    exit_code: int | None = None
    program: str = ""
    calls: int = 0

    def to_json(self) -> dict:
        """As recorded: the reason cut to 500 characters, the seconds rounded to ms."""
        return {"score": self.score, "reason": self.reason[:500], "seconds": round(self.seconds, 3),
                "backend": self.backend, "exit_code": self.exit_code, "program": self.program[:500],
                "calls": self.calls}


#: Bounds on task.toml and instruction.md (bytes): both are read whole into memory and
#: the instruction goes into every prompt.
MAX_TOML_BYTES = 64 << 10
MAX_INSTRUCTION_BYTES = 1 << 20
#: The largest reward.json read back from a verifier (bytes); a larger one is no score.
MAX_REWARD_BYTES = 1 << 20
#: The smallest ``memory_mb`` a verifier gets (below it ``python3`` cannot start, and
#: every score would be a missing one).
MIN_MEMORY_MB = 64


def check_task_toml(toml: dict, where: str) -> None:
    """Check the parts of task.toml this loader uses; every other key is left alone
    (the format's ``[metadata]``, ``[agent]``, ... are not read).

    - ``[verifier]``, ``[environment]``, ``[scarce_lab]``: tables when present;
    - ``[verifier] timeout_sec``: a finite number > 0 (seconds);
    - ``[environment] memory_mb``: a whole number >= ``MIN_MEMORY_MB`` (4096.0 counts);
    - ``[scarce_lab] program``: a string (checked against environment/ by the loader).

    Raises:
        TaskDirError: naming the key and the value (never a silent default in its place).
    """
    for table in ("verifier", "environment", "scarce_lab"):
        if table in toml and not isinstance(toml[table], dict):
            raise TaskDirError(f"{where}: task.toml {table} = {toml[table]!r} must be a table ([{table}])")
    t = toml.get("verifier", {}).get("timeout_sec")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                          or not math.isfinite(t) or t <= 0):
        raise TaskDirError(f"{where}: task.toml [verifier] timeout_sec = {t!r} is not a number of seconds > 0")
    m = toml.get("environment", {}).get("memory_mb")
    if m is not None and (isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m)
                          or m != int(m) or m < MIN_MEMORY_MB):
        raise TaskDirError(f"{where}: task.toml [environment] memory_mb = {m!r} is not a whole number "
                           f">= {MIN_MEMORY_MB}")


def _read_bounded(root: Path, name: str, limit: int) -> bytes:
    """The regular file ``root/name``, read link-safely (no link, FIFO or device followed
    or opened blocking: :func:`scarce_lab.sandbox.fileio.read_file`), at most ``limit`` bytes.

    Raises:
        TaskDirError: not a regular file, or larger than ``limit``.
    """
    from ..sandbox.fileio import ToolError, read_file

    try:
        data = read_file(root.resolve(), name, limit + 1).data
    except ToolError as exc:
        raise TaskDirError(f"{root}: {exc}") from None
    if len(data) > limit:
        raise TaskDirError(f"{root}: {name} is larger than {limit} bytes")
    return data


def _files(root: Path, part: str) -> dict[str, bytes]:
    """Regular files under ``root`` (dot-files left out); a link, FIFO, socket or device
    anywhere, folders deeper than ``MAX_DEPTH`` or more than ``20 * MAX_FILES`` entries
    are an error."""
    import os
    import stat

    from ..sandbox import gate
    from ..sandbox.fileio import ToolError

    # one bounded, iterative pass (os.walk recursed: 1,500 nested folders raised
    # RecursionError); the same depth bound as collect's, and at most 20 entries per file
    stack, seen = [(str(root), 0)], 0
    while stack:
        folder, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TaskDirError(f"{root}: {part}: {os.path.relpath(folder, root)} is deeper than {MAX_DEPTH} folders")
        with os.scandir(folder) as it:
            for entry in it:
                seen += 1
                if seen > 20 * MAX_FILES:
                    raise TaskDirError(f"{root}: {part}: more than {20 * MAX_FILES} files and folders")
                rel = os.path.relpath(entry.path, root)
                if entry.is_symlink():
                    raise TaskDirError(f"{root}: {part}: {rel} is a link (a task directory holds regular files only)")
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    stack.append((entry.path, depth + 1))
                elif not stat.S_ISREG(mode):
                    raise TaskDirError(f"{root}: {part}: {rel} is not a regular file (a FIFO, socket or device; "
                                       "a task directory holds regular files only)")

    budget = gate.Budget(total_bytes=MAX_FILES * MAX_FILE_BYTES, file_bytes=MAX_FILE_BYTES, files=MAX_FILES,
                         entries=20 * MAX_FILES, depth=MAX_DEPTH)
    try:  # the one reader of folders (sandbox.gate): every file read whole or named as left out
        got = gate.gather(root, budget)
    except ToolError as exc:
        raise TaskDirError(f"{root}: {part}: {exc}") from None
    if got.left_out_count or got.over_budget:
        why = "; ".join(got.left_out[:5]) or got.over_budget
        raise TaskDirError(f"{root}: {part}: files left out: {why}")
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
        toml = tomllib.loads(_read_bounded(root, "task.toml", MAX_TOML_BYTES).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TaskDirError(f"{root}: task.toml: {type(exc).__name__}: {str(exc)[:200]}") from None
    try:
        instruction = _read_bounded(root, "instruction.md", MAX_INSTRUCTION_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskDirError(f"{root}: instruction.md: {exc}") from None
    check_task_toml(toml, str(root))
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
    def one_value_per_key(pairs: list) -> dict:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a key appears twice ({sorted({k for k in keys if keys.count(k) > 1})})")
        return dict(pairs)

    try:
        obj = json.loads(data.decode("utf-8"), object_pairs_hook=one_value_per_key)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return None, f"reward.json is not JSON with one value per key ({exc})"
    if not isinstance(obj, dict):
        return None, f"reward.json holds {type(obj).__name__}, not an object"
    s = obj.get("score")
    if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or not 0.0 <= s <= 1.0:
        return None, f"reward.json score {s!r} is not a number in [0, 1]"
    reason = obj.get("reason", "")
    return float(s), reason if isinstance(reason, str) else ""


class SandboxVerifier:
    """Runs a task directory's verifier on a program inside the sandbox, the program in
    a box of its own behind a proxy (:mod:`scarce_lab.tasks.program_proxy`: nothing the
    program does reaches the verifier's memory, files or processes; it only answers).

    ``sandbox``: ``local`` (bubblewrap), ``docker`` or ``auto``; ``image``: the docker
    image (None: the sandbox's own). Fresh boxes per verification (nothing survives
    between runs). ``call_timeout_s``: the program's real seconds to import and for each
    call the verifier makes (default: half the verifier's limit); ``answer_bytes``: the
    largest answer of one call. A program over either is a failed program (the
    verifier sees ``ProgramError``; :attr:`Verification.program` says what), never a
    crash of the run.

    Raises (from :meth:`__call__`):
        scarce_lab.sandbox.SandboxError: the backend cannot isolate here (the run
            stops: a verifier never runs unsandboxed).
    """

    def __init__(self, task: TaskDir, *, sandbox: str = "local", timeout_s: float = 300.0, image: str | None = None,
                 call_timeout_s: float | None = None, answer_bytes: int | None = None):
        from .program_proxy import MAX_ANSWER_BYTES

        self.task = task
        self.kind = sandbox
        self.image = image
        self.timeout_s = task.timeout_s(timeout_s)
        self.call_timeout_s = self.timeout_s / 2 if call_timeout_s is None else min(call_timeout_s, self.timeout_s)
        self.answer_bytes = MAX_ANSWER_BYTES if answer_bytes is None else int(answer_bytes)

    def __call__(self, program: str) -> Verification:
        import threading

        from ..sandbox import ResourceLimits, make_sandbox
        from ..sandbox.fileio import ToolError, read_file
        from .program_proxy import (
            HOST,
            HOST_FILE,
            MAX_REQUEST_BYTES,
            PROGRAM_SOCKET,
            PROXY,
            VERIFIER_SOCKET,
            ProgramBridge,
        )

        app = {f"app/{k}": v for k, v in self.task.workspace.items()}
        prog_files = {**app, f"app/{self.task.program}": program.encode("utf-8"),
                      HOST_FILE: HOST.format(sock=PROGRAM_SOCKET, app="app", program=self.task.program).encode()}
        files = {**app, f"app/{self.task.program}": PROXY.format(sock=VERIFIER_SOCKET, limit=MAX_REQUEST_BYTES).encode()}
        files.update({f"tests/{k}": v for k, v in self.task.tests.items()})
        limits = ResourceLimits(wall_seconds=self.timeout_s, cpu_seconds=self.timeout_s,
                                memory_bytes=self.task.memory_bytes())
        t0 = time.monotonic()
        sb = make_sandbox(self.kind, **({"image": self.image} if self.image else {}))
        backend = type(sb).__name__
        try:
            with ProgramBridge(call_timeout_s=self.call_timeout_s, answer_bytes=self.answer_bytes) as bridge, \
                    sb.grading_box(prog_files, binds=bridge.program_binds()) as pbox, \
                    sb.grading_box(files, binds=bridge.verifier_binds()) as box:
                host = threading.Thread(target=pbox.run, args=(["python3", "-I", HOST_FILE], limits), daemon=True)
                host.start()
                stopped = threading.Event()

                def stop() -> None:  # every process of the program's box killed (verified), once
                    if not stopped.is_set():
                        stopped.set()
                        sb.close_slot(pbox.w.name)
                bridge.start(stop)
                r = box.run(["python3", VERIFIER, "--app-dir", "app", "--output-dir", "out"], limits)
                stop()
                host.join(timeout=10.0)
                too_big = None
                try:
                    got = read_file(box.folder, "out/reward.json", limit=MAX_REWARD_BYTES)
                    data = got.data
                    if got.size > MAX_REWARD_BYTES:
                        too_big = got.size
                except ToolError:
                    data = None
        finally:
            sb.close()
        score, reason = parse_reward(data)
        if too_big is not None:  # read only in part: never parse a prefix as the reward
            score, reason = None, f"reward.json is {too_big} bytes, over {MAX_REWARD_BYTES}"
        if r.timed_out:
            score, reason = None, f"verifier timed out after {self.timeout_s:g} s"
        elif data is None:
            reason = f"verifier exited {r.exit_code} without reward.json: {(r.stderr or '')[-300:]}"
        return Verification(score, reason, time.monotonic() - t0, backend, r.exit_code, bridge.failure, bridge.calls)
