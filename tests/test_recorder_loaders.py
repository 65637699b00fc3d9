"""Run directories: durable rounds, resume after a torn write, corrupt files named by
path and line, loading into polars frames."""

from __future__ import annotations

import json

import polars as pl
import pytest

from scarce_lab.data.events.sovsim import Extraction
from scarce_lab.data.jsonl import TornLineWarning
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import CHECKPOINT, EVENTS, RunRecorder, TrajectoryFileError
from scarce_lab.data.schema import LLMCallRecord, RunManifest, RunStatus


def manifest(run_id="r1") -> RunManifest:
    return RunManifest(
        run_id=run_id, environment="sovsim", condition="cpr", seed=1, package_version="0.1.0",
        models={"a0": "scripted/greedy"}, config={"rounds": 12},
    )


def write_rounds(rec: RunRecorder, rounds):
    for r in rounds:
        rec.emit(Extraction(extraction=3 * r, max_extraction=30, pool_seen=120), round=r, phase="act", agent="a0")
        rec.commit_round(r, state={"after_round": r})


def test_rounds_are_durable_and_load(tmp_path):
    rec = RunRecorder.create(tmp_path / "r1", manifest())
    write_rounds(rec, [1, 2])
    rec.record_calls([LLMCallRecord(call_id="c1", model="m", messages=[], messages_hash="h")])
    rec.finish()
    ds = load_dataset(tmp_path)
    runs = ds.runs.collect()
    assert runs["status"].to_list() == ["complete"]
    assert json.loads(runs["models"][0]) == {"a0": "scripted/greedy"}
    ev = ds.events.collect()
    assert ev.filter(pl.col("kind") == "extraction")["round"].to_list() == [1, 2]
    assert ev["seq"].to_list() == list(range(4))
    assert ev.filter(pl.col("kind") == "extraction")["visible_to"].to_list() == [["a0"], ["a0"]]
    z = ds.payloads("extraction").collect()
    assert z["extraction"].to_list() == [3, 6] and z.schema["extraction"] == pl.Int64  # typed, not JSON text
    assert ds.llm_calls.collect()["run_id"].to_list() == ["r1"]
    assert not (tmp_path / "r1" / CHECKPOINT).exists()  # a complete run keeps no working state


def test_create_refuses_an_existing_run(tmp_path):
    RunRecorder.create(tmp_path / "r1", manifest())
    with pytest.raises(FileExistsError, match="--resume"):
        RunRecorder.create(tmp_path / "r1", manifest())


def test_resume_drops_the_unfinished_round_and_torn_line(tmp_path):
    rd = tmp_path / "r1"
    rec = RunRecorder.create(rd, manifest())
    write_rounds(rec, [1, 2])
    # round 3 half written: one event without its commit marker, then a torn line
    with (rd / EVENTS).open("a") as fh:
        fh.write(json.dumps({"run_id": "r1", "seq": 4, "round": 3, "kind": "extraction", "agent": "a0",
                             "visibility": "private", "visible_to": ["a0"],
                             "payload": {"extraction": 9, "max_extraction": 30, "pool_seen": 120}}) + "\n")
        fh.write('{"run_id": "r1", "seq": 5, "rou')
    with pytest.warns(TornLineWarning, match="events.jsonl:6"):  # what a reader sees meanwhile
        load_dataset(rd)
    rec2, ck = RunRecorder.resume(rd)
    assert ck.state == {"after_round": 2} and ck.round == 2
    assert rec2.manifest.status == RunStatus.running
    write_rounds(rec2, [3])
    rec2.finish()
    ev = load_dataset(rd).events.collect()
    assert ev.filter(pl.col("kind") == "extraction")["round"].to_list() == [1, 2, 3]
    assert ev["seq"].to_list() == list(range(6))


def test_corrupt_line_is_reported_with_path_and_line(tmp_path):
    rd = tmp_path / "r1"
    rec = RunRecorder.create(rd, manifest())
    write_rounds(rec, [1])
    rec.finish()
    lines = (rd / EVENTS).read_text().splitlines()
    lines.insert(1, "{oops")
    (rd / EVENTS).write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFileError) as err:
        load_dataset(tmp_path)
    assert err.value.line == 2 and str(rd / EVENTS) in str(err.value)


def test_missing_dataset_and_bad_manifest(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dataset(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no run directories"):
        load_dataset(tmp_path)
    (tmp_path / "r9").mkdir()
    (tmp_path / "r9" / "manifest.json").write_text('{"run_id": "r9"}')
    with pytest.raises(TrajectoryFileError, match="invalid manifest"):
        load_dataset(tmp_path)
