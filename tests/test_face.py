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
from scarce_lab.analysis.findings import finding, method_of
from scarce_lab.analysis.layout import wide_table
from scarce_lab.data.loaders import Dataset

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def test_faces_show_their_keywords():
    sig = inspect.signature(sl.sovsim.table)
    for name in ("preset", "strict", "by", "force"):
        assert sig.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    # the SCARCE table's intervals draw nothing at random: no seed offered (it was a no-op recorded as a setting)
    assert "seed" not in inspect.signature(sl.scarce.table).parameters
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
    # every face's load is the one door with its environment named: same dataset, same check
    eco = REPO / "data" / "economy" / "blocksworld"
    assert sl.economy.load(eco).economy.episodes.equals(sl.load(eco).economy.episodes)
    for face, other in ((sl.economy, REPO / "data" / "sovsim"), (sl.scarce, eco)):
        with pytest.raises(ValueError, match=rf"sl\.{face.__name__.split('.')[-2]}\.load: no .* run in this dataset"):
            face.load(other)
    with pytest.raises(FileNotFoundError, match=r"sl\.economy\.load: an empty list"):
        sl.economy.load([])
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
    from scarce_lab.environments.economy.analysis.metrics import ablation_table

    ds = sl.load(REPO / "data" / "economy" / "blocksworld")
    res = sl.economy.table(ds)
    assert res.frame.equals(sl.table(ds).frame)
    assert res.frame.equals(ablation_table(ds.economy.episodes))
    res.save(tmp_path)
    assert {p.name for p in tmp_path.glob("*.csv")} == {"economy_ablation.csv", "economy_ablation_values.csv"}
    with pytest.raises(ValueError, match="not 'economy'"):  # the view refuses a dataset of other runs
        sl.economy.table(sl.load(REPO / "data" / "sovsim"))


def test_economy_findings_recompute_the_metrics_on_the_shipped_data(tmp_path):
    """Each finding of ``sl.economy`` takes the dataset and holds the numbers of its
    metric on the view's tables (baselines left out of the curves, as notebook 07 did
    by hand), its chart, a reading and its docstring as the method; notebook 07's
    tables and figures are saved under their names."""
    import math

    from scarce_lab.environments.economy.analysis import metrics as em
    from scarce_lab.environments.economy.analysis.readings import learning_sentence

    assert sorted(sl.economy.__all__) == ["bid_convergence", "dynamics", "learning_curve", "load",
                                          "population_dynamics", "specialisation", "table", "tenure"]
    ds = sl.load(REPO / "data" / "economy" / "blocksworld")
    v = ds.economy
    economies = lambda df: df.filter(~pl.col("condition").str.starts_with("baseline"))  # noqa: E731
    curve = sl.economy.learning_curve(ds, window=10)
    assert curve.frame.equals(em.solve_curve(economies(v.episodes), window=10))
    assert "Blocks World solve rate per 10 training episodes" in json.dumps(curve.chart.to_dict()["title"])
    assert curve.reading == learning_sentence(curve.frame) and "full economy 0.14 -> 0.64" in curve.reading
    assert curve.method == method_of(sl.economy.learning_curve) and "Raises:" not in curve.method
    pop = sl.economy.population_dynamics(ds)
    assert pop.frame.equals(em.population_dynamics(economies(v.population)))
    bids = sl.economy.bid_convergence(ds, window=25)
    assert bids.frame.equals(em.bid_convergence(economies(v.agent_episodes), window=25))
    assert "from 1.8 [0.2, 3.4] to 2.8 [1.4, 4.3] credits" in bids.reading
    spec = sl.economy.specialisation(ds)
    idx = em.specialisation_index(v.wins)
    got = spec.frame.join(idx, on=["task", "condition"])
    assert got.height == idx.height == 7
    for r in got.iter_rows(named=True):
        assert (r["value"], r["lo"], r["hi"], r["runs"]) == pytest.approx(
            (r["specialisation"], r["specialisation_lo"], r["specialisation_hi"], r["n_runs"]))
    full = "none,agents=12,bid_scheme=fixed,episodes=150"
    runs = v.runs.filter((pl.col("condition") == full) & (pl.col("seed") == 0))["run_id"].to_list()
    assert spec.convention["heatmap_run"] == runs[0]
    per_run = em._index_per_run(v.wins, "train").filter(pl.col("condition") == full)["index"].to_list()
    se = pl.Series(per_run).std() / math.sqrt(len(per_run))
    assert spec.frame.filter(pl.col("condition") == full)["se"][0] == pytest.approx(se)
    assert "specialisation index is highest for" in spec.reading
    for f in (sl.economy.table(ds), curve, pop, bids, spec):
        assert f.method and f.reading.count(". ") == 0, f.name  # one sentence
        f.save(tmp_path)
    saved = {p.name for p in tmp_path.iterdir()}
    for stem in ("economy_ablation", "economy_learning_curves", "economy_population_dynamics",
                 "economy_bid_convergence", "economy_specialisation"):
        assert {f"{stem}.csv", f"{stem}.png", f"{stem}.svg"} <= saved, stem


def test_a_finding_in_the_paper_layout_shows_and_saves_it(tmp_path):
    """``finding(..., index=, columns=)``: what ``sl.scarce.paper_result`` was, now inside every
    SCARCE finding."""
    res = pl.DataFrame([("a", "c1", 1, 0.5, 0.4, 0.6, 0.05, 10, 3), ("b", "c1", 1, 0.1, 0.0, 0.2, 0.05, 10, 3)],
                       schema={"model": pl.String, "condition": pl.String, "stage": pl.Int64, "value": pl.Float64,
                               "lo": pl.Float64, "hi": pl.Float64, "se": pl.Float64, "n": pl.Int64,
                               "runs": pl.Int64}, orient="row")
    r = finding("x_table", res, index=["model"], columns="stage", convention={"unit": "run"}, key="model")
    assert r.layout.equals(wide_table(res, ["model"], "stage"))
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


def test_one_decorator_gives_every_finding_its_method_settings_and_parameters():
    """``finding_function``: the method is the docstring before ``Args:`` (then the
    environment's statistics), the departures are the dataset's, the parameters are in
    the convention; a metric that returns no finding is a bug, said at once."""
    from scarce_lab.analysis.findings import finding_function

    ds = sl.load(REPO / "data" / "scarce" / "scripted" / "models")

    @finding_function("scarce", "Runs are the unit.")
    def metric(ds, *, by=("model",), labels=None):
        """How many runs.

        Args:
            by: rows.
        """
        return sl.Finding("m", frame=pl.DataFrame({"runs": [len(ds.manifests)]}), convention={"unit": "run"})

    f = metric(ds, labels=pl.DataFrame({"a": [1, 2]}))
    assert f.method == "How many runs.\n\nRuns are the unit."
    assert f.departures == sl.table(ds).departures and f.departures  # the shipped runs: 4 workers, 15 minutes
    assert f.convention == {"unit": "run", "parameters": {"by": ["model"], "labels": "a frame of 2 rows"}}

    @finding_function("scarce")
    def broken(ds):
        return pl.DataFrame()

    with pytest.raises(TypeError, match="broken returned DataFrame, not a Finding"):
        broken(ds)


def test_a_finding_saves_into_a_folder_only(tmp_path, monkeypatch):
    """An empty out would write into the working directory, a '~' would make a folder
    named '~' there: refused / expanded; a file is not a folder to save into."""
    res = sl.economy.table(sl.load(REPO / "data" / "economy" / "blocksworld"))
    with pytest.raises(ValueError, match="an empty output folder ''"):
        res.save("")
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        res.save(tmp_path / "f")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    res.save("~/out")
    assert (tmp_path / "home" / "out" / "economy_ablation.csv").exists() and not (tmp_path / "~").exists()


def test_every_finding_refuses_a_value_outside_its_choices_before_computing():
    """One gate for every face function (analysis.findings.finding_function): a typo in a
    Literal parameter (metric='bogus') is a ValueError naming the choices, not a reading
    about 'bogus'; a string where a list is asked (by='model') is a TypeError, not a
    list of letters. Checked on every parameter of every finding of every face."""
    import typing

    def call(fn, **given):
        required = [p for p in list(inspect.signature(fn).parameters.values())[1:]
                    if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD]
        return fn(None, **{p.name: None for p in required} | given)

    checked = 0
    for face in (sl.sovsim, sl.scarce, sl.economy):
        for name in face.__all__:
            fn = getattr(face, name)
            if not hasattr(fn, "__wrapped__"):
                continue
            hints = typing.get_type_hints(fn.__wrapped__)
            for param, hint in hints.items():
                options = [hint, *typing.get_args(hint)]
                if any(typing.get_origin(o) is typing.Literal for o in options):
                    with pytest.raises(ValueError, match=rf"{param}='bogus' is not one of"):
                        call(fn, **{param: "bogus"})
                    checked += 1
                elif any(typing.get_origin(o) in (typing.Sequence, tuple, list) or
                         str(typing.get_origin(o)) == "<class 'collections.abc.Sequence'>" for o in options) \
                        and str not in options:
                    with pytest.raises(TypeError, match=rf"{param} takes a list of names"):
                        call(fn, **{param: "model"})
                    checked += 1
    assert checked >= 28, checked  # the faces hold 28 such parameters (by=, models=, metric=, preset=, ...)
