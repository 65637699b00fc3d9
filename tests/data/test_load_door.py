"""sl.load is the one door: what it refuses instead of reading part of a folder silently
(an export beside run folders, an export one level down, links it does not follow), and
the types it takes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import scarce_lab as sl

REPO = Path(__file__).resolve().parents[2]
SOVSIM = REPO / "data" / "sovsim"


def _two_runs(dest: Path) -> list[Path]:
    runs = sorted(SOVSIM.rglob("manifest.json"))[:2]
    return [Path(shutil.copytree(m.parent, dest / m.parent.name)) for m in runs]


def test_an_export_below_a_folder_is_never_left_out_silently(tmp_path):
    runs = _two_runs(tmp_path / "both")
    sl.export(sl.load(tmp_path / "both"), tmp_path / "exp")
    assert sl.load(tmp_path / "exp").layout == "parquet"  # an export by its own path loads
    shutil.copytree(tmp_path / "exp", tmp_path / "both" / "exp")
    with pytest.raises(ValueError, match=r"holds 1 Parquet export\(s\) .*both/exp.* and 2 run folder\(s\)"):
        sl.load(tmp_path / "both")  # was: the 2 runs, the export's runs dropped without a word
    shutil.copytree(tmp_path / "exp", tmp_path / "only" / "exp")
    with pytest.raises(ValueError, match=r"only/exp\) and 0 run folder"):
        sl.load(tmp_path / "only")
    assert sl.load(runs).runs.collect().height == 2


def test_links_to_runs_are_named_not_dropped_silently(tmp_path):
    real = _two_runs(tmp_path / "real")
    (tmp_path / "ds").mkdir()
    shutil.copytree(real[0], tmp_path / "ds" / "r0")
    os.symlink(real[1], tmp_path / "ds" / "link")
    with pytest.warns(UserWarning, match=r"1 symbolic link\(s\) .* not followed.*ds/link"):
        ds = sl.load(tmp_path / "ds")
    assert ds.runs.collect().height == 1
    (tmp_path / "links").mkdir()
    os.symlink(real[1], tmp_path / "links" / "only")
    with pytest.raises(FileNotFoundError, match=r"no trajectory data .*symbolic link\(s\).*links/only"):
        sl.load(tmp_path / "links")


@pytest.mark.parametrize("bad", [b"data/sovsim", None, 3])
def test_load_names_a_wrong_type(bad):
    with pytest.raises(TypeError, match="paths must be a path or a list of paths, got"):
        sl.load(bad)


def test_table_takes_a_list_of_paths_and_names_a_wrong_type():
    assert sl.table([SOVSIM]).frame.equals(sl.table(SOVSIM).frame)
    with pytest.raises(TypeError, match="sl.table: data must be a path, a list of paths or a Dataset, got NoneType"):
        sl.table(None)


def test_a_relative_path_missing_at_the_root_names_the_one_beside_the_working_directory(monkeypatch):
    monkeypatch.chdir(REPO / "data")
    with pytest.raises(FileNotFoundError, match=r"/sovsim does not exist \(.*data/sovsim exists: a relative path is "
                                                r"read from the project root"):
        sl.load("sovsim")


def test_a_dataset_prints_as_one_line():
    """A dataset on a notebook cell's last line: one line (it printed every manifest,
    171,000 characters for the shipped SovSim runs)."""
    text = repr(sl.load(SOVSIM))
    assert text.startswith("Dataset(runs: sovsim; ") and "complete" in text and "\n" not in text and len(text) < 200
