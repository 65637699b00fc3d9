"""The judge's store writes like the run recorders:
fsynced appends, a torn last line repaired before the next append and skipped on load
with a warning naming file and line, other corrupt lines errors naming file and line,
BOM and CRLF accepted, ``panel.json`` replaced atomically."""

from __future__ import annotations

import json
import os

import pytest

from scarce_lab.data.jsonl import (
    TornLineWarning,
    append_jsonl_durable,
    read_json,
    read_jsonl,
    repair_torn_tail,
    write_json_atomic,
)
from scarce_lab.judge.judging import Judgement
from scarce_lab.judge.store import JudgementStore


def J(u: str, status: str = "ok") -> Judgement:
    return Judgement(
        unit_id=u,
        run_id="r",
        round=1,
        agent="A1",
        judge="j1",
        judge_key="k",
        model="m",
        status=status,
    )


def test_killed_writer_then_resume_keeps_every_judgement(tmp_path):
    # The reproduction ../shared/cases/model_io/judge_store_torn_tail.py.
    store = JudgementStore(tmp_path)
    store.append(J("u1"), [])
    store.append(J("u2"), [])
    p = tmp_path / "judgements.jsonl"
    p.write_bytes(p.read_bytes()[:-40])  # writer killed mid-line (no trailing newline)
    with pytest.warns(TornLineWarning, match=r"judgements\.jsonl:2: skipped a torn last line"):
        assert [j.unit_id for j in store.load()] == ["u1"]
    with pytest.warns(TornLineWarning, match=r"judgements\.jsonl:2: dropped a torn last line"):
        store.append(J("u2"), [])  # resume: the torn line is cut before appending
    assert [j.unit_id for j in store.load()] == ["u1", "u2"]
    assert p.read_bytes().endswith(b"\n") and len(p.read_bytes().splitlines()) == 2


def test_corrupt_line_elsewhere_is_an_error_naming_file_and_line(tmp_path):
    store = JudgementStore(tmp_path)
    store.append(J("u1"), [])
    p = tmp_path / "judgements.jsonl"
    p.write_bytes(
        p.read_bytes() + b'{"unit_id": "x" oops\n' + J("u3").model_dump_json().encode() + b"\n"
    )
    with pytest.raises(ValueError, match=r"judgements\.jsonl:2: not a JSON line"):
        store.load()
    p.write_bytes(J("u1").model_dump_json().encode() + b'\n{"unit_id": "x"}\n')
    with pytest.raises(ValueError, match=r"judgements\.jsonl:2: corrupt judgement line"):
        store.load()
    p.write_bytes(b"[1, 2]\n")
    with pytest.raises(ValueError, match=r"judgements\.jsonl:1: expected a JSON object"):
        store.load()


def test_bom_crlf_and_blank_lines_are_read(tmp_path):
    p = tmp_path / "judgements.jsonl"
    lines = [J("u1").model_dump_json(), "", J("u2", "unparseable").model_dump_json()]
    p.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    got = JudgementStore(tmp_path).load()
    assert [(j.unit_id, j.status) for j in got] == [("u1", "ok"), ("u2", "invalid")]
    assert [no for no, _ in read_jsonl(p)] == [1, 3]


def test_complete_last_line_without_newline_is_kept_and_completed(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}')
    assert [o["a"] for _, o in read_jsonl(p)] == [1, 2]
    assert repair_torn_tail(p) == 0 and p.read_bytes() == b'{"a": 1}\n{"a": 2}\n'
    append_jsonl_durable(p, ['{"a": 3}'])
    assert [o["a"] for _, o in read_jsonl(p)] == [1, 2, 3]


@pytest.mark.parametrize(
    "tail",
    [b'{"a": 3', b'{"a": {"b": 1}', '{"a": "\u00e9'.encode()[:-1], b"1", b'{"a": 3}x'],
)
def test_repair_drops_exactly_the_torn_tail(tmp_path, tail):
    p = tmp_path / "x.jsonl"
    head = b'{"a": 1}\n{"a": 2}\n'
    p.write_bytes(head + tail)
    with pytest.warns(TornLineWarning, match=r"x\.jsonl:3: dropped"):
        assert repair_torn_tail(p) == len(tail)
    assert p.read_bytes() == head
    assert repair_torn_tail(p) == 0  # idempotent


def test_repair_of_a_long_torn_single_line_file(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": "' + b"x" * 200_000)  # longer than one read chunk, no newline
    with pytest.warns(TornLineWarning, match=r"x\.jsonl:1: dropped"):
        assert repair_torn_tail(p) == 200_007
    assert p.read_bytes() == b""
    assert repair_torn_tail(tmp_path / "missing.jsonl") == 0


def test_appends_are_fsynced_and_refuse_embedded_newlines(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    p = tmp_path / "x.jsonl"
    assert append_jsonl_durable(p, ['{"a": 1}', '{"a": 2}']) == 18
    assert len(synced) >= 1  # the file (and its folder, when created)
    n = len(synced)
    append_jsonl_durable(p, ['{"a": 3}'])
    assert len(synced) == n + 1
    with pytest.raises(ValueError, match="contains a newline"):
        append_jsonl_durable(p, ['{"a": 4}', '{"a":\n5}'])
    assert [o["a"] for _, o in read_jsonl(p)] == [1, 2, 3]  # nothing of the bad batch
    assert append_jsonl_durable(p, []) == 0


def test_store_append_writes_calls_first_and_both_durably(tmp_path, monkeypatch):
    from scarce_lab.data.schema import LLMCallRecord

    order = []
    import scarce_lab.judge.store as store_mod

    real = store_mod.append_jsonl_durable
    monkeypatch.setattr(
        store_mod,
        "append_jsonl_durable",
        lambda p, lines: (order.append(p.name), real(p, lines))[1],
    )
    store = JudgementStore(tmp_path)
    rec = LLMCallRecord(call_id="c1", model="m", messages=[], messages_hash="h")
    store.append(J("u1"), [rec])
    assert order == ["llm_calls.jsonl", "judgements.jsonl"]
    calls = [json.loads(x) for x in (tmp_path / "llm_calls.jsonl").read_text().splitlines()]
    assert [c["call_id"] for c in calls] == ["c1"]


def test_panel_json_is_atomic_and_bom_tolerant(tmp_path):
    store = JudgementStore(tmp_path)
    store.check_meta({"taxonomy": "scarce", "judges": [{"name": "j1"}]})
    meta = tmp_path / "panel.json"
    meta.write_bytes(b"\xef\xbb\xbf" + meta.read_bytes().replace(b"\n", b"\r\n"))
    store.check_meta({"taxonomy": "scarce", "judges": [{"name": "j2"}]})
    assert [j["name"] for j in read_json(meta)["judges"]] == ["j1", "j2"]
    assert not list(tmp_path.glob(".panel.json.*"))  # no temporary file left
    with pytest.raises(ValueError, match="taxonomy 'scarce', not 'casino'"):
        store.check_meta({"taxonomy": "casino", "judges": []})
    meta.write_text("[]")
    with pytest.raises(ValueError, match="panel.json: expected a JSON object"):
        store.check_meta({"taxonomy": "scarce", "judges": []})
    meta.write_text("{oops")
    with pytest.raises(ValueError, match=r"panel\.json:1:2: not JSON"):
        read_json(meta)
    write_json_atomic(meta, {"x": "é"})
    assert read_json(meta) == {"x": "é"}


def test_pairs_without_an_answer_are_asked_again_locally_and_on_ray(tmp_path, monkeypatch):
    # One resume rule (JudgementStore.done) for run_panel and judge_on_ray: a pair whose
    # status is in NO_ANSWER_STATUSES is asked again (judge_on_ray used to count every
    # pair but a legacy "error" as done, so it sent nothing). Ray is faked in-process.
    from scarce_lab.judge.judges import make_judges
    from scarce_lab.judge.judging import NO_ANSWER_STATUSES
    from scarce_lab.judge.taxonomy import load_taxonomy
    from scarce_lab.judge.units import Unit
    from scarce_lab.runners import executors

    tax = load_taxonomy("scarce")
    (judge,) = make_judges(["openai/judge-a"], seed=0)
    store = JudgementStore(tmp_path)
    for u, status in (("u1", "ok"), ("u2", "transport_error"), ("u3", "invalid")):
        store.append(J(u, status).model_copy(update={"judge_key": judge.key}), [])
    assert "transport_error" in NO_ANSWER_STATUSES
    keys = {judge.key}
    assert set(store.done({"u1", "u2", "u3"}, keys)) == {("u1", judge.key), ("u3", judge.key)}
    assert store.done({"u1"}, {"other"}) == {}

    class FakeRay:
        def remote(self, **_):
            return lambda fn: type("Remote", (), {"remote": staticmethod(fn)})()

        def wait(self, pending, num_returns):
            return pending[:num_returns], pending[num_returns:]

        def get(self, ref):
            return ref

    monkeypatch.setattr(executors, "connect", lambda address: FakeRay())
    units = [
        Unit(unit_id=u, run_id="r", round=1, agent="A1", public_reasoning="I need it.")
        for u in ("u1", "u2", "u3")
    ]
    answer = json.dumps({"labels": [{"label": tax.ids[0], "evidence": ""}]})
    kwargs = {"call_kwargs": {judge.name: {"mock_response": answer}}}
    settings = {"cache": False, "max_retries": 0}
    run = dict(client_settings=settings, panel_kwargs=kwargs, progress=False)
    assert executors.judge_on_ray(units, tax, [judge], tmp_path, **run) == 1  # u2 is sent
    assert set(store.done({"u1", "u2", "u3"}, keys)) == {(u, judge.key) for u in ("u1", "u2", "u3")}
    assert executors.judge_on_ray(units, tax, [judge], tmp_path, **run) == 0  # nothing left
