"""Run directories: durable rounds, resume after a torn write, corrupt files named by
path and line, loading into polars frames."""

from __future__ import annotations

import json

import polars as pl
import pytest

import scarce_lab
from scarce_lab.data.jsonl import TornLineWarning
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import CHECKPOINT, EVENTS, RunRecorder, TrajectoryFileError
from scarce_lab.data.schema import LLMCallRecord, RunManifest, RunStatus
from scarce_lab.environments.sovsim.events import Extraction


def manifest(run_id="r1") -> RunManifest:
    return RunManifest(
        run_id=run_id, environment="sovsim", condition="cpr", seed=1, package_version=scarce_lab.__version__,
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
    del rec  # the crashed writer is gone (a live one is never taken over)
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


# -- published SovSim layout: the polars reader against the record-by-record one -------
SOVSIM_SAMPLE = __import__("pathlib").Path(__file__).parents[3] / "shared" / "data" / "sovsim_format_sample"


def _record(sim: int, rnd: int, condition: str, rng) -> dict:
    z = [int(v) for v in rng.integers(0, 30, size=4)]
    pool = int(rng.integers(12, 121))
    rec = {"simulation_id": sim, "round": rnd, "pool_before": pool, "extractions": z,
           "final_pool": max(0, pool - sum(z)), "payoffs": [v / 3 for v in z], "collapsed": bool(rng.random() < 0.1),
           "reasonings": [f"why {sim}/{rnd}/{i}" for i in range(4)]}
    if condition == "kcpr_m":
        rec["announced_pool"] = int(rng.integers(0, 200))
    return rec


def test_rationales_fast_reader_equals_the_record_reader(tmp_path):
    """Every frame the polars reader builds equals the reference reader's, and every
    file it cannot take (defects below) gives the reference reader's result or error."""
    import numpy as np
    from polars.testing import assert_frame_equal

    from scarce_lab.environments.sovsim.published import sovsim_json as sj

    rng = np.random.default_rng(0)
    defects = {
        "none": lambda r: None,
        "number as text": lambda r: r.__setitem__("pool_before", "77"),
        "missing field": lambda r: r.pop("final_pool"),
        "null field": lambda r: r.__setitem__("collapsed", None),
        "short payoffs": lambda r: r.__setitem__("payoffs", r["payoffs"][:3]),
        "long payoffs": lambda r: r.__setitem__("payoffs", r["payoffs"] + [1.0]),
        "float id": lambda r: r.__setitem__("simulation_id", 2.0),
        "no reasonings": lambda r: r.pop("reasonings"),
        "short reasonings": lambda r: r.__setitem__("reasonings", ["x"]),
        "five agents": lambda r: (r.__setitem__("extractions", r["extractions"] + [1]),
                                  r.__setitem__("payoffs", r["payoffs"] + [0.5])),
        "bool collapse as int": lambda r: r.__setitem__("collapsed", 1),
    }
    used_fast = 0
    for condition in ("cpr", "bcpr", "kcpr", "kcpr_m"):
        for name, defect in defects.items():
            recs = [_record(s, k, condition, rng) for s in range(3) for k in range(1, 5)]
            defect(recs[int(rng.integers(0, len(recs)))])
            path = tmp_path / name.replace(" ", "_") / "m" / condition / "rationales.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(recs))
            try:
                ref = sj._read_records(path, "m", condition)
            except Exception as exc:  # the reference refuses: so must the reader, alike
                with pytest.raises(type(exc)) as got:
                    sj.read_rationales(path)
                assert str(got.value) == str(exc)
                continue
            raw = sj._read_raw(path)
            used_fast += raw is not None
            assert_frame_equal(sj.read_rationales(path), ref)
            many = sj.read_rationales_many([path]).sort("run_id", "round", "agent_index", maintain_order=True)
            assert_frame_equal(many, ref.sort("run_id", "round", "agent_index", maintain_order=True))
    assert used_fast >= 12  # the fast reader did take the clean files and the tolerable defects


def test_agent_round_cache_is_used_only_while_fresh(tmp_path, monkeypatch):
    import os
    import shutil

    from polars.testing import assert_frame_equal

    from scarce_lab.data import parquet as cache
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    if not SOVSIM_SAMPLE.exists():
        pytest.skip(f"shared data absent: {SOVSIM_SAMPLE}")
    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    shutil.copytree(SOVSIM_SAMPLE, data)
    plain = load_agent_rounds(data)
    first = load_agent_rounds(data, cache=True)  # builds the cache
    folder = cache.cache_dir("sovsim_agent_rounds", data)
    assert (folder / cache.STAMP).exists()
    assert sorted(p.parent.name for p in (folder / "table").rglob("*.parquet"))  # partitioned by model
    assert_frame_equal(first, plain)
    assert_frame_equal(load_agent_rounds(data, cache=True), plain)  # read back in the same order
    lazy = load_agent_rounds(data, cache=True, lazy=True)
    assert isinstance(lazy, pl.LazyFrame) and lazy.collect().height == plain.height
    # Table 1 runs on the lazy frame (tables run on the lazy scan) and agrees
    from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table

    assert_frame_equal(sovsim_table(lazy), sovsim_table(plain))
    # a changed source file makes the cache stale: the new numbers are read, not the old
    f = data / "example-model" / "cpr" / "rationales.json"
    recs = json.loads(f.read_text())
    recs[0]["extractions"][0] = 3
    recs[0]["payoffs"][0] = 1.0 + recs[0]["final_pool"] / 4
    f.write_text(json.dumps(recs))
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    fresh = load_agent_rounds(data, cache=True)
    assert_frame_equal(fresh, load_agent_rounds(data))
    assert fresh.filter(pl.col("condition") == "cpr").sort("run_id", "round", "agent_index")["extraction"][0] == 3
    # a half-written cache (no stamp) is never read
    (folder / cache.STAMP).unlink()
    assert not cache.is_fresh(folder, "anything")
    assert_frame_equal(load_agent_rounds(data, cache=True), fresh)


# -- our run folders: frames built once per dataset, equal to the per-event path --------
def _reference_frames(path):
    """The frames as the loader built them before the one-pass polars readers: one model_dump dict per
    event, one DataFrame per kind from those dicts."""
    from collections import defaultdict

    from scarce_lab.data.loaders import (
        EVENT_COLUMNS,
        KEY_COLUMNS,
        _one_dir_per_run,
        find_run_dirs,
        payload_schema,
        read_run_events,
    )

    events, payloads = [], defaultdict(list)
    for rd, m in _one_dir_per_run(find_run_dirs(path)):
        evs = read_run_events(rd, m, tolerant=m.status != "complete")
        if m.status != "complete":
            last = max((i for i, e in enumerate(evs) if e.kind == "round_committed"), default=-1)
            evs = evs[: last + 1]
        for ev in evs:
            if ev.run_id != m.run_id:
                raise TrajectoryFileError(rd / EVENTS, None, f"event seq {ev.seq} has run_id {ev.run_id!r}, "
                                          f"the manifest says {m.run_id!r}")
            row = {"run_id": ev.run_id, "environment": m.environment, "seq": ev.seq, "round": ev.round,
                   "phase": ev.phase, "agent": ev.agent, "kind": ev.kind, "visibility": ev.visibility.value,
                   "visible_to": ev.visible_to, "t": ev.t}
            events.append(row)
            p = ev.payload.model_dump(exclude={"kind"})
            p.update({k: row[k] for k in KEY_COLUMNS})
            payloads[(m.environment, ev.kind)].append(p)
    frames = {k: pl.DataFrame(rows, schema=payload_schema(*k), orient="row") for k, rows in payloads.items()}
    return pl.DataFrame(events, schema=EVENT_COLUMNS, orient="row"), frames


@pytest.mark.parametrize("folder", ["tests/golden", "data/sovsim", "data/scarce/scripted", "data/economy"])
def test_dataset_frames_equal_the_per_event_reference(folder):
    from pathlib import Path

    from polars.testing import assert_frame_equal

    path = Path(__file__).resolve().parents[2] / folder
    if not path.exists():
        pytest.skip(f"{folder} not in this checkout")
    ds = load_dataset(path)
    ref_events, ref_payloads = _reference_frames(path)
    assert_frame_equal(ds.events.collect(), ref_events)
    assert set(ds._payloads) == set(ref_payloads)
    for key, ref in ref_payloads.items():
        assert_frame_equal(ds.payloads(key[1], key[0]).collect(), ref, check_exact=True)


def test_non_finite_floats_keep_their_value(tmp_path):
    """A hand-written NaN or Infinity (pydantic reads them) is not turned into null."""
    rec = RunRecorder.create(tmp_path / "r1", manifest())
    write_rounds(rec, [1])
    rec.finish(RunStatus.complete)
    path = tmp_path / "r1" / EVENTS
    lines = path.read_text().splitlines()
    obj = json.loads(lines[0])
    obj["t"] = 1.5
    lines[0] = json.dumps(obj).replace("1.5", "NaN")
    path.write_text("\n".join(lines) + "\n")
    ev = load_dataset(tmp_path).events.collect()
    assert ev["t"].is_nan()[0] and ev["t"].null_count() == ev.height - 1


def test_dataset_cache_partitioned_and_fresh_only(tmp_path, monkeypatch):
    """load_dataset(cache=True) writes the dataset as Parquet partitioned by
    environment and model, reads it back identically, and rebuilds it when a run
    changes."""
    import shutil
    from pathlib import Path

    from polars.testing import assert_frame_equal

    from scarce_lab.data import parquet as cache

    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    shutil.copytree(Path(__file__).resolve().parents[1] / "golden" / "v2", data)
    plain = load_dataset(data)
    cached = load_dataset(data, cache=True)
    again = load_dataset(data, cache=True)
    folder = cache.cache_dir("dataset", data) / "dataset"
    parts = {p.relative_to(folder / "events").parts[:2] for p in (folder / "events").rglob("*.parquet")}
    assert {e.split("-", 1)[1] for e, _ in parts} == set(plain.environments)  # one folder per environment ...
    assert len(parts) >= len(plain.environments)  # ... and model
    for ds in (cached, again):
        assert ds.manifests == plain.manifests
        for name in ("runs", "events", "llm_calls"):
            assert_frame_equal(getattr(ds, name).collect(), getattr(plain, name).collect())
        for env in plain.environments:
            for kind in ("round_committed",):
                assert_frame_equal(ds.payloads(kind, env).collect(), plain.payloads(kind, env).collect())
        for (env, kind) in plain._payloads:
            assert_frame_equal(ds.payloads(kind, env).collect(), plain.payloads(kind, env).collect())
    # change one run: the cache is stale and the new content is what loads
    run = sorted(p.parent for p in data.rglob("manifest.json"))[0]
    events = run / EVENTS
    events.write_text(events.read_text())  # same bytes, new modification time
    import os

    st = events.stat()
    os.utime(events, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    stamp_before = (cache.cache_dir("dataset", data) / cache.STAMP).read_text()
    load_dataset(data, cache=True)
    assert (cache.cache_dir("dataset", data) / cache.STAMP).read_text() != stamp_before


def _mutations():
    """(name, function of one parsed line -> new line text or None when it does not apply)."""
    import re

    def payload_key(obj, pred):
        return next((k for k, v in obj["payload"].items() if pred(v)), None)

    def set_payload(obj, key, value):
        if key is None:
            return None
        obj["payload"][key] = value
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)

    def dump(obj):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)

    return [
        ("spaces (valid, not canonical)", lambda o: json.dumps(o, ensure_ascii=False)),
        ("unicode escapes (valid)", lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=True)
         if any(ord(c) > 127 for c in json.dumps(o, ensure_ascii=False)) else None),
        ("int where float", lambda o: set_payload(o, payload_key(o, lambda v: isinstance(v, float) and v.is_integer()),
                                                  int(next(v for v in o["payload"].values()
                                                           if isinstance(v, float) and v.is_integer())))
         if payload_key(o, lambda v: isinstance(v, float) and v.is_integer()) else None),
        ("number where string", lambda o: set_payload(o, payload_key(o, lambda v: isinstance(v, str)), 7)),
        ("bool where int", lambda o: set_payload(o, payload_key(o, lambda v: type(v) is int), True)),
        ("float where int", lambda o: set_payload(o, payload_key(o, lambda v: type(v) is int), 1.5)),
        ("string where bool", lambda o: set_payload(o, payload_key(o, lambda v: type(v) is bool), "true")),
        ("null where required", lambda o: set_payload(o, payload_key(o, lambda v: type(v) in (int, str, bool)), None)),
        ("extra payload field", lambda o: set_payload(o, "zz_extra", 1)),
        ("missing payload field", lambda o: dump({**o, "payload": dict(list(o["payload"].items())[1:])})
         if o["payload"] else None),
        ("renamed payload field", lambda o: dump({**o, "payload": {(k + "x" if i == 0 else k): v
                                                                   for i, (k, v) in enumerate(o["payload"].items())}})
         if o["payload"] else None),
        ("extra envelope field", lambda o: dump({**o, "zz": 1})),
        ("negative seq", lambda o: dump({**o, "seq": -1})),
        ("float seq", lambda o: dump({**o, "seq": float(o["seq"])})),
        ("int t", lambda o: dump({**o, "t": 3})),
        ("private without visible_to", lambda o: dump({**o, "visibility": "private", "visible_to": []})),
        ("public with visible_to", lambda o: dump({**o, "visibility": "public", "visible_to": ["a0"]})),
        ("unknown visibility", lambda o: dump({**o, "visibility": "secret"})),
        ("other run id", lambda o: dump({**o, "run_id": o["run_id"] + "-x"})),
        ("unknown kind", lambda o: dump({**o, "kind": "teleport"})),
        ("payload kind repeated", lambda o: dump({**o, "payload": {**o["payload"], "kind": o["kind"]}})),
        ("negative extraction", lambda o: set_payload(o, "extraction", -3) if "extraction" in o["payload"] else None),
        ("null list element", lambda o: set_payload(o, payload_key(o, lambda v: isinstance(v, list) and v),
                                                    [None]) if payload_key(o, lambda v: isinstance(v, list) and v) else None),
        ("nested record extra key", lambda o: set_payload(
            o, payload_key(o, lambda v: isinstance(v, list) and v and isinstance(v[0], dict)),
            [{**r, "zz": 1} for r in next(v for v in o["payload"].values() if isinstance(v, list) and v
                                          and isinstance(v[0], dict))])
         if payload_key(o, lambda v: isinstance(v, list) and v and isinstance(v[0], dict)) else None),
        ("exponent float", lambda o: re.sub(r'"t":(\d+)\.0', r'"t":\1e0', dump(o)) if isinstance(o.get("t"), float)
         else None),
        ("NaN t", lambda o: dump(o).replace('"t":null', '"t":NaN') if o.get("t") is None else None),
    ]


@pytest.mark.parametrize("env", ["sovsim", "scarce", "economy"])
def test_fast_reader_never_accepts_what_the_models_refuse(tmp_path, env):
    """Each mutation of a golden line (and file-level oddities) loads exactly as the
    per-line typed path loads it: the same frames, or the same path:line error."""
    import random
    import shutil
    from pathlib import Path

    from polars.testing import assert_frame_equal

    src = next((Path(__file__).resolve().parents[1] / "golden" / "v2" / env).iterdir())
    rng = random.Random(env)
    lines = (src / "events.jsonl").read_text(encoding="utf-8").splitlines()
    cases = []
    for name, mutate in _mutations():
        order = list(range(len(lines)))
        rng.shuffle(order)
        for i in order:  # the first line (in random order) the mutation applies to
            new = mutate(json.loads(lines[i]))
            if new is not None and new != lines[i]:
                cases.append((name, "\n".join(lines[:i] + [new] + lines[i + 1:]) + "\n"))
                break
    text = "\n".join(lines) + "\n"
    cases += [("CRLF", text.replace("\n", "\r\n")), ("blank line", text.replace("\n", "\n\n", 1)),
              ("BOM", "\ufeff" + text), ("no final newline", text.rstrip("\n"))]
    assert len(cases) >= 20
    tried = 0
    for name, content in cases:
        d = tmp_path / name.replace(" ", "_") / src.name
        shutil.copytree(src, d)
        (d / "events.jsonl").write_bytes(content.encode("utf-8"))
        try:
            ref_events, ref_payloads = _reference_frames(d.parent)
        except TrajectoryFileError as exc:
            with pytest.raises(TrajectoryFileError) as got:
                load_dataset(d.parent)
            assert str(got.value) == str(exc), name
            continue
        tried += 1
        ds = load_dataset(d.parent)
        assert_frame_equal(ds.events.collect(), ref_events, check_exact=True)
        for (e, kind), ref in ref_payloads.items():
            assert_frame_equal(ds.payloads(kind, e).collect(), ref, check_exact=True)
    assert tried >= 4  # the valid-but-not-canonical files were read, not refused


def test_find_run_dirs_order_is_path_order(tmp_path):
    from scarce_lab.data.loaders import find_run_dirs

    for rel in ("a/x", "a-b/y", "a.c/z", "a/x-1", "A/q", "a b/r", "deep/er/run"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "manifest.json").write_text("{}")
    assert find_run_dirs(tmp_path) == sorted(p.parent for p in tmp_path.rglob("manifest.json"))
    assert find_run_dirs(tmp_path / "a" / "x") == [tmp_path / "a" / "x"]


@pytest.mark.parametrize("env", ["sovsim", "scarce", "economy"])
def test_manifest_with_bom_and_crlf_loads_the_same_run(tmp_path, env):
    """A UTF-8 BOM (or Windows line ends) in a run's manifest.json,
    as an editor on another system writes it, is read, not refused."""
    import shutil
    from pathlib import Path

    from polars.testing import assert_frame_equal

    src = next((Path(__file__).resolve().parents[1] / "golden" / "v2" / env).iterdir())
    d = tmp_path / "bom" / src.name
    shutil.copytree(src, d)
    text = (src / "manifest.json").read_text(encoding="utf-8")
    (d / "manifest.json").write_bytes(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8"))
    got, ref = load_dataset(d.parent), load_dataset(src.parent)

    def runs(ds):
        frame = ds.runs.collect() if hasattr(ds.runs, "collect") else ds.runs
        return frame.drop("run_dir")  # where the copy lives

    assert_frame_equal(runs(got), runs(ref))
    assert_frame_equal(got.events.collect(), ref.events.collect())


def test_one_writer_per_run_also_inside_one_process(tmp_path):
    """A live recorder of this process is never taken over (two writers corrupted a
    'complete' run: a notebook call still running in its thread while a re-run resumed
    it); a writer that is gone (its thread ended, or it was dropped) is."""
    import gc
    import threading

    from scarce_lab.data.recorder import RunInProgressError, run_in_progress

    run = tmp_path / "r1"
    started, release = threading.Event(), threading.Event()

    def writer():
        rec = RunRecorder.create(run, manifest())
        write_rounds(rec, [1])
        started.set()
        release.wait(10)
        write_rounds(rec, [2])
        rec.finish()

    th = threading.Thread(target=writer)
    th.start()
    started.wait(10)
    assert run_in_progress(run)
    with pytest.raises(RunInProgressError, match="this process"):
        RunRecorder.resume(run)
    release.set()
    th.join(10)
    assert load_dataset(tmp_path).events.collect()["seq"].to_list() == list(range(4))  # one writer's stream

    # a writer that crashed (no finish) in a thread that has ended is taken over
    crashed = tmp_path / "r2"
    th = threading.Thread(target=lambda: write_rounds(RunRecorder.create(crashed, manifest("r2")), [1]))
    th.start()
    th.join(10)
    rec, ck = RunRecorder.resume(crashed)
    assert ck is not None and ck.round == 1
    # ... and a live one in this very thread is not (the same run twice in one sweep)
    with pytest.raises(RunInProgressError):
        RunRecorder.resume(crashed)
    del rec
    gc.collect()
    rec, _ = RunRecorder.resume(crashed)  # the dropped writer is gone
    rec.finish()


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_older_files_take_the_fast_path_with_added_fields_filled(version, monkeypatch):
    """Files of versions 2-3 lack only the decision ``call_ids`` (added in version 4): the
    fast reader reads them byte for byte and fills ``[]``, and the result equals the
    line-by-line migration."""
    from polars.testing import assert_frame_equal

    from scarce_lab.data import fastread
    from scarce_lab.data.events import payload_types
    from scarce_lab.data.loaders import load_dataset

    src = __import__("pathlib").Path(__file__).resolve().parents[1] / "golden" / version
    calls = []
    real = fastread.read_environment
    monkeypatch.setattr(fastread, "read_environment", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    fast = load_dataset(src)
    assert sorted(set(calls)) == sorted(fast.environments)  # every environment went the fast way
    monkeypatch.setattr(fastread, "fast_versions", lambda: range(99, 100))
    slow = load_dataset(src)
    assert_frame_equal(fast.events.collect(), slow.events.collect())
    filled = 0
    for env in fast.environments:
        for kind in payload_types(env):
            a, b = fast.payloads(kind, env).collect(), slow.payloads(kind, env).collect()
            assert_frame_equal(a, b)
            if "call_ids" in a.columns and a.height:
                assert a["call_ids"].list.len().sum() == 0  # never guessed
                filled += 1
    assert filled >= 3
