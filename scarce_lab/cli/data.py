"""``scarce-lab export`` and ``scarce-lab migrate``: datasets as files."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from . import app


class ExportFormat(StrEnum):
    parquet = "parquet"


@app.command("export")
def export_cmd(
    path: Annotated[Path, typer.Argument(help="a run directory or a folder of runs")],
    out: Annotated[Path, typer.Option("--out", "-o", help="new folder for the export")],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="file format")] = ExportFormat.parquet,
) -> None:
    """Export a trajectory dataset (every run below PATH) to Parquet; `sl.load(OUT)`
    and every table read the export back identically."""
    from ..data.jsonl import TrajectoryFileError
    from ..data.loaders import export_parquet, load_dataset

    try:
        ds = load_dataset(path)
        export_parquet(ds, out)
    except (FileNotFoundError, FileExistsError, TrajectoryFileError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"{len(ds.manifests)} runs -> {out}")


@app.command("migrate")
def migrate_cmd(
    path: Annotated[Path, typer.Argument(help="a run directory or a folder of runs")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write migrated copies here instead of in place")] = None,
) -> None:
    """Rewrite runs written by an older scarce_lab in the current trajectory format
    (in place unless --out). Reading never needs this: old runs are migrated on load."""
    from ..config.migrate import migrate_dataset
    from ..data.jsonl import TrajectoryFileError

    try:
        done = migrate_dataset(path, out)
    except (FileNotFoundError, TrajectoryFileError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"{len(done)} runs migrated" + (f" -> {out}" if out else " in place"))
