"""SovSim (a commons under a boss or a king) as one registered environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.schema import is_scripted
from ...registry import EnvironmentSpec, PublishedLayout, RunCommand, lazy, register
from . import events
from .config import SovSimConfig
from .demo import run_demo
from .world.commons import Condition


def run(config: SovSimConfig, out: Path, **options: Any) -> list[Path]:
    """Play one game (``options``: ``resume``, ``client``, ``progress``, ... of
    :func:`scarce_lab.environments.sovsim.runner.play.run_sweep`; ``replay`` for a fork,
    :func:`~scarce_lab.environments.sovsim.runner.play.arun_game`); returns its run folder.

    Raises:
        FileExistsError, RunMismatchError: the folder holds an unfinished run (without
            ``resume``) or a run of other settings.
        RunFailedError: the game raised (the manifest's reason is named).
    """
    from ...runners.preflight import RunFailedError, check_finished
    from ...runtime import RunMismatchError, run_sync
    from .runner.play import arun_game, run_sweep

    replay = options.pop("replay", None)
    if replay is not None or config.fork is not None:  # a fork (scarce_lab.forks): one game with its parent's answers
        options.pop("progress", None)
        # what the game raises (ForkDivergedError...) is raised as it is, the manifest saying failed
        return [out / run_sync(arun_game(config, out, replay=replay, **options)).run_id]
    res = run_sweep([config], out, progress=options.pop("progress", False), **options)
    for r in res:
        if r.status == "error":  # it could not start: the folder holds another run
            kind = RunMismatchError if str(r.error).startswith("RunMismatchError") else FileExistsError
            raise kind(str(r.error).split(": ", 1)[-1])
        if r.status == "failed":
            check_finished([out / r.run_id])  # raises with the manifest's reason
            raise RunFailedError(out / r.run_id, "failed", r.error)
    return [out / r.run_id for r in res]


def run_task(cfg: SovSimConfig, out_dir: Path, resume: bool) -> Any:
    """One game for an executor: a :class:`scarce_lab.runners.executors.RunOutcome`
    (``skipped`` for a complete run, with rounds played and collapse as detail)."""
    from ...runners.executors import RunOutcome
    from ...runtime import RunMismatchError, run_sync
    from .runner.play import arun_game

    try:
        res = run_sync(arun_game(cfg, out_dir, resume=resume))
    except (FileExistsError, RunMismatchError) as exc:
        return RunOutcome(cfg.run_id, "error", str(exc))
    except Exception as exc:  # recorded in the run's manifest
        return RunOutcome(cfg.run_id, "failed", f"{type(exc).__name__}: {exc}")
    return _outcomes([res])[0]


def paper_table(data: Any, *, preset: str = "sovsim", strict: bool = False, force: bool = False,
                by: str = "condition", seed: int = 0) -> Any:
    """Table 1 (every metric, mean and 95% CI per model x condition) and the
    cross-model results of a Dataset or of a published layout, as one finding
    (:func:`scarce_lab.environments.sovsim.analysis.table` with ``cross=True``, whose
    docstring and module state the options).
    """
    from .analysis import table

    return table(data, preset=preset, strict=strict, force=force, by=by, seed=seed, cross=True)


def _outcomes(results: list[Any]) -> list[Any]:
    """The runner's game results as :class:`scarce_lab.runners.executors.RunOutcome`."""
    from ...runners.executors import RunOutcome

    return [RunOutcome(r.run_id, r.status, r.error, {"rounds_played": r.rounds_played, "collapsed": r.collapsed})
            for r in results]


def run_many(configs: list[SovSimConfig], out: Path, *, resume: bool, progress: bool) -> list[Any]:
    """Every game of a sweep at once in one event loop
    (:func:`scarce_lab.environments.sovsim.runner.play.run_sweep`, concurrency: the first
    config's ``llm.max_concurrency``); a game that fails is reported, the others go on."""
    from .runner.play import run_sweep

    return _outcomes(run_sweep(configs, out, resume=resume, concurrency=configs[0].llm.max_concurrency,
                               progress=progress))


def run_processes(configs: list[SovSimConfig], out: Path, *, processes: int, resume: bool,
                  progress: bool) -> list[Any]:
    """The sweep over ``processes`` client processes on this machine (games dealt
    round-robin; concurrency and rate limits split between them:
    :func:`scarce_lab.environments.sovsim.runner.processes.run_sweep_processes`).

    Raises:
        ValueError: limits that cannot be split, the same game twice.
    """
    from .runner.processes import run_sweep_processes

    return _outcomes(run_sweep_processes(configs, out, processes=processes, resume=resume,
                                         concurrency=configs[0].llm.max_concurrency, progress=progress))


def outcome(run_dir: Path) -> str:
    """What happened in one game, in one line: its condition and simulation, then
    "ran all N rounds" or "collapsed in round r" (from its settled rounds), the pool it
    ended with, and its status when it did not complete."""
    from ...data.loaders import read_run_events
    from ...data.recorder import read_manifest

    m = read_manifest(run_dir)
    rounds = [e for e in read_run_events(run_dir, m, tolerant=True) if e.kind == "round"]
    sim = (m.config or {}).get("simulation", 0)
    head = f"{m.condition}, simulation {sim}"
    if not rounds:
        return f"{head}: no round settled ({m.status.value})"
    last = rounds[-1]
    if last.payload.collapsed:
        what = f"collapsed in round {last.round} (pool {last.payload.remaining})"
    else:
        what = f"played {len(rounds)} round{'' if len(rounds) == 1 else 's'}, pool {last.payload.next_pool} at the end"
    return f"{head}: {what}" + ("" if m.status.value == "complete" else f" ({m.status.value})")


#: ``scarce-lab run sovsim``: one game per model x condition x simulation.
RUN_COMMAND = RunCommand(
    help=("Play SovSim games (one model for every agent, or one per seat with --seat) and record one run "
          "folder per game under OUT. One game per model x condition x simulation: by default all four "
          "power conditions (cpr, bcpr, kcpr, kcpr_m), 5 simulations each, on the embedded offline model."),
    aliases={"condition": ("-c",), "model": ("-m",), "llm.max_concurrency": ("--concurrency", "-k"),
             "llm.timeout_s": ("--timeout",)},
    exclude=("simulation",),
    shorthands={"condition": {"all": tuple(c.value for c in Condition)}},
    default_sweep={"condition": ("all",)},
    order=("model", "simulation", "condition"),
    replicates=("--simulations", "-n"),
    replicates_default=5,
    replicates_help="simulations per model and condition",
    resume_unit="round",
    run_many=run_many,
    run_processes=run_processes,
)


def _layout(name: str, marker: str) -> PublishedLayout:
    """One published layout read by :mod:`.published` through :mod:`.tables`
    (:func:`~.tables.detect_layout`, :func:`~.tables.load_agent_rounds`)."""

    def detect(path: Path) -> list[Path]:
        from .tables import detect_layout

        return detect_layout(path, name)

    def read(path: Path, *, force: bool = False) -> dict[str, Any]:
        from .tables import load_agent_rounds

        return {"agent_rounds": load_agent_rounds(path, force=force)}

    return PublishedLayout(name, marker, detect, read)


#: SovSim's released ``agent_rationales/<model>/<condition>/rationales.json``, the SovSim
#: authors' run files ``<model>/<condition>/sim_XX.json`` and GovSim runs (``log_env.json``
#: with the run's ``.hydra/config.yaml``).
LAYOUTS = (_layout("sovsim_json", "rationales.json"), _layout("sovsim_run", "<condition>/sim_XX.json"),
           _layout("govsim_log", "log_env.json"))


def plan_calls(cfg: SovSimConfig, model: str) -> tuple[int, int, int]:
    """``(low, high, 0)`` calls of ``model`` in one game: the decisions of the seats
    that run it (every seat without ``seats``), counted by playing the protocol with
    zero extractions (agents x rounds, plus the leader's decisions where the condition
    has them; a newcomer from its round; every talk turn with talk on); each may take
    a second call (a repair or a resend)."""
    from .world.commons import CommonsGame, Phase
    from .world.talk import Utterance

    game = CommonsGame(cfg.condition, cfg.game, newcomer=cfg.newcomer, talk=cfg.talk_rules())
    seat_model = cfg.seat_models()
    n = 0
    while not game.over:
        acting = game.acting_agents()
        n += sum(seat_model.get(a, cfg.model) == model for a in acting)
        if game.phase == Phase.talk:
            game.speak(acting[0], Utterance())
        else:
            game.act(dict.fromkeys(acting, 0))
    return n, 2 * n, 0


def check_policy(cfg: SovSimConfig, model: str) -> None:
    """A ``scripted/`` policy SovSim does not have raises ``ValueError`` (naming those it has)."""
    if is_scripted(model):
        from .agents.agent import make_agent

        make_agent(model)


def seat_keys(cfg: SovSimConfig) -> dict[str, tuple[str, ...]]:
    """The game's seats in order (``a0 .. a{n-1}``, then a newcomer's ``a{n}``), each
    with the keys that also name it (:meth:`SovSimConfig.seat_aliases`)."""
    return {a: tuple(cfg.seat_aliases(a)) for a in cfg.agent_ids()}


def config_v1(m: Any, params: dict) -> SovSimConfig:
    """The current config of a version-1 run. 0.1.0 facts: SovSim agents asked for 110
    answer tokens; the run's call records (``params``) override both settings."""
    cfg = m.config
    models = sorted(set(m.models.values()))
    llm = {"temperature": params.get("temperature", (cfg.get("llm") or {}).get("temperature", 0.7)),
           "max_tokens": params.get("max_tokens", 110)}
    return SovSimConfig(condition=m.condition, model=models[0] if len(models) == 1 else "+".join(models),
                        simulation=cfg.get("simulation", 0), seed=cfg.get("sweep_seed", 0),
                        role_labels=cfg.get("role_labels", "default"), game=cfg.get("game") or {}, llm=llm)


SPEC = register(EnvironmentSpec(
    name="sovsim",
    title="SovSim",
    config=SovSimConfig,
    run=run,
    run_task=run_task,
    payloads=events.PAYLOADS,
    round_meaning=events.ROUND_MEANING,
    final_counts=events.final_counts,
    migrate_v1=events.migrate_v1,
    config_v1=config_v1,
    tables={"agent_rounds": lazy(f"{__name__}.tables", "from_dataset")},
    sealed_tables={"agent_rounds": lazy(f"{__name__}.tables", "sealed_agent_rounds")},
    paper_table=paper_table,
    table_options={"preset": ("sovsim", "govsim"), "strict": bool, "force": bool, "by": ("condition", "base_condition"),
                   "seed": int},
    harness=lazy(f"{__name__}.conformance", "sovsim_trace"),
    render=lazy(f"{__name__}.viewer", "render"),
    cli=RUN_COMMAND,
    outcome=outcome,
    face="scarce_lab.environments.sovsim.analysis",
    plan_calls=plan_calls,
    check_policy=check_policy,
    seat_keys=seat_keys,
    layouts=LAYOUTS,
    view=lazy(f"{__name__}.tables", "SovSimTables"),
    study_metrics=lazy(f"{__name__}.analysis.study_metrics", "study_metrics"),
    fork_steps=lazy(f"{__name__}.runner.fork", "fork_steps"),
    fork_check=lazy(f"{__name__}.runner.fork", "fork_check"),
    demo=run_demo,
    judge_units=lazy(f"{__name__}.judge_units", "commons_units"),
    taxonomy="commons",
    seat_payoffs=lazy(f"{__name__}.analysis.crossplay", "seat_payoffs"),
    payoff_meaning="each agent's total gain over the game (pool units; paper eq. 4)",
    speaker_part="",
))
