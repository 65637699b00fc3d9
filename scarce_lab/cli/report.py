"""``scarce-lab report NOTEBOOK -p key=value ...``: execute a numbered notebook headless."""

from __future__ import annotations

import ast
from pathlib import Path

import typer

from . import app


def parse_parameter(text: str) -> tuple[str, object]:
    """``key=value`` -> ``(key, value)``; the value is a Python literal when it parses as
    one (``3``, ``[1, 2]``, ``'x'``), else the raw string.

    Raises:
        typer.BadParameter: no ``=`` or an empty key.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise typer.BadParameter(f"parameter {text!r} must look like name=value", param_hint="-p")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


@app.command("report")
def report(
    notebook: str = typer.Argument(..., help="Notebook path, file name or number prefix (e.g. 01)."),
    param: list[str] = typer.Option([], "--param", "-p", help="name=value override (repeatable)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Where to write the executed notebook."),
) -> None:
    """Run NOTEBOOK with parameter overrides; figures and tables go where it writes them."""
    from ..reporting import execute_notebook, find_notebook

    try:
        path = find_notebook(notebook)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc), param_hint="NOTEBOOK") from None
    params = dict(parse_parameter(p) for p in param)
    out = output or Path("runs") / "reports" / path.name
    typer.echo(f"executing {path} with {params or 'its defaults'} ...")
    try:
        execute_notebook(path, params, out)
    except ValueError as exc:  # not a notebook; a failing cell raises CellExecutionError
        raise typer.BadParameter(str(exc), param_hint="NOTEBOOK") from None
    typer.echo(f"executed notebook: {out}")
