"""A worker's work folder inside a sandbox, for a task (the sandbox knows no task)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..sandbox.base import Sandbox
from .anticheat import candidate_paths, original_paths
from .model import Task


def prepare_worker(task: Task, sandbox: Sandbox, worker: str) -> Path:
    """Fill ``worker``'s folder in ``sandbox`` for ``task``: ``docs.txt``,
    ``examples.json`` (written as the worker's files, never following a link) and, when
    the original exists on this machine, the original to run but not read
    (:meth:`Sandbox.install_original`: ``./<program>`` and over its system paths).
    Never the hidden tests. Returns the folder.

    Raises:
        FileNotFoundError: ``task.program_path`` is set but missing.
    """
    sandbox.write_file(worker, "docs.txt", task.documentation.encode("utf-8"))
    sandbox.write_file(worker, "examples.json",
                       json.dumps([e.model_dump() for e in task.examples], indent=1).encode("utf-8"))
    if task.program_path and not os.path.exists(task.program_path):
        raise FileNotFoundError(f"task {task.id!r}: program_path {task.program_path} does not exist")
    found = original_paths(task)
    if found:
        sandbox.install_original(worker, task.program, found[0], candidate_paths(task))
    return sandbox.workdir(worker)
