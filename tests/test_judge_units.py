"""Judge units from a simple frame and from a small SCARCE run directory.

``make_scarce_run`` (bottom) is shared with the CLI and embedded judge tests."""

import json
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data.recorder import RunRecorder
from scarce_lab.data.schema import RunManifest
from scarce_lab.judge.units import units_from_frame, units_from_path, units_to_frame


def _frame(**over):
    base = {
        "run_id": ["r", "r", "r"],
        "contention": [2, 1, 1],
        "agent": ["a", "b", "a"],
        "public_reasoning": ["I go first.", None, "Deadline soon."],
        "private_messages": [
            json.dumps([{"round": 1, "to": "b", "text": "deal?"}]),
            "[]",
            json.dumps(["plain text message"]),
        ],
        "context": ["state 2", "state 1", None],
    }
    base.update(over)
    return pl.DataFrame(base)


def test_units_from_frame_sorted_keyed_and_empty_dropped():
    units = units_from_frame(_frame())
    # (r, 1, b) has no reasoning and no message: nothing to label, dropped.
    assert [u.unit_id for u in units] == ["r:1:a", "r:2:a"]
    assert units[0].private_messages[0].to is None
    assert units[0].private_messages[0].text == "plain text message"
    assert units[0].context == ""
    assert units[1].recipients == ["b"] and units[1].round == 2
    assert len(units_from_frame(_frame(), keep_empty=True)) == 3


def test_units_frame_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"lacks columns \['context'\]"):
        units_from_frame(_frame().drop("context"))
    with pytest.raises(ValueError, match="duplicate unit"):
        units_from_frame(_frame(contention=[1, 1, 1], agent=["a", "a", "b"]))
    with pytest.raises(ValueError, match="has no 'text'"):
        units_from_frame(_frame(private_messages=['[{"to": "b"}]', "[]", "[]"]))


def test_units_from_scarce_run(tmp_path):
    run = make_scarce_run(tmp_path)
    units = units_from_path(run)
    assert [u.unit_id for u in units] == ["tiny:1:w0", "tiny:1:w1", "tiny:2:w0", "tiny:2:w1"]
    u = units[2]
    assert u.public_reasoning == "You waited last time, so this slot is yours."
    assert [(m.to, m.text) for m in u.private_messages] == [
        ("w1", "As promised, you go first this time.")
    ]
    # The context is the contention's public state (not the unit's own reasoning).
    assert "w1: position 1, 30 s, bid 5 credits" in u.context
    assert "Thanks, I'll take the first slot" in u.context
    assert "You waited last time" not in u.context
    assert "Previous contention's order: 1. w0 (60 s), 2. w1 (30 s)" in u.context
    # w1 received w0's private message in contention 1.
    assert "from w0: Let me go first now" in units[1].context
    frame = units_to_frame(units)
    assert frame["recipients"].to_list() == [["w1"], [], ["w1"], []]


def test_units_from_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        units_from_path(tmp_path / "missing")
    bad = tmp_path / "x.txt"
    bad.write_text("")
    with pytest.raises(ValueError, match="unsupported units file type"):
        units_from_path(bad)


def make_scarce_run(root: Path) -> Path:
    """A two-contention, two-worker SCARCE run written with RunRecorder in the event
    layout documented in scarce_lab.data.tables.scarce (declaration, reasoning,
    private_message, schedule). Returns the run directory."""
    m = RunManifest(
        run_id="tiny",
        environment="scarce",
        condition="fixed",
        seed=1,
        package_version="test",
        models={"negotiator": "scripted/test"},
    )
    rec = RunRecorder.create(root / "tiny", m)
    q = [
        {"worker": "w0", "request_time_s": 1.0, "requested_duration_s": 60},
        {"worker": "w1", "request_time_s": 2.0, "requested_duration_s": 30},
    ]
    texts = {
        1: {
            "w0": (
                "My deadline is in 90 seconds and yours is later, so I should go first.",
                {"to": "w1", "text": "Let me go first now and I will let you go first next time."},
            ),
            "w1": ("My job takes only 30 seconds, so the shortest job should run first.", None),
        },
        2: {
            "w0": (
                "You waited last time, so this slot is yours.",
                {"to": "w1", "text": "As promised, you go first this time."},
            ),
            "w1": ("Thanks, I'll take the first slot as we agreed.", None),
        },
    }
    for k in (1, 2):
        rec.emit(
            "contention_start",
            round=k,
            phase="start",
            payload={
                "subrun": 0,
                "participants": ["w0", "w1"],
                "queue": q,
                "scheduler": "negotiation",
            },
        )
        for w, bid in (("w0", 10), ("w1", 5)):
            rec.emit(
                "declaration",
                round=k,
                phase="declaration",
                agent=w,
                payload={
                    "subrun": 0,
                    "desired_position": 1,
                    "desired_duration_seconds": 60 if w == "w0" else 30,
                    "bid_price": bid,
                    "violation": None,
                    "fallback_used": False,
                },
            )
        for w in ("w0", "w1"):
            rec.emit(
                "reasoning",
                round=k,
                phase="reasoning",
                agent=w,
                payload={"subrun": 0, "text": texts[k][w][0], "visibility": "public"},
            )
        for w in ("w0", "w1"):
            msg = texts[k][w][1]
            if msg:
                rec.emit(
                    "private_message",
                    round=k,
                    phase="private",
                    agent=w,
                    payload={
                        "subrun": 0,
                        "sender": w,
                        "recipient": msg["to"],
                        "text": msg["text"],
                        "round": 1,
                        "visible_to": [w, msg["to"]],
                        "violation": None,
                    },
                )
        first = "w0" if k == 1 else "w1"
        second = "w1" if k == 1 else "w0"
        rec.emit(
            "schedule",
            round=k,
            phase="schedule",
            payload={
                "subrun": 0,
                "rule": "borda",
                "allocations": [
                    {
                        "worker": first,
                        "position": 1,
                        "duration_s": 60,
                        "price": 10,
                        "borda": 2,
                        "first_votes": 2,
                    },
                    {
                        "worker": second,
                        "position": 2,
                        "duration_s": 30,
                        "price": 5,
                        "borda": 1,
                        "first_votes": 0,
                    },
                ],
            },
        )
        rec.commit_round(k)
    rec.finish()
    return root / "tiny"
