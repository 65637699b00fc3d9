"""SCARCE (slot auctions for one shared sandbox) as one registered environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...registry import EnvironmentSpec, RunCommand, lazy, register
from . import events
from .config import ScarceConfig


def run(config: ScarceConfig, out: Path, **options: Any) -> list[Path]:
    """One SCARCE run (:func:`scarce_lab.environments.scarce.runner.run_scarce`; ``options``:
    ``resume``, ``client``, ``tasks``, ``sandbox``, ``replay`` (a fork's parent:
    :mod:`scarce_lab.environments.scarce.runner.fork`), ...); returns its run folder."""
    from .runner import run_scarce

    options.pop("progress", None)  # one run: no progress bar
    return [run_scarce(config, out, **options)]


def paper_table(data: Any) -> Any:
    """Win rate, bids, durations, private-chat use, deadline misses and scores with
    run-clustered CIs, per model x condition, as a finding
    (:func:`scarce_lab.environments.scarce.analysis.table`).

    Raises:
        ValueError: the dataset holds no SCARCE contention or submission.
    """
    from .analysis import table

    return table(data)


def outcome(run_dir: Path) -> str:
    """What happened in one run, in one line: its condition, the submissions graded,
    their mean score and the deadlines missed (and its status when it did not
    complete)."""
    from ...data.loaders import read_run_events
    from ...data.recorder import read_manifest

    m = read_manifest(run_dir)
    subs = [e.payload for e in read_run_events(run_dir, m, tolerant=True) if e.kind == "submission"]
    tail = "" if m.status.value == "complete" else f" ({m.status.value})"
    if not subs:
        return f"{m.condition}: no submission{tail}"
    mean = sum(s.score for s in subs) / len(subs)
    missed = sum(bool(s.deadline_missed) for s in subs)
    return f"{m.condition}: {len(subs)} submission{'' if len(subs) == 1 else 's'}, mean score {mean:.3f}, deadlines missed {missed}{tail}"


#: ``scarce-lab run scarce``: one run per seed.
RUN_COMMAND = RunCommand(
    help=("Play SCARCE runs and record one run folder per run under OUT: workers (a solver and a negotiator "
          "each, --model the solvers, --negotiator-model the negotiators) with private budgets and deadlines "
          "share one sandbox through four-phase slot auctions, over subruns of reverse-engineering tasks. "
          "One run per seed (repeat --seed); by default the paper's settings: 5 workers, 1,000 credits, "
          "25-minute deadlines, 4 subruns, 300 s slot cap, cross-subrun memory."),
    aliases={"workers": ("-n",), "model": ("-m",), "slot_cap_s": ("--slot-cap",), "tasks": ("--task",),
             "max_solver_steps": ("--max-steps",)},
    order=("seed",),
    resume_unit="contention",
)


def plan_calls(cfg: ScarceConfig, model: str) -> tuple[int, int, int]:
    """``(low, high, per_unit)``: at least one solver decision per worker and subrun it
    plays (for each worker whose solver is ``model``: its first step comes at time 0,
    before any deadline or step limit), at most ``max_solver_steps`` solver decisions per
    worker and subrun it plays (for each worker whose solver is ``model``, by its seat;
    each may take a second call), and per contention per worker whose negotiator is
    ``model`` a declaration, public reasoning, ``private_rounds`` messages, a revision
    (``mechanism=revisable``) and a ballot; with institutions on
    (:mod:`scarce_lab.environments.scarce.world.institutions`) also a promise, a contract offer and
    an answer, and under ``sanctions=vote`` a vote on each other present worker's
    breach (an upper bound: a contention holds only the workers that asked for a slot,
    and only those present in its subrun)."""
    plan = cfg.seat_plan()
    subruns_played = {w: len([k for k in range(cfg.subruns) if w in cfg.present(k)]) for w in plan}
    played = sum(subruns_played[w] for w, s in plan.items() if s.solver.model == model)
    high = 2 * cfg.max_solver_steps * played
    negotiators = [w for w, s in plan.items() if s.negotiator.model == model]
    most = max((sum(w in negotiators for w in cfg.present(k)) for k in range(cfg.subruns)), default=0)
    present = max((len(cfg.present(k)) for k in range(cfg.subruns)), default=0)
    return played, high, most * _per_worker_calls(cfg, present)


def _per_worker_calls(cfg: ScarceConfig, present: int) -> int:
    """A negotiator's calls in one contention (:func:`plan_calls`'s count per worker)."""
    ins = cfg.institutions
    return (3 + cfg.private_rounds + (1 if str(getattr(cfg.mechanism, "value", cfg.mechanism)) == "revisable" else 0)
            + (1 if ins.promises else 0) + (2 if ins.contracts else 0)
            + (present - 1 if ins.sanctions == "vote" else 0))


def plan_unit_calls(cfg: ScarceConfig, model: str) -> int:
    """At most the negotiator calls of ``model`` one run makes, over all contentions:
    a worker takes part in a contention only with a pending slot request, each request
    is one solver step, and a solver takes at most ``max_solver_steps`` steps per
    subrun; so a worker present in subrun ``k`` negotiates at most ``max_solver_steps``
    times there, each time :func:`plan_calls`'s calls per worker (twice: each may take
    a second call). A bound, far above a typical run (most steps run code in a slot
    already booked or edit files)."""
    plan = cfg.seat_plan()
    total = 0
    for k in range(cfg.subruns):
        present = list(cfg.present(k))
        mine = sum(1 for w in present if w in plan and plan[w].negotiator.model == model)
        total += mine * cfg.max_solver_steps * _per_worker_calls(cfg, len(present))
    return 2 * total


def plan_judge_units(cfg: ScarceConfig) -> int:
    """At most the judge units (one worker's talk in one contention) of one run: each
    worker present in a subrun takes part in at most ``max_solver_steps`` contentions
    there (:func:`plan_unit_calls`)."""
    return sum(len(cfg.present(k)) * cfg.max_solver_steps for k in range(cfg.subruns))


def seat_keys(cfg: ScarceConfig) -> dict[str, tuple[str, ...]]:
    """The run's workers ``w0 .. w{n-1}`` in order (no aliases); each is two models,
    the parts ``solver`` and ``negotiator`` (``w0.negotiator``)."""
    return dict.fromkeys(cfg.names, ())


def config_v1(m: Any, params: dict) -> ScarceConfig:
    """The current config of a version-1 run: ``temperature``, ``max_tokens`` and
    ``reasoning_effort`` moved into ``llm``; the hand-typed ``condition`` is dropped
    (conditions are derived)."""
    cfg = m.config
    values = {k: v for k, v in cfg.items() if k in ScarceConfig.model_fields and k != "llm"}
    values["llm"] = {"temperature": cfg.get("temperature", 0.0), "max_tokens": cfg.get("max_tokens"),
                     "reasoning_effort": cfg.get("reasoning_effort")}
    return ScarceConfig(**values)


SPEC = register(EnvironmentSpec(
    name="scarce",
    title="SCARCE",
    config=ScarceConfig,
    run=run,
    payloads=events.PAYLOADS,
    round_meaning=events.ROUND_MEANING,
    final_counts=events.final_counts,
    migrate_v1=events.migrate_v1,
    config_v1=config_v1,
    tables={kind: lazy(f"{__name__}.tables", f"{kind}_table")
            for kind in ("contentions", "submissions", "messages")},
    paper_table=paper_table,
    harness=lazy(f"{__name__}.conformance", "scarce_trace"),
    render=lazy(f"{__name__}.viewer", "render"),
    cli=RUN_COMMAND,
    outcome=outcome,
    face="scarce_lab.environments.scarce.analysis",
    plan_calls=plan_calls,
    plan_unit="negotiator calls per contention",
    plan_unit_calls=plan_unit_calls,
    plan_judge_units=plan_judge_units,
    table_options={},
    plan_note=("SCARCE: negotiator calls are per contention (their number depends on the play); "
               "the solver's prompt grows with its transcript, so its token figure is a floor"),
    seat_keys=seat_keys,
    seat_parts=("solver", "negotiator"),
    view=lazy(f"{__name__}.tables", "ScarceTables"),
    study_metrics=lazy(f"{__name__}.analysis.study_metrics", "study_metrics"),
    fork_steps=lazy(f"{__name__}.runner.fork", "fork_steps"),
    fork_check=lazy(f"{__name__}.runner.fork", "fork_check"),
    measured={"execution": ("duration_s",)},
    judge_units=lazy(f"{__name__}.judge_units", "units_from_dataset"),
    taxonomy="scarce",
    speaker_part="negotiator",
    seat_payoffs=lazy(f"{__name__}.analysis.crossplay", "seat_payoffs"),
    payoff_meaning="each worker's mean task score per subrun (0..1)",
))
