"""The lazy SovSim release reader (``scan_rationales_many``) against the eager table and
the strict record-by-record reader: queries polars pushes into the source in forms the
first tests did not ask (a projection of constant columns, a row limit handed over with
a filter written after it), files the fast reader would read otherwise than the strict
reader (a JSON object, a number where a list belongs, half a surrogate pair, a round
recorded twice), and records both refuse naming file, record and field."""

from __future__ import annotations

import json
import random
import re

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scarce_lab.environments.sovsim.published import sovsim_json as sj


@pytest.fixture
def scan_and_table(tmp_path, monkeypatch):
    monkeypatch.setattr(sj, "BATCH_RECORDS", 9)  # several batches per file
    rng = random.Random(11)
    root = tmp_path / "agent_rationales"
    for model, condition in (("q-1", "bcpr"), ("q-1", "cpr"), ("q-2", "kcpr_m")):
        recs = [{"simulation_id": s, "round": t, "pool_before": 90.0, "extractions": [rng.randint(0, 9) for _ in range(3)],
                 "final_pool": 60.0, "payoffs": [1.0, 2.0, 3.0], "collapsed": t == 5, "announced_pool": 70.0,
                 "reasonings": ["u", "v", "w"]} for s in (2, 1, 3) for t in range(1, 6)]
        p = root / model / condition / "rationales.json"
        p.parent.mkdir(parents=True)
        text = json.dumps(recs)
        if condition == "cpr":  # a number as text: this file goes through the strict reader
            text = text.replace('"final_pool": 60.0', '"final_pool": "60"', 1)
        p.write_text(text)
    files = sorted(root.rglob("rationales.json"))
    return sj.scan_rationales_many(files, root=root), sj.read_rationales_many(files, root=root)


@pytest.mark.parametrize("columns", [["valid"], ["source"], ["settings", "fallback_used"], ["valid", "round"]])
def test_a_projection_of_constant_columns_has_a_row_per_agent_round(scan_and_table, columns):
    lf, table = scan_and_table
    assert table.height == 3 * 15 * 3  # three files of 15 records of 3 agents
    assert_frame_equal(lf.select(columns).collect(), table.select(columns))
    assert lf.group_by("source").len().collect().item(0, "len") == table.height


@pytest.mark.parametrize("query", [
    lambda lf: lf.head(40).filter(pl.col("agent") == "a2"),
    lambda lf: lf.head(100).filter(pl.col("round") > 3).select("run_id", "extraction"),
    lambda lf: lf.filter(pl.col("agent") == "a1").head(7),
    lambda lf: lf.head(0).filter(pl.col("agent") == "a1"),
])
def test_a_row_limit_and_a_filter_give_the_eager_rows(scan_and_table, query):
    lf, table = scan_and_table
    assert_frame_equal(query(lf).collect(), query(table.lazy()).collect())


def _records() -> list[dict]:
    return [{"simulation_id": s, "round": t, "pool_before": 70, "extractions": [4, 3, 2], "final_pool": 61,
             "payoffs": [4.0, 3.0, 2.0], "collapsed": False, "reasonings": ["x", "y", "z"]} for s in (5, 4) for t in (1, 2)]


def _both(tmp_path, text: str | bytes):
    """(what the scan collects, what the strict reader gives) of one file, each a frame or the error."""
    p = tmp_path / "agent_rationales" / "q-7" / "bcpr" / "rationales.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = []
    for read in (lambda: sj.scan_rationales_many([p], root=tmp_path / "agent_rationales").collect(),
                 lambda: sj._read_records(p, "q-7", "bcpr", "q-7/bcpr")):
        try:
            out.append(read())
        except Exception as exc:  # noqa: BLE001 - compared below
            out.append(exc)
    return out


@pytest.mark.parametrize("edit", [
    lambda s: json.dumps(json.loads(s)[0]),  # one record, not a list of them
    lambda s: s.replace('"extractions": [4, 3, 2]', '"extractions": 4', 1).replace(
        '"payoffs": [4.0, 3.0, 2.0]', '"payoffs": 4.0', 1),  # numbers where lists belong
    lambda s: s.replace('["x", "y", "z"]', '"xyz"', 1),  # a text where the list of texts belongs
    lambda s: s.replace('"x"', '"\\ud800"', 1),  # half a surrogate pair: no character
    lambda s: s.replace('"x"', '"\\u003a"', 1).replace('"round": 1', '"round": 1, "round": 1', 1),  # a colon escaped
])
def test_what_the_fast_reader_would_read_otherwise_goes_to_the_strict_reader(tmp_path, edit):
    text = edit(json.dumps(_records()))
    p = tmp_path / "r.json"
    p.write_text(text)
    assert sj._read_raw(p) is None
    scanned, strict = _both(tmp_path, text)
    if isinstance(strict, Exception):
        assert type(scanned) is type(strict) and str(scanned) == str(strict)
    else:
        assert_frame_equal(scanned, strict)


@pytest.mark.parametrize("text", [
    json.dumps(_records()).replace('"x"', '"smile \\ud83d\\ude00 \\\\ud800"', 1),  # a pair, and a text that looks like one
    json.dumps(_records()).replace('"round": 1', '"round" : 1'),  # space before the colon: the same keys
    json.dumps(_records()).replace('"x"', '"[a: \\"true\\"] \\\\"', 1),  # brackets, colons, letters in a text
])
def test_well_formed_files_keep_the_fast_reader(tmp_path, text):
    p = tmp_path / "r.json"
    p.write_text(text)
    assert sj._read_raw(p) is not None
    scanned, strict = _both(tmp_path, text)
    assert_frame_equal(scanned, strict)


def test_a_round_recorded_twice_gives_its_rows_in_the_strict_readers_order(tmp_path):
    recs = _records()
    text = json.dumps(recs[:2] + [recs[1] | {"extractions": [9, 9, 9]}] + recs[2:])
    scanned, strict = _both(tmp_path, text)
    assert_frame_equal(scanned, strict)
    twice = strict.filter((pl.col("simulation") == 5) & (pl.col("round") == 2))
    assert twice["agent"].to_list() == ["a0", "a0", "a1", "a1", "a2", "a2"]  # the reference interleaves them


@pytest.mark.parametrize(("edit", "field"), [
    (('"pool_before": 70', '"pool_before": null'), "pool_before"),
    (('"pool_before": 70', '"pool_before": "seventy"'), "pool_before"),
    (('"final_pool": 61', '"final_pool": "inf"'), "final_pool"),
    (('"collapsed": false', '"collapsed": "false"'), "collapsed"),  # bool("false") is True
    (('"collapsed": false', '"collapsed": null'), "collapsed"),
    (('["x", "y", "z"]', '"xyz"'), "reasonings"),  # its letters were read as the agents' reasonings
    (('"payoffs": [4.0, 3.0, 2.0]', '"payoffs": [4.0, 3.0, 2.0, 1.0]'), "payoffs"),
    (('"payoffs": [4.0, 3.0, 2.0]', '"payoffs": [4.0, 3.0]'), "payoffs"),
    (('"extractions": [4, 3, 2]', '"extractions": 4'), "extractions"),
    (('"round": 2', '"round": 2.5'), "round"),  # int() and polars' Int64 both made it round 2
    (('"simulation_id": 4', '"simulation_id": 4.5'), "simulation_id"),
    (('"x"', '"\\ud800"'), "reasonings"),
])
def test_a_record_the_readers_cannot_take_is_refused_naming_file_record_and_field(tmp_path, edit, field):
    scanned, strict = _both(tmp_path, json.dumps(_records()).replace(*edit, 1))
    for err in (scanned, strict):
        assert isinstance(err, ValueError), err
        assert re.search(rf"q-7/bcpr/rationales\.json: record \d+: .*{field}", str(err)), err


def test_a_record_that_is_not_an_object_is_refused_by_its_index(tmp_path):
    scanned, strict = _both(tmp_path, json.dumps([*_records(), None]))
    for err in (scanned, strict):
        assert isinstance(err, ValueError) and "rationales.json: record 4 is not an object" in str(err), err


@pytest.mark.parametrize("second", ["q-1/cpr.old/q-1/cpr", "q-1/cpr/-x/q-1/cpr"])  # a sibling copy; a tree inside
def test_trees_whose_run_ids_sort_across_files_give_the_eager_loaders_order(tmp_path, second):
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    recs = _records() + [r | {"simulation_id": -1} for r in _records()[:2]]
    for folder, text in (("q-1/cpr", json.dumps(recs).replace('"pool_before": 70', '"pool_before": "70"', 1)),
                         (second, json.dumps(recs))):  # the first goes through the strict reader: its own piece
        p = tmp_path / folder / "rationales.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    eager = load_agent_rounds(tmp_path, cache=False)
    assert_frame_equal(load_agent_rounds(tmp_path, cache=False, lazy=True).collect(), eager)
    lf = sj.scan_rationales_many(sorted(tmp_path.rglob("rationales.json")), root=tmp_path)
    assert_frame_equal(lf.head(9).select("run_id", "agent").collect(), eager.head(9).select("run_id", "agent"))


def test_a_refused_file_between_files_parsed_ahead_is_named_and_leaves_no_parse_threads(tmp_path, monkeypatch):
    import gc
    import threading

    monkeypatch.setattr(sj, "BATCH_RECORDS", 3)
    for i in range(5):
        recs = _records()
        if i == 2:
            del recs[3]["final_pool"]
        p = tmp_path / f"q-{i}" / "kcpr" / "rationales.json"
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps(recs))
    lf = sj.scan_rationales_many(sorted(tmp_path.rglob("rationales.json")), root=tmp_path)

    def parse_threads() -> int:
        gc.collect()
        return sum(t.name.startswith("ThreadPoolExecutor") for t in threading.enumerate())

    before = parse_threads()
    for query in (lf, lf.select("extraction"), lf.filter(pl.col("round") == 2).head(50)):
        with pytest.raises(ValueError, match=r"q-2/kcpr/rationales\.json: record 3 lacks field\(s\) \['final_pool'\]"):
            query.collect()
    assert lf.head(2).collect().height == 2  # stops early: the files parsed ahead are let go
    assert parse_threads() == before
