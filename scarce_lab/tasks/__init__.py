"""SCARCE reverse-engineering tasks (ProgramBench-style): model, shipped suite,
ProgramBench loader and grading.

See :mod:`.model`, :mod:`.suite`, :mod:`.grading`, :mod:`.programbench`, :mod:`.taskdir`
(Economy task directories).
"""

from .grading import GradeResult, TestOutcome, check_submission, collect_submission, grade
from .model import Example, Task, TestCase, prepare_workspace
from .programbench import load_programbench_task
from .suite import SUITE_DIR, list_task_ids, load_suite, load_task

__all__ = [
    "Example",
    "GradeResult",
    "SUITE_DIR",
    "Task",
    "TestCase",
    "TestOutcome",
    "check_submission",
    "collect_submission",
    "grade",
    "list_task_ids",
    "load_programbench_task",
    "load_suite",
    "load_task",
    "prepare_workspace",
]
