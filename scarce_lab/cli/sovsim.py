"""``scarce-lab run sovsim`` and ``scarce-lab table sovsim``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from . import TableFormat, run_app, table_app


class ConditionChoice(StrEnum):
    cpr = "cpr"
    bcpr = "bcpr"
    kcpr = "kcpr"
    kcpr_m = "kcpr_m"
    all = "all"


class LabelChoice(StrEnum):
    default = "default"
    neutral = "neutral"


class PresetChoice(StrEnum):
    sovsim = "sovsim"
    govsim = "govsim"


@run_app.command("sovsim")
def run_sovsim(
    condition: Annotated[
        list[ConditionChoice] | None,
        typer.Option("--condition", "-c", help="cpr, bcpr, kcpr, kcpr_m or all (repeatable; default all)."),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", "-m",
            help="Model for all agents (repeatable; default embedded/smollm2): a litellm model, "
            "embedded/smollm2 or scripted/<policy>[:arg].",
        ),
    ] = None,
    simulations: Annotated[int, typer.Option("--simulations", "-n", min=1, help="Simulations per model and condition.")] = 5,
    seed: Annotated[int, typer.Option("--seed", help="Sweep seed (each simulation derives its own).")] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder (one run directory per simulation).")] = Path("data/sovsim"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue unfinished runs from their last committed round.")] = False,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Rounds per game.")] = 12,
    role_labels: Annotated[LabelChoice, typer.Option("--role-labels", help="Role labels in prompts.")] = LabelChoice.default,
    concurrency: Annotated[int, typer.Option("--concurrency", "-k", min=1, help="Concurrent model calls.")] = 8,
    api_base: Annotated[str | None, typer.Option("--api-base", help="API base URL for a local/hosted server.")] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature", min=0.0, max=2.0,
            help="Sampling temperature. Above 0 so that simulations are replicates (each run's "
            "seed drives the sampling); at 0 identical prompts give identical games.",
        ),
    ] = 0.7,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="Response cache folder (default: the client's).")] = None,
    timeout_s: Annotated[
        float | None,
        typer.Option(
            "--timeout", min=1.0,
            help="Seconds per model call before it counts as failed (default: the client's). "
            "The embedded model waits for a machine-wide lock, so give it more on a busy machine.",
        ),
    ] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
) -> None:
    """Play SovSim games (all agents driven by one model) and record them under OUT."""
    from ..runners.sovsim import plan_sweep, run_sweep

    conditions = [c.value for c in condition] if condition else ["all"]
    models = list(model) if model else ["embedded/smollm2"]
    from ..agents.sovsim import make_agent

    for m in model:  # check every model before any run directory is created
        if not m.strip() or m.strip() != m:
            raise typer.BadParameter(f"model {m!r} is empty or has surrounding spaces", param_hint="--model")
        if m.startswith("scripted/"):
            try:
                make_agent(m)
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--model") from None
    try:
        specs = plan_sweep(conditions, models, simulations, seed=seed, rounds=rounds, role_labels=role_labels.value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    client = None
    if any(not m.startswith("scripted/") for m in models):
        from ..llm import LLMClient, LLMSettings

        settings = dict(max_concurrency=concurrency, temperature=temperature, api_base=api_base, cache_dir=cache_dir)
        if timeout_s is not None:
            settings["timeout_s"] = timeout_s
        client = LLMClient(LLMSettings(**settings))
    results = run_sweep(specs, out, client=client, resume=resume, concurrency=concurrency, progress=progress)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    typer.echo(f"{len(results)} games -> {out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    bad = [r for r in results if r.status in ("failed", "error")]
    for r in bad:
        typer.echo(f"  {r.status}: {r.run_id}: {r.error}", err=True)
    if bad:
        raise typer.Exit(code=1)


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
