"""``scarce-lab run economy`` and ``scarce-lab table economy``."""

from __future__ import annotations

import inspect
import json
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

_ALIASES = {"agents": ("-n",), "episodes": ("-e",), "ablation": ("-a",), "model": ("-m",), "seed": ("-s",)}


def _leaves():
    from .config import EconomyRunConfig

    # economy.ablation is set from the run's `ablation` (the config refuses it inside
    # `economy`), so it is no option of its own: `--ablation` / `-a` is the one way.
    # seats and the newcomer are set with -S (seats.<seat>=MODEL, newcomer.episode=K)
    return EconomyRunConfig, config_leaves(EconomyRunConfig, aliases=_ALIASES,
                                           exclude=("economy.ablation", "newcomer.episode", "newcomer.wealth",
                                                    "newcomer.bid"),
                                           extra_choices={"ablation": ("all",)})


def run_economy_cmd(**kwargs) -> None:
    """Train an economy of agents on a task, evaluate it frozen, and record each run under OUT.

    One run per ablation x seed. Every setting of the Economy config is an option (or
    -S key=value, e.g. -S economy.rent=2).
    """
    from ...config.base import ConfigError
    from ...data.recorder import RunInProgressError
    from ...runtime import RunMismatchError
    from .runner.play import _Tasks, run_economy

    cls, leaves = _leaves()
    out, resume = kwargs.pop("out"), kwargs.pop("resume")
    executor, address = pop_executor(kwargs)
    max_cost, dry_run, check = pop_spend(kwargs)
    xp = pop_crossplay(kwargs)
    parsed = parse_kwargs(cls, leaves, kwargs)
    population = crossplay_settings(xp, parsed)
    try:
        configs = expand(cls, parsed, order=("seed", "ablation"), expand_values={
            "ablation": {"all": ["none", "no-auction", "no-exploration", "no-exploitation"]}})
    except ConfigError as exc:
        raise fail(exc) from None
    configs = apply_crossplay("economy", configs, population, dry_run=dry_run)
    configs = apply_sweep_cap(configs, out, max_cost)
    if preview_or_check("economy", configs, dry_run, check):
        return
    from ...runners.preflight import ModelUnavailableError, check_configs

    try:  # the task file and the model/policy (and its key), before anything is written
        _Tasks(configs[0], None)
        check_configs(configs)
    except ModelUnavailableError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    except OSError as exc:
        raise typer.BadParameter(f"--task {configs[0].task}: {exc}") from None
    run_dirs = []
    if executor == "ray":
        outcomes = run_on_ray("economy", configs, out, resume=resume, address=address)
        bad = [o for o in outcomes if o.status not in ("complete", "skipped")]
        for o in bad:
            typer.echo(f"error: {o.run_id}: {o.status}: {o.error}", err=True)
        if bad:
            raise typer.Exit(1)
        run_dirs = [Path(out) / o.run_id for o in outcomes]
        for d in run_dirs:
            typer.echo(f"{d}")
    for cfg in configs if executor == "local" else []:
        if sweep_spent(out, max_cost):
            typer.echo(f"cost cap: the sweep's ${max_cost:g} is spent; {cfg.run_id} and later runs not started",
                       err=True)
            raise typer.Exit(1)
        try:
            run_dirs.append(run_economy(cfg, out, resume=resume))
        except (RunInProgressError, FileExistsError, RunMismatchError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - the run failed: recorded in its manifest
            run_failed(Path(out) / cfg.run_id, exc)
        typer.echo(f"{run_dirs[-1]}")
    _warn_call_errors(run_dirs)


def _run_params():
    _, leaves = _leaves()
    return [
        *(_option(leaf) for leaf in leaves),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=Path("data/economy"), annotation=Annotated[
            Path, typer.Option("--out", "-o", help="dataset folder (one run directory per run)")]),
        inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--resume", help="continue unfinished runs from their last committed episode")]),
        *executor_parameters(),
        *spend_parameters(),
        *crossplay_parameters(),
        *common_parameters(),
    ]


run_app.command("economy")(with_signature(run_economy_cmd, _run_params()))


@table_app.command("economy")
def table_economy_cmd(
    path: Path = typer.Argument(..., help="Dataset folder or run directory."),  # noqa: B008
    fmt: TableFormat = typer.Option(TableFormat.markdown, "--format", "-f"),  # noqa: B008
    dynamics: bool = typer.Option(False, "--dynamics", help=(
        "population dynamics instead (size, births by origin and deaths per 10 episodes, "
        "wealth Gini, solve rates): e.g. the default economy against an eom-reference preset")),
) -> None:
    """Solve rate per task and condition: first fifth and last fifth of training, and
    frozen evaluation (mean over seeds, 95% t-interval); with --dynamics, population
    dynamics per task and condition."""
    import polars as pl

    from ...data.loaders import load_dataset
    from ...data.recorder import TrajectoryFileError
    from .analysis.metrics import ablation_table, format_table
    from .tables import episodes

    try:
        ds = load_dataset(path)
    except (FileNotFoundError, TrajectoryFileError) as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        eps = episodes(ds)
    except KeyError as exc:
        raise typer.BadParameter(f"{path}: an episode_end event's payload lacks {exc}") from None
    if eps.is_empty():
        raise typer.BadParameter(f"no economy episodes below {path}")
    # A run that did not finish (killed, failed) has a shorter training: its first and
    # last fifths are not comparable, so it is left out of the table and named.
    status = ds.runs.filter(pl.col("environment") == "economy").select("run_id", "status", "run_dir").collect()
    unfinished = status.filter(pl.col("status") != "complete")
    if unfinished.height:
        typer.echo(f"skipping {unfinished.height} unfinished run(s): "
                   + ", ".join(f"{r['run_dir']} ({r['status']})" for r in unfinished.iter_rows(named=True)), err=True)
        eps = eps.filter(~pl.col("run_id").is_in(unfinished["run_id"].to_list()))
        if eps.is_empty():
            raise typer.BadParameter(f"no complete economy runs below {path}")
    from ...analysis.pooling import PoolingError

    try:
        if dynamics:
            from .analysis.compare import dynamics_table, format_dynamics
            from .tables import births, deaths, population

            table = dynamics_table(eps, population(ds), births(ds), deaths(ds))
            shown = format_dynamics(table)
        else:
            table = ablation_table(eps)
            shown = format_table(table)
    except PoolingError as exc:
        hint = "" if dynamics else (" (runs of the default economy and of an eom-reference preset: "
                                    "--dynamics sets them side by side, or keep them in separate folders)")
        raise typer.BadParameter(f"{exc}{hint}") from None
    if fmt == TableFormat.csv:
        typer.echo(table.write_csv(), nl=False)
    elif fmt == TableFormat.json:
        typer.echo(json.dumps(table.to_dicts(), indent=2))
    else:
        typer.echo(_markdown(shown))


def _markdown(df) -> str:
    cols = df.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _warn_call_errors(run_dirs) -> None:
    """One stderr line when model calls failed (e.g. a misspelt model name); exit 1
    when every call failed."""
    from ...data.loaders import call_errors

    n, bad, first = call_errors(run_dirs)
    if n and bad == n:  # a command whose every model call failed fails
        typer.echo(f"error: all {n} model calls failed (first: {first})", err=True)
        raise typer.Exit(code=1)
    if bad:
        typer.echo(f"warning: {bad} of {n} model calls failed and fell back (first: {first})", err=True)

