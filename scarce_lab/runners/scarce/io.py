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
        self.grade_fn = grade_fn or self._sandbox_grade
        self.folders: dict[str, Path] = {}

    def _sandbox_grade(self, task: Any, folder: Path) -> Any:
        """Default grading: build and tests in a grading box of the run's own sandbox
        (same isolation; the original absent, the tripwire over its paths)."""
        from ...tasks.grading import grade

        return grade(task, folder, sandbox=self.sandbox)

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
        from ...tasks.workspace import prepare_worker

        folder = prepare_worker(task, self.sandbox, sbx)
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
        return ftools.write_file(self.folders[sbx], path, content)

    def snapshot(self, sbx: str) -> bytes:
        """The worker's files in ``sbx``'s folder as a gzip tar (for the run's
        checkpoint; taken between commands, when none of the worker's processes lives).
        Links are stored as links, never followed; execute-only files (the original
        program, mode without read bits) are left out: :meth:`restore` installs the
        original afresh, so its bytes never enter a checkpoint."""
        import io as _io
        import tarfile

        def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
            return None if member.isfile() and not member.mode & 0o444 else member

        buf = _io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(self.folders[sbx], arcname=".", recursive=True, filter=keep)
        return buf.getvalue()

    def restore(self, sbx: str, task: Any, data: bytes) -> None:
        """Recreate ``sbx``'s work folder from :meth:`snapshot` (resume): the task's
        workspace, then every regular file of the snapshot written as the worker's
        (links in the snapshot are not recreated)."""
        import io as _io
        import tarfile

        from ...tasks.workspace import prepare_worker

        folder = prepare_worker(task, self.sandbox, sbx)  # docs, examples, the original
        with tarfile.open(fileobj=_io.BytesIO(data), mode="r:gz") as tar:
            for member in tar.getmembers():  # as the worker's files, never following a link
                if member.isfile():
                    self.sandbox.write_file(sbx, member.name.removeprefix("./"), tar.extractfile(member).read(),
                                            executable=bool(member.mode & 0o100))
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
