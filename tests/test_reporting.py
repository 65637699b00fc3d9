"""``scarce-lab report``: parameters checked against the notebook, one folder per report,
notebooks of the calling checkout, executed copies that show charts as static images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
import typer
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.cli.report import parse_parameter
from scarce_lab.datasets import project_root
from scarce_lab.reporting import (
    ParameterError,
    check_parameters,
    default_out_dir,
    execute_notebook,
    find_notebook,
    inject_parameters,
    notebook_parameters,
)

REPO = Path(__file__).resolve().parents[1]
NB01 = REPO / "notebooks" / "01_sovsim_power_conditions.ipynb"


def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected a one-line message, got {len(lines)} lines:\n{text}"
    return lines[0]


def test_injected_cell_follows_the_parameters_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 1\nname = 'z'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print(x)"),
    ]
    inject_parameters(nb, {"x": 5, "name": "a/b"})
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"]
    assert "x = 5" in nb.cells[2].source and "name = 'a/b'" in nb.cells[2].source


def test_execute_notebook_applies_parameters(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("y = x * 2\nprint(y)"),
    ]
    src = tmp_path / "t.ipynb"
    nbformat.write(nb, src)
    out = execute_notebook(src, {"x": 21}, tmp_path / "out.ipynb")
    done = nbformat.read(out, as_version=4)
    assert done.cells[-1].outputs[0]["text"].strip() == "42"


def test_parse_parameter():
    assert parse_parameter("n=3") == ("n", 3)
    assert parse_parameter("models=['a', 'b']") == ("models", ["a", "b"])
    assert parse_parameter("dataset=runs/x") == ("dataset", "runs/x")
    assert parse_parameter("X=None") == ("X", None)
    with pytest.raises(typer.BadParameter, match="NAME=value"):
        parse_parameter("novalue")


def test_project_root_found_from_notebooks_dir():
    root = project_root()
    assert (root / "pyproject.toml").exists()
    assert project_root(root / "notebooks") == root


def test_every_notebook_declares_its_parameters():
    for nb in sorted((REPO / "notebooks").glob("[0-9]*.ipynb")):
        names = [p.name for p in notebook_parameters(nb)]
        assert "OUT_DIR" in names, nb.name
        assert any(n.endswith("DATASET") or n.endswith("DATASETS") for n in names), (nb.name, names)


def test_unknown_parameter_is_rejected_with_the_declared_names():
    with pytest.raises(ParameterError) as err:
        check_parameters(NB01, {"dataset": "data/sovsim"})
    msg = str(err.value)
    assert "'dataset'" in msg and "did you mean 'DATASET'" in msg and "case-sensitive" in msg
    assert "TRAJ_SIMULATIONS" in msg  # lists what exists
    res = CliRunner().invoke(app, ["report", "01", "-p", "dataset=data/sovsim"])
    assert res.exit_code == 2
    assert "case-sensitive" in _one_line(res.output) and "Traceback" not in res.output


def test_missing_dataset_is_a_one_line_error_naming_the_path(tmp_path):
    missing = tmp_path / "nowhere"
    res = CliRunner().invoke(app, ["report", "01", "-p", f"DATASET={missing}"])
    assert res.exit_code == 2
    line = _one_line(res.output)
    assert str(missing) in line and "DATASET" in line
    with pytest.raises(ParameterError, match="DATASETS"):
        check_parameters(REPO / "notebooks" / "02_scarce_models_tactics.ipynb",
                         {"DATASETS": ["data/scarce/embedded", str(missing)]})


def test_dataset_paths_are_made_absolute_against_the_checkout():
    out = check_parameters(NB01, {"DATASET": "data/sovsim", "STRICT": True})
    assert out["DATASET"] == str(REPO / "data" / "sovsim") and out["STRICT"] is True


def test_each_report_gets_its_own_folder(tmp_path):
    a = default_out_dir(NB01, {"DATASET": "/x/runs/sovsim"})
    b = default_out_dir(NB01, {"DATASET": "/y/runs/sovsim"})  # same folder name, other dataset
    c = default_out_dir(REPO / "notebooks" / "07_economy_of_minds.ipynb", {"DATASET": "/x/runs/sovsim"})
    assert len({a, b, c}) == 3
    assert a.name.startswith("01_sovsim_power_conditions--sovsim-") and a.parent == REPO / "runs" / "reports"
    assert default_out_dir(NB01, {"DATASET": "/x/runs/sovsim"}) == a  # the same report again: same folder


def test_report_runs_the_notebooks_of_the_calling_checkout(tmp_path):
    other = tmp_path / "checkout"
    (other / "scarce_lab").mkdir(parents=True)
    (other / "notebooks").mkdir()
    (other / "pyproject.toml").write_text("[project]\nname='x'\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("OUT_DIR = 'f'", metadata={"tags": ["parameters"]})]
    nbformat.write(nb, other / "notebooks" / "01_other.ipynb")
    assert find_notebook("01", start=other / "notebooks") == other / "notebooks" / "01_other.ipynb"
    assert find_notebook("01").parent == REPO / "notebooks"


def test_help_lists_each_notebooks_parameters():
    res = CliRunner().invoke(app, ["report", "--help"], terminal_width=200)
    assert res.exit_code == 0
    flat = " ".join(res.output.split())
    for nb in sorted((REPO / "notebooks").glob("[0-9]*.ipynb")):
        assert nb.stem in flat
        for p in notebook_parameters(nb):
            assert p.name in flat, (nb.name, p.name)


@pytest.mark.slow
def test_copied_notebook_reports_into_its_folder_with_static_charts(tmp_path):
    """Notebook 01 copied out of the checkout, run by ``report`` on the shipped dataset:
    it works, writes its figures into the report folder, and the executed copy holds each
    chart as a PNG (no widget view, no saved widget state)."""
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    shutil.copy(NB01, elsewhere / NB01.name)
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["report", str(elsewhere / NB01.name), "-p", f"DATASET={REPO / 'data' / 'sovsim'}",
                                   "-p", f"SHARED_DATA={tmp_path / 'none'}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "sovsim_pool_dynamics.png" in figs and "sovsim_leader_rate_vs_survival.png" in figs
    done = json.loads((out / NB01.name).read_text())
    assert "widgets" not in done["metadata"]
    datas = [o.get("data", {}) for c in done["cells"] for o in c.get("outputs", [])]
    pngs = [d for d in datas if "image/png" in d]
    assert len(pngs) >= 3
    assert not [d for d in datas if "application/vnd.jupyter.widget-view+json" in d]
    assert not [o for c in done["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_readme_lists_every_notebook_parameter_with_its_default():
    """The manual's parameter table (docs/notebooks.md, moved there from the README) drifted
    from the notebooks (missing SEED, SUBRUN, LABEL_MEMORY; old defaults for 05 and 06):
    every parameter is named in its row, and a default the manual states is the notebook's."""
    import ast
    import re
    from pathlib import Path

    from scarce_lab.reporting import notebook_parameters

    root = Path(__file__).resolve().parents[1]
    readme = (root / "docs" / "notebooks.md").read_text(encoding="utf-8")
    for nb in sorted((root / "notebooks").glob("[0-9]*.ipynb")):
        row = next((ln for ln in readme.splitlines() if ln.startswith(f"| `{nb.stem}` | `")), None)
        assert row is not None, f"docs/notebooks.md has no parameter row for {nb.stem}"
        for p in notebook_parameters(nb):
            assert f"`{p.name}" in row, f"{nb.stem}: docs/notebooks.md does not name {p.name}"
            stated = re.search(rf"`{p.name} = ([^`]+)`", row)
            if stated and p.name != "OUT_DIR":
                assert ast.literal_eval(stated.group(1)) == ast.literal_eval(p.default), (
                    f"{nb.stem}: docs/notebooks.md says {p.name} = {stated.group(1)}, the notebook {p.default}")
