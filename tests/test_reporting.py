"""Notebook parameter injection (papermill convention) and CLI parameter parsing."""

from __future__ import annotations

import nbformat
import pytest
import typer

from scarce_lab.cli.report import parse_parameter
from scarce_lab.reporting import execute_notebook, inject_parameters, project_root


def test_injected_cell_follows_the_parameters_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
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
    with pytest.raises(typer.BadParameter, match="name=value"):
        parse_parameter("novalue")


def test_project_root_found_from_notebooks_dir():
    root = project_root()
    assert (root / "pyproject.toml").exists()
    assert project_root(root / "notebooks") == root
