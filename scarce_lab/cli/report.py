"""``scarce-lab report NOTEBOOK -p NAME=value ...``: execute a numbered notebook headless.

The notebooks are those of the checkout the command is called from. Each report goes to
its own folder (``--out``; default ``runs/reports/<notebook>--<dataset>-<hash>``): the
executed notebook and, unless ``-p OUT_DIR=...`` says otherwise, its figures and tables
in ``<out>/figures``. Parameters are checked first (see :mod:`scarce_lab.reporting`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import typer

from . import app


def parse_parameter(text: str) -> tuple[str, object]:
    """``key=value`` -> ``(key, value)``; the value is a Python literal when it parses as
    one (``3``, ``[1, 2]``, ``'x'``, ``None``), else the raw string. The notebook's
    declared type then converts or refuses it
    (:func:`scarce_lab.reporting.check_parameters`: ``false`` -> ``False``).

    Raises:
        typer.BadParameter: no ``=`` or a key that is not a Python name.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise typer.BadParameter(f"parameter {text!r} must look like NAME=value", param_hint="-p")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


def _parameters_help() -> str:
    """Each notebook's parameters with their defaults, for ``--help`` (read from the
    notebooks beside this package; cheap: JSON and one cell each)."""
    from ..reporting import NOTEBOOKS

    parts = []
    for nb_path in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
        try:
            cell = next(c for c in json.loads(nb_path.read_text())["cells"]
                        if "parameters" in c.get("metadata", {}).get("tags", []))
            src = "".join(cell["source"])
            names = []
            for node in ast.parse(src).body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(target, ast.Name) and node.value:
                    value = " ".join((ast.get_source_segment(src, node.value) or "").split())  # one line
                    ann = (": " + " ".join((ast.get_source_segment(src, node.annotation) or "").split())
                           if isinstance(node, ast.AnnAssign) else "")
                    names.append(f"{target.id}{ann}={value}")
        except (OSError, ValueError, StopIteration, SyntaxError, KeyError):
            names = ["(parameters unreadable)"]
        parts.append(f"{nb_path.stem}: " + ", ".join(names))
    return "\n\n".join(["Notebooks and their parameters (NAME: type=default; values are converted to the type "
                        "or refused):", *parts])


@app.command("report", epilog=_parameters_help())
def report(
    notebook: str = typer.Argument(..., help="Notebook path, file name or number prefix (e.g. 01)."),
    param: list[str] = typer.Option([], "--param", "-p",
                                    help="NAME=value override (repeatable; names are case-sensitive)."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Report folder (default runs/reports/<notebook>--<dataset>-<hash>)."),
) -> None:
    """Run NOTEBOOK with parameter overrides into its own report folder."""
    from ..reporting import (
        ParameterError,
        check_parameters,
        default_out_dir,
        execute_notebook,
        find_notebook,
        notebook_parameters,
    )

    try:
        path = find_notebook(notebook)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc), param_hint="NOTEBOOK") from None
    params = dict(parse_parameter(p) for p in param)
    try:
        params = check_parameters(path, params)
    except ParameterError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    except ValueError as exc:  # unreadable notebook or parameters cell
        raise typer.BadParameter(str(exc), param_hint="NOTEBOOK") from None
    folder = (out or default_out_dir(path, params)).resolve()
    if "OUT_DIR" in {p.name for p in notebook_parameters(path)} and "OUT_DIR" not in params:
        params["OUT_DIR"] = str(folder / "figures")
    executed = folder / path.name
    typer.echo(f"executing {path} with {params or 'its defaults'} ...")
    try:
        execute_notebook(path, params, executed)
    except ValueError as exc:  # not a notebook
        raise typer.BadParameter(str(exc), param_hint="NOTEBOOK") from None
    except Exception as exc:  # a failing cell: nbclient's CellExecutionError
        if type(exc).__name__ != "CellExecutionError":
            raise
        last = [ln for ln in str(exc).strip().splitlines() if ln.strip()][-1:] or ["(no message)"]
        typer.echo(f"error: a cell of {path.name} failed: {last[0].strip()}\n"
                   f"the executed notebook (with the traceback) is {executed}", err=True)
        raise typer.Exit(code=1) from None
    typer.echo(f"report folder: {folder}\nexecuted notebook: {executed}")
