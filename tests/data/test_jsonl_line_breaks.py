"""JSONL lines never hold a raw Unicode line break.

U+2028, U+2029 (and U+0085) are valid raw inside JSON strings, but readers that split
lines on Unicode line breaks (Python's ``str.splitlines``, several JSONL tools) see torn
records. Every JSONL writer goes through ``scarce_lab.data.jsonl.jsonl_line``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.data.jsonl import append_jsonl_durable, jsonl_line, write_jsonl_atomic

BREAKS = "\u2028\u2029\x85"
RAW = (b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85")


def _check_file(path, expected: list[dict]) -> None:
    data = path.read_bytes()
    assert not any(r in data for r in RAW)
    text = data.decode("utf-8")
    assert [json.loads(line) for line in text.splitlines()] == expected  # one record per splitlines() line


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab \"\\é" + BREAKS + "\t")), max_size=20), min_size=1,
                max_size=5))
def test_any_text_round_trips_one_record_per_line(tmp_path_factory, texts):
    path = tmp_path_factory.mktemp("j") / "a.jsonl"
    records = [{"text": t, "i": i} for i, t in enumerate(texts)]
    append_jsonl_durable(path, [json.dumps(r, ensure_ascii=False) for r in records])
    _check_file(path, records)


def test_whole_file_writer_and_bytes_lines(tmp_path):
    path = tmp_path / "b.jsonl"
    recs = [{"m": "a\u2028b"}, {"m": "c\u2029d\x85e"}]
    write_jsonl_atomic(path, [json.dumps(recs[0], ensure_ascii=False).encode(), json.dumps(recs[1], ensure_ascii=False)])
    _check_file(path, recs)
    with pytest.raises(ValueError, match="contains a newline"):
        jsonl_line('{"a": 1}\n{"b": 2}', path, 3)


def test_a_run_record_with_line_separators(tmp_path):
    """The recorder (llm_calls.jsonl) and the loaders: the text comes back unchanged."""
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.data.recorder import LLM_CALLS, RunRecorder
    from scarce_lab.data.schema import LLMCallRecord, RunManifest

    rec = RunRecorder.create(tmp_path / "r1", RunManifest(
        run_id="r1", environment="sovsim", condition="cpr", seed=1, package_version="0", models={"a0": "m"}))
    answer = "first\u2028second\u2029third\x85end"
    rec.record_calls([LLMCallRecord(call_id="c1", model="m", messages=[], messages_hash="h", raw_response=answer)])
    rec.commit_round(0)  # a complete run holds a committed round (streams.check_complete_run)
    rec.finish()
    data = (tmp_path / "r1" / LLM_CALLS).read_bytes()
    assert not any(r in data for r in RAW) and len(data.decode().splitlines()) == 1
    calls = load_dataset(tmp_path).llm_calls.collect()
    assert calls["raw_response"].to_list() == [answer]


def test_export_manifests_jsonl(tmp_path):
    import scarce_lab as sl
    from scarce_lab.data.recorder import RunRecorder
    from scarce_lab.data.schema import RunManifest

    rec = RunRecorder.create(tmp_path / "runs" / "r1", RunManifest(
        run_id="r1", environment="sovsim", condition="cpr", seed=1, package_version="0",
        models={"a0": "m"}, notes={"why": "x\u2028y"}))
    rec.commit_round(0)
    rec.finish()
    out = sl.export(tmp_path / "runs", tmp_path / "exp")
    data = (out / "manifests.jsonl").read_bytes()
    assert not any(r in data for r in RAW)
    assert sl.load(out).manifests[0].notes == {"why": "x\u2028y"}
