"""``scarce-lab run economy`` and ``scarce-lab table economy``."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from . import TableFormat, run_app, table_app


class AblationChoice(StrEnum):
    none = "none"
    no_auction = "no-auction"
    no_exploration = "no-exploration"
    no_exploitation = "no-exploitation"
    all = "all"


class BaselineChoice(StrEnum):
    none = "none"
    full = "full"
    round_robin = "round-robin"


class DetailChoice(StrEnum):
    steps = "steps"
    episodes = "episodes"


@run_app.command("economy")
def run_economy_cmd(
    task: str = typer.Option("blocksworld", "--task", help="blocksworld, arithmetic or jsonl:PATH (question/answer pairs)."),
    agents: int = typer.Option(12, "--agents", "-n", min=1, help="Founding population size."),
    episodes: int = typer.Option(300, "--episodes", "-e", min=1, help="Training episodes."),
    eval_episodes: int = typer.Option(40, "--eval-episodes", min=0, help="Frozen evaluation episodes after training."),
    ablation: list[AblationChoice] = typer.Option(  # noqa: B008
        [AblationChoice.none], "--ablation", "-a", help="none, no-auction, no-exploration, no-exploitation or all (repeatable)."
    ),
    baseline: BaselineChoice = typer.Option(BaselineChoice.none, "--baseline", help="none (the economy), full (one agent with every capability) or round-robin (partial agents in fixed order)."),  # noqa: B008
    model: str = typer.Option("scripted/random-rules", "--model", "-m", help="scripted/<name> (rule or scripted agents) or a litellm model such as embedded/smollm2."),
    seed: list[int] = typer.Option([0], "--seed", "-s", help="Run seed (repeatable: one run per seed)."),  # noqa: B008
    out: Path = typer.Option(Path("data/economy"), "--out", "-o", help="Dataset folder (one run directory per run)."),  # noqa: B008
    detail: DetailChoice = typer.Option(DetailChoice.steps, "--detail", help="steps: every auction/payment/step event; episodes: per-episode summaries only."),  # noqa: B008
    snapshot_every: int = typer.Option(1, "--snapshot-every", min=1, help="Population snapshot every k episodes."),
    economy: str = typer.Option("{}", "--economy", help='EconomyConfig overrides as JSON, e.g. \'{"rent": 2}\'.'),
    min_blocks: int = typer.Option(2, "--min-blocks", min=1),
    max_blocks: int = typer.Option(5, "--max-blocks", min=1),
    schedule: str = typer.Option("uniform", "--schedule", help="Blocks World sizes: uniform or curriculum."),
    n_steps: int = typer.Option(3, "--n-steps", min=1, max=6, help="Operations per arithmetic problem."),
    qa_max_steps: int = typer.Option(6, "--qa-max-steps", min=1, help="Steps per QA episode (arithmetic, jsonl)."),
    api_base: str | None = typer.Option(None, "--api-base", help="API base URL for a local/hosted server."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, max=2.0),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Response cache folder (default: the client's)."),  # noqa: B008
) -> None:
    """Train an economy of agents on a task, evaluate it frozen, and record each run under OUT."""
    from pydantic import ValidationError

    from ..data.recorder import RunInProgressError
    from ..runners.economy import EconomyRunConfig, _Tasks, make_policy, run_economy

    try:
        overrides = json.loads(economy)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--economy must be JSON: {exc}") from None
    ablations = (
        ["none", "no-auction", "no-exploration", "no-exploitation"]
        if AblationChoice.all in ablation
        else [a.value for a in ablation]
    )
    client = None
    if model.strip() and not model.startswith("scripted/"):
        from ..llm import LLMClient, LLMSettings

        try:
            client = LLMClient(LLMSettings(temperature=temperature, api_base=api_base, cache_dir=cache_dir))
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--cache-dir") from None
    configs = []
    for s in seed:
        for abl in ablations:
            try:
                cfg = EconomyRunConfig(
                    task=task, agents=agents, episodes=episodes, eval_episodes=eval_episodes, ablation=abl,
                    baseline=baseline.value, model=model, seed=s, economy=overrides, detail=detail.value,
                    snapshot_every=snapshot_every, min_blocks=min_blocks, max_blocks=max_blocks,
                    schedule=schedule, n_steps=n_steps, qa_max_steps=qa_max_steps,
                )
            except ValidationError as exc:
                raise typer.BadParameter(_validation_text(exc)) from None
            configs.append(cfg)
    try:  # the task file and the model/policy, before anything is written
        _Tasks(configs[0], None)
        make_policy(configs[0], client=client)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    except OSError as exc:
        raise typer.BadParameter(f"--task {task}: {exc}") from None
    run_dirs = []
    for cfg in configs:
        try:
            run_dirs.append(run_economy(cfg, out, client=client))
        except RunInProgressError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(f"{run_dirs[-1]}")
    _warn_call_errors(run_dirs)


@table_app.command("economy")
def table_economy_cmd(
    path: Path = typer.Argument(..., help="Dataset folder or run directory."),  # noqa: B008
    fmt: TableFormat = typer.Option(TableFormat.markdown, "--format", "-f"),  # noqa: B008
) -> None:
    """Solve rate per task and condition: first fifth and last fifth of training, and
    frozen evaluation (mean over seeds, 95% t-interval)."""
    import polars as pl

    from ..analysis.economy import ablation_table, format_table
    from ..data.loaders import load_dataset
    from ..data.recorder import TrajectoryFileError
    from ..data.tables.economy import episodes

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
    table = ablation_table(eps)
    if fmt == TableFormat.csv:
        typer.echo(table.write_csv(), nl=False)
    elif fmt == TableFormat.json:
        typer.echo(json.dumps(table.to_dicts(), indent=2))
    else:
        typer.echo(_markdown(format_table(table)))


def _validation_text(exc) -> str:
    """One line per pydantic error: ``field: message (got value)``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        got = err.get("input")
        got = "" if isinstance(got, dict) or repr(got) in err["msg"] else f" (got {got!r})"
        parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}{got}")
    return "; ".join(parts)


def _markdown(df) -> str:
    cols = df.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _warn_call_errors(run_dirs) -> None:
    """One stderr line when model calls failed (e.g. a misspelt model name)."""
    from ..data.loaders import call_errors

    n, bad, first = call_errors(run_dirs)
    if bad:
        typer.echo(f"warning: {bad} of {n} model calls failed and fell back (first: {first})", err=True)
