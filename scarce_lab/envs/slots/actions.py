"""The solver's legal actions now: an action mask, derived from one worker's state and
its file names (pure; no I/O: the runner lists the files).

Rules (the SCARCE paper's tool set):

============================  ===============================================================
tool                          legal when
============================  ===============================================================
``list_files``                always (active or in its slot)
``read_file``                 the folder holds at least one file; ``path`` is one of them
``write_file``                always; ``path`` a non-empty relative path inside the folder
``request_execution_slot``    the worker holds no open slot; ``duration_seconds`` in
                              ``1..slot_cap_s``
``run_command``               only inside the worker's granted slot; a non-empty command
``save_persistent_memory``    always
``submit``                    ``compile.sh`` exists: the grader builds a submission with
                              ``bash compile.sh`` (:mod:`scarce_lab.tasks.grading`), so
                              without it there is nothing to submit
============================  ===============================================================

A solver moves only while ``active`` or ``in_slot`` (:meth:`~.world.ScarceWorld.next_event`);
:class:`LegalActions` also answers *why* a tool is not legal now, with the legal
alternatives, which is the text a solver is shown when an illegal call still arrives.
The runner asks :meth:`~.world.ScarceWorld.legal_actions`; an agent derives the same
mask from its :class:`~.observations.SolverObservation` (``in_slot``, ``files``,
``max_duration_s``) with :func:`legal_actions`.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The solver's tools in the order they are offered.
SOLVER_TOOLS: tuple[str, ...] = (
    "list_files", "read_file", "write_file", "request_execution_slot", "run_command",
    "save_persistent_memory", "submit",
)
#: The file a submission needs before ``submit`` is legal.
BUILD_SCRIPT = "compile.sh"
#: A relative path of 1..3 segments, none starting with a dot (no ``..``, no hidden
#: files, no absolute path), each 1..40 characters of ``[A-Za-z0-9_.-]``.
WRITE_PATH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}){0,2}$"
_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_REST = _FIRST | {".", "-"}


def writable_path(path: str) -> bool:
    """Whether ``path`` matches :data:`WRITE_PATH_PATTERN` (checked without ``re``:
    this package imports nothing beyond pure data modules)."""
    parts = str(path).split("/")
    return 1 <= len(parts) <= 3 and all(
        1 <= len(p) <= 40 and p[0] in _FIRST and all(c in _REST for c in p[1:]) for p in parts)


@dataclass(frozen=True)
class LegalActions:
    """The legal solver actions of one worker at one step.

    Attributes:
        worker: the worker.
        tools: legal tool names, in :data:`SOLVER_TOOLS` order.
        read_paths: files ``read_file`` may name (the worker's current files).
        max_duration_s: the slot cap; ``request_execution_slot`` durations lie in
            ``1..max_duration_s`` seconds.
        in_slot: whether the worker holds its granted slot now.
        can_submit: whether :data:`BUILD_SCRIPT` exists.
    """

    worker: str
    tools: tuple[str, ...]
    read_paths: tuple[str, ...]
    max_duration_s: int
    in_slot: bool
    can_submit: bool

    def why_not(self, tool: str) -> str | None:
        """Why ``tool`` is not legal now (``None`` when it is)."""
        if tool in self.tools:
            return None
        if tool not in SOLVER_TOOLS:
            return f"unknown tool {tool!r}"
        if tool == "run_command":
            return "run_command needs a granted execution slot: call request_execution_slot first"
        if tool == "request_execution_slot":
            return "you already hold an execution slot: use run_command until it ends"
        if tool == "submit":
            return f"nothing to submit yet: write {BUILD_SCRIPT} (it must build ./executable) first"
        if tool == "read_file":
            return "your folder holds no files to read"
        return f"{tool} is not allowed now"  # pragma: no cover - every tool is covered above

    def check(self, tool: str, *, path: str = "", command: str = "", duration_seconds: int | None = None) -> str | None:
        """Why this call is illegal now (tool and its arguments), or ``None``.

        Units: ``duration_seconds`` seconds.
        """
        reason = self.why_not(tool)
        if reason is not None:
            return reason
        if tool == "read_file" and path not in self.read_paths:
            return f"read_file path {path!r} is not one of your files {list(self.read_paths)}"
        if tool == "write_file" and not writable_path(path or ""):
            if not (path or "").strip():
                return "path: empty"
            if path.startswith("/") or ".." in path.split("/"):
                return f"path: {path!r} is outside your folder"
            return (f"path: {path!r} is not allowed: use 1-3 parts of letters, digits, '_', '.', '-' "
                    f"separated by '/', none starting with '.'")
        if tool == "run_command" and not command.strip():
            return "run_command needs a non-empty command"
        if tool == "request_execution_slot" and duration_seconds is not None and not (
                1 <= duration_seconds <= self.max_duration_s):
            return f"duration_seconds {duration_seconds} is outside 1..{self.max_duration_s}"
        return None

    def describe(self) -> str:
        """One line naming the legal tools (shown with every refusal)."""
        return "legal now: " + ", ".join(self.tools)

    def key(self) -> tuple:
        """A hashable key of everything that shapes the action schema (for caching)."""
        return (self.tools, self.read_paths, self.max_duration_s)


def legal_actions(worker: str, *, in_slot: bool, files: list[str] | tuple[str, ...], slot_cap_s: int) -> LegalActions:
    """The :class:`LegalActions` of a worker that may move (``active`` or ``in_slot``).

    Args:
        worker: the worker.
        in_slot: it holds its granted slot now.
        files: the names in its work folder (relative paths).
        slot_cap_s: the longest slot (seconds, >= 1).

    Raises:
        ValueError: ``slot_cap_s`` < 1.
    """
    if slot_cap_s < 1:
        raise ValueError(f"slot_cap_s must be >= 1 second, got {slot_cap_s!r}")
    paths = tuple(sorted(dict.fromkeys(str(f) for f in files)))
    can_submit = BUILD_SCRIPT in paths
    legal = {
        "list_files": True,
        "read_file": bool(paths),
        "write_file": True,
        "request_execution_slot": not in_slot,
        "run_command": in_slot,
        "save_persistent_memory": True,
        "submit": can_submit,
    }
    return LegalActions(worker=worker, tools=tuple(t for t in SOLVER_TOOLS if legal[t]), read_paths=paths,
                        max_duration_s=int(slot_cap_s), in_slot=in_slot, can_submit=can_submit)
