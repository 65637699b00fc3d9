"""``scarce-lab view RUN --html out.html``: one run as a self-contained HTML timeline."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app


@app.command("view")
def view_run(
    run: Path = typer.Argument(..., help="A run directory, or a dataset folder with --run-id."),
    html: Path | None = typer.Option(None, "--html", help="Page to write (default: view-<run id>.html here)."),
    run_id: str | None = typer.Option(None, "--run-id", help="Which run, when RUN holds several."),
    max_chars: int = typer.Option(1500, "--max-chars", min=50, help="Longest text shown in full."),
    beside: str | None = typer.Option(None, "--beside", help="For a fork: show it beside its parent from the fork "
                                      "step on ('parent': among its siblings; or the parent's folder)."),
) -> None:
    """Write one run (SCARCE contentions, SovSim rounds, Economy episodes) as a static page
    that needs no network."""
    from ..viewer import view

    try:
        v = view(run, run_id, max_chars=max_chars, beside=beside)
    except (FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    out = v.save(html or Path(f"view-{v.run_dir.name}.html"))
    typer.echo(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
