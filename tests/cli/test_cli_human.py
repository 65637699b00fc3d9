"""``--human`` on the run commands: a person's answers typed on stdin (scripted
keystrokes), refused without a terminal unless asked for, refused for sweeps; and a
game killed while the person is being asked resumes and asks that decision again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
BASE = ["run", "sovsim", "--condition", "bcpr", "--simulations", "1", "--rounds", "2", "--model",
        "scripted/sustainable", "--seat", "a2=human/tomas", "--no-progress"]


def _events(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]


def test_scripted_keystrokes_play_a_seat_from_the_command_line(tmp_path):
    res = runner.invoke(app, [*BASE, "--out", str(tmp_path), "--human", "terminal"],
                        input="first\n31\n99\n12\nsecond\n6\n")
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    mine = [e["payload"] for e in _events(run) if e["agent"] == "a2" and e["kind"] == "extraction"]
    # round 1: 31 and 99 are no legal extraction (multiples of 3 up to 30): asked again until 12
    assert [(p["extraction"], p["reasoning"], p["outcome"]) for p in mine] == [(12, "first", "human"),
                                                                               (6, "second", "human")]
    assert res.output.count("refused") == 2


def test_no_terminal_and_no_human_option_is_refused_naming_the_seat(tmp_path):
    res = runner.invoke(app, [*BASE, "--out", str(tmp_path)], input="x\n")
    assert res.exit_code == 2 and "seat a2 is human/tomas, and stdin is not a terminal" in res.output
    assert not any(tmp_path.iterdir())


def test_a_person_plays_one_game_at_a_time(tmp_path):
    res = runner.invoke(app, [*BASE[:5], "2", *BASE[6:], "--out", str(tmp_path), "--human", "terminal"])
    assert res.exit_code == 2 and "plans 2 runs: a person plays one game at a time" in res.output
    res = runner.invoke(app, [*BASE[:-3], "--no-progress", "--out", str(tmp_path), "--human", "terminal"])
    assert res.exit_code == 2 and "no seat is a person" in res.output


def _cli(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scarce_lab", *BASE[:-1], "--rounds", "3", "--out", str(out),
                             "--human", "terminal", *extra], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})


@pytest.mark.slow
def test_a_game_killed_while_the_person_is_asked_resumes_and_asks_again(tmp_path):
    proc = _cli(tmp_path)
    proc.stdin.write("round one\n9\n")
    proc.stdin.flush()
    seen, deadline = "", time.monotonic() + 120
    while "round 2," not in seen:  # the person is being asked round 2's extraction
        line = proc.stdout.readline()
        assert line and time.monotonic() < deadline, seen[-2000:]
        seen += line
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "running"
    done = [e for e in _events(run) if e["kind"] == "round_committed"]
    assert [e["round"] for e in done] == [0, 1]
    again = _cli(tmp_path, "--resume")
    out, _ = again.communicate("round two\n3\nround three\n0\n", timeout=120)
    assert again.returncode == 0, out
    assert "round 2," in out and "round 1," not in out  # round 2's decision was asked again, round 1's not
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "complete" and man["notes"]["humans"] == {"a2": {"person": "tomas", "time_limit_s": 120.0}}
    mine = [(e["round"], e["payload"]["extraction"], e["payload"]["reasoning"]) for e in _events(run)
            if e["agent"] == "a2" and e["kind"] == "extraction"]
    assert mine == [(1, 9, "round one"), (2, 3, "round two"), (3, 0, "round three")]
