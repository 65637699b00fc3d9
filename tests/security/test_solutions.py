"""Honest Python, C and shell solutions of every shipped task score what they earn
(no false positive, no interference from the sandbox), on each backend.

Python: the task's shipped reference. C and shell: ``solutions/<task>/<lang>/``
(the shell ones call neither the original nor any other task program). What a
solution earns is measured without any sandbox (:func:`.earned.earned`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scarce_lab.sandbox import make_sandbox
from scarce_lab.tasks import grade, load_task
from scarce_lab.tasks.suite import list_task_ids

from .conftest import needs
from .earned import earned

SOLUTIONS = Path(__file__).parent / "solutions"
TASKS = list_task_ids()


def _files(task, lang: str) -> dict[str, bytes]:
    d = task.reference_dir if lang == "python" else SOLUTIONS / task.id / lang
    return {p.name: p.read_bytes() for p in Path(d).iterdir() if p.is_file()}


LANGS = ("python", "c", "shell")
# every solution on the local backend; on docker one language per task, rotating
# (all three languages and all ten tasks are covered there too, at a third of the time)
CASES = [("local", t, lang) for t in TASKS for lang in LANGS] + \
        [("docker", t, LANGS[i % 3]) for i, t in enumerate(TASKS)]


@pytest.mark.slow
@pytest.mark.parametrize("kind,task_id,lang", CASES)
def test_solution_scores_what_it_earns(tmp_path, kind, task_id, lang):
    needs(kind)
    task = load_task(task_id)
    files = _files(task, lang)
    want = earned(task, files)
    assert len(want) >= 0.8 * len(task.scored_tests()), f"{lang} solution of {task_id} earns only {len(want)}"
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    sb = make_sandbox(kind)
    try:
        g = grade(task, tmp_path, sandbox=sb)
    finally:
        sb.close()
    assert g.violation is None and g.build_ok, (g.violation, g.build_log)
    assert {o.id for o in g.per_test if o.passed} == want, [o for o in g.per_test if (o.id in want) != o.passed]
    assert g.score == pytest.approx(len(want) / len(task.scored_tests()))


def test_every_shipped_task_has_c_and_shell_solutions():
    for t in TASKS:
        for lang in ("c", "shell"):
            assert (SOLUTIONS / t / lang / "compile.sh").is_file(), (t, lang)
