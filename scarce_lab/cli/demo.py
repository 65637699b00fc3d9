"""``scarce-lab demo``: the README's main job, played by the one registered environment
that declares a demo (its spec's ``demo``, :class:`scarce_lab.registry.EnvironmentSpec`;
the shipped one: SovSim's four power conditions on the embedded offline model, then
notebook 01 on those runs)."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app


@app.command("demo")
def demo(
    model: str = typer.Option("embedded/smollm2", "--model", "-m", help="Model for every agent."),
    simulations: int = typer.Option(1, "--simulations", "-n", min=1, help="Games per condition."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("runs/demo"), "--out", "-o", help="Where the demo's runs go."),
    figures: Path = typer.Option(Path("figures/demo"), "--figures", help="Where the notebook writes."),
    notebook: bool = typer.Option(True, "--notebook/--no-notebook", help="Execute the demo's notebook afterwards."),
) -> None:
    """Play the demo (SovSim's four conditions) on MODEL (default: embedded, offline), then
    render the paper's table and figures from those runs. Re-running resumes and reuses the cache.

    Exits 1 when a game failed or none finished, 2 when no registered environment, or
    several, declare a demo (they are named)."""
    from ..registry import specs

    declared = [s for s in specs() if s.demo is not None]
    if len(declared) != 1:
        which = ", ".join(s.name for s in declared) or "none"
        typer.echo(f"error: scarce-lab demo plays the one environment that declares a demo; "
                   f"environments with one: {which}", err=True)
        raise typer.Exit(code=2)
    code = declared[0].demo(model=model, simulations=simulations, seed=seed, out=out, figures=figures,
                            notebook=notebook)
    if code:
        raise typer.Exit(code=code)
