"""The shipped task suite: package data under ``scarce_lab/tasks/suite/<task_id>/``.

Layout of one task folder (written by ``scripts/build_scarce_tasks.py``)::

    task.json      id, name, program, program_path, doc_source, examples, built_with
    docs.txt       documentation given to the agent (real manual page text)
    tests.json     hidden tests: list of TestCase dicts
    reference/     reference submission: main.py + compile.sh (scores 100 %)
"""

from __future__ import annotations

import json
from pathlib import Path

from .model import Example, Task, TestCase

SUITE_DIR = Path(__file__).resolve().parent / "suite"


def list_task_ids(suite_dir: Path = SUITE_DIR) -> list[str]:
    """Ids of the tasks in ``suite_dir`` (folders with a task.json), sorted."""
    if not suite_dir.is_dir():
        return []
    return sorted(p.name for p in suite_dir.iterdir() if (p / "task.json").is_file())


def load_task(task_id: str, suite_dir: Path = SUITE_DIR) -> Task:
    """Load one shipped task. Raises KeyError naming ``task_id`` if it is not shipped."""
    folder = suite_dir / task_id
    if not (folder / "task.json").is_file():
        raise KeyError(f"task_id {task_id!r} not in suite {suite_dir} (have {list_task_ids(suite_dir)})")
    meta = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    tests = json.loads((folder / "tests.json").read_text(encoding="utf-8"))
    ref = folder / "reference"
    return Task(
        id=meta["id"],
        name=meta["name"],
        program=meta["program"],
        program_path=meta.get("program_path"),
        documentation=(folder / "docs.txt").read_text(encoding="utf-8"),
        doc_source=meta.get("doc_source", ""),
        examples=[Example(**e) for e in meta.get("examples", [])],
        tests=[TestCase(**t) for t in tests],
        reference_dir=ref if (ref / "compile.sh").is_file() else None,
        origin="shipped",
    )


def load_suite(ids: list[str] | None = None, suite_dir: Path = SUITE_DIR) -> list[Task]:
    """All shipped tasks (or those in ``ids``), sorted by id."""
    return [load_task(i, suite_dir) for i in (ids if ids is not None else list_task_ids(suite_dir))]
