"""``scarce-lab run scarce`` and ``scarce-lab table scarce``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..envs.slots.protocol import Mechanism
from . import TableFormat, run_app, table_app

DEFAULT_OUT = Path("data/scarce")


class SchedulerChoice(StrEnum):
    ballots = "ballots"
    fifo = "fifo"
    sjf = "sjf"
    edf = "edf"
    highest_bid = "highest-bid"


class MemoryChoice(StrEnum):
    none = "none"
    subrun = "subrun"
    cross = "cross"


class ClockChoice(StrEnum):
    virtual = "virtual"
    wall = "wall"


class SandboxChoice(StrEnum):
    local = "local"
    docker = "docker"


class EffortChoice(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


@run_app.command("scarce")
def run_scarce_cmd(
    workers: int = typer.Option(5, "--workers", "-n", min=1, max=26, help="Workers sharing the sandbox."),
    model: str = typer.Option("scripted/fifo", "--model", "-m",
                              help="Solver model (litellm, embedded/smollm2 or scripted/<policy>)."),
    negotiator_model: str | None = typer.Option(None, "--negotiator-model",
                                                help="Negotiator model (default: --model). Scripted policies: "
                                                     "fifo, sjf, edf, bid-first, random."),
    subruns: int = typer.Option(4, "--subruns", min=1, max=4),
    budget: int = typer.Option(1000, "--budget", min=0, help="Credits per worker per subrun."),
    deadline_min: float = typer.Option(25.0, "--deadline-min", min=0.1, help="Deadline per subrun, minutes."),
    mechanism: Annotated[Mechanism, typer.Option("--mechanism")] = Mechanism.fixed,
    scheduler: Annotated[SchedulerChoice, typer.Option("--scheduler")] = SchedulerChoice.ballots,
    memory: Annotated[MemoryChoice, typer.Option("--memory")] = MemoryChoice.subrun,
    clock: Annotated[ClockChoice, typer.Option("--clock")] = ClockChoice.virtual,
    sandbox: Annotated[SandboxChoice, typer.Option("--sandbox")] = SandboxChoice.local,
    seed: Annotated[list[int] | None, typer.Option("--seed", help="Run seed (repeatable: one run per seed; default 0).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder.")] = DEFAULT_OUT,
    rich_worker_budget: int | None = typer.Option(None, "--rich-worker-budget", min=0,
                                                  help="Budget of worker w0 (asymmetry experiments)."),
    mixed_deadlines: bool = typer.Option(False, "--mixed-deadlines", help="Deadlines spread over 10..25 min."),
    reasoning_effort: Annotated[EffortChoice | None, typer.Option("--reasoning-effort")] = None,
    private_rounds: int = typer.Option(1, "--private-rounds", min=0, max=10),
    slot_cap: int = typer.Option(300, "--slot-cap", min=1, help="Longest slot, seconds."),
    task: Annotated[list[str] | None, typer.Option("--task", help="Task ids to draw from (repeatable; default all shipped).")] = None,
    model_call_s: float = typer.Option(20.0, "--model-call-s", min=0, help="Virtual seconds per model call."),
    max_solver_steps: int = typer.Option(60, "--max-steps", min=1, help="Solver steps per subrun."),
) -> None:
    """Play SCARCE runs (one per seed) and record them under OUT."""
    from ..data.recorder import RunInProgressError
    from ..runners.scarce import ScarceConfig, run_scarce

    paths = []
    for s in seed or [0]:
        try:
            cfg = ScarceConfig(
                workers=workers, model=model, negotiator_model=negotiator_model, subruns=subruns, budget=budget,
                deadline_min=deadline_min, mechanism=mechanism.value, scheduler=scheduler.value,
                memory=memory.value, clock=clock.value, sandbox=sandbox.value, seed=s,
                rich_worker_budget=rich_worker_budget, mixed_deadlines=mixed_deadlines,
                reasoning_effort=reasoning_effort.value if reasoning_effort else None,
                private_rounds=private_rounds, slot_cap_s=slot_cap, tasks=task or None,
                model_call_s=model_call_s, max_solver_steps=max_solver_steps,
            )
        except ValueError as exc:
            raise typer.BadParameter(_validation_text(exc)) from None
        try:
            paths.append(run_scarce(cfg, out))
        except RunInProgressError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(f"run -> {paths[-1]}")
    from ..data.tables.scarce import submissions_table

    sub = submissions_table(out)
    sub = sub.filter(sub["run_id"].is_in([p.name for p in paths]))
    typer.echo(f"{len(paths)} run(s): {sub.height} submissions, mean score {sub['score'].mean() or 0:.3f}, "
               f"deadline misses {int(sub['deadline_missed'].sum())}")
    _warn_call_errors(paths)


@table_app.command("scarce")
def table_scarce(
    path: Annotated[Path, typer.Argument(help="A run directory or a folder of runs.")],
    fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.markdown,
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Per model/condition: win rate, mean bid, mean requested duration, private-chat use,
    deadline-miss rate, mean partial score, with 95 % cluster-bootstrap CIs (runs as clusters)."""
    import polars as pl

    from ..analysis.scarce import format_summary, summary
    from ..data.loaders import load_dataset
    from ..data.recorder import TrajectoryFileError
    from ..data.tables.scarce import contentions_table, submissions_table

    try:
        ds = load_dataset(path)
        contentions, submissions = contentions_table(ds), submissions_table(ds)
    except (FileNotFoundError, TrajectoryFileError) as exc:
        raise typer.BadParameter(str(exc)) from None
    if contentions.is_empty() and submissions.is_empty():
        raise typer.BadParameter(f"no SCARCE runs below {path}")
    df = summary(contentions, submissions, seed=seed)
    if fmt == TableFormat.csv:
        typer.echo(df.write_csv(), nl=False)
    elif fmt == TableFormat.json:
        typer.echo(df.write_json())
    else:
        with pl.Config(tbl_formatting="MARKDOWN", tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
                       tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=400):
            typer.echo(str(format_summary(df)))


def _validation_text(exc: ValueError) -> str:
    """One line per pydantic error (``field: message``); other errors as they are."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _warn_call_errors(run_dirs) -> None:
    """One stderr line when model calls failed (e.g. a misspelt model name)."""
    from ..data.loaders import call_errors

    n, bad, first = call_errors(run_dirs)
    if bad:
        typer.echo(f"warning: {bad} of {n} model calls failed and fell back (first: {first})", err=True)
