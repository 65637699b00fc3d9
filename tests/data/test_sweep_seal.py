"""A sweep's seal: Table 1's agent-round table served from it while the run folders are as
sealed; any run added, removed or changed after the seal is read from its folder (with a
warning), and a seal of unknown origin or content is ignored and said."""

import io
import json
import os
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest

import scarce_lab.data.loaders as loaders
from scarce_lab.data.sealed import sign, signed_payload
from scarce_lab.data.sweep_seal import _CONTEXT, _MAGIC, SEAL_FILE, SealIgnoredWarning
from scarce_lab.environments.sovsim.runner.play import plan_sweep
from scarce_lab.environments.sovsim.tables import MixedLayoutsError, load_agent_rounds
from scarce_lab.runners.sweep import play, seal


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "out"
    configs = plan_sweep(["cpr", "kcpr_m"], ["scripted/sustainable", "scripted/greedy"], 1, seed=11, rounds=3)
    play("sovsim", configs, out, resume=False, progress=False)
    return out


@pytest.fixture
def folder(sweep, tmp_path) -> Path:
    dest = tmp_path / "sweep"
    shutil.copytree(sweep, dest)  # copy2: new inodes and ctimes, the same bytes
    return dest


def _unsealed(folder: Path, tmp_path: Path) -> pl.DataFrame:
    plain = tmp_path / "unsealed"
    shutil.copytree(folder, plain, ignore=shutil.ignore_patterns(SEAL_FILE))
    return load_agent_rounds(plain, cache=False)


def _no_folder_read(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the run folders were read")
    monkeypatch.setattr(loaders, "_load_dataset", refuse)


def _from_seal(folder: Path, monkeypatch) -> pl.DataFrame:
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("error", SealIgnoredWarning)
        _no_folder_read(m)
        return load_agent_rounds(folder, cache=False)


def _from_folders(folder: Path, why: str) -> pl.DataFrame:
    with pytest.warns(SealIgnoredWarning, match=why):
        return load_agent_rounds(folder, cache=False)


def test_a_sweep_is_sealed_and_its_table_served_from_the_seal(folder, tmp_path, monkeypatch):
    assert (folder / SEAL_FILE).is_file()
    got = _from_seal(folder, monkeypatch)  # a copy (new inodes, ctimes): contents hashed, equal
    want = _unsealed(folder, tmp_path)
    assert want.height > 0 and set(want["condition"]) == {"cpr", "kcpr_m"}
    assert got.equals(want)
    assert _from_seal(folder, monkeypatch).equals(want)  # lazy too
    with monkeypatch.context() as m:
        _no_folder_read(m)
        assert load_agent_rounds(folder, cache=False, lazy=True).collect().equals(want)


def _other_run(folder: Path) -> str:
    runs = sorted(p.name for p in folder.iterdir() if (p / "manifest.json").exists())
    src, new = folder / runs[0], runs[0] + "-again"
    (folder / new).mkdir()
    for f in src.iterdir():
        (folder / new / f.name).write_text(f.read_text().replace(f'"{runs[0]}"', f'"{new}"'))
    return new


def test_a_run_added_after_the_seal_is_read(folder, tmp_path):
    new = _other_run(folder)
    got = _from_folders(folder, "1 run.s. added")
    assert new in set(got["run_id"]) and got.equals(_unsealed(folder, tmp_path))


def test_a_run_removed_after_the_seal_is_not_counted(folder, tmp_path):
    gone = sorted(p.name for p in folder.iterdir() if p.name != SEAL_FILE)[0]
    shutil.rmtree(folder / gone)
    got = _from_folders(folder, "removed")
    assert gone not in set(got["run_id"]) and got.equals(_unsealed(folder, tmp_path))


def test_an_edit_that_keeps_size_and_mtime_is_seen(folder, tmp_path):
    run = sorted(p for p in folder.iterdir() if p.name != SEAL_FILE)[0]
    ev = run / "events.jsonl"
    st = ev.stat()
    text = ev.read_text()
    i = text.index('"kind":"round"')
    j = text.index('"remaining":', i) + len('"remaining":')
    edited = text[:j] + ("7" if text[j] != "7" else "8") + text[j + 1:]
    ev.write_text(edited)
    os.utime(ev, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old mtime set back: the ctime moves
    assert ev.stat().st_size == st.st_size and ev.stat().st_mtime_ns == st.st_mtime_ns
    got = _from_folders(folder, f"run {run.name} changed")
    assert got.equals(_unsealed(folder, tmp_path))


def test_a_folder_made_in_a_run_folder_is_seen(folder):
    run = sorted(p for p in folder.iterdir() if p.name != SEAL_FILE)[0]
    (run / "sub").mkdir()
    _from_folders(folder, "changed")


def test_a_seal_signed_under_another_key_is_ignored(folder, tmp_path, monkeypatch):
    key = tmp_path / "other.key"
    key.write_bytes(b"k" * 32)
    key.chmod(0o600)
    monkeypatch.setenv("SCARCE_LAB_CHECKPOINT_KEY", str(key))
    _from_folders(folder, "signature does not verify")
    seal(folder)  # sealed again under this key: served again
    assert _from_seal(folder, monkeypatch).equals(_unsealed(folder, tmp_path))


def test_a_seal_altered_by_one_byte_is_ignored(folder, tmp_path):
    seal = folder / SEAL_FILE
    blob = bytearray(seal.read_bytes())
    blob[-100] ^= 1  # inside the last Parquet part (the table)
    seal.write_bytes(bytes(blob))
    assert _from_folders(folder, "signature does not verify").equals(_unsealed(folder, tmp_path))


def _resign(folder: Path, edit) -> None:
    """The seal's JSON line and parts changed by ``edit`` and signed again with this key:
    a seal written by this user's own (buggy or hostile) program must still be checked."""
    seal = folder / SEAL_FILE
    payload = signed_payload(seal.read_bytes(), _CONTEXT, _MAGIC)
    head, _, data = payload.partition(b"\n")
    head, data = edit(json.loads(head), data)
    seal.write_bytes(sign(json.dumps(head).encode() + b"\n" + data, _CONTEXT, _MAGIC))


def test_a_signed_seal_whose_part_lies_past_its_end_is_ignored(folder, tmp_path):
    def past(head, data):
        head["tables"]["sovsim/agent_rounds"]["length"] += 10
        return head, data
    _resign(folder, past)
    assert _from_folders(folder, "lies past its end").equals(_unsealed(folder, tmp_path))


def test_a_signed_seal_with_a_column_of_another_dtype_is_ignored(folder, tmp_path):
    def retyped(head, data):
        part = head["tables"]["sovsim/agent_rounds"]
        df = pl.read_parquet(io.BytesIO(data[part["offset"]:part["offset"] + part["length"]]))
        buf = io.BytesIO()
        df.with_columns(pl.col("extraction").cast(pl.String)).write_parquet(buf)
        new = buf.getvalue()
        part["length"] = len(new)
        return head, data[:part["offset"]] + new
    _resign(folder, retyped)
    assert _from_folders(folder, "column 'extraction' is String").equals(_unsealed(folder, tmp_path))


def test_a_signed_seal_with_other_rows_is_ignored(folder, tmp_path):
    def more(head, data):
        head["tables"]["sovsim/agent_rounds"]["rows"] += 1
        return head, data
    _resign(folder, more)
    _from_folders(folder, "rows")


@pytest.mark.parametrize("kind", ["fifo", "huge", "garbage"])
def test_a_hostile_seal_file_is_refused_by_the_read_gate(folder, tmp_path, kind, monkeypatch):
    seal = folder / SEAL_FILE
    seal.unlink()
    if kind == "fifo":
        os.mkfifo(seal)  # must not hang
    elif kind == "huge":
        import dataclasses

        from scarce_lab.data import limits

        monkeypatch.setattr(limits, "LIMITS", dataclasses.replace(limits.LIMITS, parquet_file_bytes=1000))
        seal.write_bytes(b"x" * 1001)
    else:
        seal.write_bytes(b"\x00not a seal\n{}")
    got = _from_folders(folder, "not a regular file|over the limit|does not verify")
    assert got.equals(_unsealed(folder, tmp_path))


def test_a_folder_beside_the_runs_is_walked(folder, tmp_path, monkeypatch):
    (folder / "labels").mkdir()  # a study labels its runs after the sweep: the seal holds
    (folder / "labels" / "labels.parquet").write_bytes(b"")
    (folder / "study.json").write_text("{}")
    assert _from_seal(folder, monkeypatch).equals(_unsealed(folder, tmp_path))
    moved = sorted(p for p in folder.iterdir() if (p / "manifest.json").exists())[0]
    moved.rename(folder / "labels" / moved.name)  # a run below another folder: read as the folders are
    got = _from_folders(folder, "holds a run or an export")
    assert moved.name in set(got["run_id"])


def test_another_layout_beside_the_runs_is_not_hidden_by_the_seal(folder):
    (folder / "labels").mkdir()
    (folder / "labels" / "log_env.json").write_text("{}")
    with pytest.warns(SealIgnoredWarning, match="another layout"), pytest.raises(MixedLayoutsError):
        load_agent_rounds(folder, cache=False)


def test_runs_below_a_group_folder_are_left_unsealed_and_said(tmp_path):
    out = tmp_path / "out"
    play("sovsim", plan_sweep(["cpr"], ["scripted/sustainable"], 1, rounds=2), out / "group", resume=False,
         progress=False)
    with pytest.warns(UserWarning, match="not sealed .*holds a run or an export below"):
        play("sovsim", plan_sweep(["bcpr"], ["scripted/sustainable"], 1, rounds=2), out, resume=False, progress=False)
    assert not (out / SEAL_FILE).exists() and (out / "group" / SEAL_FILE).exists()
    assert load_agent_rounds(out, cache=False).height == 16


def test_sealed_tables_must_be_builders():
    from dataclasses import replace

    from scarce_lab.registry import get

    with pytest.raises(TypeError, match="sealed_tables"):
        replace(get("sovsim"), sealed_tables={"agent_rounds": "not a builder"})


def test_another_layout_in_a_run_folder_is_not_hidden_by_the_seal(folder):
    run = sorted(p for p in folder.iterdir() if (p / "manifest.json").exists())[0]
    (run / "log_env.json").write_text("{}")
    with pytest.warns(SealIgnoredWarning, match="another layout"), pytest.raises(MixedLayoutsError):
        load_agent_rounds(folder, cache=False)


def test_a_sweep_folder_that_was_never_written_is_not_sealed_and_says_nothing(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seal(tmp_path / "never-written") is None
        play("sovsim", [], tmp_path / "empty-sweep", resume=False, progress=False)
    assert not (tmp_path / "never-written").exists()
