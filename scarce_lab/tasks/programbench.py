"""Loader for real ProgramBench task folders (run on the docker backend).

A ProgramBench task folder ``<instance_id>/`` holds (layout read from the public
ProgramBench repository; no code copied):

* ``task.yaml``: task metadata (e.g. ``repository``, ``commit``, language, ...), kept
  as-is in :attr:`ProgramBenchInfo.config`;
* ``tests.json``: ``{"branches": {<branch>: {"ignored": bool, "ignore_reason": str,
  "tests": [<test name>, ...], "ignored_tests": [{"name": ..., "reasons": [...]}]}}}``;
* ``tests/<branch>/eval/run.sh``: runs that branch's test suite against
  ``./executable`` in the image's ``/workspace`` and writes JUnit XML to
  ``eval/results.xml``.

The docker image is ``programbench/<instance_id with "__" -> "_1776_">``; the agent's
documentation is whatever the task folder ships (``README.md``, ``docs/``,
``task.yaml``'s description), which :func:`load_programbench_task` concatenates.

ProgramBench tests are test-suite names, not argument/stdin cases, so their
``TestCase`` has empty ``args``/``stdin`` and is graded by running the branch's
``eval/run.sh`` in the image (:func:`scarce_lab.tasks.programbench_grade.grade_programbench`),
not by :func:`scarce_lab.tasks.grading.grade`.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .model import Task, TestCase

__all__ = ["ProgramBenchInfo", "image_name", "load_programbench_task", "parse_junit",
           "programbench_info"]

DOC_FILES = ("README.md", "README", "README.txt", "docs.txt", "DOCUMENTATION.md")
_INFO: dict[str, ProgramBenchInfo] = {}


@dataclass(frozen=True)
class ProgramBenchInfo:
    """ProgramBench specifics of a loaded task: image, folder, branches, raw config."""

    instance_id: str
    image: str
    task_dir: Path
    branches: dict[str, list[str]] = field(default_factory=dict)
    ignored_branches: frozenset[str] = frozenset()
    config: dict = field(default_factory=dict)


def image_name(instance_id: str) -> str:
    """Docker image of a ProgramBench instance (``org__repo.sha`` -> ``programbench/org_1776_repo.sha``)."""
    if not instance_id:
        raise ValueError("instance_id must be non-empty")
    return f"programbench/{instance_id.replace('__', '_1776_')}"


def _documentation(task_dir: Path, config: dict) -> str:
    parts = []
    for key in ("description", "problem_statement", "documentation"):
        if isinstance(config.get(key), str):
            parts.append(config[key])
    for name in DOC_FILES:
        p = task_dir / name
        if p.is_file():
            parts.append(p.read_text(encoding="utf-8", errors="replace"))
    docs = task_dir / "docs"
    if docs.is_dir():
        for p in sorted(docs.rglob("*")):
            if p.is_file() and p.suffix in (".md", ".txt", ".rst", ""):
                parts.append(f"# {p.relative_to(task_dir)}\n" + p.read_text(encoding="utf-8", errors="replace"))
    return "\n\n".join(parts) or f"(no documentation shipped in {task_dir})"


def load_programbench_task(task_dir: str | Path) -> Task:
    """Load a ProgramBench task folder as a :class:`Task` (``origin="programbench"``).

    Test ids are ``"<branch>/<test name>"``; a test is ``ignored`` when its branch is
    ignored or it is listed in the branch's ``ignored_tests``. ``program`` is the
    config's ``executable_name``/``binary``/``name`` if present, else the repository
    name. Raises FileNotFoundError if ``task.yaml`` is missing, ValueError naming the
    file and field when ``tests.json`` is malformed.
    """
    d = Path(task_dir)
    ty = d / "task.yaml"
    if not ty.is_file():
        raise FileNotFoundError(f"{ty} not found (not a ProgramBench task folder)")
    config = yaml.safe_load(ty.read_text(encoding="utf-8")) or {}
    if not isinstance(config, dict):
        raise ValueError(f"{ty}: expected a mapping, got {type(config).__name__}")
    instance_id = d.name
    tj = d / "tests.json"
    raw = json.loads(tj.read_text(encoding="utf-8")) if tj.is_file() else {}
    branches_raw = raw.get("branches") or {}
    if not isinstance(branches_raw, dict):
        raise ValueError(f"{tj}: field 'branches' must be a mapping, got {type(branches_raw).__name__}")
    tests: list[TestCase] = []
    branches: dict[str, list[str]] = {}
    ignored_branches = set()
    for branch, info in sorted(branches_raw.items()):
        if not isinstance(info, dict) or not isinstance(info.get("tests", []), list):
            raise ValueError(f"{tj}: branch {branch!r} must have a list field 'tests'")
        b_ignored = bool(info.get("ignored"))
        if b_ignored:
            ignored_branches.add(branch)
        ign = {t["name"] for t in info.get("ignored_tests") or [] if isinstance(t, dict) and "name" in t}
        names = [str(n) for n in info.get("tests", [])]
        branches[branch] = names
        for n in names:
            tests.append(TestCase(id=f"{branch}/{n}", branch=branch, ignored=b_ignored or n in ign,
                                  timeout_s=2400.0))
    repo = str(config.get("repository", instance_id))
    program = str(config.get("executable_name") or config.get("binary") or config.get("name")
                  or repo.rsplit("/", 1)[-1].split("__")[-1].split(".")[0] or instance_id)
    task = Task(
        id=instance_id,
        name=str(config.get("title") or repo),
        program=program,
        program_path=None,
        documentation=_documentation(d, config),
        doc_source=f"ProgramBench task folder {d.name}",
        tests=tests,
        image=image_name(instance_id),
        origin="programbench",
    )
    _INFO[instance_id] = ProgramBenchInfo(instance_id, task.image, d.resolve(), branches,
                                          frozenset(ignored_branches), config)
    return task


def programbench_info(task: Task) -> ProgramBenchInfo:
    """ProgramBench specifics for a task returned by :func:`load_programbench_task`.
    Raises KeyError naming the task id otherwise."""
    try:
        return _INFO[task.id]
    except KeyError:
        raise KeyError(f"task {task.id!r} was not loaded with load_programbench_task") from None


def parse_junit(xml_text: str, branch: str) -> dict[str, bool]:
    """Map JUnit XML (pytest ``--junitxml``) to ``{"branch/<classname>.<name>": passed}``.

    A testcase passes when it has no ``failure``, ``error`` or ``skipped`` child.
    Raises ValueError if the XML does not parse.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise ValueError(f"JUnit XML for branch {branch!r} does not parse: {e}") from e
    out = {}
    for tc in root.iter("testcase"):
        cls, name = tc.get("classname", ""), tc.get("name", "")
        full = f"{cls}.{name}" if cls else name
        bad = any(ch.tag in ("failure", "error", "skipped") for ch in tc)
        out[f"{branch}/{full}"] = not bad
    return out
