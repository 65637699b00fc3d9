"""``scarce-lab run scarce`` and ``scarce-lab table scarce``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from ...cli import TableFormat, run_app, table_app
from ...cli._crossplay import (
    apply_crossplay,
    crossplay_parameters,
    crossplay_settings,
    pop_crossplay,
)
from ...cli._executor import executor_parameters, pop_executor, run_failed, run_on_ray
from ...cli._options import (
    _option,
    common_parameters,
    config_leaves,
    expand,
    fail,
    parse_kwargs,
    with_signature,
)
from ...cli._spend import (
    apply_sweep_cap,
    pop_spend,
    preview_or_check,
    spend_parameters,
    sweep_spent,
)

DEFAULT_OUT = Path("data/scarce")


_ALIASES = {
    "workers": ("-n",), "model": ("-m",), "slot_cap_s": ("--slot-cap",), "tasks": ("--task",),
    "max_solver_steps": ("--max-steps",),
}


def _leaves():
    from .config import ScarceConfig

    return ScarceConfig, config_leaves(ScarceConfig, aliases=_ALIASES)


def run_scarce_cmd(**kwargs) -> None:
    """Play SCARCE runs (one per seed) and record them under OUT.

    --model drives the solvers (the coding agents), --negotiator-model the negotiators.
    Every setting of the SCARCE config is an option (or -S key=value, e.g.
    -S worker_budgets.w0=1500).
    """
    from ...config.base import ConfigError
    from ...data.recorder import RunInProgressError
    from ...runtime import RunMismatchError
    from .runner import run_scarce

    cls, leaves = _leaves()
    out, resume = kwargs.pop("out"), kwargs.pop("resume")
    executor, address = pop_executor(kwargs)
    max_cost, dry_run, check = pop_spend(kwargs)
    xp = pop_crossplay(kwargs)
    parsed = parse_kwargs(cls, leaves, kwargs)
    population = crossplay_settings(xp, parsed)
    try:
        configs = expand(cls, parsed, order=("seed",))
    except ConfigError as exc:
        raise fail(exc) from None
    configs = apply_crossplay("scarce", configs, population, dry_run=dry_run)
    configs = apply_sweep_cap(configs, out, max_cost)
    if preview_or_check("scarce", configs, dry_run, check):
        return
    from ...runners.preflight import ModelUnavailableError, check_configs

    try:
        check_configs(configs)
    except ModelUnavailableError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model / --negotiator-model") from None
    paths = []
    if executor == "ray":
        outcomes = run_on_ray("scarce", configs, out, resume=resume, address=address)
        bad = [o for o in outcomes if o.status not in ("complete", "skipped")]
        for o in bad:
            typer.echo(f"error: {o.run_id}: {o.status}: {o.error}", err=True)
        if bad:
            raise typer.Exit(1)
        paths = [Path(out) / o.run_id for o in outcomes]
        for p in paths:
            typer.echo(f"run -> {p}")
    for cfg in configs if executor == "local" else []:
        if sweep_spent(out, max_cost):
            typer.echo(f"cost cap: the sweep's ${max_cost:g} is spent; {cfg.run_id} and later runs not started",
                       err=True)
            raise typer.Exit(1)
        try:
            paths.append(run_scarce(cfg, out, resume=resume))
        except (RunInProgressError, FileExistsError, RunMismatchError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - the run failed: recorded in its manifest
            run_failed(Path(out) / cfg.run_id, exc)
        typer.echo(f"run -> {paths[-1]}")
    from .tables import submissions_table

    sub = submissions_table(out)
    sub = sub.filter(sub["run_id"].is_in([p.name for p in paths]))
    typer.echo(f"{len(paths)} run(s): {sub.height} submissions, mean score {sub['score'].mean() or 0:.3f}, "
               f"deadline misses {int(sub['deadline_missed'].sum())}")
    _warn_call_errors(paths)


def _run_params():
    _, leaves = _leaves()
    return [
        *(_option(leaf) for leaf in leaves),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_OUT, annotation=Annotated[
            Path, typer.Option("--out", "-o", help="dataset folder")]),
        inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--resume", help="continue unfinished runs from their last committed contention")]),
        *executor_parameters(),
        *spend_parameters(),
        *crossplay_parameters(),
        *common_parameters(),
    ]


run_app.command("scarce")(with_signature(run_scarce_cmd, _run_params()))


@table_app.command("scarce")
def table_scarce(
    path: Annotated[Path, typer.Argument(help="A run directory or a folder of runs.")],
    fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.markdown,
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Per model/condition: win rate, mean bid, mean requested duration, private-chat use,
    deadline-miss rate, mean partial score, with 95 % cluster-bootstrap CIs (runs as clusters)."""
    import polars as pl

    from ...data.loaders import load_dataset
    from ...data.recorder import TrajectoryFileError
    from .analysis.metrics import format_summary, summary
    from .tables import contentions_table, submissions_table

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
    from ...data.loaders import call_errors

    n, bad, first = call_errors(run_dirs)
    if bad:
        typer.echo(f"warning: {bad} of {n} model calls failed and fell back (first: {first})", err=True)
