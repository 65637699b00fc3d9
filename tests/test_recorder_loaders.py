"""Run directories: durable rounds, resume after a torn write, corrupt files named by
path and line, loading into polars frames."""

from __future__ import annotations

import json

import polars as pl
import pytest

from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import EVENTS, RunRecorder, TrajectoryFileError
from scarce_lab.data.schema import LLMCallRecord, RunManifest, RunStatus


def manifest(run_id="r1") -> RunManifest:
    return RunManifest(
        run_id=run_id, environment="sovsim", condition="cpr", seed=1, package_version="0.1.0",
        models={"a0": "scripted/greedy"}, config={"rounds": 12},
    )


def write_rounds(rec: RunRecorder, rounds):
    for r in rounds:
        rec.emit("extraction", round=r, phase="act", agent="a0", payload={"z": 3 * r})
        rec.commit_round(r)


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
    z = ev.filter(pl.col("kind") == "extraction")["payload"].str.json_path_match("$.z")
    assert z.to_list() == ["3", "6"]
    assert ds.llm_calls.collect()["run_id"].to_list() == ["r1"]


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
        fh.write(json.dumps({"run_id": "r1", "seq": 6, "round": 3, "kind": "extraction"}) + "\n")
        fh.write('{"run_id": "r1", "seq": 7, "rou')
    rec2, committed = RunRecorder.resume(rd)
    assert [e.round for e in committed if e.kind == "extraction"] == [1, 2]
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
