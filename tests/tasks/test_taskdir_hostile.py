"""Hostile task directories (an adversarial review of ``--task dir:PATH``).

A task directory is input from elsewhere: every part this loader reads is checked at
:func:`scarce_lab.tasks.taskdir.load_task_dir` (task.toml via ``check_task_toml``),
and a verifier's ``reward.json`` at ``parse_reward``. Before these checks a
``verifier = 3`` crashed with ``AttributeError``, ``timeout_sec = -1`` or ``"60"``
silently became the cap, ``memory_mb = 1`` starved every verification, a deeply nested
task.toml raised ``RecursionError``, a 300 MB instruction.md was read whole, a FIFO in
environment/ was dropped without a word, and ``{"score": 0.5, "score": 1.0}`` scored 1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from scarce_lab.tasks.taskdir import (
    MAX_INSTRUCTION_BYTES,
    MAX_TOML_BYTES,
    TaskDirError,
    load_task_dir,
    parse_reward,
)

TINY = Path(__file__).parents[1] / "taskdirs" / "tiny-target"


def _copy(tmp_path: Path, toml: str | None = None) -> Path:
    d = tmp_path / "task"
    shutil.copytree(TINY, d)
    if toml is not None:
        (d / "task.toml").write_text(toml)
    return d


@pytest.mark.parametrize(("toml", "match"), [
    ("verifier = 3\n", r"verifier = 3 must be a table"),
    ('environment = "x"\n', r"environment = 'x' must be a table"),
    ("scarce_lab = [1]\n", r"scarce_lab = \[1\] must be a table"),
    ("[verifier]\ntimeout_sec = -1\n", r"timeout_sec = -1 is not"),
    ("[verifier]\ntimeout_sec = 0\n", r"timeout_sec = 0 is not"),
    ("[verifier]\ntimeout_sec = nan\n", r"timeout_sec = nan is not"),
    ("[verifier]\ntimeout_sec = inf\n", r"timeout_sec = inf is not"),
    ('[verifier]\ntimeout_sec = "60"\n', r"timeout_sec = '60' is not"),
    ("[verifier]\ntimeout_sec = true\n", r"timeout_sec = True is not"),
    ("[environment]\nmemory_mb = 1\n", r"memory_mb = 1 is not a whole number >= 64"),
    ("[environment]\nmemory_mb = 1500.5\n", r"memory_mb = 1500.5 is not"),
    ('[environment]\nmemory_mb = "4G"\n', r"memory_mb = '4G' is not"),
    ("[scarce_lab]\nprogram = 3\n", r"program = 3 is not a file"),
])
def test_task_toml_values_are_checked_not_defaulted(tmp_path, toml, match):
    with pytest.raises(TaskDirError, match=match):
        load_task_dir(_copy(tmp_path, toml))


def test_task_toml_limits_that_are_fine_are_kept_and_capped(tmp_path):
    t = load_task_dir(_copy(tmp_path, "[verifier]\ntimeout_sec = 600.0\n[environment]\nmemory_mb = 4096.0\n"
                                      "[metadata]\nanything = [1, {a = 2}]\n"))
    assert (t.timeout_s(300), t.memory_bytes()) == (300, 4096 << 20)
    t = load_task_dir(_copy(tmp_path / "b", "[environment]\nmemory_mb = 99999999999999\n"))
    assert t.memory_bytes(cap=4 << 30) == 4 << 30


@pytest.mark.parametrize("toml", [
    "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n",     # nesting bomb under the size bound
    "a = " + "[" * 30000 + "]" * 30000 + "\n",             # over the size bound
    'a = "' + "x" * (MAX_TOML_BYTES + 1) + '"\n',
])
def test_a_toml_bomb_is_an_error_not_a_crash(tmp_path, toml):
    with pytest.raises(TaskDirError, match="task.toml"):
        load_task_dir(_copy(tmp_path, toml))


def test_instruction_is_bounded_and_must_be_a_regular_file(tmp_path):
    d = _copy(tmp_path)
    (d / "instruction.md").write_bytes(b"a" * (MAX_INSTRUCTION_BYTES + 1))
    with pytest.raises(TaskDirError, match="instruction.md is larger than"):
        load_task_dir(d)
    (d / "instruction.md").unlink()
    os.mkfifo(d / "instruction.md")                      # would block a plain open()
    with pytest.raises(TaskDirError, match="instruction.md"):
        load_task_dir(d)


@pytest.mark.parametrize("part", ["environment", "tests"])
def test_a_fifo_in_the_task_is_an_error_not_dropped(tmp_path, part):
    d = _copy(tmp_path)
    os.mkfifo(d / part / "pipe")
    with pytest.raises(TaskDirError, match="pipe is not a regular file"):
        load_task_dir(d)


def test_deeply_nested_or_countless_folders_are_an_error_not_a_recursion_error(tmp_path):
    """Before: the link check walked environment/ with ``os.walk`` (recursive): 1,500
    nested folders raised ``RecursionError`` (checked by hand: the walk is iterative now
    and stops at ``MAX_DEPTH``; 40 levels here, so that pytest's recursive clean-up of
    its temporary folders never meets such a chain); empty folders were not counted."""
    from scarce_lab.tasks.taskdir import MAX_DEPTH, MAX_FILES

    d = _copy(tmp_path)
    (d / "environment" / "/".join(["d"] * (MAX_DEPTH + 8))).mkdir(parents=True)
    with pytest.raises(TaskDirError, match=f"deeper than {MAX_DEPTH} folders"):
        load_task_dir(d)
    w = _copy(tmp_path / "wide")
    for i in range(20 * MAX_FILES + 1):
        (w / "environment" / f"d{i}").mkdir()
    with pytest.raises(TaskDirError, match="more than .* files and folders"):
        load_task_dir(w)


@pytest.mark.parametrize(("data", "why"), [
    (b'{"score": 0.5, "score": 1.0}', "appears twice"),    # which one counts is up to the reader
    (b"[" * 100_000, "not JSON"),
    (b'{"score": NaN}', "not a number in"),
    (b'{"score": 1e400}', "not a number in"),
])
def test_reward_json_that_is_ambiguous_or_hostile_is_no_score(data, why):
    score, reason = parse_reward(data)
    assert score is None and why in reason
    assert parse_reward(b'{"score": 0.25, "reason": "ok"}') == (0.25, "ok")


# -- the verifier inside the sandbox ------------------------------------------------------
def _bwrap():
    from scarce_lab.sandbox.local import detect_capabilities

    caps = detect_capabilities()
    return pytest.mark.skipif(caps.mode != "bwrap", reason=f"bubblewrap sandbox unavailable: {caps.reason}")


_HUGE_REWARD = ("import atexit\n"
                "def _w():\n"
                "    open('out/reward.json', 'w').write('{\"score\": 1.0}' + ' ' * (2 << 20))\n"
                "atexit.register(_w)\n"
                "def value():\n"
                "    return 7\n")


@_bwrap()
def test_a_reward_json_over_the_limit_is_no_score_not_a_parsed_prefix():
    """Before: only the first MiB was read and parsed; a valid object followed by padding
    scored 1.0 (and any other oversized file was reported as broken JSON)."""
    from scarce_lab.tasks.taskdir import MAX_REWARD_BYTES, SandboxVerifier

    v = SandboxVerifier(load_task_dir(TINY), sandbox="local", timeout_s=20)
    r = v(_HUGE_REWARD)
    assert r.score is None and f"over {MAX_REWARD_BYTES}" in r.reason
    assert v("def value():\n    return 7\n").score == 1.0


_SETS_ITS_OWN_SCORE = ("import json\n"
                       "_dumps = json.dumps\n"
                       "json.dumps = lambda o, *a, **k: _dumps({**o, 'score': 1.0} if isinstance(o, dict) else o, *a, **k)\n"
                       "def value():\n"
                       "    return 3\n")


@_bwrap()
@pytest.mark.xfail(strict=True, reason="known, not fixed: the task format's verifier imports the evolved program into "
                   "its own interpreter, so the program can rewrite the verifier's reward (here 0.43 -> 1.0); no "
                   "gate outside that process can tell; see the review report")
def test_a_program_cannot_set_its_own_score():
    from scarce_lab.tasks.taskdir import SandboxVerifier

    r = SandboxVerifier(load_task_dir(TINY), sandbox="local", timeout_s=20)(_SETS_ITS_OWN_SCORE)
    assert r.score == pytest.approx(1 - 4 / 7)
