"""Notebook parameters mean what they say.

``scarce-lab report 01 -p STRICT=false`` injected the string ``'false'`` (true in
Python) and published the strict-survival table; ``-p MODELS=scripted/greedy`` was
accepted and failed inside a cell. Values are now typed by the notebook's parameters
cell at one gate (:func:`scarce_lab.reporting.typed_parameters`, used by
``check_parameters``, ``inject_parameters`` and so ``execute_notebook``); every saved
table states its convention.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.cli.report import parse_parameter
from scarce_lab.reporting import (
    Parameter,
    ParameterError,
    check_parameters,
    find_notebook,
    inject_parameters,
    notebook_parameters,
    parameter_type,
    read_notebook,
    typed_parameters,
)

REPO = Path(__file__).resolve().parents[2]
NB01 = find_notebook("01")
NB07 = find_notebook("07")


def _cli_value(text: str) -> Any:
    """What ``-p NAME=text`` reaches the notebook as."""
    name, value = parse_parameter(f"X={text}")
    return value


@pytest.mark.parametrize("text,expected", [("false", False), ("False", False), ("0", False), ("no", False),
                                           ("true", True), ("True", True), ("1", True), ("yes", True)])
def test_boolean_text_means_what_it_says(text, expected):
    assert check_parameters(NB01, {"STRICT": _cli_value(text)})["STRICT"] is expected


def test_a_boolean_that_is_not_one_is_refused_naming_parameter_and_value():
    with pytest.raises(ParameterError, match=r"STRICT='maybe' is not a bool"):
        check_parameters(NB01, {"STRICT": "maybe"})
    with pytest.raises(ParameterError, match=r"STRICT=2"):
        check_parameters(NB01, {"STRICT": 2})


def test_a_bare_string_where_a_list_is_declared_is_refused_with_the_list_form():
    with pytest.raises(ParameterError) as info:
        check_parameters(NB01, {"MODELS": _cli_value("scripted/greedy")})
    msg = str(info.value)
    assert "MODELS='scripted/greedy'" in msg and "list[str] | None" in msg and "MODELS=['scripted/greedy']" in msg
    assert check_parameters(NB01, {"MODELS": _cli_value("['scripted/greedy']")})["MODELS"] == ["scripted/greedy"]
    assert check_parameters(NB01, {"MODELS": _cli_value("None")})["MODELS"] is None
    assert check_parameters(NB01, {"TRAJ_SIMULATIONS": _cli_value("[0, 3]")})["TRAJ_SIMULATIONS"] == [0, 3]


def test_choices_numbers_and_none_able_parameters():
    assert check_parameters(NB01, {"PRESET": "govsim"})["PRESET"] == "govsim"
    with pytest.raises(ParameterError, match="PRESET='foo'"):
        check_parameters(NB01, {"PRESET": "foo"})
    assert check_parameters(NB01, {"SEED": _cli_value("3")})["SEED"] == 3
    assert check_parameters(NB01, {"SEED": "3"})["SEED"] == 3
    for bad in ("x", 1.5, None):
        with pytest.raises(ParameterError, match="SEED="):
            check_parameters(NB01, {"SEED": bad})
    assert check_parameters(NB07, {"ARITH_DATASET": None})["ARITH_DATASET"] is None
    assert check_parameters(NB07, {"HEATMAP_RUN": None, "WINDOW": "5"}) == {"HEATMAP_RUN": None, "WINDOW": 5}
    with pytest.raises(ParameterError, match="DATASET=None"):
        check_parameters(NB07, {"DATASET": None})


def test_every_shipped_parameter_has_a_declared_type_its_default_satisfies():
    """No parameter of a shipped notebook is untyped (a default of None needs an
    annotation), and each default passes its own gate unchanged."""
    for nb_path in sorted((REPO / "notebooks").glob("[0-9]*.ipynb")):
        nb = read_notebook(nb_path)
        for p in notebook_parameters(nb):
            tp = parameter_type(p)
            assert tp is not Any, f"{nb_path.name}: {p.name} has no type (annotate it)"
            default = ast.literal_eval(p.default)
            assert typed_parameters(nb, {p.name: default}) == {p.name: default}, (nb_path.name, p.name)


def test_injection_converts_so_the_kernel_gets_the_typed_value():
    nb = read_notebook(NB01)
    inject_parameters(nb, {"STRICT": "false", "SEED": "7"})
    cell = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "STRICT = False\n" in cell.source and "SEED = 7\n" in cell.source
    with pytest.raises(ParameterError, match="MODELS"):
        inject_parameters(read_notebook(NB01), {"MODELS": "scripted/greedy"})


def test_annotations_are_types_not_code():
    with pytest.raises(ValueError, match="annotation"):
        parameter_type(Parameter("X", "1", "", "__import__('os').getcwd()"))
    assert parameter_type(Parameter("X", "[1, 2]", "")) == list[int]


def test_report_refuses_a_bad_value_before_anything_runs(tmp_path):
    res = CliRunner().invoke(app, ["report", "01", "-p", "MODELS=scripted/greedy", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "MODELS='scripted/greedy'" in lines[0]
    assert not (tmp_path / "r").exists()


def test_help_shows_the_declared_types():
    res = CliRunner().invoke(app, ["report", "--help"], terminal_width=400, env={"COLUMNS": "400"})
    assert "MODELS: list[str] | None=None" in res.output.replace("\n", " ").replace("│", "")


# -- every saved table states its convention ------------------------------------------------
def test_save_table_needs_a_convention_and_writes_it_beside_the_table(tmp_path):
    import polars as pl

    from scarce_lab.analysis import figures as F
    from scarce_lab.environments.sovsim.analysis.conventions import convention

    df = pl.DataFrame({"a": [1]})
    with pytest.raises(TypeError):
        F.save_table(df, "t", tmp_path)  # convention is required
    with pytest.raises(ValueError, match="empty"):
        F.save_table(df, "t", tmp_path, convention={})
    paths = F.save_table(df, "t", tmp_path, convention=convention("sovsim", strict_survival=True))
    assert [p.name for p in paths] == ["t.csv", "t.md", "t.convention.json", "t.tex"]  # LaTeX too
    side = json.loads((tmp_path / "t.convention.json").read_text())
    assert side["convention"]["strict_survival"] is True and side["rows"] == 1 and side["columns"] == ["a"]
    assert "strict_survival = true" in (tmp_path / "t.md").read_text()


def test_convention_refuses_a_string_for_a_boolean():
    """The analysis gate too: a notebook opened by hand with STRICT = 'false'."""
    from scarce_lab.environments.sovsim.analysis.conventions import Convention, convention

    with pytest.raises(TypeError, match="strict_survival must be True or False, got 'false'"):
        convention("sovsim", strict_survival="false")
    with pytest.raises(TypeError, match="rounds must be a number"):
        Convention(rounds="12")
    with pytest.raises(ValueError, match="unknown Convention field"):
        convention("sovsim", strictness=True)



# --- adversarial review (rev1): values whose injected ``repr`` is not the value -----

def _nb(src: str):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src, metadata={"tags": ["parameters"]})]
    return nb


_CELL = 'X = 0.5\nN = 3\nOPT = None\nXS: list[float] = [0.5]\nD = {"a": 1}\n'


@pytest.mark.parametrize(("name", "raw"), [
    ("X", "nan"), ("X", "inf"), ("X", "1e309"), ("X", "-inf"),   # float('1e309') is inf
    ("OPT", "1e309"),                                            # no annotation, default None
    ("XS", "[1.0, 1e309]"), ("D", "{'a': 1e999}"),               # nested
])
def test_non_finite_floats_are_refused_not_injected_as_a_name_error(name: str, raw: str) -> None:
    """Before: ``-p X=nan`` typed as ``nan`` and the injected cell ``X = nan`` raised
    ``NameError`` inside the executed notebook (``X = inf`` likewise)."""
    key, value = parse_parameter(f"{name}={raw}")
    with pytest.raises(ParameterError, match=rf"parameter {name}=.*not a finite number"):
        typed_parameters(_nb(_CELL), {key: value})
    with pytest.raises(ParameterError):
        inject_parameters(_nb(_CELL), {key: value})


@pytest.mark.parametrize(("name", "value"), [("N", True), ("X", False), ("XS", [True, 0.5])])
def test_a_bool_is_not_taken_as_a_number(name: str, value: Any) -> None:
    """Before: ``-p N=True`` became ``N = 1`` (pydantic's lax mode turns bools into
    numbers)."""
    with pytest.raises(ParameterError, match=rf"parameter {name}=.*a bool is not a number"):
        typed_parameters(_nb(_CELL), {name: value})


def test_an_object_for_an_untyped_parameter_is_refused() -> None:
    """A parameter with default ``None`` and no annotation (a cell edited by hand) takes
    any literal, but not an object whose ``repr`` is not Python source."""
    class Thing:
        pass

    with pytest.raises(ParameterError, match=r"parameter OPT=.*not a plain literal"):
        typed_parameters(_nb(_CELL), {"OPT": Thing()})
    # literals of every kind round-trip into the injected cell
    for value in (None, -5, "é \u2028 ../x y", [[1, "a"], {"k": None}], "x" * 100_000):
        nb = inject_parameters(_nb(_CELL), {"OPT": value})
        ns: dict[str, Any] = {}
        exec(nb.cells[1].source, {}, ns)  # noqa: S102 - the cell we just wrote
        assert ns["OPT"] == value


@pytest.mark.parametrize("value", ["", "  ", ["data/sovsim", ""]])
def test_an_empty_dataset_path_is_refused(value: Any) -> None:
    """Before: ``-p DATASET=`` resolved to the checkout's root, which exists, and the
    notebook analysed whatever runs lay below it."""
    name = "DATASETS" if isinstance(value, list) else "DATASET"
    nb = NB01 if name == "DATASET" else find_notebook("02")
    with pytest.raises(ParameterError, match=rf"{name}: an empty path"):
        check_parameters(nb, {name: value})
