"""Loader for real ProgramBench task folders (task.yaml, tests.json with branches and
ignored tests), on a hand-made folder in ProgramBench's layout."""

from __future__ import annotations

import json

import pytest

from scarce_lab.tasks import load_programbench_task
from scarce_lab.tasks.programbench import image_name, parse_junit, programbench_info


@pytest.fixture
def pb_task(tmp_path):
    d = tmp_path / "acme__calc.abc1234"
    d.mkdir()
    (d / "task.yaml").write_text("repository: acme/calc\ncommit: abc1234\nlanguage: c\n"
                                 "description: A calculator CLI.\n")
    (d / "tests.json").write_text(json.dumps({"branches": {
        "b1": {"ignored": False, "ignore_reason": "",
               "tests": ["eval.tests.test_a.T.test_add", "eval.tests.test_a.T.test_sub",
                         "eval.tests.test_a.T.test_flaky"],
               "ignored_tests": [{"name": "eval.tests.test_a.T.test_flaky",
                                  "reasons": [{"id": "gold_fail"}]}]},
        "b2": {"ignored": True, "ignore_reason": "broken", "tests": ["eval.tests.test_b.U.test_x"],
               "ignored_tests": []},
    }}))
    (d / "README.md").write_text("# calc\nUsage: calc EXPR\n")
    return d


def test_load_programbench_task(pb_task):
    t = load_programbench_task(pb_task)
    assert t.origin == "programbench" and t.id == "acme__calc.abc1234"
    assert t.image == "programbench/acme_1776_calc.abc1234"
    assert t.program == "calc"
    assert "A calculator CLI." in t.documentation and "Usage: calc EXPR" in t.documentation
    ids = {c.id: c for c in t.tests}
    assert set(ids) == {"b1/eval.tests.test_a.T.test_add", "b1/eval.tests.test_a.T.test_sub",
                        "b1/eval.tests.test_a.T.test_flaky", "b2/eval.tests.test_b.U.test_x"}
    assert ids["b1/eval.tests.test_a.T.test_flaky"].ignored  # listed in ignored_tests
    assert ids["b2/eval.tests.test_b.U.test_x"].ignored  # whole branch ignored
    assert [c.id for c in t.scored_tests()] == ["b1/eval.tests.test_a.T.test_add",
                                               "b1/eval.tests.test_a.T.test_sub"]
    info = programbench_info(t)
    assert info.ignored_branches == frozenset({"b2"}) and info.config["commit"] == "abc1234"


def test_missing_task_yaml(tmp_path):
    with pytest.raises(FileNotFoundError, match="task.yaml"):
        load_programbench_task(tmp_path)


def test_malformed_branches_named(tmp_path):
    (tmp_path / "task.yaml").write_text("repository: a/b\n")
    (tmp_path / "tests.json").write_text(json.dumps({"branches": {"b1": {"tests": "nope"}}}))
    with pytest.raises(ValueError, match="b1"):
        load_programbench_task(tmp_path)


def test_parse_junit():
    xml = """<testsuites><testsuite name="pytest">
      <testcase classname="eval.tests.test_a.T" name="test_add" time="0.1"/>
      <testcase classname="eval.tests.test_a.T" name="test_sub"><failure message="x"/></testcase>
      <testcase classname="eval.tests.test_a.T" name="test_skip"><skipped/></testcase>
    </testsuite></testsuites>"""
    assert parse_junit(xml, "b1") == {"b1/eval.tests.test_a.T.test_add": True,
                                      "b1/eval.tests.test_a.T.test_sub": False,
                                      "b1/eval.tests.test_a.T.test_skip": False}
    with pytest.raises(ValueError, match="b1"):
        parse_junit("<not xml", "b1")


def test_image_name():
    assert image_name("org__repo.1234567") == "programbench/org_1776_repo.1234567"
