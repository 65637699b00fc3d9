"""Everything SCARCE's runner does to the outside world for its workers, in one place:
work folders, the solver's file tools, sandbox slots and commands, grading.

The runner names a worker's sandbox ``<worker>-s<subrun>`` and calls only these
methods; the pure world (:mod:`scarce_lab.environments.scarce.world.auction`) never sees any of it.
A change of the sandbox interface is a change of this module only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..agents import tools as ftools

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
        from scarce_lab.tasks.grading import grade

        return grade(task, folder, sandbox=self.sandbox)

    def start(self) -> None:
        """Make the sandbox if none was given."""
        if self.sandbox is None:
            from scarce_lab.sandbox import make_sandbox

            self.sandbox = make_sandbox(self.kind)

    def close(self) -> None:
        """Close the sandbox if it was made here."""
        if self.own and self.sandbox is not None:
            self.sandbox.close()

    # -- work folders and file tools (free, no slot needed) ------------------------------
    def prepare(self, sbx: str, task: Any) -> Path:
        """Create ``sbx``'s work folder with the task's workspace; returns the folder."""
        from scarce_lab.tasks.workspace import prepare_worker

        folder = prepare_worker(task, self.sandbox, sbx)
        self.folders[sbx] = folder
        return folder

    def list_files(self, sbx: str) -> list[str]:
        """The names a solver may see of ``sbx``'s folder (sorted, at most 50; see
        :meth:`listing`)."""
        return ftools.list_files(self.folders[sbx])

    def listing(self, sbx: str) -> Any:
        """The bounded listing of ``sbx``'s folder (:func:`scarce_lab.environments.scarce.agents.tools.listing`):
        ``names`` and ``tail()`` ("and N more")."""
        return ftools.listing(self.folders[sbx])

    def read_file(self, sbx: str, path: str) -> str:
        """Text of a file in ``sbx``'s folder. Raises :class:`ToolError` (bad path)."""
        return ftools.read_file(self.folders[sbx], path)

    def write_file(self, sbx: str, path: str, content: str) -> int:
        """Write a file in ``sbx``'s folder; returns bytes written. Raises :class:`ToolError`."""
        return ftools.write_file(self.folders[sbx], path, content)

    def snapshot(self, sbx: str) -> dict:
        """The worker's own files in ``sbx``'s folder, for the run's checkpoint (taken
        between commands, when none of the worker's processes lives): ``{"files": {path:
        (bytes, executable)}, "skipped": [notes], "removed": n}``.

        Read through the one gate (:func:`scarce_lab.sandbox.gate.gather` with
        :data:`~scarce_lab.sandbox.gate.CHECKPOINT`: 16 MiB, 8 MiB a file, 2000 files,
        sparse files at their full size, UTF-8 names of sane length), so a checkpoint
        stays small whatever the worker writes. Regular files it leaves out are removed
        from the live folder too (``removed``; the runner tells the worker), so the
        folder a resumed run restores is the folder the interrupted run went on with.
        Files not owned by the worker (the execute-only original) are left out, so its
        bytes never enter a checkpoint."""
        from scarce_lab.sandbox import gate

        folder = self.folders[sbx]
        got = gate.gather(folder, gate.CHECKPOINT, skip_dot=False, owner_only=True)
        removed = gate.remove(folder, got.dropped) if got.dropped else 0
        notes = list(got.left_out) + ([f"(+{got.left_out_count - len(got.left_out)} more)"]
                                      if got.left_out_count > len(got.left_out) else [])
        return {"files": {rel: (data, bool(got.meta[rel][1] & 0o100)) for rel, data in got.files.items()},
                "skipped": notes, "removed": removed}

    def restore(self, sbx: str, task: Any, snap: dict) -> None:
        """Recreate ``sbx``'s work folder from :meth:`snapshot` (resume): the task's
        workspace, then every file of the snapshot written as the worker's. What the
        checkpoint left out was removed from the live folder when it was taken (and
        the worker told then), so nothing is missing; a path the folder refuses now is
        skipped, never raised."""
        from scarce_lab.tasks.workspace import prepare_worker

        self.folders[sbx] = prepare_worker(task, self.sandbox, sbx)
        for rel, (data, executable) in snap["files"].items():
            try:
                self.sandbox.write_file(sbx, rel, data, executable=executable)
            except ToolError:
                continue  # a path that crossed the gate is writable; kept safe anyway

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
        from scarce_lab.sandbox import SlotNotActiveError

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
        from scarce_lab.sandbox import ResourceLimits, SlotNotActiveError

        try:
            return self.sandbox.run(sbx, command, ResourceLimits(wall_seconds=wall_s))
        except SlotNotActiveError as exc:
            raise CommandRefused(str(exc)) from exc

    # -- grading -----------------------------------------------------------------------
    async def grade(self, task: Any, sbx: str) -> Any:
        """Grade ``sbx``'s folder against ``task``'s hidden tests (in a thread)."""
        return await asyncio.to_thread(self.grade_fn, task, self.folders[sbx])
