"""Files as claims, the harness's side: what it writes never follows a link, a folder
it did not make is refused, a checkpoint is never unpickled unless this machine wrote
it for this run, and an unknown scripted name is refused when the config is built.

Instances differ from the issue's (a planted symlink made the harness append events
to another file; a misspelt scripted solver ran a generic routine; a copied run
folder's checkpoint was unpickled)."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

import scarce_lab
from scarce_lab.data.recorder import CHECKPOINT, EVENTS, LLM_CALLS, LOCK, MANIFEST, RunRecorder
from scarce_lab.data.safeio import RunFolderError
from scarce_lab.data.schema import LLMCallRecord, RunManifest
from scarce_lab.data.sealed import KEY_ENV, CheckpointRefusedError
from scarce_lab.environments.sovsim.events import Extraction
from scarce_lab.runtime import open_run


def _manifest(run_id: str = "h7") -> RunManifest:
    return RunManifest(run_id=run_id, environment="sovsim", condition="kcpr", seed=5,
                       package_version=scarce_lab.__version__, models={"a2": "scripted/random"}, config={"rounds": 9})


def _rounds(rec: RunRecorder, rounds) -> None:
    for r in rounds:
        rec.emit(Extraction(extraction=r + 4, max_extraction=20, pool_seen=80), round=r, phase="act", agent="a2")
        rec.commit_round(r, state={"pool": 80 - r, "round": r})


def _crashed_run(folder: Path, run_id: str = "h7", rounds=(1, 2, 3)) -> Path:
    rec = RunRecorder.create(folder, _manifest(run_id))
    _rounds(rec, rounds)
    rec.folder.close()
    del rec  # killed: no finish, the lock's holder is gone
    import gc

    gc.collect()
    return folder


# -- links, FIFOs and foreign folders --------------------------------------------------------
@pytest.mark.parametrize("name", [LLM_CALLS, MANIFEST, LOCK, EVENTS])
def test_a_link_planted_as_a_run_file_is_refused_and_its_target_untouched(tmp_path, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = tmp_path / "out" / "h7"
    run.mkdir(parents=True)
    (run / name).symlink_to(victim)
    with pytest.raises(RunFolderError, match=re.escape(f"{run / name}: found a symbolic link to {str(victim)!r}")):
        RunRecorder.create(run, _manifest())
    assert victim.read_text() == "precious\n"


def test_a_link_planted_in_a_crashed_run_stops_resume_before_anything_is_written(tmp_path):
    run = _crashed_run(tmp_path / "h7")
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")
    (run / LLM_CALLS).unlink()
    (run / LLM_CALLS).symlink_to(elsewhere)
    before = (run / EVENTS).read_bytes()
    with pytest.raises(RunFolderError, match="llm_calls.jsonl: found a symbolic link"):
        RunRecorder.resume(run)
    assert (run / EVENTS).read_bytes() == before and elsewhere.read_text() == ""


def test_a_link_that_appears_during_a_run_is_never_followed(tmp_path):
    """The folder was checked when the run started; a link swapped in afterwards (the
    race a check alone leaves open) is refused by the opener itself."""
    victim = tmp_path / "victim.log"
    victim.write_text("keep\n")
    rec = RunRecorder.create(tmp_path / "h7", _manifest())
    _rounds(rec, [1])
    (rec.run_dir / EVENTS).unlink()
    (rec.run_dir / EVENTS).symlink_to(victim)
    rec.emit(Extraction(extraction=2, max_extraction=20, pool_seen=79), round=2, phase="act", agent="a2")
    with pytest.raises(RunFolderError, match="events.jsonl: found a symbolic link"):
        rec.commit_round(2)
    (rec.run_dir / LLM_CALLS).unlink()
    (rec.run_dir / LLM_CALLS).symlink_to(tmp_path / "made_by_harness.jsonl")
    with pytest.raises(RunFolderError, match="llm_calls.jsonl"):
        rec.record_calls([LLMCallRecord(call_id="c9", model="m", messages=[], messages_hash="h")])
    assert victim.read_text() == "keep\n" and not (tmp_path / "made_by_harness.jsonl").exists()
    for name in (EVENTS, LLM_CALLS):  # the links go: what was buffered is written to files of the run
        (rec.run_dir / name).unlink()
    (rec.run_dir / MANIFEST).unlink()
    (rec.run_dir / MANIFEST).symlink_to(victim)
    rec.finish()  # the manifest is replaced by a rename: the link goes, its target stays
    assert victim.read_text() == "keep\n" and not (rec.run_dir / MANIFEST).is_symlink()


def test_a_hard_link_planted_as_the_events_file_is_not_appended_to(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"")
    rec = RunRecorder.create(tmp_path / "h9", _manifest("h9"))
    (rec.run_dir / EVENTS).unlink()
    os.link(other, rec.run_dir / EVENTS)  # a regular file, but writing it would write another name
    with pytest.raises(RunFolderError, match="events.jsonl: found a file with 2 hard links"):
        _rounds(rec, [1])
    assert other.read_bytes() == b""


def test_a_run_folder_that_is_a_link_is_refused(tmp_path):
    target = tmp_path / "someone_elses"
    target.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "h7").symlink_to(target)
    with pytest.raises(RunFolderError, match=r"h7: found a symbolic link to .*someone_elses.* where the run folder"):
        RunRecorder.create(tmp_path / "out" / "h7", _manifest())
    assert list(target.iterdir()) == []
    # the same through the runners' door, and for a folder holding a run
    shutil.copytree(_crashed_run(tmp_path / "real"), target, dirs_exist_ok=True)
    with pytest.raises(RunFolderError, match="where the run folder"):
        open_run(tmp_path / "out" / "h7", _manifest(), resume=True)


def test_fifos_are_refused_without_blocking(tmp_path):
    run = tmp_path / "h7"
    run.mkdir()
    os.mkfifo(run / EVENTS)
    with pytest.raises(RunFolderError, match=r"events.jsonl: found a FIFO \(named pipe\) where the run's file"):
        RunRecorder.create(run, _manifest())
    os.unlink(run / EVENTS)
    os.mkfifo(run / "pipe")
    with pytest.raises(RunFolderError, match=r"holds 'pipe' \(a FIFO \(named pipe\)\), which is no file of a run"):
        RunRecorder.create(run, _manifest())
    os.unlink(run / "pipe")
    crashed = _crashed_run(tmp_path / "h8", "h8")
    (crashed / MANIFEST).unlink()
    os.mkfifo(crashed / MANIFEST)  # open_run reads the manifest: refused before reading
    with pytest.raises(RunFolderError, match="manifest.json: found a FIFO"):
        open_run(crashed, _manifest("h8"), resume=True)


def test_a_folder_of_something_else_is_refused_a_crashed_start_is_not(tmp_path):
    run = tmp_path / "h7"
    (run / "data").mkdir(parents=True)
    with pytest.raises(RunFolderError, match=r"holds 'data' \(a folder\), which is no file of a run: the harness did "
                                             "not create this folder"):
        RunRecorder.create(run, _manifest())
    shutil.rmtree(run / "data")
    (run / EVENTS).write_bytes(b"")  # a start killed before its manifest: only run files
    (run / f".{MANIFEST}.4242.tmp").write_bytes(b"{")
    RunRecorder.create(run, _manifest()).finish()


# -- checkpoints --------------------------------------------------------------------------------
def test_a_checkpoint_written_under_another_key_is_refused_and_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "theirs.key"))
    run = _crashed_run(tmp_path / "copied")
    assert oct((tmp_path / "keys" / "theirs.key").stat().st_mode & 0o777) == "0o600"
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "mine.key"))
    files = {p.name: p.read_bytes() for p in run.iterdir() if p.name != LOCK}
    with pytest.raises(CheckpointRefusedError, match="written on another machine or altered: resume refuses to load it"):
        RunRecorder.resume(run)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name != LOCK} == files
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "theirs.key"))
    rec, ck = RunRecorder.resume(run)
    assert ck.state == {"pool": 77, "round": 3}
    rec.finish()


def test_a_tampered_moved_or_unsigned_checkpoint_is_refused(tmp_path):
    a = _crashed_run(tmp_path / "a", "ra")
    b = _crashed_run(tmp_path / "b", "rb", rounds=(1, 2, 3))
    blob = (a / CHECKPOINT).read_bytes()
    flipped = bytearray(blob)
    flipped[-7] ^= 0x01  # one byte of the pickle
    (a / CHECKPOINT).write_bytes(bytes(flipped))
    with pytest.raises(CheckpointRefusedError, match=r"a[/\\]\.checkpoint\.pkl: the checkpoint does not verify"):
        RunRecorder.resume(a)
    (b / CHECKPOINT).write_bytes(blob)  # run a's checkpoint, sealed here, moved to run b
    with pytest.raises(CheckpointRefusedError, match="does not verify"):
        RunRecorder.resume(b)

    class _Plant:  # an unsigned pickle that runs code when loaded (the old format's risk)
        def __reduce__(self):
            return (Path(tmp_path / "ran").write_text, ("code ran",))

    (b / CHECKPOINT).write_bytes(pickle.dumps(_Plant()))
    with pytest.raises(CheckpointRefusedError, match="is unsigned"):
        RunRecorder.resume(b)
    assert not (tmp_path / "ran").exists()
    (b / CHECKPOINT).unlink()  # what the message tells the user: the run restarts from its start
    rec, ck = RunRecorder.resume(b)
    assert ck is None
    rec.finish()


def test_a_key_file_open_to_others_is_refused(tmp_path, monkeypatch):
    from scarce_lab.data.sealed import _KEYS, checkpoint_key

    key = tmp_path / "k"
    monkeypatch.setenv(KEY_ENV, str(key))
    first = checkpoint_key()
    assert checkpoint_key() == first and len(first) == 32
    key.chmod(0o644)
    _KEYS.clear()  # read once per process: a new process reads it again
    with pytest.raises(PermissionError, match="open to others"):
        checkpoint_key()
    key.chmod(0o600)
    key.rename(tmp_path / "k2")
    key.symlink_to(tmp_path / "k2")
    _KEYS.clear()
    with pytest.raises(OSError):
        checkpoint_key()


def test_nothing_in_the_package_unpickles_outside_the_gate():
    """``scarce_lab.data.sealed.unseal`` is the one unpickling of a checkpoint."""
    root = Path(scarce_lab.__file__).parent
    pattern = re.compile(r"\bpickle\.(loads?|Unpickler)\b|\b(cPickle|_pickle|dill|cloudpickle|shelve|joblib\.load)\b")
    found = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line.split("#", 1)[0]) and p.relative_to(root).as_posix() != "data/sealed.py"]
    assert found == []
    gate = (root / "data" / "sealed.py").read_text(encoding="utf-8")
    assert gate.count("pickle.loads(") == 1 and gate.index("compare_digest") < gate.index("pickle.loads(")


# -- scripted names -----------------------------------------------------------------------------
@pytest.mark.parametrize("build, field, value, known", [
    (lambda: _sovsim(model="scripted/sustainible"), "model", "scripted/sustainible", "scripted/quota_keeper"),
    (lambda: _sovsim(model="scripted/greedy", seats={"king": "scripted/greedy-leader"}), "seats.a",
     "scripted/greedy-leader", "scripted/greedy_leader"),
    (lambda: _scarce(model="scripted/routeen", negotiator_model="scripted/edf"), "model", "scripted/routeen",
     "scripted/routine"),
    (lambda: _scarce(model="scripted/edf", seats={"w1.solver": "scripted/skiled:0.4"}), "seats.w1.solver",
     "scripted/skiled:0.4", "scripted/skilled"),
    (lambda: _scarce(model="openai/gpt-4o-mini", negotiator_model="scripted/urgent"), "negotiator_model",
     "scripted/urgent", "scripted/urgency"),
    (lambda: _scarce(model="scripted/edf", seats={"w0.negotiator": "scripted/routine"}), "seats.w0.negotiator",
     "scripted/routine", "scripted/highest-bid"),
    (lambda: _economy(model="scripted/experts"), "model", "scripted/experts", "scripted/random-rules"),
    (lambda: _economy(task="arithmetic", model="scripted/partial", seats={"a1": "scripted/expert"}), "seats.a1",
     "scripted/expert", "scripted/full"),
])
def test_an_unknown_scripted_name_is_refused_when_the_config_is_built(build, field, value, known):
    with pytest.raises(ValidationError) as info:
        build()
    text = str(info.value)
    assert text.count(field) >= 1 and repr(value) in text and known in text, text


def test_the_cli_refuses_a_misspelt_solver_before_any_folder(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    res = CliRunner().invoke(app, ["run", "scarce", "-m", "scripted/rutine", "--negotiator-model", "scripted/sjf",
                                   "--dry-run", "-o", str(tmp_path / "o")])
    flat = " ".join(res.output.split())
    assert res.exit_code == 2 and "'scripted/rutine' names no scripted policy of scarce" in flat, res.output
    assert not (tmp_path / "o").exists()


def _sovsim(**kw):
    from scarce_lab.environments.sovsim.config import SovSimConfig

    return SovSimConfig(condition="kcpr", **kw)


def _scarce(**kw):
    from scarce_lab.environments.scarce.config import ScarceConfig

    return ScarceConfig(workers=2, **kw)


def _economy(**kw):
    from scarce_lab.environments.economy.config import EconomyRunConfig

    return EconomyRunConfig(episodes=2, **kw)
