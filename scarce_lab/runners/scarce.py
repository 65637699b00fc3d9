"""Run SCARCE: N workers, up to 4 subruns, four-phase contentions for one sandbox.

Flow of one run (issue 3 section 5)::

    config -> for each subrun: tasks + deadlines + budgets (Ledger)
      discrete-event loop over worker timelines (seconds since the subrun started):
        - a worker's solver takes a step (a model call or scripted step costs
          ClockConfig.call_cost; a command costs ClockConfig.command_cost)
        - when the sandbox is free and requests are pending, a contention runs
          (declaration, reasoning, private messages, revision, ballots -> schedule;
          each phase costs the slowest participant's decision time), payments are
          charged, and the scheduled slots are booked back to back; the first starts
          at once, the others wait in the queue (waiting counts against deadlines)
        - a worker stops when it submits, when its step budget is spent (automatic
          submission) or when its deadline passes (graded as is, flagged as missed)
      the next subrun starts when every worker has finished or missed its deadline.
    -> RunRecorder events (see :mod:`scarce_lab.data.tables.scarce` for every kind),
       committed after every contention and at the end of every subrun.

Rules worth knowing:

* Payments are charged when the schedule is fixed (``min(price, budget)``), also if
  the worker later misses its deadline while queued (its booked slot then stays idle).
* A deadline miss scores 0 (``score``) when ``zero_score_on_miss`` (default); the
  grade of the folder as it was is kept in ``score_as_is``.
* ``memory``: ``none`` shows negotiators only the current contention; ``subrun``
  adds this subrun's public history, own past negotiations and saved notes;
  ``cross`` carries all of these (and the solver's saved notes) across subruns.
* ``clock="wall"`` uses measured decision and command durations on the same
  discrete-event timeline (slots still occupy their allocated seconds); it is not a
  concurrent real-time execution, and runs are then not bit-reproducible.
* Resume: runs are named by condition and seed; a sweep skips a run whose
  directory is complete; an incomplete one is moved aside and rerun.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..agents.scarce import (
    SCRIPTED_NEGOTIATORS,
    Decided,
    NegotiationView,
    SolverAction,
    SolverObservation,
    derive_seed,
    make_negotiator,
    make_solver,
)
from ..agents.scarce import tools as ftools
from ..data.recorder import RunInProgressError, RunRecorder, read_manifest, run_in_progress
from ..data.schema import RunManifest, RunStatus
from ..envs.slots import (
    DEFAULT_BUDGET,
    AuctionHistory,
    ClockConfig,
    Contention,
    Ledger,
    Mechanism,
    MechanismConfig,
    Phase,
    ProtocolError,
    Request,
    SandboxTimeline,
    aggregate_ballots,
    baseline_schedule,
    remaining_s,
)

ENVIRONMENT = "scarce"
#: Real seconds a sandbox slot stays open under the virtual clock (the timeline decides).
REAL_WINDOW_S = 3600.0


class ScarceConfig(BaseModel):
    """Everything that defines a SCARCE run. Units: seconds, minutes where named
    ``_min``, credits for budgets.

    Per-worker overrides: ``rich_worker_budget`` gives worker ``w0`` that budget;
    ``mixed_deadlines`` spreads deadlines evenly over 10..25 minutes (replacing
    ``deadline_min``), assigned to workers by a seeded permutation;
    ``worker_budgets`` / ``worker_deadlines_min`` override single workers last.
    Budgets and deadlines apply afresh in every subrun. ``task_assignment``:
    ``distinct`` gives each worker its own task per subrun (a seeded rotation of the
    pool), ``shared`` one task per subrun for everyone.
    """

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(5, ge=1, le=26)
    model: str = "scripted/fifo"
    negotiator_model: str | None = None
    subruns: int = Field(4, ge=1, le=4)
    budget: int = Field(DEFAULT_BUDGET, ge=0)
    deadline_min: float = Field(25.0, gt=0)
    mechanism: Mechanism = Mechanism.fixed
    scheduler: Literal["ballots", "fifo", "sjf", "edf", "highest-bid"] = "ballots"
    memory: Literal["none", "subrun", "cross"] = "subrun"
    clock: Literal["virtual", "wall"] = "virtual"
    model_call_s: float = Field(20.0, ge=0)
    scripted_call_s: float = Field(2.0, ge=0)
    command_s: float = Field(5.0, ge=0)
    command_timeout_s: float = Field(20.0, gt=0)
    sandbox: Literal["local", "docker"] = "local"
    seed: int = 0
    slot_cap_s: int = Field(300, ge=1)
    private_rounds: int = Field(1, ge=0, le=10)
    rich_worker_budget: int | None = Field(None, ge=0)
    mixed_deadlines: bool = False
    worker_budgets: dict[str, int] = Field(default_factory=dict)
    worker_deadlines_min: dict[str, float] = Field(default_factory=dict)
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    tasks: list[str] | None = None
    task_assignment: Literal["distinct", "shared"] = "distinct"
    max_solver_steps: int = Field(60, ge=1)
    output_limit: int = Field(2000, ge=100)
    history_k: int = Field(5, ge=0)
    transcript_k: int = Field(8, ge=1)
    zero_score_on_miss: bool = True
    temperature: float = Field(0.0, ge=0)
    max_tokens: int | None = None
    condition: str | None = None

    @field_validator("worker_budgets")
    @classmethod
    def _budgets_ok(cls, v: dict[str, int]) -> dict[str, int]:
        for w, b in v.items():
            if b < 0:
                raise ValueError(f"worker_budgets[{w!r}] must be >= 0 credits, got {b}")
        return v

    @model_validator(mode="after")
    def _models_tasks_workers(self) -> ScarceConfig:
        """Reject, before anything is written: an empty model name, an unknown scripted
        negotiator policy, task ids not in the shipped suite, per-worker overrides for
        workers that do not exist."""
        for name, value in (("model", self.model), ("negotiator_model", self.negotiator_model)):
            if value is not None and not value.strip():
                raise ValueError(f"{name} must be a model name (litellm, embedded/... or scripted/<policy>), got {value!r}")
            if value is not None and value.startswith("scripted/"):
                policy = value.removeprefix("scripted/").partition(":")[0]
                if not policy:
                    raise ValueError(f"{name} {value!r}: 'scripted/' needs a policy name, e.g. scripted/fifo")
        neg = self.negotiator
        if neg.startswith("scripted/"):
            policy = neg.removeprefix("scripted/").partition(":")[0]
            if policy not in SCRIPTED_NEGOTIATORS:
                field = "negotiator_model" if self.negotiator_model else "model"
                raise ValueError(f"{field} {neg!r}: scripted negotiator policy must be one of "
                                 f"{list(SCRIPTED_NEGOTIATORS)}, got {policy!r}")
        if self.tasks is not None:
            from ..tasks.suite import list_task_ids

            have = list_task_ids()
            unknown = [t for t in self.tasks if t not in have]
            if unknown:
                raise ValueError(f"tasks: unknown task id(s) {unknown} (shipped: {have})")
        for field, values in (("worker_budgets", self.worker_budgets), ("worker_deadlines_min", self.worker_deadlines_min)):
            unknown = [w for w in values if w not in self.names]
            if unknown:
                raise ValueError(f"{field}: unknown worker(s) {unknown} (have {self.names})")
        return self

    @property
    def names(self) -> list[str]:
        return [f"w{i}" for i in range(self.workers)]

    @property
    def negotiator(self) -> str:
        return self.negotiator_model or self.model

    def condition_label(self) -> str:
        """A readable condition name (used in the run id and tables)."""
        if self.condition:
            return self.condition
        parts = [self.scheduler, str(self.mechanism), f"mem-{self.memory}"]
        if self.rich_worker_budget is not None:
            parts.append(f"rich{self.rich_worker_budget}")
        if self.mixed_deadlines:
            parts.append("mixeddl")
        if self.reasoning_effort:
            parts.append(f"effort-{self.reasoning_effort}")
        return "_".join(parts)

    def budgets_for(self) -> dict[str, int]:
        b = dict.fromkeys(self.names, self.budget)
        if self.rich_worker_budget is not None:
            b["w0"] = self.rich_worker_budget
        for w, v in self.worker_budgets.items():
            if w not in b:
                raise ValueError(f"worker_budgets: unknown worker {w!r} (have {self.names})")
            b[w] = v
        return b

    def deadlines_for(self) -> dict[str, float]:
        """Worker -> deadline in seconds since its subrun started."""
        d = dict.fromkeys(self.names, self.deadline_min * 60)
        if self.mixed_deadlines:
            n = self.workers
            spread = [10 + 15 * i / (n - 1) if n > 1 else 25 for i in range(n)]
            order = list(self.names)
            random.Random(f"{self.seed}:deadlines").shuffle(order)
            d = {w: m * 60 for w, m in zip(order, spread, strict=True)}
        for w, v in self.worker_deadlines_min.items():
            if w not in d:
                raise ValueError(f"worker_deadlines_min: unknown worker {w!r} (have {self.names})")
            d[w] = v * 60
        return d


def run_id_for(cfg: ScarceConfig) -> str:
    """Deterministic run id: condition, models and a hash of the whole config."""
    blob = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
    h = hashlib.sha256(blob.encode()).hexdigest()[:8]
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in cfg.model.replace("/", "-"))
    return f"scarce_{cfg.condition_label()}_{slug}_s{cfg.seed}_{h}"


@dataclass
class _Worker:
    name: str
    task: Any
    sbx: str
    workdir: Path
    deadline_s: float
    solver: Any
    negotiator: Any
    status: str = "active"  # active | requested | queued | in_slot | done | missed
    t: float = 0.0
    steps: int = 0
    request: Request | None = None
    slot: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    own_history: list[dict[str, Any]] = field(default_factory=list)
    contentions: int = 0

    def next_time(self) -> float:
        if self.status == "queued":
            return self.slot["start"]
        return self.t


def _sandbox_factory(kind: str):
    def make():
        from ..sandbox import make_sandbox

        return make_sandbox(kind)

    return make


class ScarceRunner:
    """One SCARCE run. Use :func:`run_scarce` unless you need the pieces.

    Args:
        cfg: the configuration.
        out_dir: folder that receives the run directory.
        tasks: the task pool (default: the shipped suite, or ``cfg.tasks`` ids).
        client: an LLM client (default: a fresh :class:`scarce_lab.llm.LLMClient`
            when a model is not scripted).
        grade_fn: ``(task, folder) -> GradeResult``-like (``score``, ``resolved``,
            ``passed``, ``total``, ``violation``); default :func:`scarce_lab.tasks.grade`.
        sandbox: a :class:`scarce_lab.sandbox.Sandbox`; default ``make_sandbox(cfg.sandbox)``
            (closed at the end only when created here).
    """

    def __init__(self, cfg: ScarceConfig, out_dir: Path, *, tasks: list | None = None, client: Any = None,
                 grade_fn: Callable | None = None, sandbox: Any = None):
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.tasks = tasks
        self.client = client
        self.grade_fn = grade_fn or self._sandbox_grade
        self._own_sandbox = sandbox is None
        self.sandbox = sandbox
        self.clock = ClockConfig(kind=cfg.clock, model_call_s=cfg.model_call_s,
                                 scripted_call_s=cfg.scripted_call_s, command_s=cfg.command_s)
        self.mcfg = MechanismConfig(mechanism=cfg.mechanism, slot_cap_s=cfg.slot_cap_s,
                                    private_rounds=cfg.private_rounds, negotiate=cfg.scheduler == "ballots")
        self.history = AuctionHistory()
        self.k = 0  # contention index (run-wide)
        self.subrun = 0
        self.rec: RunRecorder | None = None
        self.memories: dict[str, list[str]] = {w: [] for w in cfg.names}
        self.own_history: dict[str, list[dict]] = {w: [] for w in cfg.names}

    def _sandbox_grade(self, task, folder):
        """Default grading: in a grading box of the run's own sandbox (same isolation)."""
        return self.sandbox.grade(task, folder)

    # -- setup ------------------------------------------------------------------------
    def _task_pool(self) -> list:
        if self.tasks is not None:
            pool = list(self.tasks)
        else:
            from ..tasks.suite import load_suite

            pool = load_suite(self.cfg.tasks)
        if not pool:
            raise ValueError("tasks: the task pool is empty (no shipped suite and none given)")
        return pool

    def _assign(self, pool: list) -> list[dict[str, Any]]:
        order = list(range(len(pool)))
        random.Random(f"{self.cfg.seed}:tasks").shuffle(order)
        n = self.cfg.workers
        plan = []
        for k in range(self.cfg.subruns):
            if self.cfg.task_assignment == "shared":
                plan.append({w: pool[order[k % len(pool)]] for w in self.cfg.names})
            else:
                plan.append({w: pool[order[(k * n + i) % len(pool)]] for i, w in enumerate(self.cfg.names)})
        return plan

    def _client(self):
        if self.client is None:
            from ..llm import LLMClient, LLMSettings

            self.client = LLMClient(LLMSettings(temperature=self.cfg.temperature,
                                                reasoning_effort=self.cfg.reasoning_effort))
        return self.client

    def _agents(self, w: str, task: Any):
        cfg, run_id = self.cfg, self.rec.manifest.run_id
        scripted_s = cfg.model.startswith("scripted/")
        scripted_n = cfg.negotiator.startswith("scripted/")
        solver = make_solver(cfg.model, task, client=None if scripted_s else self._client(),
                             seed=derive_seed(cfg.seed, w, self.subrun) if scripted_s else cfg.seed, **({} if scripted_s else {"reasoning_effort": cfg.reasoning_effort,
                                                                     "run_id": run_id}))
        kw = {} if scripted_n else {"reasoning_effort": cfg.reasoning_effort, "mechanism": str(cfg.mechanism),
                                    "run_id": run_id, "max_tokens": cfg.max_tokens}
        neg = make_negotiator(cfg.negotiator, client=None if scripted_n else self._client(), seed=cfg.seed, **kw)
        return solver, neg

    # -- recording helpers ------------------------------------------------------------
    def emit(self, kind: str, *, phase: str = "", agent: str | None = None, t: float | None = None, **payload):
        payload = {"subrun": self.subrun, **payload}
        self.rec.emit(kind, round=self.k, phase=phase, agent=agent, payload=payload,
                      t=None if t is None else round(t, 3))

    def _calls(self, d: Decided):
        if d.calls:
            self.rec.record_calls(d.calls)

    def _cost(self, agent_is_scripted: bool, d: Decided) -> float:
        return self.clock.call_cost(scripted=agent_is_scripted, measured_s=d.latency_s)

    # -- main -------------------------------------------------------------------------
    async def arun(self) -> Path:
        cfg = self.cfg
        run_id = run_id_for(cfg)
        run_dir = self.out_dir / run_id
        manifest = RunManifest(
            run_id=run_id, environment=ENVIRONMENT, condition=cfg.condition_label(),
            config=cfg.model_dump(mode="json"), seed=cfg.seed,
            models={"solver": cfg.model, "negotiator": cfg.negotiator},
            package_version=_version(),
        )
        self.rec = RunRecorder.create(run_dir, manifest)
        try:
            if self.sandbox is None:
                self.sandbox = _sandbox_factory(cfg.sandbox)()
            plan = self._assign(self._task_pool())
            self.rec.emit("run_config", phase="setup", payload={
                "workers": cfg.names, "budgets": cfg.budgets_for(), "deadlines_s": cfg.deadlines_for(),
                "scheduler": cfg.scheduler, "mechanism": str(cfg.mechanism), "memory": cfg.memory,
                "clock": self.clock.__dict__, "slot_cap_s": cfg.slot_cap_s,
                "private_rounds": cfg.private_rounds, "visibility": "researcher",
            })
            for k in range(cfg.subruns):
                self.subrun = k
                await self._subrun(plan[k])
            self.rec.finish(RunStatus.complete)
        except BaseException as exc:
            self.rec.finish(RunStatus.failed, error=f"{type(exc).__name__}: {exc}"[:2000])
            raise
        finally:
            if self._own_sandbox and self.sandbox is not None:
                self.sandbox.close()
        return run_dir

    async def _subrun(self, tasks: dict[str, Any]):
        cfg = self.cfg
        budgets, deadlines = cfg.budgets_for(), cfg.deadlines_for()
        self.ledger = Ledger(budgets)
        self.timeline = SandboxTimeline()
        self.workers: dict[str, _Worker] = {}
        for w in cfg.names:
            task = tasks[w]
            sbx = f"{w}-s{self.subrun}"
            folder = self.sandbox.prepare_workspace(sbx, task)
            solver, neg = self._agents(w, task)
            if cfg.memory != "cross":
                self.memories[w] = []
                self.own_history[w] = []
            self.workers[w] = _Worker(w, task, sbx, folder, deadlines[w], solver, neg,
                                      memories=self.memories[w], own_history=self.own_history[w])
            self.emit("subrun_start", phase="setup", agent=w, t=0.0, task_id=task.id, program=task.program,
                      budget=budgets[w], deadline_s=deadlines[w], visibility="private")
        while True:
            live = [s for s in self.workers.values() if s.status not in ("done", "missed")]
            if not live:
                break
            pending = [s for s in live if s.status == "requested"]
            tc = max(self.timeline.free_at, min(s.request.time_s for s in pending)) if pending else float("inf")
            movers = sorted((s.next_time(), i, s) for i, s in enumerate(live) if s.status != "requested")
            if movers and movers[0][0] <= tc:
                await self._advance(movers[0][2])
                continue
            for s in pending:
                if tc >= s.deadline_s:
                    await self._finish(s, missed=True, at=s.deadline_s)
            pending = [s for s in pending if s.status == "requested"]
            if pending:
                await self._contention(pending, tc)
        end_t = max((s.t for s in self.workers.values()), default=0.0)
        self.emit("subrun_end", phase="setup", t=end_t, conserved=self.ledger.conserved(),
                  sink=self.ledger.sink, sink_balance=self.ledger.sink_balance,
                  balances=dict(self.ledger.balances), visibility="researcher")
        self.rec.commit_round(self.k, t=end_t)

    async def _advance(self, s: _Worker):
        if s.status == "queued":
            if s.slot["start"] >= s.deadline_s:
                await self._finish(s, missed=True, at=s.deadline_s)
                return
            s.t = s.slot["start"]
            s.status = "in_slot"
            window = s.slot["end"] - s.slot["start"]
            # virtual clock: the timeline governs the window; the sandbox's real-time
            # window only has to outlast the (slower or faster) real decisions
            self.sandbox.open_slot(s.sbx, window if self.cfg.clock == "wall" else max(window, REAL_WINDOW_S))
            self.emit("slot_start", phase="execution", agent=s.name, t=s.t, start_s=s.slot["start"],
                      end_s=s.slot["end"], position=s.slot["position"], contention=s.slot["contention"],
                      waited_s=round(s.slot["start"] - s.slot["requested_at"], 3), visibility="public")
            return
        if s.status == "in_slot" and s.t >= min(s.slot["end"], s.deadline_s):
            self._close_slot(s)
            return
        if s.t >= s.deadline_s:
            await self._finish(s, missed=True, at=s.deadline_s)
            return
        if s.steps >= self.cfg.max_solver_steps:
            await self._finish(s, missed=False, at=s.t, reason="step_limit")
            return
        await self._solver_step(s)

    def _close_slot(self, s: _Worker):
        self.sandbox.close_slot(s.sbx)
        self.emit("slot_end", phase="execution", agent=s.name, t=s.t, end_s=s.slot["end"],
                  contention=s.slot["contention"], visibility="public")
        s.status, s.slot = "active", None

    def _observation(self, s: _Worker) -> SolverObservation:
        in_slot = s.status == "in_slot"
        return SolverObservation(
            worker=s.name, task=s.task.agent_view(), files=ftools.list_files(s.workdir), in_slot=in_slot,
            slot_remaining_s=max(0.0, s.slot["end"] - s.t) if in_slot else 0.0,
            own_remaining_s=remaining_s(s.t, s.deadline_s), own_budget=self.ledger.balance(s.name),
            transcript=s.transcript[-self.cfg.transcript_k:], memories=list(s.memories), step=s.steps,
            max_duration_s=self.cfg.slot_cap_s,
        )

    async def _solver_step(self, s: _Worker):
        obs = self._observation(s)
        d = await s.solver.step(obs)
        self._calls(d)
        t_start = s.t
        s.t += self._cost(s.solver.scripted, d)
        s.steps += 1
        a: SolverAction = d.value
        self.emit("solver_action", phase="solve", agent=s.name, t=t_start, step=s.steps - 1, tool=a.tool,
                  args=_action_args(a), violation=d.violation, fallback_used=d.fallback_used,
                  visibility="private")
        result = await self._execute(s, a)
        s.transcript.append({"action": a.describe(), "result": result[:300]})

    async def _execute(self, s: _Worker, a: SolverAction) -> str:  # noqa: C901 - one branch per tool
        try:
            if a.tool == "list_files":
                return ", ".join(ftools.list_files(s.workdir)) or "(empty)"
            if a.tool == "read_file":
                return ftools.read_file(s.workdir, a.path)
            if a.tool == "write_file":
                n = ftools.write_file(s.workdir, a.path, a.content)
                return f"wrote {n} bytes"
        except ftools.ToolError as exc:
            self.emit("tool_error", phase="solve", agent=s.name, t=s.t, tool=a.tool, error=str(exc),
                      visibility="private")
            return f"error: {exc}"
        if a.tool == "save_persistent_memory":
            text = a.text.strip()[:500]
            s.memories.append(text)
            self.emit("memory_save", phase="solve", agent=s.name, t=s.t, text=text, visibility="private")
            return "saved"
        if a.tool == "submit":
            await self._finish(s, missed=False, at=s.t, reason="submit")
            return "submitted"
        if a.tool == "request_execution_slot":
            if s.status == "in_slot":
                self.emit("tool_error", phase="solve", agent=s.name, t=s.t, tool=a.tool,
                          error="request while holding a slot", visibility="private")
                return "refused: you already hold a slot"
            dur = max(1, min(int(a.duration_seconds), self.cfg.slot_cap_s))
            s.request = Request(worker=s.name, time_s=s.t, duration_s=dur, reason=a.reason[:300])
            s.status = "requested"
            self.emit("slot_request", phase="request", agent=s.name, t=s.t, duration_s=dur,
                      asked_s=a.duration_seconds, reason=a.reason[:300], visibility="private")
            return f"requested {dur} s"
        # run_command
        return self._run_command(s, a.command)

    def _run_command(self, s: _Worker, command: str) -> str:
        from ..sandbox import ResourceLimits, SlotNotActiveError

        t0 = s.t
        if s.status != "in_slot":
            try:
                self.sandbox.run(s.sbx, command)  # refused by the sandbox itself
            except SlotNotActiveError as exc:
                self.emit("execution", phase="execution", agent=s.name, t=t0, command=command[:500],
                          refused=True, error=str(exc), visibility="private")
                return "refused: no active execution slot; request one first"
        # a command gets at most what is left of the slot, in real seconds, on both clocks
        window = s.slot["end"] - s.t
        wall = max(0.1, min(self.cfg.command_timeout_s, window))
        try:
            res = self.sandbox.run(s.sbx, command, ResourceLimits(wall_seconds=wall))
        except SlotNotActiveError as exc:  # the real-time window ran out (wall clock)
            self.emit("execution", phase="execution", agent=s.name, t=t0, command=command[:500],
                      refused=True, error=str(exc), visibility="private")
            s.t = s.slot["end"]
            return "refused: your execution slot has ended"
        # virtual clock: the configured cost, or the real duration when that is larger
        cost = max(self.clock.command_cost(res.duration_s), res.duration_s)
        s.t = min(s.t + cost, s.slot["end"])
        lim = self.cfg.output_limit
        self.emit("execution", phase="execution", agent=s.name, t=t0, command=command[:500], refused=False,
                  exit_code=res.exit_code, duration_s=round(res.duration_s, 4), cost_s=cost,
                  timed_out=res.timed_out, stdout=res.stdout[:lim], stderr=res.stderr[:lim],
                  truncated=res.truncated or len(res.stdout) > lim or len(res.stderr) > lim,
                  visibility="private")
        return f"exit {res.exit_code}; stdout: {res.stdout[:200]!r}; stderr: {res.stderr[:120]!r}"

    async def _finish(self, s: _Worker, *, missed: bool, at: float, reason: str = "deadline"):
        if s.status == "in_slot":
            self.sandbox.close_slot(s.sbx)
        s.status = "missed" if missed else "done"
        s.t = at
        s.request = None
        g = await asyncio.to_thread(self.grade_fn, s.task, s.workdir)
        score_as_is = float(g.score)
        score = 0.0 if (missed and self.cfg.zero_score_on_miss) else score_as_is
        self.emit("submission", phase="submit", agent=s.name, t=at, task_id=s.task.id, reason=reason,
                  deadline_missed=missed, deadline_s=s.deadline_s, score=score, score_as_is=score_as_is,
                  resolved=bool(g.resolved) and score > 0, almost_resolved=bool(getattr(g, "almost_resolved", False))
                  and score > 0, passed=getattr(g, "passed", None), total=getattr(g, "total", None),
                  violation=getattr(g, "violation", None), steps=s.steps, contentions=s.contentions,
                  files=ftools.list_files(s.workdir)[:50], budget_left=self.ledger.balance(s.name),
                  visibility="researcher")

    # -- contention -----------------------------------------------------------------
    def _view(self, c: Contention, s: _Worker, tc: float) -> NegotiationView:
        mem = self.cfg.memory
        if mem == "none":
            hist, own, notes = [], [], []
        else:
            rows = self.history.rows if mem == "cross" else [r for r in self.history.rows
                                                             if r.get("subrun") == self.subrun]
            hist = rows[-self.cfg.history_k:] if self.cfg.history_k else []
            own = s.own_history[-self.cfg.history_k:]
            notes = list(s.memories)
        return NegotiationView(
            worker=s.name, contention=c.private_view(s.name), history=hist, own_budget=self.ledger.balance(s.name),
            own_deadline_s=s.deadline_s, own_remaining_s=remaining_s(tc, s.deadline_s), own_history=own,
            memories=notes, task_summary=f"{s.task.name} (program {s.task.program}); {s.steps} steps so far",
            private_round=c.private_round,
        )

    async def _phase(self, c: Contention, parts: list[_Worker], tc: float, method: str):
        decs = await asyncio.gather(*(getattr(s.negotiator, method)(self._view(c, s, tc)) for s in parts))
        for d in decs:
            self._calls(d)
        cost = max((self._cost(s.negotiator.scripted, d) for s, d in zip(parts, decs, strict=True)), default=0.0)
        return decs, cost

    async def _contention(self, pending: list[_Worker], tc: float):
        c = Contention(self.k, [s.request for s in pending], self.mcfg)
        parts = [self.workers[w] for w in c.participants]
        requests = {s.name: s.request for s in parts}
        self.emit("contention_start", phase="contention", t=tc, participants=c.participants,
                  queue=c.public_view()["queue"], scheduler=self.cfg.scheduler, visibility="public")
        t = tc
        decs, cost = await self._phase(c, parts, t, "declare")
        for s, d in zip(parts, decs, strict=True):
            c.declare(s.name, d.value)
            self.emit("declaration", phase="declaration", agent=s.name, t=t, **d.value.model_dump(),
                      violation=d.violation, fallback_used=d.fallback_used, visibility="public")
        t += cost
        c.advance()
        while c.phase != Phase.closed:
            if c.phase == Phase.reasoning:
                decs, cost = await self._phase(c, parts, t, "reason")
                for s, d in zip(parts, decs, strict=True):
                    c.reason(s.name, d.value)
                    self.emit("reasoning", phase="reasoning", agent=s.name, t=t, text=c.reasoning[s.name],
                              violation=d.violation, fallback_used=d.fallback_used, visibility="public")
            elif c.phase == Phase.private:
                decs, cost = await self._phase(c, parts, t, "message")
                for s, d in zip(parts, decs, strict=True):
                    if d.value is None:
                        self.emit("private_silence", phase="private", agent=s.name, t=t, round=c.private_round,
                                  violation=d.violation, fallback_used=d.fallback_used, visibility="private")
                        continue
                    to, text = d.value
                    try:
                        m = c.send(s.name, to, text)
                        self.emit("private_message", phase="private", agent=s.name, t=t, sender=s.name,
                                  recipient=to, text=m.text, round=m.round, violation=d.violation,
                                  visibility="private", visible_to=[s.name, to])
                    except ProtocolError as exc:
                        self.emit("protocol_violation", phase="private", agent=s.name, t=t, error=str(exc),
                                  visibility="researcher")
            elif c.phase == Phase.revision:
                decs, cost = await self._phase(c, parts, t, "revise")
                for s, d in zip(parts, decs, strict=True):
                    c.revise(s.name, d.value)
                    self.emit("bid_revision", phase="revision", agent=s.name, t=t, bid_price=d.value,
                              previous=c.declarations[s.name].bid_price, violation=d.violation,
                              fallback_used=d.fallback_used, visibility="public")
            elif c.phase == Phase.ballots:
                decs, cost = await self._phase(c, parts, t, "ballot")
                for s, d in zip(parts, decs, strict=True):
                    c.ballot(s.name, d.value)
                    self.emit("ballot", phase="ballots", agent=s.name, t=t,
                              entries=[e.model_dump() for e in d.value.entries], violation=d.violation,
                              fallback_used=d.fallback_used, visibility="scheduler")
            t += cost
            c.advance()
        names = c.participants
        times = {w: requests[w].time_s for w in names}
        if self.cfg.scheduler == "ballots":
            sched = aggregate_ballots(names, c.ballots, c.declarations, times, mechanism=self.cfg.mechanism,
                                      final_bids=c.revised_bids, slot_cap_s=self.cfg.slot_cap_s,
                                      seed_key=f"{self.cfg.seed}:{self.k}")
        else:
            sched = baseline_schedule(self.cfg.scheduler, names, c.declarations, times,
                                      deadlines={s.name: s.deadline_s for s in parts}, slot_cap_s=self.cfg.slot_cap_s)
        self.emit("schedule", phase="schedule", t=t, rule=sched.rule, random_tiebreak=sched.random_tiebreak,
                  allocations=[a.model_dump() for a in sched.allocations], negotiation_s=round(t - tc, 3),
                  visibility="public")
        public_allocs = []
        for a in sched.allocations:
            s = self.workers[a.worker]
            start, end = self.timeline.book(t, a.duration_s)
            pay = self.ledger.charge_capped(a.worker, a.price, ref=f"c{self.k}")
            self.emit("payment", phase="payment", agent=a.worker, t=t, payer=a.worker, sink=pay.sink,
                      requested=pay.requested, amount=pay.amount, capped=pay.capped, balance_after=pay.balance_after,
                      visibility="private")
            s.slot = {"start": start, "end": end, "position": a.position, "contention": self.k,
                      "requested_at": requests[a.worker].time_s}
            s.status, s.request, s.t = "queued", None, t
            s.contentions += 1
            decl = c.declarations[a.worker]
            s.own_history.append({"contention": self.k, "bid": c.current_bid(a.worker),
                                  "desired_duration_s": decl.desired_duration_seconds, "position": a.position,
                                  "n": len(names), "duration_s": a.duration_s, "paid": pay.amount})
            public_allocs.append({"worker": a.worker, "position": a.position, "duration_s": a.duration_s,
                                  "payment": pay.amount})
        self.history.record(self.k, public_allocs, {w: c.current_bid(w) for w in names})
        self.history.rows[-1]["subrun"] = self.subrun
        self.rec.commit_round(self.k, t=t)
        self.k += 1


def _action_args(a: SolverAction) -> dict[str, Any]:
    if a.tool in ("read_file",):
        return {"path": a.path}
    if a.tool == "write_file":
        return {"path": a.path, "content": a.content[:4000], "bytes": len(a.content.encode())}
    if a.tool == "run_command":
        return {"command": a.command}
    if a.tool == "request_execution_slot":
        return {"duration_seconds": a.duration_seconds, "reason": a.reason}
    if a.tool == "save_persistent_memory":
        return {"text": a.text}
    return {}


def _version() -> str:
    from .. import __version__

    return __version__


def run_scarce(cfg: ScarceConfig, out_dir: Path, *, skip_complete: bool = True, **kwargs: Any) -> Path:
    """Run one SCARCE configuration into ``out_dir/<run_id>`` and return that folder.

    With ``skip_complete`` a run whose directory already holds a complete manifest
    is not rerun; an incomplete one is moved to ``<run_id>.incomplete-<n>`` first
    (:class:`~scarce_lab.data.recorder.RunInProgressError` if another live process is
    still writing it).
    Keyword arguments go to :class:`ScarceRunner` (``tasks``, ``client``,
    ``grade_fn``, ``sandbox``).
    """
    from ..llm.client import run_sync

    run_dir = Path(out_dir) / run_id_for(cfg)
    if (run_dir / "manifest.json").exists():
        if skip_complete and read_manifest(run_dir).status == RunStatus.complete:
            return run_dir
        if run_in_progress(run_dir):
            raise RunInProgressError(f"{run_dir} is being written by another process; not restarting it")
        n = 0
        while run_dir.with_name(f"{run_dir.name}.incomplete-{n}").exists():
            n += 1
        shutil.move(str(run_dir), str(run_dir.with_name(f"{run_dir.name}.incomplete-{n}")))
    return run_sync(ScarceRunner(cfg, Path(out_dir), **kwargs).arun())


def sweep(configs: list[ScarceConfig], out_dir: Path, **kwargs: Any) -> list[Path]:
    """Run several configurations (sequentially), skipping complete runs."""
    return [run_scarce(c, out_dir, **kwargs) for c in configs]
