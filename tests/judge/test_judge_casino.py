"""The CaSiNo loader on the shared expert-labelled data (and on small synthetic files)."""

import json
from collections import Counter
from pathlib import Path

import pytest

from scarce_lab.judge.casino import load_casino
from scarce_lab.judge.taxonomy import load_taxonomy

CASINO = Path(__file__).parents[3] / "shared" / "data" / "casino"
needs_data = pytest.mark.skipif(
    not CASINO.exists(), reason=f"shared CaSiNo data not found at {CASINO}"
)


@needs_data
def test_valid_split_units_and_gold_labels():
    units = load_casino(CASINO / "casino_valid.json")
    assert len(units) == 76  # 7 annotated dialogues
    u = units[0]
    assert u.unit_id == "157:0:mturk_agent_1" and u.gold == ["small-talk"]
    assert u.private_messages[0].to == "mturk_agent_2" and u.context == ""
    assert units[4].gold == ["self-need"]
    assert units[4].context.startswith('mturk_agent_1: "Great! Have you checked')
    ids = set(load_taxonomy("casino").ids)
    assert {g for x in units for g in x.gold} <= ids
    assert all(x.gold for x in units)


@needs_data
def test_test_split_alignment_skips_unannotated_utterances():
    units = load_casino(CASINO / "casino_test.json")
    assert len(units) == 492
    # Dialogue 35 leaves utterance 5 unannotated: its 6th annotation is turn 6.
    d35 = [u for u in units if u.run_id == "35"]
    assert [u.round for u in d35][:7] == [0, 1, 2, 3, 4, 6, 7]
    assert d35[5].gold == ["no-need"]
    # One label string has a doubled comma ("small-talk,self-need,,vouch-fair").
    d19 = [
        u
        for u in units
        if u.run_id == "19" and u.private_messages[0].text.startswith("Yes. Water is")
    ]
    assert d19[0].gold == ["small-talk", "self-need", "vouch-fair"]
    counts = Counter(len(u.gold) for u in units)
    assert counts == {1: 388, 2: 77, 3: 23, 4: 4}


def _write(tmp_path, dialogues):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(dialogues))
    return p


def test_synthetic_file_limit_context_and_deal_actions(tmp_path):
    dlg = {
        "dialogue_id": 7,
        "chat_logs": [
            {"text": "hi", "task_data": {}, "id": "a"},
            {"text": "I need water", "task_data": {}, "id": "b"},
            {"text": "Submit-Deal", "task_data": {"x": 1}, "id": "a"},
            {"text": "ok", "task_data": {}, "id": "a"},
        ],
        "annotations": [
            ["hi", "small-talk"],
            ["I need water", "self-need,other-need"],
            ["ok", "non-strategic"],
        ],
    }
    p = _write(tmp_path, [{"dialogue_id": 1, "chat_logs": []}, dlg])
    units = load_casino(p, context_turns=1)
    assert [u.unit_id for u in units] == ["7:0:a", "7:1:b", "7:3:a"]
    assert units[1].gold == ["self-need", "other-need"]
    assert units[2].context == 'b: "I need water"'  # the deal action is not an utterance; turns quoted
    assert len(load_casino(p, limit=2)) == 2


def test_misaligned_annotation_is_a_clear_error(tmp_path):
    dlg = {
        "dialogue_id": 9,
        "chat_logs": [{"text": "hi", "id": "a"}],
        "annotations": [["hello", "small-talk"]],
    }
    with pytest.raises(ValueError, match="dialogue 9, annotation 0"):
        load_casino(_write(tmp_path, [dlg]))
    with pytest.raises(FileNotFoundError):
        load_casino(tmp_path / "none.json")


def test_bom_accepted_and_bad_fields_named(tmp_path):
    dlg = {
        "dialogue_id": 3,
        "chat_logs": [{"text": "hi", "id": "a"}, {"text": "yo", "id": "b"}],
        "annotations": [["hi", "small-talk"]],
    }
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps([dlg]).encode())
    assert [u.unit_id for u in load_casino(p)] == ["3:0:a"]
    dlg["chat_logs"][1]["text"] = None
    with pytest.raises(ValueError, match=r"dialogue 0: field 'chat_logs\.1\.text'.*got None"):
        load_casino(_write(tmp_path, [dlg]))
    p.write_text("[{oops")
    with pytest.raises(ValueError, match=r"bom\.json:1:3: not JSON"):
        load_casino(p)
