"""Table 1 kept beside a cached or sealed agent-round scan: read back for the same data and
arguments, recomputed for other data or arguments, never for a derived frame, and the first
computation's warnings given again."""

import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest

import scarce_lab.environments.sovsim.analysis.metrics as metrics
from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table
from scarce_lab.environments.sovsim.runner.play import plan_sweep
from scarce_lab.environments.sovsim.tables import load_agent_rounds
from scarce_lab.runners.sweep import play


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("simcache") / "out"
    configs = plan_sweep(["bcpr", "kcpr"], ["scripted/sustainable", "scripted/greedy_leader"], 2, seed=4, rounds=3)
    play("sovsim", configs, out, resume=False, progress=False)
    return out


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = metrics.simulation_metrics

    def counting(df, conv, **kw):
        calls.append(1)
        warnings.warn("a warning of the computation", UserWarning, stacklevel=2)
        return real(df, conv, **kw)

    monkeypatch.setattr(metrics, "simulation_metrics", counting)
    return calls


@pytest.mark.parametrize("sealed", [True, False])
def test_a_warm_table_is_its_summary_and_says_the_same_warnings(sweep, tmp_path, counted, sealed):
    path = tmp_path / "runs"
    shutil.copytree(sweep, path, ignore=None if sealed else shutil.ignore_patterns(".scarce_lab_seal"))
    want = sovsim_table(load_agent_rounds(path, cache=False))
    assert len(counted) == 1
    for _ in range(2):
        with pytest.warns(UserWarning, match="a warning of the computation"):
            got = sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
        assert got.equals(want)
    assert len(counted) == 2  # computed once more for the cache, then read back
    sovsim_table(load_agent_rounds(path, cache=True, lazy=True), strict=True)
    sovsim_table(load_agent_rounds(path, cache=True, lazy=True), by="base_condition")
    assert len(counted) == 4  # other arguments: other keys


def test_a_derived_frame_is_computed(sweep, tmp_path, counted):
    path = tmp_path / "runs"
    shutil.copytree(sweep, path)
    sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    one = load_agent_rounds(path, cache=True, lazy=True).filter(pl.col("base_condition") == "kcpr")
    got = sovsim_table(one)
    assert len(counted) == 2 and set(got["condition"]) == {"kcpr"}


def test_a_tampered_kept_table_is_recomputed(sweep, tmp_path, counted, monkeypatch):
    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "runs"
    shutil.copytree(sweep, path, ignore=shutil.ignore_patterns(".scarce_lab_seal"))
    want = sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    (kept,) = (tmp_path / "cache").rglob("tables/*.parquet")
    pl.read_parquet(kept).head(1).write_parquet(kept)
    assert sovsim_table(load_agent_rounds(path, cache=True, lazy=True)).equals(want)
    assert len(counted) == 2


def test_changed_data_is_a_new_key(sweep, tmp_path, counted):
    path = tmp_path / "runs"
    shutil.copytree(sweep, path, ignore=shutil.ignore_patterns(".scarce_lab_seal"))
    before = sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    gone = sorted(p for p in path.iterdir() if "kcpr" in p.name)[0]
    shutil.rmtree(gone)
    after = sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    assert len(counted) == 2 and not after.equals(before)
    assert after.equals(sovsim_table(load_agent_rounds(path, cache=False)))


def test_a_kept_warning_names_no_module_to_import(sweep, tmp_path, counted, monkeypatch):
    import json
    import sys

    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "runs"
    shutil.copytree(sweep, path, ignore=shutil.ignore_patterns(".scarce_lab_seal"))
    sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    (meta,) = (tmp_path / "cache").rglob("tables/*.json")
    kept = json.loads(meta.read_text())
    kept["warnings"] = [["xml.dom.minidom:Warning", "from a hostile file"]]
    meta.write_text(json.dumps(kept))
    sys.modules.pop("xml.dom.minidom", None)
    with pytest.warns(UserWarning, match="from a hostile file") as said:
        sovsim_table(load_agent_rounds(path, cache=True, lazy=True))
    assert "xml.dom.minidom" not in sys.modules and said[0].category is UserWarning and len(counted) == 1
