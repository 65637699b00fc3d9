"""A run folder's files are claims (docs/threat_model.md, "Files as claims"; the loader side).

Each test hands the loaders a file that is not what its name says, or not the run's, or
larger than :data:`scarce_lab.data.limits.LIMITS` allows, and checks that the load stops
with an error naming the file (and the line, the column or the limit), instead of
reading forever, merging it in, or loading it silently. The run is a shipped SovSim run
(20 model calls, 31 events, format 2) copied to a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tracemalloc
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data import jsonl, limits
from scarce_lab.data.jsonl import FileLimitError, TrajectoryFileError
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.parquet import EXPORT_MARKER, export_parquet

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "sovsim" / "sovsim-kcpr_m-embedded-smollm2-s0-0"
RUN_ID = "sovsim-kcpr_m-embedded-smollm2-s0-0"


@pytest.fixture
def run(tmp_path) -> Path:
    dst = tmp_path / "runs" / SHIPPED.name
    shutil.copytree(SHIPPED, dst)
    return dst


def _small_limits(monkeypatch, **kw) -> None:
    monkeypatch.setattr(limits, "LIMITS", dataclasses.replace(limits.LIMITS, **kw))


def _edit_manifest(run: Path, **kw) -> None:
    m = json.loads((run / "manifest.json").read_text())
    for k, v in kw.items():
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    (run / "manifest.json").write_text(json.dumps(m))


def test_the_shipped_run_loads(run):
    ds = load_dataset(run)
    assert (ds.events.collect().height, ds.llm_calls.collect().height) == (31, 20)


# -- not a regular file ---------------------------------------------------------------------
def test_a_fifo_as_llm_calls_is_refused_unopened(run):
    (run / "llm_calls.jsonl").unlink()
    os.mkfifo(run / "llm_calls.jsonl")  # no writer: an open for reading would wait forever
    with pytest.raises(FileLimitError, match=r"llm_calls.jsonl: is a FIFO \(named pipe\), not a regular file"):
        load_dataset(run)


def test_a_link_to_dev_zero_as_manifest_is_refused(run):
    (run / "manifest.json").unlink()
    (run / "manifest.json").symlink_to("/dev/zero")
    with pytest.raises(FileLimitError, match=r"manifest.json: is a character device \(a link to /dev/zero\)"):
        load_dataset(run)


def test_a_directory_named_events_jsonl_is_refused(run):
    (run / "events.jsonl").unlink()
    (run / "events.jsonl").mkdir()
    with pytest.raises(FileLimitError, match=r"events.jsonl: is a folder"):
        load_dataset(run)


def test_a_link_to_a_regular_file_is_read(run, tmp_path):
    """git-annex and DataLad keep data as links to regular files: those load."""
    store = tmp_path / "annex-object"
    (run / "llm_calls.jsonl").rename(store)
    (run / "llm_calls.jsonl").symlink_to(store)
    assert load_dataset(run).llm_calls.collect().height == 20


# -- records of another run -------------------------------------------------------------------
def test_a_call_record_of_another_run_is_an_error_naming_file_line_and_both_ids(run):
    lines = (run / "llm_calls.jsonl").read_text().splitlines()
    other = json.loads(lines[6])
    other["run_id"] = "scarce-other-run-7"
    lines[6] = json.dumps(other)
    (run / "llm_calls.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"llm_calls.jsonl:7: run_id 'scarce-other-run-7' is not this "
                       r"run's: the manifest beside it says 'sovsim-kcpr_m-embedded-smollm2-s0-0'"):
        load_dataset(run)


def test_a_call_record_without_run_id_is_not_this_runs(run):
    with (run / "llm_calls.jsonl").open("a") as fh:
        first = json.loads((run / "llm_calls.jsonl").read_text().splitlines()[0])
        fh.write(json.dumps({**first, "run_id": None, "call_id": "x"}) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"llm_calls.jsonl:21: run_id None is not this run's"):
        load_dataset(run)


@pytest.mark.parametrize("status", ["complete", "running"])  # the fast path, then line by line
def test_an_event_of_another_run_is_an_error_naming_the_line(run, status):
    lines = (run / "events.jsonl").read_text().splitlines()
    lines[12] = lines[12].replace(RUN_ID, "sovsim-cpr-s9-0")
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    _edit_manifest(run, status=status, n_events=None if status == "running" else 31)
    with pytest.raises(TrajectoryFileError, match=r"events.jsonl:13: run_id 'sovsim-cpr-s9-0' is not this run's"):
        load_dataset(run)


# -- counts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["emptied, n_events 0", "deleted, no n_events"])
def test_a_complete_run_without_its_events_is_refused(run, how):
    if how.startswith("emptied"):
        (run / "events.jsonl").write_bytes(b"")
        _edit_manifest(run, n_events=0)
    else:
        (run / "events.jsonl").unlink()
        _edit_manifest(run, n_events=None)
    with pytest.raises(TrajectoryFileError, match=r"events.jsonl: the run is complete per its manifest, but its "
                       "events file is empty"):
        load_dataset(run)


# -- sizes ---------------------------------------------------------------------------------------
def test_a_line_three_times_the_limit_is_refused_within_the_limits_memory(run, monkeypatch):
    limit = 1 << 20
    _small_limits(monkeypatch, line_bytes=limit)
    lines = (run / "llm_calls.jsonl").read_text().splitlines()
    big = json.loads(lines[3])
    big["raw_response"] = "ü" * (3 * limit // 2)  # 3x the limit in UTF-8 bytes
    lines[3] = json.dumps(big, ensure_ascii=False)
    (run / "llm_calls.jsonl").write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(FileLimitError, match=rf"llm_calls.jsonl:4: line longer than the limit of {limit} "
                           r"bytes \(LIMITS.line_bytes\)"):
            list(jsonl.iter_lines(run / "llm_calls.jsonl"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * limit  # streamed: the 3x line is never held whole (readline joins its chunks: ~2x)
    with pytest.raises(FileLimitError, match=r"llm_calls.jsonl:4: line longer"):
        load_dataset(run)


def test_a_long_event_line_is_refused_on_the_fast_path_too(run, monkeypatch):
    _small_limits(monkeypatch, line_bytes=2000)  # the shipped lines are at most ~700 bytes
    lines = (run / "events.jsonl").read_text().splitlines()
    lines[20] = lines[20][:-1] + ', "pad": "' + "x" * 5000 + '"}'
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(FileLimitError, match=r"events.jsonl:21: line longer than the limit of 2000 bytes"):
        load_dataset(run)


def test_more_events_than_the_limit_are_refused(run, monkeypatch):
    _small_limits(monkeypatch, events_per_run=30)
    with pytest.raises(FileLimitError, match=r"events.jsonl:31: more than 30 records \(LIMITS.events_per_run\)"):
        load_dataset(run)


def test_a_manifest_over_its_size_limit_is_refused_unread(run, monkeypatch):
    size = (run / "manifest.json").stat().st_size
    _small_limits(monkeypatch, manifest_bytes=size - 1)
    with pytest.raises(FileLimitError, match=rf"manifest.json: {size} bytes, over the limit of {size - 1} bytes "
                       r"\(LIMITS.manifest_bytes\)"):
        load_dataset(run)


# -- Parquet exports -------------------------------------------------------------------------------
def _export(run: Path, tmp_path: Path) -> Path:
    return export_parquet(load_dataset(run), tmp_path / "export")


def _events_file(out: Path) -> Path:
    (f,) = sorted((out / "events").rglob("data.parquet"))
    return f


@pytest.mark.parametrize(("column", "dtype"), [("round", pl.Float64), ("t", pl.String), ("seq", pl.String)])
def test_an_export_whose_column_has_another_dtype_is_refused(run, tmp_path, column, dtype):
    out = _export(run, tmp_path)
    f = _events_file(out)
    pl.read_parquet(f).with_columns(pl.col(column).cast(dtype)).write_parquet(f)  # same rows, other dtype
    with pytest.raises(TrajectoryFileError, match=rf"data.parquet: column '{column}' is {dtype}, the loader "
                       r"reads it as (Int64|Float64)"):
        load_dataset(out)


def test_an_export_file_that_is_a_link_to_a_device_is_refused(run, tmp_path):
    out = _export(run, tmp_path)
    f = _events_file(out)
    f.unlink()
    f.symlink_to("/dev/zero")
    with pytest.raises(FileLimitError, match=r"data.parquet: is a character device"):
        load_dataset(out)


def test_an_export_manifest_of_another_schema_version_is_refused(run, tmp_path):
    out = _export(run, tmp_path)
    m = json.loads((out / "manifests.jsonl").read_text())
    m["schema_version"] = 3
    (out / "manifests.jsonl").write_text(json.dumps(m) + "\n")
    marker = json.loads((out / EXPORT_MARKER).read_text())["schema_version"]
    with pytest.raises(TrajectoryFileError, match=rf"manifests.jsonl:1: schema_version 3, the export's marker says "
                       rf"{marker}"):
        load_dataset(out)


def test_an_export_is_read_back_unchanged(run, tmp_path):
    ds = load_dataset(run)
    back = load_dataset(_export(run, tmp_path))
    assert back.events.collect().equals(ds.events.collect())
    assert back.llm_calls.collect().equals(ds.llm_calls.collect())


def test_the_viewer_refuses_a_call_of_another_run_too(run):
    from scarce_lab.viewer import view

    with (run / "llm_calls.jsonl").open("a") as fh:
        first = json.loads((run / "llm_calls.jsonl").read_text().splitlines()[0])
        fh.write(json.dumps({**first, "run_id": "economy-9", "call_id": "c-foreign"}) + "\n")
    with pytest.raises(TrajectoryFileError, match=r"llm_calls.jsonl:21: run_id 'economy-9' is not this run's"):
        view(run)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b""])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2, 3 * 512])
def test_a_line_at_the_limit_is_read_whole_and_one_past_it_is_refused(tmp_path, monkeypatch, extra, end):
    """Never a silent cut: around the limit a line comes back byte for byte or the read
    stops naming it (CR LF and a last line without newline included)."""
    limit = 512
    _small_limits(monkeypatch, line_bytes=limit)
    body = b'{"k":"' + b"q" * (limit + extra - 8) + b'"}'
    (tmp_path / "units.jsonl").write_bytes(b'{"first":1}\n' + body + end + b'{"after":2}\n' * bool(end))
    if len(body) <= limit:
        got = [raw for _, raw in jsonl.iter_lines(tmp_path / "units.jsonl")]
        assert got[1] == body and len(got) == 2 + bool(end)
        assert jsonl.read_lines_bounded(tmp_path / "units.jsonl") == (tmp_path / "units.jsonl").read_bytes()
    else:
        for read in (lambda p: list(jsonl.iter_lines(p)), jsonl.read_lines_bounded):  # per line; whole file
            with pytest.raises(FileLimitError, match=r"units.jsonl:2: line longer than the limit of 512 bytes"):
                read(tmp_path / "units.jsonl")


@pytest.mark.parametrize("plant", ["symlink", "fifo", "folder"])
def test_the_durable_append_never_writes_through_what_was_planted(tmp_path, plant):
    """The judge store and the Ray executor append through append_jsonl_durable: a link,
    FIFO or folder planted at the file's name is refused and its target stays as it was."""
    from scarce_lab.data.jsonl import FileLimitError, append_jsonl_durable, repair_torn_tail

    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    path = tmp_path / "judgements.jsonl"
    {"symlink": lambda: path.symlink_to(target), "fifo": lambda: os.mkfifo(path),
     "folder": lambda: path.mkdir()}[plant]()
    with pytest.raises(FileLimitError, match="not a regular file"):
        append_jsonl_durable(path, ['{"a": 1}'])
    with pytest.raises(FileLimitError):
        repair_torn_tail(path)
    assert target.read_text() == "precious\n"


def test_the_durable_append_still_repairs_a_torn_tail(tmp_path):
    from scarce_lab.data.jsonl import TornLineWarning, append_jsonl_durable

    path = tmp_path / "store.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    with pytest.warns(TornLineWarning, match=r"store.jsonl:2"):
        append_jsonl_durable(path, ['{"c": 3}'])
    assert path.read_bytes() == b'{"a": 1}\n{"c": 3}\n'
