"""Run SovSim games with the recorder: one run directory per simulation.

Events written per run (``environment="sovsim"``; payload units: pool units, points):

- ``game_start`` (round 0): ``agents``, ``roles``, ``leader``, ``condition``,
  ``role_labels``, ``config``; committed as round 0.
- ``announcement`` (kcpr_m, phase ``announce``, the king): ``announced_pool``,
  ``true_pool``, ``reasoning``, ``valid``, ``repaired``, ``fallback_used``, ``violation``.
- ``extraction`` (phase ``extract`` or ``leader``, one per agent): ``extraction``,
  ``max_extraction``, ``pool_seen`` (the announcement for kcpr_m subordinates),
  ``remainder_seen`` (leader phase), ``reasoning`` and the validity flags above.
- ``round`` (phase ``settle``): ``agents``, ``pool_before``, ``announced_pool``,
  ``extractions``, ``remainder_seen``, ``remaining``, ``payoffs`` (floats),
  ``payoffs_exact`` (fractions as text), ``collapsed``, ``next_pool``.
- ``game_end`` (last round): ``rounds_played``, ``collapsed``, ``total_payoffs``.

Every round ends with ``commit_round``; ``--resume`` replays the committed decisions
into a fresh environment and continues. Seeds: the run seed is derived from the
sweep seed and the simulation index; each decision's seed from
``(run seed, round, agent, phase)``, so a resumed run asks the same questions with
the same seeds (and, with the response cache, gets the same answers).
"""

from __future__ import annotations

import asyncio
import hashlib
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..agents.sovsim import AgentDecision, SovSimAgent, make_agent
from ..agents.sovsim.agent import fallback_value
from ..data.recorder import MANIFEST, RunRecorder, read_manifest
from ..data.schema import Event, RunManifest, RunStatus
from ..envs.commons import CommonsConfig, CommonsGame, Condition, Observation, Phase, RoundRecord
from ..llm.models import model_slug

ENVIRONMENT = "sovsim"
CONDITIONS = tuple(c.value for c in Condition)


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from ``parts`` (stable across processes and Python versions)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class GameSpec:
    """One simulation: condition, model for all agents, sweep seed and index."""

    condition: str
    model: str
    seed: int = 0
    simulation: int = 0
    rounds: int = 12
    role_labels: str = "default"

    def __post_init__(self) -> None:
        if self.condition not in CONDITIONS:
            raise ValueError(f"condition must be one of {list(CONDITIONS)}, got {self.condition!r}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds!r}")
        if self.simulation < 0:
            raise ValueError(f"simulation must be >= 0, got {self.simulation!r}")

    @property
    def run_id(self) -> str:
        """``sovsim-<condition>-<model-slug>[-neutral]-s<seed>-<i>``."""
        labels = "" if self.role_labels == "default" else f"-{self.role_labels}"
        return f"sovsim-{self.condition}-{model_slug(self.model)}{labels}-s{self.seed}-{self.simulation}"

    @property
    def run_seed(self) -> int:
        """The run's seed, derived from the sweep seed and the simulation index."""
        return derive_seed("sovsim", self.seed, self.simulation)

    def config(self) -> CommonsConfig:
        """The game parameters (paper defaults, ``rounds`` from the spec)."""
        return CommonsConfig(rounds=self.rounds)


@dataclass
class GameResult:
    """Outcome of :func:`arun_game`: ``status`` is complete, skipped, failed or error."""

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
) -> list[GameSpec]:
    """Every (model, simulation index, condition) as a :class:`GameSpec`, in that order
    (so a sweep that is stopped early has covered every condition evenly).

    ``conditions`` may contain ``"all"`` (the four conditions).

    Raises:
        ValueError: unknown condition, or ``simulations`` < 1.
    """
    if simulations < 1:
        raise ValueError(f"simulations must be >= 1, got {simulations!r}")
    conds: list[str] = []
    for c in conditions:
        for x in CONDITIONS if c == "all" else (c,):
            if x not in conds:
                conds.append(x)
    return [
        GameSpec(c, m, seed=seed, simulation=i, rounds=rounds, role_labels=role_labels)
        for m in models
        for i in range(simulations)
        for c in conds
    ]


# -- event payloads ----------------------------------------------------------------
def _decision_payload(obs: Observation, d: AgentDecision, value: int) -> dict[str, Any]:
    base = {
        "reasoning": d.reasoning,
        "valid": d.valid,
        "repaired": d.repaired,
        "fallback_used": d.fallback_used,
        "violation": d.violation,
    }
    if obs.phase == Phase.announce:
        return {"announced_pool": value, "true_pool": obs.pool, **base}
    return {
        "extraction": value,
        "max_extraction": obs.max_extraction,
        "pool_seen": obs.pool_seen,
        "remainder_seen": obs.remainder,
        **base,
    }


def _round_payload(game: CommonsGame, r: RoundRecord) -> dict[str, Any]:
    return {
        "agents": list(game.agents),
        "pool_before": r.pool_before,
        "announced_pool": r.announced_pool,
        "extractions": list(r.extractions),
        "remainder_seen": r.remainder_seen,
        "remaining": r.remaining,
        "payoffs": [float(p) for p in r.payoffs],
        "payoffs_exact": [str(p) for p in r.payoffs],
        "collapsed": r.collapsed,
        "next_pool": r.next_pool,
    }


def _legalize(obs: Observation, d: AgentDecision) -> tuple[int, AgentDecision]:
    """Keep a legal value; replace an illegal one by the documented fallback."""
    v = d.value
    if obs.phase == Phase.announce:
        ok = 0 <= v <= obs.max_extraction
    else:
        ok = 0 <= v <= obs.max_extraction and v % obs.step == 0
    if ok:
        return v, d
    d.violation = d.violation or f"illegal value {v!r} (cap {obs.max_extraction}, step {obs.step})"
    d.valid, d.fallback_used = False, True
    return fallback_value(obs), d


def replay(game: CommonsGame, events: list[Event]) -> None:
    """Feed committed decisions back into ``game`` (resume).

    Raises:
        RuntimeError: the replayed outcome differs from a recorded ``round`` event.
    """
    pending: dict[str, int] = {}
    for ev in events:
        if ev.kind in ("announcement", "extraction"):
            key = "announced_pool" if ev.kind == "announcement" else "extraction"
            pending[ev.agent] = int(ev.payload[key])  # type: ignore[index]
            if set(pending) == set(game.acting_agents()):
                game.act(pending)
                pending = {}
        elif ev.kind == "round":
            last = game.history[-1] if game.history else None
            if (
                last is None
                or last.round != ev.round
                or list(last.extractions) != ev.payload["extractions"]
                or last.remaining != ev.payload["remaining"]
            ):
                raise RuntimeError(f"replay of {ev.run_id} diverged at round {ev.round}")


def _llm_config(client: Any) -> dict[str, Any] | None:
    """Sampling settings that shape the trajectory (temperature, max_tokens), if any."""
    settings = getattr(client, "settings", None)
    if settings is None:
        return None
    return {k: getattr(settings, k, None) for k in ("temperature", "max_tokens", "api_base")}


class ModelUnreachableError(RuntimeError):
    """Every model call of a round failed at the transport level (no answer at all)."""


# -- one game ------------------------------------------------------------------------
async def arun_game(
    spec: GameSpec,
    out_dir: Path,
    *,
    client: Any = None,
    resume: bool = False,
    on_round: Callable[[GameSpec, int], None] | None = None,
    agents: dict[str, SovSimAgent] | None = None,
) -> GameResult:
    """Play (or resume) one game and record it under ``out_dir / spec.run_id``.

    Args:
        client: an LLMClient (needed unless the model is ``scripted/...``).
        resume: continue an existing, unfinished run directory.
        on_round: called after each committed round with ``(spec, round)`` (progress;
            an exception raised here fails the run, which tests use to simulate a kill).
        agents: override the agents (agent id -> agent); default one per agent id
            from ``spec.model``.

    Returns:
        :class:`GameResult`; ``status="skipped"`` if the run was already complete.

    Raises:
        FileExistsError: the run directory holds an unfinished run and ``resume`` is false.
        Exception: whatever the agents raised (the run is marked ``failed`` first).
    """
    run_dir = Path(out_dir) / spec.run_id
    game = CommonsGame(spec.condition, spec.config())
    if (run_dir / MANIFEST).exists():
        m = read_manifest(run_dir)
        if m.status == RunStatus.complete:
            return GameResult(spec.run_id, "skipped")
        if not resume:
            raise FileExistsError(f"{run_dir} holds an unfinished run ({m.status}); pass --resume")
        rec, committed = RunRecorder.resume(run_dir)
        replay(game, committed)
        started = any(e.kind == "game_start" for e in committed)
    else:
        manifest = RunManifest(
            run_id=spec.run_id,
            environment=ENVIRONMENT,
            condition=spec.condition,
            config={
                "rounds": spec.rounds,
                "role_labels": spec.role_labels,
                "sweep_seed": spec.seed,
                "simulation": spec.simulation,
                "game": game.config.__dict__,
                "llm": _llm_config(client),
            },
            models={a: spec.model for a in game.agents},
            seed=spec.run_seed,
            package_version=__version__,
            notes={"roles": game.roles, "leader": game.leader},
        )
        rec = RunRecorder.create(run_dir, manifest)
        started = False
    try:
        if not started:
            rec.emit(
                "game_start",
                round=0,
                phase="setup",
                payload={
                    "agents": list(game.agents),
                    "roles": game.roles,
                    "leader": game.leader,
                    "condition": spec.condition,
                    "role_labels": spec.role_labels,
                    "model": spec.model,
                    "simulation": spec.simulation,
                    "config": game.config.__dict__,
                },
            )
            rec.commit_round(0)
        if agents is None:
            shared = make_agent(spec.model, client, role_labels=spec.role_labels)
            agents = {a: shared for a in game.agents}
        while not game.over:
            await _play_round(game, spec, rec, agents)
            if on_round is not None:
                on_round(spec, game.history[-1].round)
        rec.finish(RunStatus.complete)
    except Exception as exc:
        rec.finish(RunStatus.failed, error="".join(traceback.format_exception_only(exc)).strip())
        raise
    last = game.history[-1] if game.history else None
    return GameResult(
        spec.run_id, "complete", rounds_played=len(game.history), collapsed=bool(last and last.collapsed)
    )


async def _play_round(
    game: CommonsGame, spec: GameSpec, rec: RunRecorder, agents: dict[str, SovSimAgent]
) -> None:
    r = game.round
    result: RoundRecord | None = None
    round_calls: list[Any] = []
    while result is None:
        phase = game.phase
        acting = game.acting_agents()
        obs = {a: game.observe(a) for a in acting}
        decisions = await asyncio.gather(
            *(
                agents[a].adecide(obs[a], seed=derive_seed(spec.run_seed, r, a, phase.value), run_id=spec.run_id)
                for a in acting
            )
        )
        actions: dict[str, int] = {}
        for a, d in zip(acting, decisions, strict=True):
            value, d = _legalize(obs[a], d)
            actions[a] = value
            rec.record_calls(d.calls)
            round_calls.extend(d.calls)
            kind = "announcement" if phase == Phase.announce else "extraction"
            rec.emit(kind, round=r, phase=phase.value, agent=a, payload=_decision_payload(obs[a], d, value))
        if round_calls and all(c.raw_response is None and c.error for c in round_calls):
            # Not one answer this round: the model is unreachable (unknown provider,
            # missing key, server down). Fallbacks would make a game that looks real.
            raise ModelUnreachableError(
                f"every model call of round {r} failed; first error: {round_calls[0].error}"
            )
        result = game.act(actions)
    rec.emit("round", round=r, phase="settle", payload=_round_payload(game, result))
    if game.over:
        totals = game.total_payoffs()
        rec.emit(
            "game_end",
            round=r,
            phase="end",
            payload={
                "rounds_played": len(game.history),
                "collapsed": result.collapsed,
                "total_payoffs": [float(totals[a]) for a in game.agents],
            },
        )
    rec.commit_round(r)


# -- sweeps --------------------------------------------------------------------------
async def arun_sweep(
    specs: list[GameSpec],
    out_dir: Path,
    *,
    client: Any = None,
    resume: bool = False,
    concurrency: int = 8,
    progress: bool = True,
    on_round: Callable[[GameSpec, int], None] | None = None,
) -> list[GameResult]:
    """Run many games concurrently (asyncio); complete runs are skipped.

    Up to ``4 * concurrency`` games are in flight at once; model calls are further
    bounded by the client's own ``max_concurrency``. A game that raises is reported
    with ``status="failed"`` (or ``"error"`` if it could not start) and the sweep
    goes on.
    """
    from tqdm import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(max(1, 4 * concurrency))
    bar = tqdm(total=sum(s.rounds for s in specs), unit="round", desc="sovsim", disable=not progress)
    done_rounds: dict[str, int] = {}

    def _tick(spec: GameSpec, r: int) -> None:
        bar.update(r - done_rounds.get(spec.run_id, 0))
        done_rounds[spec.run_id] = r
        if on_round is not None:
            on_round(spec, r)

    async def _one(spec: GameSpec) -> GameResult:
        async with gate:
            try:
                res = await arun_game(spec, out_dir, client=client, resume=resume, on_round=_tick)
            except FileExistsError as exc:
                res = GameResult(spec.run_id, "error", error=str(exc))
            except Exception as exc:  # recorded in the run's manifest
                res = GameResult(spec.run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            bar.update(spec.rounds - done_rounds.get(spec.run_id, 0))
            done_rounds[spec.run_id] = spec.rounds
            return res

    try:
        return list(await asyncio.gather(*(_one(s) for s in specs)))
    finally:
        bar.close()


def run_sweep(specs: list[GameSpec], out_dir: Path, **kwargs: Any) -> list[GameResult]:
    """Synchronous :func:`arun_sweep` (also inside a running event loop, e.g. Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun_sweep(specs, out_dir, **kwargs))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, arun_sweep(specs, out_dir, **kwargs)).result()
