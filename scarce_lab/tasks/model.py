"""Task model for SCARCE reverse-engineering tasks (ProgramBench-style).

A task gives the agent a compiled executable (no source) and its documentation; the
agent writes source plus a ``compile.sh`` that builds ``./executable`` (ProgramBench's
submission contract). Hidden behavioural tests score it (see :mod:`.grading`).

The task model is stable: the SCARCE runner and the scripted solver use it.

The hidden tests never go into an agent's workspace: only :meth:`Task.agent_view` and
:func:`prepare_workspace` are meant for agent-facing code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class TestCase(BaseModel):
    """One hidden behavioural test: run ``./executable *args`` with ``stdin``.

    Passes when stdout equals ``expected_stdout`` exactly, the exit code equals
    ``expected_exit_code`` and, only if ``compare_stderr`` is true, stderr equals
    ``expected_stderr``. ``branch`` groups tests (ProgramBench "branches");
    ``ignored`` tests are kept for reference but do not count in the score.
    ``timeout_s``: wall-clock seconds allowed for this test.
    """

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    id: str
    args: list[str] = Field(default_factory=list)
    stdin: str = ""
    expected_stdout: str = ""
    expected_stderr: str | None = None
    compare_stderr: bool = False
    expected_exit_code: int = 0
    branch: str | None = None
    ignored: bool = False
    timeout_s: float = Field(10.0, gt=0)


class Example(BaseModel):
    """A documented example shown to the agent: a real run of the original program."""

    model_config = ConfigDict(extra="forbid")

    args: list[str] = Field(default_factory=list)
    stdin: str = ""
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    note: str = ""


class Task(BaseModel):
    """A reverse-engineering task.

    Fields:
        id: unique task id (e.g. ``"rev"``).
        name: human title.
        program: name of the original program (e.g. ``"rev"``): the anti-cheat checks
            look for it in submissions.
        program_path: absolute path of the original executable on this machine (shipped
            tasks) or inside the image (ProgramBench); ``None`` if unknown.
        documentation: the manual / --help text given to the agent.
        doc_source: where ``documentation`` came from (e.g. ``"man 1 rev"``).
        examples: documented examples the agent may see.
        tests: hidden tests (never shown to agents).
        reference_dir: folder with a reference submission (source + compile.sh), if any.
        image: docker image name for the docker backend (ProgramBench tasks).
        origin: ``"shipped"`` (built by scripts/build_scarce_tasks.py) or ``"programbench"``.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    program: str
    program_path: str | None = None
    documentation: str
    doc_source: str = ""
    examples: list[Example] = Field(default_factory=list)
    tests: list[TestCase] = Field(default_factory=list)
    reference_dir: Path | None = None
    image: str | None = None
    origin: Literal["shipped", "programbench"] = "shipped"

    @field_validator("id", "program")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError(f"must be a non-empty string, got {v!r}")
        return v

    def scored_tests(self) -> list[TestCase]:
        """Hidden tests that count toward the score (``ignored`` ones dropped)."""
        return [t for t in self.tests if not t.ignored]

    def agent_view(self) -> dict:
        """What an agent may see: id, name, program, documentation, examples. No tests."""
        return {
            "id": self.id,
            "name": self.name,
            "program": self.program,
            "documentation": self.documentation,
            "examples": [e.model_dump() for e in self.examples],
        }


def prepare_workspace(task: Task, folder: str | Path, *, copy_executable: bool = True) -> Path:
    """Fill an agent's work ``folder`` for ``task``: ``docs.txt`` (documentation),
    ``examples.json`` (documented examples) and, if ``copy_executable`` and the original
    exists on this machine, a copy of the original executable named ``task.program``
    (the agent may run it inside a slot). Never writes the hidden tests.

    Writes never follow a link in ``folder`` (:mod:`scarce_lab.sandbox.fileio`). As
    root the copy is execute-only (owned by root, mode 0711: it runs, it cannot be
    read); otherwise it is a plain 0755 copy. Sandboxes have their own
    ``prepare_workspace`` that also covers the program's system paths.

    Returns the folder path. Raises FileNotFoundError if ``copy_executable`` is true and
    ``task.program_path`` is set but missing; ToolError for a link or folder in the way.
    """
    import os

    from ..sandbox import fileio

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fileio.write_file(folder, "docs.txt", task.documentation.encode("utf-8"))
    fileio.write_file(folder, "examples.json",
                      json.dumps([e.model_dump() for e in task.examples], indent=1).encode("utf-8"))
    if copy_executable and task.program_path:
        src = Path(task.program_path)
        if not src.exists():
            raise FileNotFoundError(f"task {task.id!r}: program_path {src} does not exist")
        if os.geteuid() == 0:
            fileio.install_exec_only(folder, task.program, src)
        else:
            fileio.write_file(folder, task.program, src.read_bytes(), executable=True)
    return folder
