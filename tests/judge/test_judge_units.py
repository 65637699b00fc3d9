"""Judge units from a simple frame and from a small SCARCE run directory.

``make_scarce_run`` (bottom) is shared with the CLI and embedded judge tests."""

import json
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data.recorder import RunRecorder
from scarce_lab.data.schema import RunManifest
from scarce_lab.environments.scarce import events as ev
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
    assert 'from w0: "Let me go first now' in units[1].context  # quoted (llm/quoting.py)
    frame = units_to_frame(units)
    assert frame["recipients"].to_list() == [["w1"], [], ["w1"], []]


def test_units_from_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        units_from_path(tmp_path / "missing")
    bad = tmp_path / "x.txt"
    bad.write_text("")
    with pytest.raises(ValueError, match="unsupported units file type"):
        units_from_path(bad)


# -- kind 8: explicit schemas, no inference from a sample -------------------------------
def _row(i, **over):
    base = {
        "run_id": "r",
        "contention": i,
        "agent": "w0",
        "public_reasoning": "t",
        "private_messages": [],
        "context": "",
    }
    return base | over


def _jsonl(path, rows, *, bom=False, crlf=False, tail=b""):
    nl = b"\r\n" if crlf else b"\n"
    data = b"".join(json.dumps(r).encode() + nl for r in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data + tail)
    return path


def test_jsonl_key_first_appearing_late_is_kept(tmp_path):
    rows = [_row(i) | ({"gold": ["lab_a"]} if i >= 120 else {}) for i in range(150)]
    units = units_from_path(_jsonl(tmp_path / "a.jsonl", rows))
    assert sum(u.gold is not None for u in units) == 30
    assert units[-1].gold == ["lab_a"] and units[0].gold is None


def test_jsonl_list_empty_early_then_objects(tmp_path):
    msg = [{"to": "w1", "text": "hi"}]
    rows = [_row(i, private_messages=msg if i >= 120 else []) for i in range(150)]
    units = units_from_path(_jsonl(tmp_path / "b.jsonl", rows))
    assert len(units) == 150 and units[-1].private_messages[0].to == "w1"
    assert units[0].private_messages == []


def test_ids_stay_strings_with_leading_zeros_and_text_stays_text(tmp_path):
    rows = [
        _row(1, run_id="007", agent="0042", public_reasoning="true", context="false"),
        _row(2, run_id=7, agent="w1", public_reasoning="False"),
    ]
    units = units_from_path(_jsonl(tmp_path / "ids.jsonl", rows))
    assert [(u.run_id, u.agent, u.unit_id) for u in units] == [
        ("007", "0042", "007:1:0042"),
        ("7", "w1", "7:2:w1"),
    ]
    assert units[0].public_reasoning == "true" and units[0].context == "false"
    csv = tmp_path / "ids.csv"
    csv.write_text(
        "run_id,contention,agent,public_reasoning,private_messages,context,gold\n"
        '007,01,0042,true,"[{""to"": ""007"", ""text"": ""false""}]",false,"a,b"\n'
        "007,2,0042,false,,,\n"
    )
    u1, u2 = units_from_path(csv)
    assert (u1.run_id, u1.round, u1.agent, u1.public_reasoning, u1.context) == (
        "007",
        1,
        "0042",
        "true",
        "false",
    )
    assert (u1.private_messages[0].to, u1.private_messages[0].text) == ("007", "false")
    assert u1.gold == ["a", "b"] and u2.gold is None and u2.public_reasoning == "false"


@pytest.mark.parametrize(
    "over, match",
    [
        (
            {"public_reasoning": True},
            r"ids\.jsonl:2: field 'public_reasoning': expected text or null, got True",
        ),
        (
            {"run_id": 7.0},
            r"ids\.jsonl:2: field 'run_id': expected a non-empty string id, got 7\.0",
        ),
        ({"contention": "x"}, r"ids\.jsonl:2: field 'contention': expected an integer, got 'x'"),
        ({"contention": True}, r"field 'contention': expected an integer, got True"),
        ({"gold": [1]}, r"field 'gold': expected a list of label strings, got \[1\]"),
        ({"private_messages": [{"to": True, "text": "x"}]}, r"\.to must be an id, got True"),
        ({"private_messages": [{"to": "a", "text": 5}]}, r"has no 'text' string"),
    ],
)
def test_wrong_types_are_errors_naming_file_line_field_and_value(tmp_path, over, match):
    path = _jsonl(tmp_path / "ids.jsonl", [_row(1), _row(2, **over)])
    with pytest.raises(ValueError, match=match):
        units_from_path(path)


def test_missing_key_and_duplicate_name_the_line(tmp_path):
    bad = _row(2)
    del bad["context"]
    with pytest.raises(ValueError, match=r"m\.jsonl:2: missing keys \['context'\]"):
        units_from_path(_jsonl(tmp_path / "m.jsonl", [_row(1), bad]))
    with pytest.raises(
        ValueError, match=r"d\.jsonl:2: duplicate unit .* \(first at .*d\.jsonl:1\)"
    ):
        units_from_path(_jsonl(tmp_path / "d.jsonl", [_row(1), _row(1)]))


def test_bom_and_crlf_are_accepted(tmp_path):
    units = units_from_path(_jsonl(tmp_path / "c.jsonl", [_row(1), _row(2)], bom=True, crlf=True))
    assert [u.round for u in units] == [1, 2]
    csv = tmp_path / "c.csv"
    text = "run_id,contention,agent,public_reasoning,private_messages,context\r\nr,1,w0,hi,,\r\n"
    csv.write_bytes(b"\xef\xbb\xbf" + text.encode())
    (u,) = units_from_path(csv)
    assert (u.run_id, u.round, u.public_reasoning, u.context) == ("r", 1, "hi", "")


def test_torn_last_line_is_skipped_with_a_warning_and_corrupt_lines_are_errors(tmp_path):
    from scarce_lab.data.jsonl import TornLineWarning

    path = _jsonl(tmp_path / "t.jsonl", [_row(1), _row(2)], tail=b'{"run_id": "r", "conte')
    with pytest.warns(TornLineWarning, match=r"t\.jsonl:3: skipped a torn last line"):
        assert len(units_from_path(path)) == 2
    path.write_bytes(b'{"run_id": \n' + json.dumps(_row(2)).encode() + b"\n")
    with pytest.raises(ValueError, match=r"t\.jsonl:1: not a JSON line"):
        units_from_path(path)


def test_parquet_is_read_with_the_same_row_rules(tmp_path):
    frame = pl.DataFrame(
        {
            "run_id": ["007", "007"],
            "contention": [1, 2],
            "agent": ["w0", "w0"],
            "public_reasoning": ["true", None],
            "private_messages": [[{"to": "w1", "text": "hi"}], [{"to": None, "text": "yo"}]],
            "context": [None, "ctx"],
            "gold": [["a"], None],
        },
        schema_overrides={
            "private_messages": pl.List(pl.Struct({"to": pl.String, "text": pl.String}))
        },
    )
    frame.write_parquet(tmp_path / "u.parquet")
    u1, u2 = units_from_path(tmp_path / "u.parquet")
    assert (u1.run_id, u1.public_reasoning, u1.gold) == ("007", "true", ["a"])
    assert u1.private_messages[0].text == "hi" and u2.gold is None and u2.context == "ctx"


def test_a_folder_is_judged_by_its_environments_spec(tmp_path):
    """``units_from_path`` of a folder builds the units its environment's spec names
    (``judge_units``); an environment without them (Economy of Minds) and a folder
    without a run are refused by name."""
    from scarce_lab import registry
    from scarce_lab.environments.scarce.judge_units import units_from_dataset
    from scarce_lab.judge.taxonomy import taxonomy_for
    from scarce_lab.judge.units import dataset_units

    run = make_scarce_run(tmp_path / "s")
    assert units_from_path(tmp_path / "s") == dataset_units(run) == units_from_dataset(run)
    assert [(s.name, s.taxonomy) for s in registry.specs()] == [
        ("economy", None), ("scarce", "scarce"), ("sovsim", "commons")]
    m = RunManifest(run_id="e", environment="economy", condition="none", seed=1, package_version="test")
    rec = RunRecorder.create(tmp_path / "e" / "e", m)
    rec.commit_round(0)
    rec.finish()
    with pytest.raises(ValueError, match=r"Economy of Minds runs have no judge units .* \['scarce', 'sovsim'\]"):
        units_from_path(tmp_path / "e")
    with pytest.raises(ValueError, match=r"no judge taxonomy for environment 'economy'; known: \['scarce', 'sovsim'\]"):
        taxonomy_for("economy")
    with pytest.raises(ValueError, match="runs of several environments"):
        units_from_path(tmp_path)
    (tmp_path / "none").mkdir()
    with pytest.raises(FileNotFoundError, match="no run directories"):
        units_from_path(tmp_path / "none")


def test_a_spec_names_its_judge_units_with_their_taxonomy():
    import dataclasses

    from scarce_lab import registry

    spec = registry.get("scarce")
    assert spec.speaker_part == "negotiator" and registry.get("sovsim").speaker_part == ""
    with pytest.raises(ValueError, match="'judge_units' and 'taxonomy' go together"):
        dataclasses.replace(spec, taxonomy=None)
    with pytest.raises(ValueError, match="'judge_units' and 'taxonomy' go together"):
        dataclasses.replace(spec, judge_units=None)
    with pytest.raises(TypeError, match="field 'judge_units' must be callable"):
        dataclasses.replace(spec, judge_units="units")
    with pytest.raises(ValueError, match="field 'speaker_part' must be '' or one of seat_parts"):
        dataclasses.replace(spec, speaker_part="talker")


def make_scarce_run(root: Path) -> Path:
    """A two-contention, two-worker SCARCE run written with RunRecorder in the event
    typed events of scarce_lab.environments.scarce.events (declaration, reasoning,
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
        rec.emit(ev.ContentionStart(subrun=0, participants=["w0", "w1"], queue=[ev.QueueEntry(**x) for x in q],
                                    scheduler="negotiation"), round=k, phase="start")
        for w, bid in (("w0", 10), ("w1", 5)):
            rec.emit(ev.Declaration(subrun=0, desired_position=1, desired_duration_seconds=60 if w == "w0" else 30,
                                    bid_price=bid), round=k, phase="declaration", agent=w)
        for w in ("w0", "w1"):
            rec.emit(ev.Reasoning(subrun=0, text=texts[k][w][0]), round=k, phase="reasoning", agent=w)
        for w in ("w0", "w1"):
            msg = texts[k][w][1]
            if msg:
                rec.emit(ev.PrivateMessage(subrun=0, sender=w, recipient=msg["to"], text=msg["text"], private_round=1),
                         round=k, phase="private", agent=w, visible_to=[w, msg["to"]])
        first = "w0" if k == 1 else "w1"
        second = "w1" if k == 1 else "w0"
        rec.emit(ev.Schedule(subrun=0, rule="borda", random_tiebreak=False, negotiation_s=0.0, allocations=[
            ev.Allocation(worker=first, position=1, duration_s=60, price=10, borda=2, first_votes=2),
            ev.Allocation(worker=second, position=2, duration_s=30, price=5, borda=1, first_votes=0),
        ]), round=k, phase="schedule")
        rec.commit_round(k)
    rec.finish()
    return root / "tiny"


def test_a_units_csv_the_package_wrote_reads_back_its_talk_exactly(tmp_path):
    """Before: units_from_path read CSV with polars directly, so talk the CSV gate had
    quoted ('=...) reached the judges with the quote: the text judged was not the text said."""
    from scarce_lab.data.csvsafe import frame_to_csv

    talk = ["=SUM(A1:A3) is my bid", "-5 credits, take it", "@w1 agree?"]
    frame = pl.DataFrame({"run_id": ["r"] * 3, "contention": ["0", "1", "2"], "agent": ["w0", "w1", "w0"],
                           "public_reasoning": talk,
                           "private_messages": [json.dumps([{"to": "w1", "text": t}]) for t in talk],
                           "context": ["+ctx"] * 3})
    frame_to_csv(frame, tmp_path / "units.csv")
    units = units_from_path(tmp_path / "units.csv")
    assert [u.public_reasoning for u in units] == talk and {u.context for u in units} == {"+ctx"}
