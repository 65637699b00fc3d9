"""``scarce-lab run sovsim`` and ``scarce-lab table sovsim``."""

from __future__ import annotations

import inspect
from enum import StrEnum
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
from ...cli._executor import executor_parameters, pop_executor, run_on_ray
from ...cli._options import (
    _option,
    common_parameters,
    config_leaves,
    expand,
    fail,
    parse_kwargs,
    with_signature,
)
from ...cli._spend import apply_sweep_cap, pop_spend, preview_or_check, spend_parameters


class PresetChoice(StrEnum):
    sovsim = "sovsim"
    govsim = "govsim"


_ALIASES = {
    "condition": ("-c",), "model": ("-m",), "llm.max_concurrency": ("--concurrency", "-k"),
    "llm.timeout_s": ("--timeout",),
}


def _leaves():
    from .config import SovSimConfig

    return SovSimConfig, config_leaves(SovSimConfig, aliases=_ALIASES, exclude=("simulation",),
                                       extra_choices={"condition": ("all",)})


def run_sovsim(**kwargs) -> None:
    """Play SovSim games (one model for every agent, or one per seat with --seat) and record them under OUT.

    One game per model x condition x simulation; by default all four conditions on the
    embedded model. Every setting of the SovSim config is an option (or -S key=value).
    """
    from ...config.base import ConfigError, read_config_file
    from .runner.play import CONDITIONS, run_sweep

    cls, leaves = _leaves()
    out, resume, progress = kwargs.pop("out"), kwargs.pop("resume"), kwargs.pop("progress")
    executor, address = pop_executor(kwargs)
    max_cost, dry_run, check = pop_spend(kwargs)
    xp = pop_crossplay(kwargs)
    simulations = kwargs.pop("simulations")
    processes = kwargs.pop("processes")
    if processes > 1 and executor != "local":
        raise typer.BadParameter("--processes is for --executor local", param_hint="--processes")
    parsed = parse_kwargs(cls, leaves, kwargs)
    population = crossplay_settings(xp, parsed)
    in_file = parsed.file is not None and "condition" in read_config_file(parsed.file)
    if "condition" not in parsed.sweep and not in_file:
        parsed.sweep["condition"] = ["all"]
    try:
        configs = expand(cls, parsed, order=("model", "simulation", "condition"), replicates=simulations,
                         expand_values={"condition": {"all": list(CONDITIONS)}})
    except ConfigError as exc:
        raise fail(exc) from None
    configs = apply_crossplay("sovsim", configs, population, dry_run=dry_run)
    configs = apply_sweep_cap(configs, out, max_cost)
    if preview_or_check("sovsim", configs, dry_run, check):
        return
    _check_models(configs)
    if executor == "ray":
        results = run_on_ray("sovsim", configs, out, resume=resume, address=address, progress=progress)
    elif processes > 1:
        from .runner.processes import run_sweep_processes

        try:
            results = run_sweep_processes(configs, out, processes=processes, resume=resume,
                                          concurrency=configs[0].llm.max_concurrency, progress=progress)
        except ValueError as exc:  # limits that cannot be split, the same game twice
            raise typer.BadParameter(str(exc), param_hint="--processes") from None
    else:
        results = run_sweep(configs, out, resume=resume, concurrency=configs[0].llm.max_concurrency,
                            progress=progress)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    typer.echo(f"{len(results)} games -> {out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    bad = [r for r in results if r.status in ("failed", "error", "not_started")]
    for r in bad:
        typer.echo(f"  {r.status}: {r.run_id}: {r.error}", err=True)
    if bad:
        raise typer.Exit(code=1)


def _check_models(configs) -> None:
    """Every model is usable (policy, embedded name, API key) before any run directory
    is created (:func:`scarce_lab.runners.preflight.check_configs`)."""
    from ...runners.preflight import ModelUnavailableError, check_configs

    try:
        check_configs(configs)
    except ModelUnavailableError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None


def _run_params():
    _, leaves = _leaves()
    return [
        *(_option(leaf) for leaf in leaves),
        inspect.Parameter("simulations", inspect.Parameter.KEYWORD_ONLY, default=5, annotation=Annotated[
            int, typer.Option("--simulations", "-n", min=1, help="simulations per model and condition")]),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=Path("data/sovsim"), annotation=Annotated[
            Path, typer.Option("--out", "-o", help="dataset folder (one run directory per simulation)")]),
        inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--resume", help="continue unfinished runs from their last committed round")]),
        inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=True, annotation=Annotated[
            bool, typer.Option("--progress/--no-progress")]),
        inspect.Parameter("processes", inspect.Parameter.KEYWORD_ONLY, default=1, annotation=Annotated[
            int, typer.Option("--processes", min=1, help=(
                "client processes on this machine (games dealt round-robin; --concurrency and rate "
                "limits are split between them): for sweeps whose model calls are fast enough that "
                "one process's CPU is the limit"))]),
        *executor_parameters(),
        *spend_parameters(),
        *crossplay_parameters(),
        *common_parameters(),
    ]


run_app.command("sovsim")(with_signature(run_sovsim, _run_params()))


class GroupBy(StrEnum):
    condition = "condition"
    base_condition = "base_condition"


@table_app.command("sovsim")
def table_sovsim(
    path: Annotated[Path, typer.Argument(help="Our run folder, SovSim rationales.json or sim_XX.json files, or GovSim "
                                         "runs (log_env.json with the run's .hydra/config.yaml).")],
    preset: Annotated[PresetChoice, typer.Option("--preset", help="Metric conventions (the paper the data follow).")] = (
        PresetChoice.sovsim),
    strict: Annotated[bool, typer.Option("--strict", help="Strict survival: no collapse at all.")] = False,
    by: Annotated[GroupBy, typer.Option("--by", help="Group by the full condition (every setting) or by the power "
                                        "condition only (refused when settings differ, unless --force).")] = (
        GroupBy.condition),
    force: Annotated[bool, typer.Option("--force", help="Compute despite a failed check (wrong preset, mixed layouts, "
                                        "pooled settings, run without configuration); every override is "
                                        "printed to stderr.")] = False,
    fmt: Annotated[TableFormat, typer.Option("--format", "-f", help="markdown: Table 1 and the cross-model tables; "
                                             "csv: Table 1 only; json: everything (keys: convention, table1, "
                                             "cross_model).")] = TableFormat.markdown,
    digits: Annotated[int, typer.Option("--digits", min=0, max=6)] = 2,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every bootstrap.")] = 0,
) -> None:
    """Print Table 1 (every metric, mean and 95% CI per model x condition) and the
    cross-model results (mean relative drop from CPR, over-usage by role, leader
    extraction rate vs survival across models) for PATH.

    JSON keys: ``convention``; ``table1`` (one row per model x condition; per metric
    ``mean, ci_low, ci_high, n, status, ci``); ``cross_model.relative_drop`` (per
    metric ``survival_rate`` | ``total_gain`` and condition: ``mean`` over models,
    ``ci_low``, ``ci_high``, ``models``, ``drops``), ``cross_model.overuse_by_role`` and
    ``cross_model.overuse_by_role_per_model``, ``cross_model.leader_rate_vs_survival``
    (per unit ``cells`` | ``simulations``: ``r``, ``r2``, CIs, ``p``) and
    ``cross_model.leader_rate_vs_survival_per_model``.
    """
    import json
    import warnings

    from ...data.jsonl import TornLineWarning
    from ...data.recorder import TrajectoryFileError
    from .analysis.cross import format_cross, sovsim_report
    from .analysis.metrics import (
        AgentRoundError,
        EmptyTableError,
        PoolingError,
        PresetMismatchError,
        UnfinishedRunsWarning,
        format_table,
    )
    from .published import ForcedDataWarning
    from .published.govsim_log import GovSimNotReadWarning
    from .tables import load_agent_rounds

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ForcedDataWarning)
        warnings.simplefilter("always", GovSimNotReadWarning)
        warnings.simplefilter("always", UnfinishedRunsWarning)
        warnings.simplefilter("always", TornLineWarning)
        try:
            df = load_agent_rounds(path, force=force)
        except (FileNotFoundError, TrajectoryFileError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="PATH") from None
        try:
            report = sovsim_report(df, preset.value, strict=strict, force=force, by=by.value, seed=seed)
        except (PresetMismatchError, PoolingError) as exc:
            raise typer.BadParameter(str(exc), param_hint="PATH / --preset / --by") from None
        except AgentRoundError as exc:
            raise typer.BadParameter(str(exc), param_hint="PATH") from None
        except EmptyTableError as exc:  # raised after the warnings (e.g. FORCED) are shown
            empty = exc
        else:
            empty = None
    seen = set()
    for w in caught:
        if str(w.message) in seen:
            continue
        seen.add(str(w.message))
        if issubclass(w.category, ForcedDataWarning):
            typer.secho(f"WARNING: {w.message}", err=True, fg=typer.colors.RED, bold=True)
        elif issubclass(w.category, UnfinishedRunsWarning | TornLineWarning | GovSimNotReadWarning):
            typer.echo(f"warning: {w.message}", err=True)
    if empty is not None:
        raise typer.BadParameter(f"{path}: {empty}", param_hint="PATH")
    if fmt == TableFormat.json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=str))
    elif fmt == TableFormat.csv:
        typer.echo(format_table(report.summary, "csv", digits=digits), nl=False)
    else:
        typer.echo(format_table(report.summary, "markdown", digits=digits))
        typer.echo(format_cross(report.cross), nl=False)
