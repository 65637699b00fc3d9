"""Run SovSim games with the recorder: one run directory per simulation.

Events: see :mod:`scarce_lab.environments.sovsim.events` (one typed payload per kind;
``round`` is the game round). Every round ends with a commit that checkpoints the game;
``resume=True`` continues an unfinished run from its last committed round
(:func:`scarce_lab.runtime.open_run`). A decision the model never answered (transport
failure after retries, a prompt over the context window) raises
``MissingDecisionError``: the run stops as ``failed`` with its calls recorded (then
resumable); no made-up move enters the game. Seeds: the run seed derives from the sweep
seed and the simulation index; each decision's seed from ``(run seed, round, agent,
phase)``, so a resumed run asks the same questions with the same seeds (and, with the
response cache, gets the same answers).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.data.schema import RunManifest, RunStatus, package_version
from scarce_lab.llm.models import needs_client
from scarce_lab.runtime import (
    RunMismatchError,
    derive_seed,
    open_run,
    record_calls_of,
    run_sync,
    step_seed,
)

from .. import events as ev
from ..agents.agent import SovSimAgent, fallback_value, make_agent
from ..config import SovSimConfig
from ..world.commons import CommonsGame, Condition, Observation, Phase, RoundRecord
from .institutions import play_institutions

ENVIRONMENT = "sovsim"
CONDITIONS = tuple(c.value for c in Condition)

__all__ = [
    "CONDITIONS", "GameResult", "GameSpec", "SovSimConfig",
    "arun_game", "arun_sweep", "derive_seed", "plan_sweep", "run_sweep",
]


def GameSpec(condition: str, model: str, seed: int = 0, simulation: int = 0, rounds: int = 12,  # noqa: N802
             role_labels: str = "default") -> SovSimConfig:
    """Shorthand for the common :class:`SovSimConfig` of one game (paper defaults
    except ``rounds``)."""
    return SovSimConfig(condition=condition, model=model, seed=seed, simulation=simulation,
                        role_labels=role_labels, game={"rounds": rounds})


@dataclass
class GameResult:
    """Outcome of :func:`arun_game`: ``status`` is complete, skipped, failed or error
    (``not_started`` in a sweep whose dollar cap was spent before its turn)."""

    run_id: str
    status: str
    rounds_played: int = 0
    collapsed: bool = False
    error: str | None = None


def plan_sweep(
    conditions: Iterable[str],
    models: Iterable[str],
    simulations: int,
    seed: int = 0,
    rounds: int = 12,
    role_labels: str = "default",
    **settings: Any,
) -> list[SovSimConfig]:
    """Every (model, simulation index, condition) as a :class:`SovSimConfig`, in that
    order (so a sweep that is stopped early has covered every condition evenly).

    ``conditions`` may contain ``"all"`` (the four conditions); ``settings`` are further
    config fields (e.g. ``llm={"temperature": 0}``).

    Raises:
        ValueError: unknown condition, or ``simulations`` < 1.
    """
    if simulations < 1:
        raise ValueError(f"simulations must be >= 1, got {simulations!r}")
    conds: list[str] = []
    for c in conditions:
        for x in CONDITIONS if c == "all" else (c,):
            if x not in CONDITIONS:
                raise ValueError(f"condition must be one of {list(CONDITIONS)} or 'all', got {x!r}")
            if x not in conds:
                conds.append(x)
    game = {**settings.pop("game", {}), "rounds": rounds}
    return [
        SovSimConfig(condition=c, model=m, seed=seed, simulation=i, role_labels=role_labels, game=game, **settings)
        for m in models
        for i in range(simulations)
        for c in conds
    ]


def manifest_for(cfg: SovSimConfig, game: CommonsGame) -> RunManifest:
    """The run manifest of one game (condition derived from the config): ``models`` is
    each agent's resolved model (the newcomer's included); with ``seats`` the notes add
    ``seats`` (agent -> resolved seat settings, as sent) and ``composition_label``;
    with a newcomer ``newcomer`` (its id, round, mode, replaced agent, leader)."""
    notes: dict[str, Any] = {"roles": game.roles, "leader": game.leader}
    if cfg.newcomer is not None or cfg.seats:
        notes["roles"] = {**game.roles, **{a: r for a, r in cfg.seat_roles().items() if a not in game.roles}}
    if cfg.seats:
        notes["seats"] = {a: s.model_dump(exclude_none=True) for a, s in cfg.resolved_seats().items()}
        notes["composition_label"] = cfg.composition()
    if cfg.newcomer is not None:
        notes["newcomer"] = {"agent": cfg.agent_ids()[-1], **cfg.newcomer.model_dump(mode="json")}
    return RunManifest(
        run_id=cfg.run_id, environment=ENVIRONMENT, condition=cfg.condition_label(),
        condition_settings=cfg.condition_settings(), config=cfg.model_dump(mode="json"),
        models=cfg.seat_models() if (cfg.seats or cfg.newcomer) else {a: cfg.model for a in game.agents},
        seed=cfg.run_seed, package_version=package_version(), notes=notes,
    )


def _decision_payload(obs: Observation, d: Decided, value: int) -> ev.Announcement | ev.Extraction:
    common = {"reasoning": d.reasoning, **d.decision_fields()}
    if obs.phase == Phase.announce:
        return ev.Announcement(announced_pool=value, true_pool=obs.pool, **common)
    return ev.Extraction(extraction=value, max_extraction=obs.max_extraction, pool_seen=obs.pool_seen,
                         remainder_seen=obs.remainder, **common)


def _round_payload(game: CommonsGame, r: RoundRecord) -> ev.RoundSettled:
    return ev.RoundSettled(
        agents=list(r.agents or game.agents), pool_before=r.pool_before, announced_pool=r.announced_pool,
        extractions=list(r.extractions), remainder_seen=r.remainder_seen, remaining=r.remaining,
        payoffs=[float(p) for p in r.payoffs], payoffs_exact=[str(p) for p in r.payoffs],
        collapsed=r.collapsed, next_pool=r.next_pool,
    )


def _legalize(obs: Observation, d: Decided) -> tuple[int, Decided]:
    """Keep a legal value; replace an illegal one by the documented fallback. Legality
    is the world's (:attr:`Observation.legal`, from
    :meth:`~scarce_lab.environments.sovsim.world.commons.CommonsGame.legal_actions`)."""
    v = d.value
    if obs.legal.why_not(v) is None:
        return v, d
    d.violation = d.violation or f"illegal value {v!r} (cap {obs.max_extraction}, step {obs.step})"
    d.valid, d.fallback_used = False, True
    return fallback_value(obs), d


def _make_client(cfg: SovSimConfig) -> Any:
    """The model client of a game or a sweep, without a reasoning effort of its own:
    every agent sends its seat's (:func:`make_agents`), so a sweep's client, built from
    its first model-driven config, never lends that config's effort to another's seats
    that set none."""
    from scarce_lab.llm import make_client

    return make_client(cfg.llm.model_copy(update={"reasoning_effort": None}))


def _game_model(cfg: SovSimConfig) -> str:
    """``GameStart.model``: the model of every seat, or ``mixed`` (the manifest's
    ``models`` names each agent's)."""
    models = set(cfg.seat_models().values())
    return next(iter(models)) if len(models) == 1 else "mixed"


def make_agents(cfg: SovSimConfig, client: Any = None) -> dict[str, SovSimAgent]:
    """One agent per seat (every agent of :meth:`SovSimConfig.agent_ids`, the newcomer
    included), each bound to its resolved seat (:meth:`SovSimConfig.resolved_seats`):
    its model, and the temperature, max tokens and reasoning effort its calls send.
    Seats with equal settings share one agent; the model client is ``client``, else
    one built from ``cfg.llm`` when the first model-driven seat needs it (a run whose
    seats are all scripted builds none)."""
    made: list[Any] = [client]

    def lazy_client() -> Any:
        if made[0] is None:
            made[0] = _make_client(cfg)
        return made[0]

    if not cfg.seats:  # one model for every seat: one agent (as before seats existed)
        shared = make_agent(cfg.model, client, role_labels=cfg.role_labels, llm=cfg.llm, make_client=lazy_client,
                            human_time_limit_s=cfg.human_time_limit_s)
        return dict.fromkeys(cfg.agent_ids(), shared)
    by_settings: dict[str, SovSimAgent] = {}
    out: dict[str, SovSimAgent] = {}
    for a, seat in cfg.resolved_seats().items():
        key = seat.model_dump_json()
        if key not in by_settings:
            by_settings[key] = make_agent(seat.model or cfg.model, client, role_labels=cfg.role_labels, llm=seat,
                                          make_client=lazy_client, human_time_limit_s=cfg.human_time_limit_s)
        out[a] = by_settings[key]
    return out


# -- one game ------------------------------------------------------------------------
async def arun_game(
    cfg: SovSimConfig,
    out_dir: Path,
    *,
    client: Any = None,
    resume: bool = False,
    on_round: Callable[[SovSimConfig, int], None] | None = None,
    agents: dict[str, SovSimAgent] | None = None,
    replay: Any = None,
) -> GameResult:
    """Play (or resume) one game and record it under ``out_dir / cfg.run_id``.

    Args:
        client: an LLMClient for model-driven agents (default: one built from
            ``cfg.llm``); sampling settings always come from ``cfg.llm``.
        resume: continue an existing, unfinished run directory from its last committed
            round (see :func:`scarce_lab.runtime.open_run`).
        on_round: called after each committed round with ``(cfg, round)`` (progress;
            an exception raised here fails the run, which tests use to simulate a kill).
        agents: override the agents (agent id -> agent, the newcomer's included);
            default :func:`make_agents` (one per seat, from ``cfg.seats`` and ``cfg.model``).
        replay: for a fork (``cfg.fork``), its parent's recorded answers
            (:class:`scarce_lab.forks.replay.Replay`): rounds before ``cfg.fork.at`` are
            answered from it, then the intervention applies (:mod:`.fork`) and calls go live.

    Returns:
        :class:`GameResult`; ``status="skipped"`` if the run was already complete.

    Raises:
        FileExistsError: the run directory holds an unfinished run and ``resume`` is false.
        RunMismatchError: the run directory holds a run with other settings.
        ForkError: a fork without its replay, or a replay without a fork.
        ForkDivergedError: a prefix call the parent never made (the run fails).
        Exception: whatever the agents raised (the run is marked ``failed`` first).
    """
    from scarce_lab.forks import ForkError
    from scarce_lab.llm.scope import run_scope

    if (cfg.fork is None) != (replay is None):
        raise ForkError(f"{cfg.run_id}: a fork plays its prefix from its parent's recorded answers and only a fork "
                        f"does (fork {'set' if cfg.fork else 'unset'}, replay {'given' if replay else 'not given'}); "
                        "make forks with scarce_lab.forks.launch.fork (sl.fork, scarce-lab fork)")
    if replay is not None:
        from scarce_lab.forks.replay import ReplayingClient

        client = ReplayingClient(client if client is not None else _make_client(cfg), replay)

    with run_scope(run_id=cfg.run_id):  # every model call of the game names the run (llm/scope.py)
        return await _play_game(cfg, out_dir, client=client, resume=resume, on_round=on_round, agents=agents,
                                replay=replay)


async def _play_game(cfg: SovSimConfig, out_dir: Path, *, client: Any, resume: bool,
                     on_round: Callable[[SovSimConfig, int], None] | None,
                     agents: dict[str, SovSimAgent] | None, replay: Any = None) -> GameResult:
    fresh = CommonsGame(cfg.condition, cfg.game, newcomer=cfg.newcomer, talk=cfg.talk_rules(),
                        institutions=cfg.institution_rules())
    manifest = manifest_for(cfg, fresh)
    if cfg.fork is not None:
        manifest.notes["fork"] = {**cfg.fork.model_dump(mode="json"), "replayed_calls": 0}
    handle = open_run(Path(out_dir) / cfg.run_id, manifest, resume=resume)
    if handle.skipped:
        return GameResult(cfg.run_id, "skipped")
    rec = handle.recorder
    game: CommonsGame = handle.state if handle.state is not None else fresh
    try:
        if handle.state is None:
            c = cfg.game
            rec.emit(ev.GameStart(
                agents=list(game.agents), roles=[game.roles[a] for a in game.agents], leader=game.leader,
                condition=cfg.condition.value, role_labels=cfg.role_labels, model=_game_model(cfg),
                simulation=cfg.simulation, **c.model_dump(),
            ), round=0, phase="setup")
            rec.commit_round(0, state=game)
        if agents is None:
            agents = make_agents(cfg, client)  # a client is made only for a model-driven seat
        play = None
        while not game.over:
            if cfg.fork is not None and play is None and game.round >= cfg.fork.at:
                from .fork import start

                play = start(cfg.fork, cfg, game, agents, client, make_agent)
                if game.round > cfg.fork.at:  # resumed after the fork round: its replacement was made
                    play.pending.clear()
                if play.seated:  # the manifest's models are the parent's; these play from the step on
                    rec.manifest.notes["fork"]["models"] = play.seated
            await _play_round(game, cfg, rec, agents, play)
            if on_round is not None:
                on_round(cfg, game.history[-1].round)
        if cfg.interviews:
            await _interviews(game, cfg, rec, agents, handle.run_dir)
        if replay is not None:
            rec.manifest.notes["fork"]["replayed_calls"] = replay.replayed
        rec.finish(RunStatus.complete)
    except BaseException as exc:
        record_calls_of(rec, exc)
        rec.finish(RunStatus.failed, error="".join(traceback.format_exception_only(exc)).strip())
        raise
    last = game.history[-1] if game.history else None
    return GameResult(cfg.run_id, "complete", rounds_played=len(game.history), collapsed=bool(last and last.collapsed))


async def _decide_all(agents: dict[str, SovSimAgent], obs: dict[str, Observation], cfg: SovSimConfig,
                      r: int, phase: Phase, rec) -> list[Decided]:
    """Every acting agent's decision; the model calls of every decision are recorded,
    also when one of them raised (the first exception is re-raised after recording)."""
    # the run id reaches the calls through the run scope (llm/scope.py)
    results = await asyncio.gather(
        *(agents[a].adecide(obs[a], seed=step_seed(cfg, r, a, phase.value)) for a in obs),
        return_exceptions=True,
    )
    record_calls_of(rec, *results)
    first_error = next((r for r in results if isinstance(r, BaseException)), None)
    if first_error is not None:
        raise first_error
    return list(results)


def _emit_membership(game: CommonsGame, rec) -> None:
    """The joins and leaves that take effect in the current round (the world applied
    them when the previous round settled), recorded as the round's first events: a
    resumed run restarts the round from its checkpoint and records them again, once."""
    for c in game.changes:
        if c.round != game.round:
            continue
        if c.kind == "joined":
            rec.emit(ev.AgentJoined(role=c.role, replaces=c.other), round=c.round, phase="join", agent=c.agent)
        else:
            rec.emit(ev.AgentLeft(role=c.role, replaced_by=c.other), round=c.round, phase="join", agent=c.agent)


async def _play_round(game: CommonsGame, cfg: SovSimConfig, rec, agents: dict[str, SovSimAgent],
                      play: Any = None) -> None:
    """One round; ``play`` (a fork's :class:`.fork.ForkPlay`) gives the decisions and
    messages its intervention sets, which are then not asked for."""
    r = game.round
    _emit_membership(game, rec)
    result: RoundRecord | None = None
    while result is None:
        phase = game.phase
        if phase == Phase.talk:  # the discussion (runners/sovsim_talk.py), one speaker at a time
            from .talk import play_talk_turn

            await play_talk_turn(game, cfg, rec, agents, fixed=play.message if play is not None else None)
            continue
        if await play_institutions(game, cfg, rec, agents):  # an election or a quota vote
            continue
        obs = {a: game.observe(a) for a in game.acting_agents()}
        fixed = {a: d for a in obs if play is not None and (d := play.fixed(a, obs[a])) is not None}
        asked = {a: o for a, o in obs.items() if a not in fixed}
        decided = dict(zip(asked, await _decide_all(agents, asked, cfg, r, phase, rec), strict=True)) | fixed
        actions: dict[str, int] = {}
        for a, d in ((a, decided[a]) for a in obs):
            value, d = _legalize(obs[a], d)
            actions[a] = value
            rec.emit(_decision_payload(obs[a], d, value), round=r, phase=phase.value, agent=a)
        result = game.act(actions)
    if play is not None and play.pending:  # a replacement nobody made must not pass for a fork
        from scarce_lab.forks import ForkError

        raise ForkError(f"fork at round {play.spec.at}: {', '.join(play.pending)} made no "
                        f"{play.spec.intervention.kind.removeprefix('replace_')} in round {r} to replace")
    rec.emit(_round_payload(game, result), round=r, phase="settle")
    await play_institutions(game, cfg, rec, agents)  # peer sanctions, after the round is revealed
    if game.over:
        totals = game.total_payoffs()
        rec.emit(ev.GameEnd(rounds_played=len(game.history), collapsed=result.collapsed,
                            total_payoffs=[float(totals[a]) for a in game.all_agents()]), round=r, phase="end")
    # fsync and the checkpoint's pickle off the event loop: other games keep calling models
    await asyncio.to_thread(rec.commit_round, r, state=game)


async def _interviews(game: CommonsGame, cfg: SovSimConfig, rec, agents: dict[str, SovSimAgent],
                      run_dir: Path) -> None:
    """Each agent's retrospective interview after the game (``cfg.interviews``), from
    its own memory (:mod:`scarce_lab.agents.interviews`), recorded as researcher-only
    ``interview`` events and committed under the last round; a resumed run that has
    them already asks nobody again."""
    from scarce_lab.agents.interviews import (
        QUESTIONS,
        amodel_answer,
        interview_messages,
        memory_of,
        scripted_answer,
    )
    from scarce_lab.data.recorder import read_events
    from scarce_lab.llm.scope import run_scope

    from ..agents.prompts import INTERVIEW_TEMPLATE, agent_names
    from ..agents.scripted import interview_assessment

    events = read_events(run_dir)
    if any(e.kind == "interview" for e in events):
        return
    r = game.history[-1].round if game.history else 0
    names_list, _, lead_label = agent_names(cfg.condition.value, len(game.agents), cfg.role_labels)
    names = dict(zip(game.agents, names_list, strict=True))

    async def one(a: str) -> tuple[dict, list]:
        agent = agents[a]
        lm = getattr(agent, "lm", None)
        mem = memory_of(a, events)
        if lm is None and getattr(agent, "policy", None) is None:  # an agent of the caller's with no model
            return {"answered_by": "model", "model": agent.model, "questions": QUESTIONS, "valid": False,
                    "missing": True, "violation": "this agent has no Model to ask (a custom agent): no interview",
                    "memory_events": len(mem)}, []
        if lm is None or lm.scripted:
            policy = getattr(agent, "policy", None)
            assessment = interview_assessment(agent.model, leader=a == game.leader)
            return {**scripted_answer(agent.model, policy, assessment=assessment), "memory_events": len(mem)}, []
        msgs = interview_messages(INTERVIEW_TEMPLATE, mem, me=names[a], names=names, agent_id=a, n=len(game.agents),
                                  players=", ".join(names_list), leader=names.get(game.leader or ""),
                                  leader_label=lead_label, is_leader=a == game.leader,
                                  announced=cfg.condition.value == "kcpr_m")
        with run_scope(round=r, agent=a):
            fields, calls = await amodel_answer(lm, msgs, seed=step_seed(cfg, r, a, "interview"),
                                                agent=a, round=r)
        return {**fields, "memory_events": len(mem)}, calls

    answers = await asyncio.gather(*(one(a) for a in game.agents))
    for a, (fields, calls) in zip(game.agents, answers, strict=True):
        if calls:
            rec.record_calls(calls)
        rec.emit(ev.Interview(**fields), round=r, phase="interview", agent=a)
    await asyncio.to_thread(rec.commit_round, r, state=game)


# -- sweeps --------------------------------------------------------------------------
async def arun_sweep(
    configs: list[SovSimConfig],
    out_dir: Path,
    *,
    client: Any = None,
    resume: bool = False,
    concurrency: int = 8,
    progress: bool = True,
    on_round: Callable[[SovSimConfig, int], None] | None = None,
) -> list[GameResult]:
    """Run many games concurrently (asyncio); complete runs are skipped.

    Up to ``4 * concurrency`` games are in flight at once; model calls are further
    bounded by the client's own ``max_concurrency`` (a client is built from the first
    model-driven config's ``llm`` settings when none is given). A game that raises is
    reported with ``status="failed"`` (or ``"error"`` if it could not start) and the
    sweep goes on. The progress bar counts the rounds played: a failed game's unplayed
    rounds are never filled in (the bar ends below 100% and says how many failed).
    """
    from tqdm import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if client is None:
        llm_cfg = next((c for c in configs if any(needs_client(m) for m in c.seat_models().values())), None)
        client = _make_client(llm_cfg) if llm_cfg is not None else None
    gate = asyncio.Semaphore(max(1, 4 * concurrency))
    bar = tqdm(total=sum(c.game.rounds for c in configs), unit="round", desc="sovsim", disable=not progress)
    done_rounds: dict[int, int] = {}  # id(config) -> rounds shown (run_id hashes the settings)
    failed: list[str] = []

    def _tick(cfg: SovSimConfig, r: int) -> None:
        bar.update(r - done_rounds.get(id(cfg), 0))
        done_rounds[id(cfg)] = r
        if on_round is not None:
            on_round(cfg, r)

    async def _one(cfg: SovSimConfig) -> GameResult:
        async with gate:
            from scarce_lab.llm.costs import sweep_cap_spent

            if (why := sweep_cap_spent(cfg.llm)) is not None:  # the sweep stops starting runs
                bar.update(cfg.game.rounds - done_rounds.get(id(cfg), 0))
                done_rounds[id(cfg)] = cfg.game.rounds
                return GameResult(cfg.run_id, "not_started", error=why)
            try:
                res = await arun_game(cfg, out_dir, client=client, resume=resume, on_round=_tick)
            except (FileExistsError, RunMismatchError) as exc:
                res = GameResult(cfg.run_id, "error", error=f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # recorded in the run's manifest
                res = GameResult(cfg.run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            if res.status in ("complete", "skipped"):  # a game that ended (a collapse ends it early)
                bar.update(cfg.game.rounds - done_rounds.get(id(cfg), 0))
                done_rounds[id(cfg)] = cfg.game.rounds
            else:  # its unplayed rounds stay unfilled: the bar never reaches 100% for a failed game
                failed.append(res.run_id)
                bar.set_postfix_str(f"{len(failed)} failed", refresh=True)
            return res

    try:
        return list(await asyncio.gather(*(_one(c) for c in configs)))
    finally:
        bar.close()


def run_sweep(configs: list[SovSimConfig], out_dir: Path, **kwargs: Any) -> list[GameResult]:
    """Synchronous :func:`arun_sweep` (also inside a running event loop, e.g. Jupyter)."""
    return run_sync(arun_sweep(configs, out_dir, **kwargs))
