"""Economy of Minds (a Hayek machine) as one registered environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.schema import is_scripted
from ...registry import EnvironmentSpec, RunCommand, lazy, register
from . import events
from .config import EconomyRunConfig
from .world.core import ABLATIONS


def run(config: EconomyRunConfig, out: Path, **options: Any) -> list[Path]:
    """One Economy run, training then frozen evaluation
    (:func:`scarce_lab.environments.economy.runner.play.run_economy`; ``replay``: a fork's
    parent, :mod:`scarce_lab.environments.economy.runner.fork`); returns its run folder."""
    from .runner.play import run_economy

    options.pop("progress", None)  # one run: no progress bar
    return [run_economy(config, out, **options)]


def paper_table(data: Any, *, dynamics: bool = False) -> Any:
    """The ablation table as a finding (:func:`scarce_lab.environments.economy.analysis.table`
    states its method: solve rates per task and condition; unfinished runs left out).

    Args:
        dynamics: population dynamics per task, economy and condition instead
            (:func:`scarce_lab.environments.economy.analysis.dynamics`), to set
            economies side by side.

    Raises:
        ValueError: no Economy of Minds episode, or no complete run, in ``data``.
        PoolingError: a (task, condition) group mixes settings or models (the message
            says how to set a default economy beside a reference preset).
    """
    from ...analysis.pooling import PoolingError
    from . import analysis

    if dynamics:
        return analysis.dynamics(data)
    try:
        return analysis.table(data)
    except PoolingError as exc:
        raise PoolingError(f"{exc} (runs of the default economy and of an eom-reference preset: the "
                           "dynamics table (dynamics=True, --dynamics) sets them side by side; or keep them in "
                           "separate folders)") from None


def preflight(configs: list[EconomyRunConfig]) -> None:
    """The sweep's task can be built (a QA file or a task directory that exists and
    reads), before any run folder is made.

    Raises:
        ValueError: the task file or directory cannot be read (``--task`` and the
            reason named).
    """
    from .runner.play import _Tasks

    try:
        _Tasks(configs[0], None)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--task {configs[0].task}: {exc}") from None


def outcome(run_dir: Path) -> str:
    """What happened in one run, in one line: its condition and how many training and
    frozen-evaluation episodes were solved (and its status when it did not complete)."""
    from ...data.loaders import read_run_events
    from ...data.recorder import read_manifest

    m = read_manifest(run_dir)
    ends = [e for e in read_run_events(run_dir, m, tolerant=True) if e.kind == "episode_end"]
    parts = []
    for phase, name in (("train", "training"), ("eval", "evaluation")):
        mine = [e for e in ends if e.phase == phase]
        if mine:
            parts.append(f"{name} solved {sum(e.payload.solved for e in mine)}/{len(mine)}")
    tail = "" if m.status.value == "complete" else f" ({m.status.value})"
    return f"{m.condition}: " + (", ".join(parts) or "no episode ended") + tail


#: ``scarce-lab run economy``: one run per ablation x seed.
RUN_COMMAND = RunCommand(
    help=("Train an economy of agents on a task (Blocks World, arithmetic, question answering, a program), "
          "evaluate it frozen, and record one run folder per run under OUT. One run per ablation x seed "
          "(--ablation all: the full economy and its three ablations)."),
    aliases={"agents": ("-n",), "episodes": ("-e",), "ablation": ("-a",), "model": ("-m",), "seed": ("-s",)},
    # economy.ablation is set from the run's `ablation` (the config refuses it inside
    # `economy`); seats and the newcomer are set with -S (seats.<seat>=MODEL, newcomer.episode=K)
    exclude=("economy.ablation", "newcomer.episode", "newcomer.wealth", "newcomer.bid", "newcomer.role"),
    shorthands={"ablation": {"all": ABLATIONS}},
    order=("seed", "ablation"),
    resume_unit="episode",
    preflight=preflight,
)


def plan_calls(cfg: EconomyRunConfig, model: str) -> tuple[int, int, int]:
    """``(0, high, 0)``: agents x steps x episodes (training and evaluation), an upper
    bound on a model policy's calls.

    With seats, per seat model: 0 when no seat runs ``model``; else one act per step of
    every episode (its lineage may win every step: steps x episodes) plus one prompt
    rewrite per birth in training (at most ``economy.max_agents`` births per episode), a
    bound for that model alone."""
    if cfg.seats is None:
        return 0, cfg.agents * (cfg.episodes + cfg.eval_episodes) * max(cfg.qa_max_steps, 1), 0
    if model not in cfg.seat_models().values():
        return 0, 0, 0
    steps = (cfg.episodes + cfg.eval_episodes) * max(cfg.qa_max_steps, 1)
    return 0, steps + cfg.episodes * cfg.economy.max_agents, 0


def check_policy(cfg: EconomyRunConfig, model: str) -> None:
    """A ``scripted/`` policy the task does not have (or any policy Blocks World cannot
    play) raises ``ValueError`` naming those it has; ``model`` is checked as a seat of
    ``cfg`` (the config's own ``model`` or a seat's)."""
    if is_scripted(model) or cfg.task_name == "blocksworld":
        from ...config.seats import SeatSettings
        from .runner.play import make_policy

        make_policy(cfg, seat=None if model == cfg.model else SeatSettings(model=model))


def config_v1(m: Any, params: dict) -> EconomyRunConfig:
    """The current config of a version-1 run. 0.1.0 fact: the Economy client sampled at
    temperature 0, overridden by the run's call records (``params``) if any."""
    cfg = m.config
    values = {k: v for k, v in cfg.items() if k in EconomyRunConfig.model_fields and k != "llm"}
    values["llm"] = {"temperature": params.get("temperature", 0.0)}
    if "max_tokens" in params:
        values["llm"]["max_tokens"] = params["max_tokens"]
    return EconomyRunConfig(**values)


SPEC = register(EnvironmentSpec(
    name="economy",
    title="Economy of Minds",
    config=EconomyRunConfig,
    run=run,
    payloads=events.PAYLOADS,
    round_meaning=events.ROUND_MEANING,
    final_counts=events.final_counts,
    migrate_v1=events.migrate_v1,
    config_v1=config_v1,
    tables={name: lazy(f"{__name__}.tables", name)
            for name in ("runs", "episodes", "population", "agent_episodes", "wins", "steps",
                         "births", "deaths", "agent_wealth", "joins")},
    paper_table=paper_table,
    harness=lazy(f"{__name__}.conformance", "economy_trace"),
    render=lazy(f"{__name__}.viewer", "render"),
    cli=RUN_COMMAND,
    outcome=outcome,
    table_options={"dynamics": bool},
    face="scarce_lab.environments.economy.analysis",
    plan_calls=plan_calls,
    check_policy=check_policy,
    seat_keys=EconomyRunConfig.seat_aliases,
    view=lazy(f"{__name__}.tables", "EconomyTables"),
    study_metrics=lazy(f"{__name__}.analysis.study_metrics", "study_metrics"),
    fork_steps=lazy(f"{__name__}.runner.fork", "fork_steps"),
    fork_check=lazy(f"{__name__}.runner.fork", "fork_check"),
    judge_units=None,  # its agents bid and act, they do not talk: nothing for a judge to label
    taxonomy=None,
    speaker_part="",
))
