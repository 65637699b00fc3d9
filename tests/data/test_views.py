"""One door: ``sl.load`` of one path or a list of them, published layouts found through
the registry (:attr:`EnvironmentSpec.layouts`), and each environment's typed view
``ds.<environment>`` (:attr:`EnvironmentSpec.view`), built once per dataset."""

from __future__ import annotations

import dataclasses
import json
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import scarce_lab as sl
from scarce_lab import registry as environments
from scarce_lab.data.loaders import Dataset, combine, load_dataset
from scarce_lab.environments.economy import tables as economy_tables
from scarce_lab.environments.scarce.tables import ScarceTables
from scarce_lab.environments.sovsim.tables import from_dataset, label_conditions, load_agent_rounds
from scarce_lab.registry import EnvironmentSpec, PublishedLayout
from tests.toy_env.spec import SPEC as TOY

REPO = Path(__file__).resolve().parents[2]
SOVSIM = REPO / "data" / "sovsim"
BUDGET = REPO / "data" / "scarce" / "scripted" / "budget"
DEADLINES = REPO / "data" / "scarce" / "scripted" / "deadlines"
ECONOMY = REPO / "data" / "economy" / "arithmetic"
SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "sovsim_format_sample"
needs_sample = pytest.mark.skipif(not SAMPLE.exists(), reason=f"shared data absent: {SAMPLE}")


@pytest.fixture
def toy():
    environments.register(TOY)
    yield TOY
    environments.unregister("toy")


def _sovsim_runs(dest: Path, n: int = 2) -> Path:
    """The first ``n`` shipped SovSim runs copied below ``dest``."""
    for rd in sorted(p for p in SOVSIM.iterdir() if p.is_dir())[:n]:
        shutil.copytree(rd, dest / rd.name)
    return dest


# -- the views ---------------------------------------------------------------------------
def test_the_sovsim_view_is_the_condition_labelled_agent_round_table(tmp_path):
    ds = sl.load(_sovsim_runs(tmp_path))
    view = ds.sovsim
    assert view is ds.sovsim and view.agent_rounds is view.agent_rounds  # built once, read once
    assert_frame_equal(view.agent_rounds, label_conditions(from_dataset(ds), skip=("condition", "seats")))
    # the face's findings read the view: Table 1 of the dataset is Table 1 of its view's rows
    from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table

    assert_frame_equal(sl.sovsim.table(ds).frame, sovsim_table(view.agent_rounds))
    assert_frame_equal(view.agent_rounds, load_agent_rounds(tmp_path))  # the path door gives the same rows
    assert "sovsim" in dir(ds) and "scarce" not in dir(ds)


def test_the_scarce_view_is_the_labelled_tables_with_run_settings():
    ds = sl.load(BUDGET)
    view = ds.scarce
    assert isinstance(view, ScarceTables) and view is ds.scarce
    old = ScarceTables(load_dataset(BUDGET))  # the view of the same runs loaded without sl.load
    for name in ("settings", "contentions", "submissions", "messages"):
        assert_frame_equal(getattr(view, name), getattr(old, name))
    assert view.contentions is view.contentions
    assert {"negotiator", "mechanism"} <= set(view.contentions.columns)  # the run settings beside each row
    face = sl.scarce.load([str(BUDGET)])  # the face's door is sl.load checked to hold SCARCE runs: a Dataset
    assert isinstance(face, Dataset)
    assert_frame_equal(face.scarce.contentions, view.contentions)
    with pytest.raises(ValueError, match="no SCARCE run"):
        sl.scarce.load(ECONOMY)
    assert repr(view).startswith(f"ScarceTables({view.settings.height} runs, ")


def test_the_economy_view_holds_every_tidy_table():
    ds = sl.load(ECONOMY)
    view = ds.economy
    names = ("runs", "episodes", "population", "agent_episodes", "wins", "steps", "births", "deaths",
             "agent_wealth", "joins")
    for name in names:
        assert_frame_equal(getattr(view, name), getattr(economy_tables, name)(ds))
        assert getattr(view, name) is getattr(view, name)
    assert view.episodes.height > 0 and set(environments.get("economy").tables) == set(names)


def test_a_view_the_dataset_does_not_hold_names_what_it_holds():
    ds = sl.load(BUDGET)
    with pytest.raises(ValueError, match=r"ds.sovsim: this dataset holds environments \['scarce'\]"):
        _ = ds.sovsim
    with pytest.raises(ValueError, match=r"holds environments \['scarce'\], not 'economy'"):
        _ = ds.economy
    with pytest.raises(ValueError, match="holds environments"):  # the face goes through the view
        sl.sovsim.table(ds)
    with pytest.raises(AttributeError, match=r"no attribute 'agent_rounds' \(environment views: \['economy', "):
        _ = ds.agent_rounds
    assert not hasattr(ds, "nothing")


def test_an_environment_without_a_view_has_no_attribute(toy, tmp_path):
    plain = dataclasses.replace(TOY, view=None)
    environments.unregister("toy")
    environments.register(plain)
    try:
        sl.run(TOY.config(rounds=2), out=tmp_path)
        ds = sl.load(tmp_path)
        with pytest.raises(AttributeError, match="no attribute 'toy'"):
            _ = ds.toy
    finally:
        environments.unregister("toy")
        environments.register(TOY)


# -- a list of paths ---------------------------------------------------------------------
def test_a_list_of_paths_is_one_dataset():
    both = sl.load([BUDGET, DEADLINES])
    one, two = load_dataset(BUDGET), load_dataset(DEADLINES)
    assert both.layout == "runs" and both.environments == ["scarce"]
    assert both.runs.collect()["run_id"].to_list() == [*one.runs.collect()["run_id"], *two.runs.collect()["run_id"]]
    assert [m.run_id for m in both.manifests] == [m.run_id for m in (*one.manifests, *two.manifests)]
    kinds = {k for _, k in (*one._payloads, *two._payloads)}
    for kind in kinds:
        assert both.payloads(kind).collect().height == (one.payloads(kind).collect().height
                                                          + two.payloads(kind).collect().height), kind
    assert both.events.collect().height == one.events.collect().height + two.events.collect().height
    # the view labels conditions over both folders (two datasets that each vary nothing get two labels)
    pairs = both.scarce.contentions.select("condition", "settings").unique()
    assert pairs["condition"].n_unique() == pairs["settings"].n_unique() == 2
    assert_frame_equal(both.scarce.contentions, ScarceTables(combine([one, two])).contentions)
    assert sl.load([BUDGET]).runs.collect().equals(one.runs.collect())


def test_a_run_reached_from_two_paths_counts_once(tmp_path):
    runs = _sovsim_runs(tmp_path / "runs")
    nested = next(runs.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same directory twice is the same run: nothing to say
        ds = sl.load([runs, nested, runs])
    assert ds.runs.collect().height == 2 and len(ds.manifests) == 2
    assert ds.sovsim.agent_rounds.equals(sl.load(runs).sovsim.agent_rounds)


def test_two_directories_holding_one_run_keep_the_complete_one(tmp_path):
    _sovsim_runs(tmp_path / "a", n=1)
    (run,) = (tmp_path / "a").iterdir()
    moved = tmp_path / "b" / f"{run.name}.incomplete-1"
    shutil.copytree(run, moved)
    m = json.loads((moved / "manifest.json").read_text())
    m.update(status="running", n_events=None, ended_at=None)
    (moved / "manifest.json").write_text(json.dumps(m))
    with pytest.warns(UserWarning, match=rf"run_id '{run.name}' is held by several run directories; using {run}"):
        ds = sl.load([tmp_path / "b", tmp_path / "a"])
    assert ds.runs.collect()["run_dir"].to_list() == [str(run)]
    assert ds.runs.collect()["status"].to_list() == ["complete"] and len(ds.manifests) == 1
    assert ds.events.collect().height == load_dataset(run).events.collect().height


def test_a_list_may_mix_run_folders_and_an_export(tmp_path):
    runs = _sovsim_runs(tmp_path / "runs", n=3)
    export_dir = sl.export(sorted(runs.iterdir())[0], tmp_path / "export")
    ds = sl.load([export_dir, *sorted(runs.iterdir())[1:]])
    assert ds.layout == "runs" and len(ds.manifests) == 3
    assert_frame_equal(ds.sovsim.agent_rounds, sl.load(runs).sovsim.agent_rounds)
    assert sl.load([export_dir]).layout == "parquet"
    again = sl.load(sl.export(ds, tmp_path / "again"))  # a combined dataset exports as one
    assert_frame_equal(again.sovsim.agent_rounds, ds.sovsim.agent_rounds)


@needs_sample
def test_a_published_layout_is_loaded_alone():
    with pytest.raises(ValueError, match=r"published layouts \(sovsim_json\) are loaded alone"):
        sl.load([SOVSIM, SAMPLE])
    assert sl.load([SAMPLE]).layout == "sovsim_json"  # a list of one is that path


def test_a_list_refuses_an_empty_list_and_names_a_bad_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="an empty list of paths"):
        sl.load([])
    with pytest.raises(FileNotFoundError, match="empty path"):
        sl.load([BUDGET, ""])
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "missing")):
        sl.load([BUDGET, tmp_path / "missing"])
    with pytest.raises(ValueError, match="no dataset to combine"):
        combine([])


# -- published layouts through the registry --------------------------------------------
def _counts(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"run_id": ["p1", "p1"], "condition": ["c", "c"], "round": [1, 1], "agent": ["a0", "a1"],
                  "increment": [1, 2], "counter_after": [3, 3]}).write_csv(dest / "counts.csv")
    return dest


def test_a_registered_layout_is_found_by_sl_load(toy, tmp_path):
    ds = sl.load(_counts(tmp_path / "pub"))
    assert isinstance(ds, Dataset) and ds.layout == "toy_counts" and ds.environments == ["toy"]
    assert ds.published_environment == "toy" and set(ds.published_tables) == {"moves"}
    assert ds.toy.moves.height == 2 and ds.runs.collect().height == 0
    assert sl.table(ds).frame["final_mean"].to_list() == [3.0]  # the paper table reads the view
    with pytest.raises(ValueError, match=r"no SovSim runs in this dataset \(it holds toy\)"):
        sl.table(ds, environment="sovsim")
    with pytest.raises(ValueError, match="holds environments"):
        _ = ds.sovsim
    assert sl.load(tmp_path / "pub" / "counts.csv").layout == "toy_counts"  # one file of the layout


def test_runs_beside_a_published_layout_are_refused(toy, tmp_path):
    _sovsim_runs(tmp_path / "mixed", n=1)
    _counts(tmp_path / "mixed" / "pub")
    with pytest.raises(ValueError, match=r"holds our runs and a published layout \(toy_counts\); load them"):
        sl.load(tmp_path / "mixed")


def test_two_published_layouts_are_refused(toy, tmp_path):
    _counts(tmp_path / "two")
    (tmp_path / "two" / "m" / "cpr").mkdir(parents=True)
    (tmp_path / "two" / "m" / "cpr" / "rationales.json").write_text("{}")
    with pytest.raises(ValueError, match=r"mixes published layouts \['sovsim_json', 'toy_counts'\]"):
        sl.load(tmp_path / "two")


def test_a_path_without_data_lists_what_was_looked_for(toy, tmp_path):
    (tmp_path / "notes.txt").write_text("nothing")
    with pytest.raises(FileNotFoundError) as info:
        sl.load(tmp_path)
    msg = str(info.value)
    assert msg.startswith(f"no trajectory data below {tmp_path}: expected run folders (manifest.json), a Parquet")
    for marker in ("rationales.json", "<condition>/sim_XX.json", "log_env.json", "counts.csv (Counter game"):
        assert marker in msg, marker


def test_layouts_are_checked_and_their_names_are_unique(toy):
    with pytest.raises(ValueError, match="must match"):
        PublishedLayout("Bad Name", "x.json", lambda p: [], lambda p: {})
    with pytest.raises(TypeError, match="'read' must be callable"):
        PublishedLayout("x", "x.json", lambda p: [], None)
    with pytest.raises(ValueError, match="marker"):
        PublishedLayout("x", " ", lambda p: [], lambda p: {})
    layout = PublishedLayout("x", "x.json", lambda p: [], lambda p: {})
    with pytest.raises(ValueError, match="two layouts share a name"):
        dataclasses.replace(TOY, layouts=(layout, layout))
    with pytest.raises(TypeError, match="'layouts' must be a tuple of PublishedLayout"):
        dataclasses.replace(TOY, layouts=[layout])
    with pytest.raises(TypeError, match="'view' must be callable or None"):
        dataclasses.replace(TOY, view="ToyTables")
    clash = dataclasses.replace(TOY, name="toy_two", config=type("OtherConfig", (), {"run_id": "x"}),
                                layouts=(dataclasses.replace(layout, name="sovsim_json"),))
    assert isinstance(clash, EnvironmentSpec)
    with pytest.raises(ValueError, match=r"'sovsim' and 'toy_two' both read published layouts \['sovsim_json'\]"):
        environments.register(clash)
    assert "toy_two" not in environments.names()
