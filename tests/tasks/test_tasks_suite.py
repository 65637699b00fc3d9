"""The shipped task suite: at least 8 tasks from real programs,
real manual text, 30+ tests each recorded from the real program, examples for agents."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from scarce_lab.tasks import Task, TestCase, load_suite, load_task, prepare_workspace
from scarce_lab.tasks.suite import SUITE_DIR, list_task_ids


def test_suite_has_at_least_8_tasks_with_30_tests():
    tasks = load_suite()
    assert len(tasks) >= 8
    for t in tasks:
        assert len(t.scored_tests()) >= 30, t.id
        assert any(x.expected_exit_code != 0 for x in t.tests), f"{t.id}: no error case"
        assert len({(tuple(x.args), x.stdin) for x in t.tests}) == len(t.tests), f"{t.id}: duplicates"
        assert t.reference_dir is not None and (t.reference_dir / "compile.sh").is_file()
        assert 3 <= len(t.examples) <= 6


def test_documentation_is_the_manual():
    t = load_task("rev")
    assert t.doc_source.startswith("man 1 rev")
    assert "reverse lines characterwise" in t.documentation
    assert "\b" not in t.documentation  # overstrikes removed
    assert "SYNOPSIS" in load_task("cut").documentation


def test_suite_is_compact():
    size = sum(p.stat().st_size for p in SUITE_DIR.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts)
    assert size < 1_000_000


@pytest.mark.parametrize("task_id", ["seq", "wc"])
def test_expected_outputs_match_the_real_program(task_id):
    """Spot check: re-running the installed program reproduces 5 stored tests."""
    t = load_task(task_id)
    if not t.program_path or not os.path.exists(t.program_path):
        pytest.skip(f"{t.program} not installed here")
    for case in t.tests[:5]:
        p = subprocess.run([t.program_path, *case.args], input=case.stdin.encode("latin-1"),
                           capture_output=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        assert p.stdout.decode("latin-1") == case.expected_stdout, case.id
        assert p.returncode == case.expected_exit_code, case.id


def test_hand_checked_cases():
    """A few stored expectations checked by hand against the programs' documented behaviour."""
    seq = {tuple(c.args): c for c in load_task("seq").tests}
    assert seq[("5",)].expected_stdout == "1\n2\n3\n4\n5\n"
    assert seq[("1", "0.5", "3")].expected_stdout == "1.0\n1.5\n2.0\n2.5\n3.0\n"
    assert seq[("1", "0", "5")].expected_exit_code == 1
    fac = {tuple(c.args): c for c in load_task("factor").tests}
    assert fac[("12",)].expected_stdout == "12: 2 2 3\n"
    assert fac[("1001",)].expected_stdout == "1001: 7 11 13\n"
    tac = {(tuple(c.args), c.stdin): c for c in load_task("tac").tests}
    assert tac[((), "a\nb\nc")].expected_stdout == "cb\na\n"


def test_unknown_task_id_names_it():
    with pytest.raises(KeyError, match="nope"):
        load_task("nope")
    assert "rev" in list_task_ids()


def test_prepare_workspace_has_no_tests(tmp_path):
    t = load_task("fold")
    ws = prepare_workspace(t, tmp_path / "ws")
    names = sorted(p.name for p in ws.iterdir())
    assert names == sorted(["docs.txt", "examples.json", "fold"])
    assert os.access(ws / "fold", os.X_OK)
    blob = "".join(p.read_text(errors="ignore") for p in ws.iterdir() if p.suffix)
    for case in t.tests:
        assert case.id not in blob
    assert json.loads((ws / "examples.json").read_text())[0]["args"] == t.examples[0].args


def test_model_validation_names_field():
    with pytest.raises(ValueError, match="timeout_s"):
        TestCase(id="x", timeout_s=0)
    with pytest.raises(ValueError, match="program"):
        Task(id="x", name="x", program=" ", documentation="d")
