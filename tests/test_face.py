"""The notebook face: ``sl.load`` returns one Dataset type for every layout, the
environment faces have explicit keyword signatures, and a Finding shows and saves
itself with the project's writers."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.figures import NoFigure
from scarce_lab.data.loaders import Dataset

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def test_faces_show_their_keywords():
    sig = inspect.signature(sl.sovsim.table)
    for name in ("preset", "strict", "by", "force"):
        assert sig.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert "seed" in inspect.signature(sl.scarce.table).parameters
    for face in (sl.sovsim, sl.scarce, sl.economy):
        missing = [n for n in face.__all__ if not hasattr(face, n)]
        assert not missing, f"{face.__name__} exports names it lacks: {missing}"


def test_load_gives_a_dataset_for_our_runs_and_for_published_layouts():
    ours = sl.load(REPO / "data" / "sovsim")
    assert isinstance(ours, Dataset) and ours.layout == "runs" and ours.published_environment is None
    assert not ours.published_tables
    # the face's door is sl.load checked to hold SovSim: the same rows through the view
    assert sl.sovsim.load(REPO / "data" / "sovsim").sovsim.agent_rounds.equals(ours.sovsim.agent_rounds)
    with pytest.raises(ValueError, match="no SovSim run in this dataset"):
        sl.sovsim.load(REPO / "data" / "economy" / "blocksworld")
    sample = SHARED / "sovsim_format_sample"
    if not sample.exists():
        pytest.skip(f"{sample} not present")
    pub = sl.load(sample)
    assert isinstance(pub, Dataset) and pub.layout == "sovsim_json" and pub.environments == ["sovsim"]
    assert pub.published_tables["agent_rounds"].height > 0 and pub.runs.collect().height == 0
    assert pub.sovsim.agent_rounds is pub.published_tables["agent_rounds"]  # the view holds the read table
    # the same table through sl.table and through the face
    assert sl.table(pub).frame.equals(sl.sovsim.table(pub).frame)


def test_published_dataset_refuses_our_layouts_and_tables_that_are_not_frames():
    with pytest.raises(ValueError, match="layout 'runs' is not a published layout"):
        Dataset.published("sovsim", "runs", {"agent_rounds": pl.DataFrame()})
    with pytest.raises(ValueError, match="named polars DataFrames"):
        Dataset.published("sovsim", "sovsim_json", {"agent_rounds": [1, 2]})
    with pytest.raises(ValueError, match="named polars DataFrames"):
        Dataset.published("sovsim", "sovsim_json", {})


def test_sovsim_table_result_matches_the_table_and_saves_itself(tmp_path):
    ds = sl.load(REPO / "data" / "sovsim")
    res = sl.sovsim.table(ds, preset="sovsim", strict=True)
    values = res.frame
    assert values.equals(sl.table(ds, preset="sovsim", strict=True).frame)
    assert "survival" in res.reading and res.convention["survival"].startswith("strict")
    assert res.save(tmp_path) is res
    side = json.loads((tmp_path / "sovsim_table1.convention.json").read_text())
    assert side["convention"]["name"] == "sovsim" and side["convention"]["strict_survival"] is True and side["rows"] == res.layout.height
    assert (tmp_path / "sovsim_table1_values.csv").exists() and (tmp_path / "sovsim_table1.tex").exists()
    with pytest.raises(ValueError, match="MODELS|models"):
        sl.sovsim.table(ds, models=["no/such-model"])


def test_result_displays_table_reading_and_chart_in_order(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    df = pl.DataFrame({"model": ["a"], "value": [0.5]})
    res = sl.Finding("x", frame=df, reading="a is 0.50", chart=NoFigure("nothing to draw"), convention={"u": 1})
    res._ipython_display_()
    assert [type(o).__name__ for o in shown] == ["Markdown", "Markdown", "NoFigure"]
    assert "| a" in shown[0].data and shown[1].data == "a is 0.50"
    assert "a is 0.50" in res._repr_html_() and "nothing to draw" in res._repr_html_()


def test_result_refuses_to_save_a_table_without_its_convention(tmp_path):
    with pytest.raises(ValueError, match="convention"):
        sl.Finding("x", frame=pl.DataFrame({"a": [1]})).save(tmp_path)
    with pytest.raises(ValueError, match="path separator"):
        sl.Finding("../x")


def test_economy_face_table_is_the_ablation_table(tmp_path):
    ds = sl.economy.load(REPO / "data" / "economy" / "blocksworld")
    res = sl.economy.table(sl.economy.episodes(ds))
    assert res.frame.equals(sl.table(ds).frame)
    res.save(tmp_path)
    assert {p.name for p in tmp_path.glob("*.csv")} == {"economy_ablation.csv", "economy_ablation_values.csv"}
    with pytest.raises(ValueError, match="no Economy of Minds run"):
        sl.economy.load(REPO / "data" / "sovsim")


def test_scarce_paper_result_shows_and_saves_the_paper_layout(tmp_path):
    res = pl.DataFrame([("a", "c1", 1, 0.5, 0.4, 0.6, 0.05, 10, 3), ("b", "c1", 1, 0.1, 0.0, 0.2, 0.05, 10, 3)],
                       schema={"model": pl.String, "condition": pl.String, "stage": pl.Int64, "value": pl.Float64,
                               "lo": pl.Float64, "hi": pl.Float64, "se": pl.Float64, "n": pl.Int64,
                               "runs": pl.Int64}, orient="row")
    r = sl.scarce.paper_result(res, "x_table", ["model"], "stage", convention={"unit": "run"}, key="model")
    assert r.layout.equals(sl.scarce.wide_table(res, ["model"], "stage"))
    assert r.frame.height == 2 and r.frame["estimate"].to_list() == ["0.50 [0.40, 0.60]", "0.10 [0.00, 0.20]"]
    assert "0.50 [0.40, 0.60]" in r.markdown() and "Full conditions behind the labels" in r.markdown()
    r.save(tmp_path)
    assert {p.name for p in tmp_path.glob("*.csv")} == {"x_table.csv", "x_table_values.csv"}
    assert pl.read_csv(tmp_path / "x_table_values.csv").height == 2


def test_a_published_dataset_is_not_exported_as_an_empty_one(tmp_path):
    ds = Dataset.published("sovsim", "sovsim_json", {"agent_rounds": pl.DataFrame({"run_id": ["r"]})})
    with pytest.raises(ValueError, match="published layout"):
        sl.export(ds, tmp_path / "out")
    assert not (tmp_path / "out").exists()
