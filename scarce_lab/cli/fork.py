"""``scarce-lab fork RUN --at N [--intervene KIND:key=value,...] --seeds 0..K --out DIR``:
counterfactual forks of a recorded run (:mod:`scarce_lab.forks`)."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app


def _step(text: str) -> int:
    """``7`` or ``round=7`` / ``contention=7`` / ``episode=7`` as the step number."""
    try:
        return int(text.rpartition("=")[2])
    except ValueError:
        raise typer.BadParameter(f"--at {text!r}: expected a step number (7, or round=7)") from None


@app.command("fork")
def fork_run(
    run: Path = typer.Argument(..., help="The parent: a complete run folder."),
    at: str = typer.Option(..., "--at", help="The step the fork starts at (SovSim round, SCARCE contention, "
                           "Economy episode): 7 or round=7. Steps before it replay the parent's record."),
    intervene: str = typer.Option("none", "--intervene", help="KIND or KIND:key=value,...: none, "
                                  "replace_message:agent=A,text=T, replace_decision:agent=A,decision={...}, "
                                  "seat_model:seat=S,model=M, rule:setting=K,value=V, remove_agent:agent=A, "
                                  "add_agent:model=M[,role=R]."),
    seeds: str = typer.Option("0", "--seeds", help="Fork seeds: 0..K or 0,2,5 (0 keeps the parent's seeds: with "
                              "--intervene none it is the parent again)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder of the forks (one run folder per seed)."),
) -> None:
    """Fork RUN at a step: the prefix is the parent's (no model call repeated), the
    intervention applies at the step, each seed continues live. Every fork is its own
    run and condition (parent, step and intervention in its manifest)."""
    from ..forks import ForkDivergedError, ForkError
    from ..forks.launch import fork

    try:
        paths = fork(run, at=_step(at), intervene=intervene, seeds=seeds, out=out)
    except (ForkError, ForkDivergedError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    for p in paths:
        typer.echo(str(p))
