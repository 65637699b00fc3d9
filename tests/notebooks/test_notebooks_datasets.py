"""Every notebook on every kind of dataset the README's commands make.

Datasets, made here with the README's own commands (scripted models, so they take
seconds) or taken from the shipped data:

- SovSim, one seed, one model, one condition: ``scarce-lab run sovsim --condition kcpr
  --model scripted/sustainable --simulations 1``;
- Economy, the README's one-seed ablation: ``scarce-lab run economy --task blocksworld
  --model scripted/random-rules --episodes 150 -a all`` (one run per group: every
  interval column is null, which polars typed as Null and ``clip`` refused);
- SCARCE, one run (one seed, one model, one condition): a run folder of
  ``data/scarce/scripted/models``, as ``scarce-lab run scarce`` writes it (the
  README's own SCARCE command needs the root sandbox and 95 s; the notebooks were
  checked on its output by hand, see the issue note);
- a long Economy run: four ablations of 1,300 training episodes (5,200 population
  rows, over altair's 5,000-row limit), built from the one-seed run's population table
  with shifted episode numbers, through notebook 07's calls (analysis functions, not
  the notebook: making real 1,300-episode runs takes about two minutes);
- an empty folder: refused before anything runs, naming the parameter.

The one-run datasets go through the whole notebook (``execute_notebook``, the path of
``scarce-lab report``): seven notebook runs of about 30 s each, marked ``slow``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.reporting import ParameterError, check_parameters, execute_notebook, find_notebook

REPO = Path(__file__).resolve().parents[2]
SCARCE_RUN = REPO / "data" / "scarce" / "scripted" / "models" / "scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s0_0e0419b1"
runner = CliRunner()


def _cli(*args: str) -> None:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output[-2000:]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("readme_datasets")
    sov = root / "sovsim_one"
    _cli("run", "sovsim", "--condition", "kcpr", "--model", "scripted/sustainable", "--simulations", "1",
         "--no-progress", "--out", str(sov))
    eco = root / "economy_one_seed"
    _cli("run", "economy", "--task", "blocksworld", "--model", "scripted/random-rules", "--episodes", "150",
         "-a", "all", "--out", str(eco))
    sc = root / "scarce_one"
    sc.mkdir()
    shutil.copytree(SCARCE_RUN, sc / SCARCE_RUN.name)
    empty = root / "empty"
    empty.mkdir()
    return {"sovsim": sov, "economy": eco, "scarce": sc, "empty": empty}


#: notebook -> (its dataset parameter, the dataset kind, extra parameters)
NOTEBOOKS = {
    "01": ("DATASET", "sovsim", {"STRICT": "false", "SHARED_DATA": "/nonexistent-shared-data"}),
    "02": ("DATASETS", "scarce", {"LABELS": None}),
    "03": ("DATASETS", "scarce", {"LABELS": None}),
    "04": ("DATASETS", "scarce", {}),
    "05": ("DATASETS", "scarce", {"LABELS": None}),
    "06": ("DATASETS", "scarce", {}),
    "07": ("DATASET", "economy", {"ARITH_DATASET": None}),
    "08": ("SOVSIM_DATASET", "sovsim", {"SOVSIM_EMBEDDED_DATASET": None, "SCARCE_DATASET": None,
                                        "SCARCE_EMBEDDED_DATASET": None}),
}


def _params(nb: str, data: Path, out: Path) -> dict:
    name, _, extra = NOTEBOOKS[nb]
    value = [str(data)] if name == "DATASETS" else str(data)
    return check_parameters(find_notebook(nb), {name: value, **extra, "OUT_DIR": str(out)})


@pytest.mark.slow
@pytest.mark.parametrize("nb", sorted(NOTEBOOKS))
def test_notebook_runs_on_a_one_run_dataset(nb, datasets, tmp_path):
    """One seed, one model, one condition (Economy: one seed per ablation): the whole
    notebook runs, and every table it saves states its convention."""
    kind = NOTEBOOKS[nb][1]
    out = tmp_path / "figures"
    params = _params(nb, datasets[kind], out)
    execute_notebook(find_notebook(nb), params, tmp_path / f"{nb}.ipynb", timeout_s=600)
    tables = sorted(out.glob("*.csv"))
    # a table with nothing to show in this data is a sentence, not a file of zeros
    said = [line for c in json.loads((tmp_path / f"{nb}.ipynb").read_text())["cells"] for o in c.get("outputs", [])
            for line in "".join(o.get("data", {}).get("text/markdown", "")).splitlines() if "No table:" in line]
    assert tables or said, f"notebook {nb} saved no table and said of none that it has nothing to show"
    for t in tables:
        side = json.loads(t.with_suffix(".convention.json").read_text())
        assert side["convention"] and side["table"] == t.stem
        assert "Computed under:" in t.with_suffix(".md").read_text()
    if nb == "01":  # -p STRICT=false reached the notebook as False: the lenient table
        side = json.loads((out / "sovsim_table1_values.convention.json").read_text())
        assert side["convention"]["strict_survival"] is False
        assert side["convention"]["survival"].startswith("lenient")


@pytest.mark.slow
def test_economy_analysis_on_the_one_seed_ablation(datasets):
    """The README's one-seed ``-a all``: intervals are missing (typed Float64, not Null)
    and every call of notebook 07 works (the report failed in solve_curve's clip)."""
    from scarce_lab.environments.economy.analysis import metrics as em
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.environments.economy import tables

    ds = load_dataset(datasets["economy"])
    eps = tables.episodes(ds)
    curve = em.solve_curve(eps)
    assert curve.schema["solve_rate_lo"] == pl.Float64 and curve["solve_rate_lo"].null_count() == curve.height
    assert set(curve["condition"]) == {"none", "no-auction", "no-exploration", "no-exploitation"}
    em.learning_curve_chart(curve).to_dict()
    dyn = em.population_dynamics(tables.population(ds))
    assert dyn.schema["size_lo"] == pl.Float64
    em.population_chart(dyn).to_dict()
    conv = em.bid_convergence(tables.agent_episodes(ds))
    em.bid_convergence_chart(conv).to_dict()
    idx = em.specialisation_index(tables.wins(ds))
    assert idx.schema["specialisation_lo"] == pl.Float64
    table = em.ablation_table(eps)
    assert table["n_runs"].to_list() == [1, 1, 1, 1] and table["first_fifth_lo"].null_count() == 4
    import scarce_lab as sl  # notebook 07's findings over the same metrics

    for found in (sl.economy.table(ds), sl.economy.learning_curve(ds), sl.economy.population_dynamics(ds),
                  sl.economy.bid_convergence(ds), sl.economy.specialisation(ds)):
        assert found.reading and found.chart.to_dict(), found.name
    assert sl.economy.specialisation(ds).frame["lo"].null_count() == 4  # one run: no interval


@pytest.mark.slow
def test_economy_long_run_population_chart(datasets, tmp_path):
    """Four ablations x 1,300 training episodes = 5,200 population rows (altair's limit
    is 5,000): the chart aggregates into episode windows and saves."""
    from scarce_lab.environments.economy.analysis import metrics as em
    from scarce_lab.analysis.figures import MAX_LINE_POINTS, save_chart
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.environments.economy import tables

    pop = tables.population(load_dataset(datasets["economy"])).filter(pl.col("phase") == "train")
    span = int(pop["round"].max()) + 1  # 150 episodes
    long = pl.concat([pop.with_columns(pl.col("round") + k * span) for k in range(1300 // span + 1)])
    long = long.filter(pl.col("round") < 1300)
    dyn = em.population_dynamics(long)
    assert dyn.height == 4 * 1300
    chart = em.population_chart(dyn)
    spec = chart.to_dict()
    rows = sum(len(v) for v in spec["datasets"].values())
    assert rows <= 4 * MAX_LINE_POINTS, rows
    assert "window of 3 episodes" in json.dumps(spec["title"])
    assert [p.suffix for p in save_chart(chart, "population", tmp_path)] == [".png", ".svg"]


def test_charts_larger_than_the_limit_are_refused_with_the_fix_named():
    """Above MAX_CHART_ROWS the package's transformer refuses with what to do (never
    altair's MaxRowsError from deep inside a notebook cell)."""
    import altair as alt

    from scarce_lab.analysis.figures import MAX_CHART_ROWS, ChartTooLargeError, titled

    ok = titled(alt.Chart(pl.DataFrame({"x": range(6000), "y": range(6000)})).mark_point().encode(x="x", y="y"), "t")
    assert len(next(iter(ok.to_dict()["datasets"].values()))) == 6000  # above altair's 5,000
    big = pl.DataFrame({"x": range(MAX_CHART_ROWS + 1)})
    with pytest.raises(ChartTooLargeError, match="aggregate before charting"):
        titled(alt.Chart(big).mark_point().encode(x="x"), "t").to_dict()


def test_window_means():
    from scarce_lab.analysis.figures import window_means

    df = pl.DataFrame({"c": ["a"] * 10 + ["b"] * 10, "t": list(range(10)) * 2, "v": [float(i) for i in range(20)]})
    same, k = window_means(df, "t", ["c"], ["v"], max_points=10)
    assert k == 1 and same.equals(df)
    out, k = window_means(df, "t", ["c"], ["v"], max_points=5)
    assert k == 2 and out.height == 10
    assert out.filter(pl.col("c") == "a")["v"].to_list() == [0.5, 2.5, 4.5, 6.5, 8.5]
    assert out.filter(pl.col("c") == "b")["t"].to_list() == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("nb", sorted(NOTEBOOKS))
def test_empty_folder_is_refused_before_anything_runs(nb, datasets, tmp_path):
    with pytest.raises(ParameterError, match=r"DATASETS?: dataset folder .*empty"):
        _params(nb, datasets["empty"], tmp_path)


def test_report_on_an_empty_folder_is_a_one_line_error(datasets):
    res = runner.invoke(app, ["report", "07", "-p", f"DATASET={datasets['empty']}"])
    assert res.exit_code == 2
    assert "is empty" in res.output and "Traceback" not in res.output


def test_loaders_refuse_an_empty_folder(datasets):
    """What a notebook opened in JupyterLab calls first (no parameter gate there)."""
    import scarce_lab as sl
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    for load in (sl.load, load_dataset, load_agent_rounds, sl.scarce.load):
        with pytest.raises((FileNotFoundError, ValueError)) as info:
            load(datasets["empty"])
        assert str(datasets["empty"]) in str(info.value), (load, info.value)


@pytest.mark.slow
def test_notebook_01_names_a_model_the_dataset_does_not_have(datasets, tmp_path):
    """``-p "MODELS=['scripted/greedy']"`` on data without that model: the error names
    it and the models there are (it gave a table of nothing)."""
    params = _params("01", datasets["sovsim"], tmp_path / "figures") | {"MODELS": ["scripted/greedy"]}
    with pytest.raises(Exception) as info:
        execute_notebook(find_notebook("01"), params, tmp_path / "01.ipynb", timeout_s=600)
    assert type(info.value).__name__ == "CellExecutionError"
    assert "models: ['scripted/greedy'] not in" in str(info.value) and "scripted/sustainable" in str(info.value)
