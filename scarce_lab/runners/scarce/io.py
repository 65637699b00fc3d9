"""Everything SCARCE's runner does to the outside world for its workers, in one place:
work folders, the solver's file tools, sandbox slots and commands, grading.

The runner names a worker's sandbox ``<worker>-s<subrun>`` and calls only these
methods; the pure world (:mod:`scarce_lab.envs.slots.world`) never sees any of it.
A change of the sandbox interface is a change of this module only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...agents.scarce import tools as ftools

ToolError = ftools.ToolError


class CommandRefused(RuntimeError):
    """The sandbox refused a command: no open slot, or its real-time window ran out."""


def _default_grade(task: Any, folder: Path) -> Any:
    from ...tasks.grading import grade

    return grade(task, folder)


class WorkerIO:
    """Sandbox, file tools and grading for the workers of one run.

    Args:
        sandbox: a :class:`scarce_lab.sandbox.Sandbox`, or ``None`` to make one of
            ``kind`` on first use (then closed by :meth:`close`).
        kind: ``local`` or ``docker`` (used only when ``sandbox`` is None).
        grade_fn: ``(task, folder) -> GradeResult``-like; default
            :func:`scarce_lab.tasks.grading.grade`.
    """

    def __init__(self, sandbox: Any = None, *, kind: str = "local", grade_fn: Callable | None = None):
        self.sandbox = sandbox
        self.kind = kind
        self.own = sandbox is None
        self.grade_fn = grade_fn or _default_grade
        self.folders: dict[str, Path] = {}

    def start(self) -> None:
        """Make the sandbox if none was given."""
        if self.sandbox is None:
            from ...sandbox import make_sandbox

            self.sandbox = make_sandbox(self.kind)

    def close(self) -> None:
        """Close the sandbox if it was made here."""
        if self.own and self.sandbox is not None:
            self.sandbox.close()

    # -- work folders and file tools (free, no slot needed) ------------------------------
    def prepare(self, sbx: str, task: Any) -> Path:
        """Create ``sbx``'s work folder with the task's workspace; returns the folder."""
        from ...tasks.model import prepare_workspace

        folder = self.sandbox.workdir(sbx)
        prepare_workspace(task, folder)
        if hasattr(self.sandbox, "chown_tree"):
            self.sandbox.chown_tree(sbx)
        self.folders[sbx] = folder
        return folder

    def list_files(self, sbx: str) -> list[str]:
        """Relative paths of the files in ``sbx``'s folder (sorted)."""
        return ftools.list_files(self.folders[sbx])

    def read_file(self, sbx: str, path: str) -> str:
        """Text of a file in ``sbx``'s folder. Raises :class:`ToolError` (bad path)."""
        return ftools.read_file(self.folders[sbx], path)

    def write_file(self, sbx: str, path: str, content: str) -> int:
        """Write a file in ``sbx``'s folder; returns bytes written. Raises :class:`ToolError`."""
        n = ftools.write_file(self.folders[sbx], path, content)
        if hasattr(self.sandbox, "chown_tree"):
            self.sandbox.chown_tree(sbx)
        return n

    def snapshot(self, sbx: str) -> bytes:
        """The whole work folder of ``sbx`` as a gzip tar (for the run's checkpoint);
        links are stored as links, never followed."""
        import io as _io
        import tarfile

        buf = _io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(self.folders[sbx], arcname=".", recursive=True)
        return buf.getvalue()

    def restore(self, sbx: str, task: Any, data: bytes) -> None:
        """Recreate ``sbx``'s work folder from :meth:`snapshot` (resume). Extraction
        uses tarfile's ``data`` filter: no absolute paths, no links out of the folder."""
        import io as _io
        import shutil
        import tarfile

        folder = self.sandbox.workdir(sbx)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=_io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(folder, filter="data")
        if hasattr(self.sandbox, "chown_tree"):
            self.sandbox.chown_tree(sbx)
        self.folders[sbx] = folder

    # -- slots and commands ------------------------------------------------------------
    def open_slot(self, sbx: str, seconds: float) -> None:
        """Open ``sbx``'s real-time execution window for ``seconds``."""
        self.sandbox.open_slot(sbx, seconds)

    def close_slot(self, sbx: str) -> None:
        self.sandbox.close_slot(sbx)

    def refusal(self, sbx: str, command: str) -> str:
        """Send a command outside any slot; the sandbox itself must refuse it.

        Returns the sandbox's refusal text.

        Raises:
            RuntimeError: the sandbox ran it (a broken security boundary).
        """
        from ...sandbox import SlotNotActiveError

        try:
            self.sandbox.run(sbx, command)
        except SlotNotActiveError as exc:
            return str(exc)
        raise RuntimeError(f"sandbox {type(self.sandbox).__name__} ran a command for {sbx!r} outside its slot")

    def run(self, sbx: str, command: str, wall_s: float) -> Any:
        """Run ``command`` in ``sbx``'s open slot, at most ``wall_s`` real seconds.

        Returns the sandbox's ``ExecResult``.

        Raises:
            CommandRefused: the slot is not open (its real-time window ran out).
        """
        from ...sandbox import ResourceLimits, SlotNotActiveError

        try:
            return self.sandbox.run(sbx, command, ResourceLimits(wall_seconds=wall_s))
        except SlotNotActiveError as exc:
            raise CommandRefused(str(exc)) from exc

    # -- grading -----------------------------------------------------------------------
    async def grade(self, task: Any, sbx: str) -> Any:
        """Grade ``sbx``'s folder against ``task``'s hidden tests (in a thread)."""
        return await asyncio.to_thread(self.grade_fn, task, self.folders[sbx])
