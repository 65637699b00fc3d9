"""A run folder or an export that was copied, cut or edited never gives a silently
wrong number: a repeated or reordered event, a complete run whose events stop early,
a loosely typed envelope and a stray Parquet file are errors naming the file; runs a
table leaves out are named."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import scarce_lab as sl
from scarce_lab.data.jsonl import TrajectoryFileError
from scarce_lab.environments.sovsim.analysis.metrics import UnfinishedRunsWarning

DATA = Path(__file__).resolve().parents[2] / "data" / "sovsim"
RUN = "sovsim-cpr-scripted-sustainable-s0-0"


def _copy(tmp_path: Path, name: str = RUN, n_events: bool = True) -> Path:
    d = tmp_path / "ds" / name
    shutil.copytree(DATA / name, d)
    if not n_events:  # as recorded before manifests counted their events
        m = json.loads((d / "manifest.json").read_text())
        m.pop("n_events", None)
        (d / "manifest.json").write_text(json.dumps(m))
    return d


def _lines(d: Path) -> list[str]:
    return (d / "events.jsonl").read_text().splitlines(True)


@pytest.mark.parametrize("crlf", [False, True])
def test_repeated_events_are_an_error_not_counted_twice(tmp_path, crlf):
    d = _copy(tmp_path)
    L = _lines(d)
    text = "".join(L[:8] + L[2:8] + L[8:])  # round 1 twice
    (d / "events.jsonl").write_bytes((text.replace("\n", "\r\n") if crlf else text).encode())
    with pytest.raises(TrajectoryFileError, match=r"events.jsonl:9: event seq 2 after seq 7"):
        sl.load(str(tmp_path / "ds"))


def test_reordered_events_are_an_error(tmp_path):
    d = _copy(tmp_path)
    L = _lines(d)
    L[3], L[4] = L[4], L[3]
    (d / "events.jsonl").write_text("".join(L))
    with pytest.raises(TrajectoryFileError, match=r"events.jsonl:4: event seq 4 after seq 2"):
        sl.load(str(tmp_path / "ds"))


@pytest.mark.parametrize("n_events", [True, False])
def test_a_complete_run_cut_at_a_round_boundary_is_an_error(tmp_path, n_events):
    d = _copy(tmp_path, n_events=n_events)
    L = _lines(d)
    assert '"kind":"round_committed"' in L[19]
    (d / "events.jsonl").write_text("".join(L[:20]))
    match = "complete with 75 events per its manifest, but the file holds 20" if n_events else \
        "config means 1 'game_end' event"
    with pytest.raises(TrajectoryFileError, match=match):
        sl.table(str(tmp_path / "ds"))


def test_a_complete_run_cut_mid_round_is_an_error(tmp_path):
    d = _copy(tmp_path, n_events=False)
    (d / "events.jsonl").write_text("".join(_lines(d)[:22]))
    with pytest.raises(TrajectoryFileError, match="not a committed round"):
        sl.load(str(tmp_path / "ds"))


@pytest.mark.parametrize(("field", "value"), [("seq", True), ("round", "1"), ("t", "5"), ("agent", 3)])
def test_the_envelope_is_strictly_typed(tmp_path, field, value):
    d = _copy(tmp_path)
    L = _lines(d)
    x = json.loads(L[6])
    x[field] = value
    L[6] = json.dumps(x) + "\n"
    (d / "events.jsonl").write_text("".join(L))
    with pytest.raises(TrajectoryFileError, match=rf"events.jsonl:7: invalid event: field '{field}'"):
        sl.load(str(tmp_path / "ds"))


def test_a_stray_parquet_file_in_an_export_is_an_error(tmp_path):
    _copy(tmp_path)
    ex = tmp_path / "ex"
    sl.export(sl.load(str(tmp_path / "ds")), str(ex))
    assert sl.table(str(ex)).frame["total_payoff_mean"].to_list() == [960.0]
    f = next((ex / "payloads" / "sovsim" / "round").rglob("data.parquet"))
    shutil.copy(f, f.with_name("data (1).parquet"))
    with pytest.raises(TrajectoryFileError, match=r"data \(1\).parquet: this Parquet file was not written"):
        sl.load(str(ex))
    f.with_name("data (1).parquet").unlink()
    shutil.copy(next((ex / "events").rglob("data.parquet")), f)  # a file swapped for another
    with pytest.raises(TrajectoryFileError, match="rows; the export wrote"):
        sl.load(str(ex))


def test_a_table_names_the_unfinished_runs_it_leaves_out(tmp_path):
    _copy(tmp_path)
    d = _copy(tmp_path, "sovsim-cpr-scripted-sustainable-s0-1")
    m = json.loads((d / "manifest.json").read_text())
    m.update(status="running", n_events=None, ended_at=None)
    (d / "manifest.json").write_text(json.dumps(m))
    (d / "events.jsonl").write_text("".join(_lines(d)[:20]))  # rounds 1-3 committed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = sl.table(str(tmp_path / "ds")).frame
    assert t["n"].to_list() == [1]
    msgs = [str(w.message) for w in caught if issubclass(w.category, UnfinishedRunsWarning)]
    assert msgs and "left out 1 unfinished simulation(s) of 2" in msgs[0] and d.name in msgs[0]
