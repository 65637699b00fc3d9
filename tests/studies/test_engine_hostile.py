"""The study engine against inputs its callers did not plan for: repeated seeds or
arms, non-finite or negative limits, an ``OUT/study.json`` that is not a plain file
or not a study's, and two processes running into one folder."""

from __future__ import annotations

import fcntl
import json
import math
import os

import pytest

from scarce_lab.studies import StudyError, get
from scarce_lab.studies.run import read_state, run

SCRIPTED = {"model": "scripted/skilled", "negotiator_model": "scripted/coalition"}
TINY = {"workers": 2, "subruns": 1, "deadline_min": 4, "max_solver_steps": 5}


def _quiet(*_):
    return None


@pytest.mark.parametrize("kw", [{"seeds": [5, 5]}, {"arms": ["cross", "cross"], "seeds": [2]}])
def test_a_run_named_twice_is_refused_not_run_twice(kw):
    with pytest.raises(StudyError, match="twice"):
        get("memory-horizon").configs(SCRIPTED, overrides=TINY, **kw)


@pytest.mark.parametrize(("kw", "named"), [
    ({"target_width": math.nan, "max_seeds": 3}, "target-width"), ({"target_width": math.inf, "max_seeds": 3},
                                                                    "target-width"),
    ({"cost_limit": math.nan}, "cost-limit"), ({"cost_limit": -1.0}, "cost-limit"),
    ({"cost_limit": math.inf}, "cost-limit"), ({"cost_limit": 0.0}, "cost-limit"), ({"retries": -1}, "retries"),
    ({"target_width": 0.1, "max_seeds": 0}, "max-seeds"), ({"target_width": 0.1, "max_seeds": -2}, "max-seeds"),
])
def test_a_limit_that_is_not_a_finite_number_in_range_is_refused_before_anything_is_written(tmp_path, kw, named):
    with pytest.raises(StudyError, match=named):
        run(get("memory-horizon"), SCRIPTED, out=tmp_path / "o", seeds=[1], arms=["none"], overrides=TINY,
            progress=False, say=_quiet, **kw)
    assert not (tmp_path / "o").exists()


def test_a_study_file_that_is_a_fifo_is_refused_not_read(tmp_path):
    os.mkfifo(tmp_path / "study.json")  # reading it would block for ever
    with pytest.raises(StudyError, match="FIFO"):
        read_state(tmp_path)


def test_a_huge_study_file_is_refused_without_reading_it(tmp_path):
    with open(tmp_path / "study.json", "wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(StudyError, match="limit"):
        read_state(tmp_path)


@pytest.mark.parametrize("text", ['{"study": "memory-horizon", "study": "revisable-bids"}',
                                  '{"study": "memory-horizon", "cost_limit": NaN}'])
def test_a_study_file_with_a_key_twice_or_a_nan_literal_is_refused(tmp_path, text):
    (tmp_path / "study.json").write_text(text)
    with pytest.raises(StudyError, match="study.json"):
        read_state(tmp_path)


def test_a_study_file_linked_from_another_folder_is_read_but_never_written_through(tmp_path):
    import scarce_lab.studies.run as engine

    other = tmp_path / "other"
    other.mkdir()
    (other / "study.json").write_text(json.dumps({"study": "memory-horizon", "models": []}))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "study.json").symlink_to(other / "study.json")
    assert read_state(tmp_path / "out")["study"] == "memory-horizon"
    engine._write_state(tmp_path / "out", {"study": "memory-horizon", "models": [], "stopped": "x"})
    assert "stopped" not in json.loads((other / "study.json").read_text())


@pytest.mark.parametrize("bad", [
    {"study": "memory-horizon", "models": "scripted/routine"},
    {"study": "memory-horizon", "models": [], "seeds": ["0"]},
    {"study": "memory-horizon", "models": [], "seeds_run": [1.5]},
    {"study": "memory-horizon", "models": [], "arms": "none"},
    {"study": "memory-horizon", "models": [], "attempts": []},
])
def test_a_hand_edited_study_file_with_a_field_of_the_wrong_kind_is_refused_naming_it(tmp_path, bad):
    (tmp_path / "study.json").write_text(json.dumps(bad))
    with pytest.raises(StudyError, match=list(bad)[-1]):
        read_state(tmp_path)


def test_a_second_process_running_into_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    with open(out / ".study.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run holds the folder
        with pytest.raises(StudyError, match="another"):
            run(get("memory-horizon"), SCRIPTED, out=out, seeds=[1], arms=["none"], overrides=TINY,
                progress=False, say=_quiet)
    assert not (out / "study.json").exists()
