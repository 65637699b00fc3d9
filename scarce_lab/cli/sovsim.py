"""``scarce-lab run sovsim`` and ``scarce-lab table sovsim``."""

from __future__ import annotations

import inspect
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from . import TableFormat, run_app, table_app
from ._executor import executor_parameters, pop_executor, run_on_ray
from ._options import (
    _option,
    common_parameters,
    config_leaves,
    expand,
    fail,
    parse_kwargs,
    with_signature,
)


class PresetChoice(StrEnum):
    sovsim = "sovsim"
    govsim = "govsim"


_ALIASES = {
    "condition": ("-c",), "model": ("-m",), "llm.max_concurrency": ("--concurrency", "-k"),
    "llm.timeout_s": ("--timeout",),
}


def _leaves():
    from ..config.sovsim import SovSimConfig

    return SovSimConfig, config_leaves(SovSimConfig, aliases=_ALIASES, exclude=("simulation",),
                                       extra_choices={"condition": ("all",)})


def run_sovsim(**kwargs) -> None:
    """Play SovSim games (all agents driven by one model) and record them under OUT.

    One game per model x condition x simulation; by default all four conditions on the
    embedded model. Every setting of the SovSim config is an option (or -S key=value).
    """
    from ..config.base import ConfigError, read_config_file
    from ..runners.sovsim import CONDITIONS, run_sweep

    cls, leaves = _leaves()
    out, resume, progress = kwargs.pop("out"), kwargs.pop("resume"), kwargs.pop("progress")
    executor, address = pop_executor(kwargs)
    simulations = kwargs.pop("simulations")
    parsed = parse_kwargs(cls, leaves, kwargs)
    in_file = parsed.file is not None and "condition" in read_config_file(parsed.file)
    if "condition" not in parsed.sweep and not in_file:
        parsed.sweep["condition"] = ["all"]
    try:
        configs = expand(cls, parsed, order=("model", "simulation", "condition"), replicates=simulations,
                         expand_values={"condition": {"all": list(CONDITIONS)}})
    except ConfigError as exc:
        raise fail(exc) from None
    _check_models({c.model for c in configs})
    if executor == "ray":
        results = run_on_ray("sovsim", configs, out, resume=resume, address=address, progress=progress)
    else:
        results = run_sweep(configs, out, resume=resume, concurrency=configs[0].llm.max_concurrency,
                            progress=progress)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    typer.echo(f"{len(results)} games -> {out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    bad = [r for r in results if r.status in ("failed", "error")]
    for r in bad:
        typer.echo(f"  {r.status}: {r.run_id}: {r.error}", err=True)
    if bad:
        raise typer.Exit(code=1)


def _check_models(models: set[str]) -> None:
    """Every model name is usable before any run directory is created."""
    from ..agents.sovsim import make_agent

    for m in sorted(models):
        if m.strip() != m:
            raise typer.BadParameter(f"model {m!r} has surrounding spaces", param_hint="--model")
        if m.startswith("scripted/"):
            try:
                make_agent(m)
            except ValueError as exc:
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
        *executor_parameters(),
        *common_parameters(),
    ]


run_app.command("sovsim")(with_signature(run_sovsim, _run_params()))


@table_app.command("sovsim")
def table_sovsim(
    path: Annotated[Path, typer.Argument(help="Our run folder, a SovSim rationales.json tree or GovSim log_env.json runs.")],
    preset: Annotated[PresetChoice, typer.Option("--preset", help="Metric conventions.")] = PresetChoice.sovsim,
    strict: Annotated[bool, typer.Option("--strict", help="Strict survival: no collapse at all.")] = False,
    fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.markdown,
    digits: Annotated[int, typer.Option("--digits", min=0, max=6)] = 2,
) -> None:
    """Print Table 1 (every metric, mean and 95% CI per model x condition) for PATH."""
    from ..analysis.sovsim import format_table, sovsim_table
    from ..data.recorder import TrajectoryFileError
    from ..data.tables.sovsim import load_agent_rounds

    try:
        df = load_agent_rounds(path)
    except (FileNotFoundError, TrajectoryFileError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="PATH") from None
    summary = sovsim_table(df, preset=preset.value, strict=strict)
    typer.echo(format_table(summary, fmt.value, digits=digits), nl=False)
