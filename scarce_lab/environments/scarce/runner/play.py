"""Run SCARCE: agents, sandbox calls, grading and recording around the pure world.

The rules (who moves next, contentions, slots, deadlines, payments, memory, time)
live in :class:`scarce_lab.environments.scarce.world.ScarceWorld`. The runner asks it what happens
next, performs the I/O (agents' decisions, :class:`~.io.WorkerIO` for the sandbox,
file tools and grading) and feeds the results back; every event goes through
:meth:`ScarceRunner.emit` (kinds and payloads: :mod:`scarce_lab.environments.scarce.tables`).
Events (typed: :mod:`scarce_lab.environments.scarce.events`) are committed after every
contention and at the end of every subrun, each commit with a checkpoint of the
world, the agents and the workers' folders.

Size: one run's loop in one place (the contention's phases with their events, the
solvers' steps, slots and submissions); the checkpoint and the sandbox I/O are in
:mod:`.checkpoint` and :mod:`.io`.

* Time (``clock="wall"`` too): :mod:`..world.clock`; resume: :func:`run_scarce`.
* Solver steps: an action outside the world's legal actions
  (:meth:`~scarce_lab.environments.scarce.world.ScarceWorld.legal_actions`) is refused with its reason
  and the legal tools (a ``tool_error``, or a refused ``execution``) and recorded as the
  step's ``violation``; an out-of-range slot duration is clamped instead. A model
  solver that repeats the same failing action ``stuck_repeats`` times in a row ends its
  subrun with a ``stuck`` submission. The solver is offered, and the runner checks
  against, the one :class:`~scarce_lab.environments.scarce.world.LegalActions` on its observation.
* Negotiation: a declaration, revised bid or ballot the contention refuses is repaired
  into the legal set of the negotiator's view
  (:class:`~scarce_lab.environments.scarce.world.actions.LegalNegotiation`) and the refusal and the
  repair are recorded as the decision's ``violation``: one negotiator's bad value
  never ends the run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.data.recorder import RunRecorder
from scarce_lab.data.schema import RunManifest, RunStatus, package_version
from scarce_lab.runtime import derive_seed, open_run, record_calls_of, run_sync

from .. import events as ev
from ..agents import SolverAction, make_negotiator, make_solver
from ..agents.negotiators import complete_ballot
from ..config import ScarceConfig
from ..world import (
    ActionRefused,
    Contention,
    EventKind,
    LegalActions,
    Phase,
    ProtocolError,
    ScarceWorld,
    assign_tasks,
)
from . import institutions as inst
from .checkpoint import restore_state, save_state
from .io import CommandRefused, ToolError, WorkerIO

ENVIRONMENT = "scarce"
#: the solver's own steps, left out of its negotiator's interview memory
SOLVER_KINDS = frozenset({"solver_action", "tool_error", "execution", "memory_save"})
#: Real seconds a sandbox slot stays open under the virtual clock (the timeline decides).
REAL_WINDOW_S = 3600.0


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
        replay: the parent's replay source (:mod:`scarce_lab.forks`) for a config whose
            ``fork`` is set (:mod:`.fork`: the prefix replayed, the switch at its contention).

    Raises:
        ForkError: a fork config without its ``replay``.
    """

    def __init__(self, cfg: ScarceConfig, out_dir: Path, *, tasks: list | None = None, client: Any = None,
                 grade_fn: Callable | None = None, sandbox: Any = None, replay: Any = None):
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.tasks = tasks
        self.client = client
        self.io = WorkerIO(sandbox, kind=cfg.sandbox, grade_fn=grade_fn)
        self.world = ScarceWorld(cfg.world_rules())
        #: worker -> its seat (models and settings as sent; ..seats)
        self._seats = cfg.seat_plan()
        self.rec: RunRecorder | None = None
        self.solvers: dict[str, Any] = {}
        self.negotiators: dict[str, Any] = {}
        #: worker -> (key of its last failing action, times in a row): the stuck rule
        self.streaks: dict[str, tuple[str, int]] = {}
        #: the agents' base seed (a re-seeded fork's from its contention on: :mod:`.fork`)
        self.base_seed = cfg.seed
        self.replay = replay
        self.fork = None
        if cfg.fork is not None:
            from .fork import ForkPlay

            self.fork = ForkPlay(self, replay)

    # -- setup ------------------------------------------------------------------------
    def _task_pool(self) -> list:
        if self.tasks is not None:
            pool = list(self.tasks)
        else:
            from scarce_lab.tasks.suite import load_suite

            pool = load_suite(self.cfg.tasks)
        if not pool:
            raise ValueError("tasks: the task pool is empty (no shipped suite and none given)")
        return pool

    def _client(self):
        if self.client is None:
            from scarce_lab.llm import make_client

            self.client = make_client(self.cfg.llm)
        if self.fork is not None:  # the prefix's calls answered from the parent's records
            self.client = self.fork.client(self.client)
        return self.client

    def _agents(self, w: str, task: Any):
        """The worker's solver and negotiator, from its seat
        (:meth:`~scarce_lab.environments.scarce.config.ScarceConfig.seat_plan`: per-worker model and
        generation settings, by default the config's ``model``, ``negotiator_model`` and
        ``llm``): each model string is resolved once
        (:func:`~scarce_lab.llm.model.model_for`, in the factories); the client is made
        only for a model that needs one. A scripted solver's seed is the worker's and
        subrun's (:func:`derive_seed`); a model's call seeds derive from the run seed."""
        sol = self._seats[w].solver  # the run id reaches the calls through the run scope (llm/scope.py)
        seed = self.base_seed
        solver = make_solver(sol.model, task, make_client=self._client, seed=seed,
                             scripted_seed=derive_seed(seed, w, self.world.subrun),
                             reasoning_effort=sol.reasoning_effort, temperature=sol.temperature,
                             **({"max_tokens": sol.max_tokens} if sol.max_tokens is not None else {}))
        return solver, self._negotiator(w)

    def _negotiator(self, w: str):
        neg_s = self._seats[w].negotiator
        return make_negotiator(neg_s.model, make_client=self._client, seed=self.base_seed,
                               reasoning_effort=neg_s.reasoning_effort, temperature=neg_s.temperature,
                               mechanism=str(self.world.rules.mechanism), max_tokens=neg_s.max_tokens,
                               human_time_limit_s=self.cfg.human_time_limit_s)

    def retarget(self, after: ScarceConfig, base_seed: int, *, new_solvers: set[str] = frozenset()) -> None:
        """From a fork's contention on (:mod:`.fork`): the world plays the rules of
        ``after`` (mechanism, memory, institutions...; the institutions' state starts
        empty when they are switched on), the seats of ``after``, and every agent derives
        its seeds from ``base_seed``: each live worker's negotiator is made again (they
        keep no state), the solvers of ``new_solvers`` are made again for their current
        task, the others are re-seeded."""
        import dataclasses

        from ..world.institutions import Institutions

        world = self.world
        rules = dataclasses.replace(after.world_rules(), seed=base_seed)
        world.rules, world.mechanism = rules, rules.mechanism_config()
        if rules.institutions is None:
            world.institutions = None
        elif world.institutions is None:
            world.institutions = Institutions(rules.institutions, rules.workers)
        else:
            world.institutions.rules = rules.institutions
        self._seats, self.base_seed = after.seat_plan(), base_seed
        for w, s in world.workers.items():
            if s.finished:
                continue
            self.negotiators[w] = self._negotiator(w)
            if w in new_solvers:
                self.solvers[w] = self._agents(w, s.task)[0]
            elif base_seed != self.cfg.seed:
                self.solvers[w].reseed(base_seed)

    def _sbx(self, w: str) -> str:
        return f"{w}-s{self.world.subrun}"

    # -- recording helpers ------------------------------------------------------------
    def emit(self, payload_type: type, *, phase: str = "", agent: str | None = None, t: float | None = None,
             event_round: int | None = None, visible_to: list[str] | None = None, **fields):
        """Record one event of the current subrun (``payload_type`` from
        :mod:`scarce_lab.environments.scarce.events`). Its ``round`` is ``event_round`` when
        given (events of a contention), else the world's next contention index."""
        payload = payload_type(subrun=self.world.subrun, **fields)
        self.rec.emit(payload, round=self.world.k if event_round is None else event_round, phase=phase,
                      agent=agent, visible_to=visible_to, t=None if t is None else round_t(t))

    def _commit(self, k: int, t: float, *, subrun_done: bool) -> None:
        """Make everything durable with a checkpoint (:func:`.checkpoint.save_state`).

        Mid-subrun the workers' folders go in through the one gate
        (:meth:`.io.WorkerIO.snapshot`); files it leaves out are removed from the live
        folder and the worker's ``tool_error`` event (tool ``checkpoint``) says which,
        so the checkpoint stays small and a resume restores the same folder."""
        folders = None
        if not subrun_done:
            folders = {}
            for w in self.world.workers:  # the workers of this subrun (joins/leaves)
                snap = folders[w] = self.io.snapshot(self._sbx(w))
                if snap.get("removed"):
                    self.emit(ev.ToolError, phase="solve", agent=w, t=t, event_round=k, tool="checkpoint",
                              error=f"{snap['removed']} file(s) removed from your folder: over what the harness "
                                    f"keeps of a folder ({'; '.join(snap['skipped'][:5])})"[:1000])
        self.rec.commit_round(k, t=t, state=save_state(self, subrun_done=subrun_done, folders=folders))

    # -- main -------------------------------------------------------------------------
    def manifest(self) -> RunManifest:
        """The run's manifest (condition derived from the config)."""
        cfg = self.cfg
        models = {"solver": cfg.model, "negotiator": cfg.negotiator}
        notes = {}
        if cfg.seats:  # per worker and part; "solver"/"negotiator" name a model only when every worker shares it
            for w, seat in self._seats.items():
                models[f"{w}.solver"], models[f"{w}.negotiator"] = seat.solver.model, seat.negotiator.model
            for part in ("solver", "negotiator"):
                used = {models[f"{w}.{part}"] for w in self._seats}
                models[part] = used.pop() if len(used) == 1 else "mixed"
            notes["seats"] = {w: seat.record() for w, seat in self._seats.items()}
            notes["composition"] = cfg.composition_label()
        if cfg.joins or cfg.leaves:
            notes["membership"] = {"joins": dict(cfg.joins), "leaves": dict(cfg.leaves)}
        if self.fork is not None:  # the fork, its replayed calls (set at the end) and who plays from it on
            notes["fork"] = self.fork.notes()
        return RunManifest(
            run_id=cfg.run_id, environment=ENVIRONMENT, condition=cfg.condition_label(),
            condition_settings=cfg.condition_settings(), config=cfg.model_dump(mode="json"), seed=cfg.seed,
            models=models, package_version=package_version(), **({"notes": notes} if notes else {}),
        )

    async def arun(self, *, resume: bool = False) -> Path:
        """Play the run (or continue it with ``resume``); returns its folder."""
        from scarce_lab.llm.scope import run_scope

        with run_scope(run_id=self.cfg.run_id):  # every model call names the run (llm/scope.py)
            return await self._arun(resume=resume)

    async def _arun(self, *, resume: bool) -> Path:
        cfg = self.cfg
        handle = open_run(self.out_dir / cfg.run_id, self.manifest(), resume=resume)
        if handle.skipped:
            return handle.run_dir
        self.rec = handle.recorder
        try:
            self.io.start()
            plan = assign_tasks(self._task_pool(), cfg.names, cfg.subruns, cfg.task_assignment, cfg.seed)
            first, resumed = 0, False
            if handle.state is not None:
                done = restore_state(self, handle.state, plan)  # subrun finished?
                if self.fork is not None:  # past its contention: the fork's seats, seeds and live client
                    self.fork.resumed(self.world.k)
                first, resumed = self.world.subrun + (1 if done else 0), not done
                if done and cfg.interviews:  # stopped between a subrun's end and its interviews
                    await self._interviews(self.world.k, self.world.subrun)
            else:
                r = self.world.rules
                self.rec.emit(ev.RunConfig(
                    subrun=0, workers=[ev.WorkerSetting(worker=w, budget=r.budgets[w], deadline_s=float(r.deadlines_s[w]))
                                       for w in cfg.names],
                    scheduler=cfg.scheduler, mechanism=str(cfg.mechanism), memory=cfg.memory,
                    clock=ev.ClockSetting(kind=r.clock.kind, model_call_s=float(r.clock.model_call_s),
                                          scripted_call_s=float(r.clock.scripted_call_s),
                                          command_s=float(r.clock.command_s)),
                    slot_cap_s=cfg.slot_cap_s, private_rounds=cfg.private_rounds,
                ), phase="setup")
            for k in range(first, cfg.subruns):
                await self._subrun(plan[k], resumed=resumed and k == first)
            if self.fork is not None:
                self.rec.manifest.notes["fork"] = self.fork.notes()
            self.rec.finish(RunStatus.complete)
        except BaseException as exc:
            record_calls_of(self.rec, exc)
            self.rec.finish(RunStatus.failed, error=f"{type(exc).__name__}: {exc}"[:2000])
            raise
        finally:
            self.io.close()
        return handle.run_dir

    async def _subrun(self, tasks: dict[str, Any], *, resumed: bool = False):
        world = self.world
        if not resumed:
            world.start_subrun(tasks)
            self.streaks = {}
            for w in world.workers:  # the workers present in this subrun (joins/leaves)
                if world.subrun > 0 and self.cfg.joins.get(w) == world.subrun:
                    self.emit(ev.AgentJoined, phase="setup", agent=w, t=0.0)
            for w in world.workers:
                task = tasks[w]
                self.io.prepare(self._sbx(w), task)
                self.solvers[w], self.negotiators[w] = self._agents(w, task)
                self.emit(ev.SubrunStart, phase="setup", agent=w, t=0.0, task_id=task.id, program=task.program,
                          budget=world.rules.budgets[w], deadline_s=float(world.worker(w).deadline_s))
        while (nxt := world.next_event()).kind != EventKind.subrun_end:
            w = nxt.worker
            if nxt.kind == EventKind.solver_step:
                await self._solver_step(w)
            elif nxt.kind == EventKind.slot_open:
                self._open_slot(w)
            elif nxt.kind == EventKind.slot_close:
                slot = world.close_slot(w)
                self.io.close_slot(self._sbx(w))
                self.emit(ev.SlotEnd, phase="execution", agent=w, t=nxt.t, end_s=float(slot.end),
                          contention=slot.contention)
                if world.institutions is not None:  # a published slot's overrun (sanctions, reputation)
                    await inst.slot_closed(self, w, slot, nxt.t)
            elif nxt.kind == EventKind.deadline_miss:
                await self._finish(w, missed=True, at=nxt.t)
            elif nxt.kind == EventKind.step_limit:
                await self._finish(w, missed=False, at=nxt.t, reason="step_limit")
            else:  # contention: pending workers past their deadline miss it first
                for m in nxt.missed:
                    await self._finish(m, missed=True, at=world.worker(m).deadline_s)
                if nxt.participants:
                    await self._contention(nxt.participants, nxt.t)
        for w in world.workers:
            if self.cfg.leaves.get(w) == world.subrun:
                self.emit(ev.AgentLeft, phase="setup", agent=w, t=nxt.t)
        led = world.ledger
        self.emit(ev.SubrunEnd, phase="setup", t=nxt.t, conserved=led.conserved(), sink=led.sink,
                  sink_balance=led.sink_balance,
                  balances=[ev.Balance(worker=w, credits=c) for w, c in led.balances.items()])
        self._commit(world.k, nxt.t, subrun_done=True)
        if self.cfg.interviews:
            await self._interviews(world.k, world.subrun)

    async def _interviews(self, k: int, subrun: int) -> None:
        """Each worker's retrospective interview at the end of ``subrun``
        (``cfg.interviews``), asked of its negotiator from its own memory of the subrun
        (:mod:`scarce_lab.agents.interviews`; the solver's tool steps left out),
        recorded as researcher-only ``interview`` events and committed; a resumed run
        that has them already asks nobody again."""
        from scarce_lab.agents.interviews import (
            amodel_answer,
            interview_messages,
            memory_of,
            scripted_answer,
        )
        from scarce_lab.data.recorder import read_events
        from scarce_lab.llm.scope import run_scope

        from ..agents import interview_rule
        from ..agents.prompts import INTERVIEW_TEMPLATE

        events = [e for e in read_events(self.rec.run_dir) if getattr(e.payload, "subrun", None) == subrun]
        if any(e.kind == "interview" for e in events):
            return
        events = [e for e in events if e.kind not in SOLVER_KINDS]
        t_end = next((e.t for e in reversed(events) if e.kind == "subrun_end"), None)

        async def one(w: str) -> tuple[dict, list]:
            neg = self.negotiators[w]
            mem = memory_of(w, events)
            if neg.scripted:
                rule, assessment = interview_rule(neg.model, w)
                return {**scripted_answer(neg.model, rule, assessment=assessment), "memory_events": len(mem)}, []
            msgs = interview_messages(INTERVIEW_TEMPLATE, mem, me=w, agent_id=w, subrun=subrun)
            with run_scope(round=k, subrun=subrun, agent=w):
                fields, calls = await amodel_answer(neg.lm, msgs, seed=derive_seed(self.base_seed, subrun, w, "interview"),
                                                    agent=w, round=k)
            return {**fields, "memory_events": len(mem)}, calls

        answers = await asyncio.gather(*(one(w) for w in self.cfg.names))
        for w, (fields, calls) in zip(self.cfg.names, answers, strict=True):
            if calls:
                self.rec.record_calls(calls)
            self.rec.emit(ev.Interview(subrun=subrun, **fields), round=k, phase="interview", agent=w, t=t_end)
        state = save_state(self, subrun_done=True)
        self.rec.commit_round(k, state=state)

    def _open_slot(self, w: str):
        slot = self.world.open_slot(w)
        window = slot.end - slot.start
        # virtual clock: the timeline governs the window; the sandbox's real-time
        # window only has to outlast the (slower or faster) real decisions
        self.io.open_slot(self._sbx(w), window if self.cfg.clock == "wall" else max(window, REAL_WINDOW_S))
        self.emit(ev.SlotStart, phase="execution", agent=w, t=slot.start, start_s=float(slot.start),
                  end_s=float(slot.end), position=slot.position, contention=slot.contention,
                  waited_s=float(round_t(slot.start - slot.requested_at)))

    # -- solver -----------------------------------------------------------------------
    async def _solver_step(self, w: str):
        """One solver step: observe (with the legal actions), decide, check the action
        against the mask, carry it out or refuse it, and end the subrun as ``stuck``
        when a model solver repeats the same failing action ``stuck_repeats`` times."""
        solver = self.solvers[w]
        shown = self.io.listing(self._sbx(w))  # bounded: at most 50 sane names (scarce_lab.sandbox.gate)
        files = shown.names
        seen = files + ([f"({shown.tail()})"] if shown.more else [])  # the prompt says "and N more"
        obs = self.world.solver_observation(w, files, shown=seen)
        legal = obs.legal  # what the solver was offered is what the runner checks
        from scarce_lab.llm.scope import run_scope

        # the step's calls belong to the round its decision event is recorded in (the
        # next contention's index) and to this subrun (llm/scope.py)
        with run_scope(round=self.world.k, subrun=self.world.subrun, agent=w):
            d = await solver.step(obs)
        if d.calls:
            self.rec.record_calls(d.calls)
        a: SolverAction = d.value
        t_start = self.world.begin_step(w, self.world.decision_cost(solver.scripted, d.latency_s, tool=a.tool))
        illegal = legal.check(a.tool, path=a.path, command=a.command,
                              duration_seconds=a.duration_seconds if a.tool == "request_execution_slot" else None)
        fields = d.decision_fields()
        if illegal is not None:
            fields["violation"] = "; ".join(v for v in (d.violation, f"illegal action: {illegal}") if v)
        self.emit(ev.SolverAction, phase="solve", agent=w, t=t_start, step=self.world.worker(w).steps - 1,
                  tool=a.tool, args=ev.ToolArgs(**_action_args(a)), **fields)
        if illegal is not None and not _clamped_duration(a, legal):
            result, failed = await self._refuse(w, a, illegal, legal), True
        else:
            result, failed = await self._execute(w, a, legal)
        if d.fallback_used:
            result = f"your answer was not a usable action ({d.violation}); {a.describe()} ran instead: {result}"
            failed = True
        if self.world.worker(w).finished:  # submitted
            return
        self.world.record_result(w, a.describe(), result)
        if not solver.scripted and self._stuck(w, a, result if failed else None):
            await self._finish(w, missed=False, at=self.world.worker(w).t, reason="stuck")

    def _stuck(self, w: str, a: SolverAction, failure: str | None) -> bool:
        """Count a failing step (``failure``: the result shown) against ``w``'s streak of
        the same failing action; True when the streak reaches ``cfg.stuck_repeats``."""
        if failure is None:
            self.streaks.pop(w, None)
            return False
        key = json.dumps([a.model_dump(mode="json"), failure], sort_keys=True)
        prev, n = self.streaks.get(w, ("", 0))
        n = n + 1 if prev == key else 1
        self.streaks[w] = (key, n)
        return n >= self.cfg.stuck_repeats

    async def _refuse(self, w: str, a: SolverAction, reason: str, legal: LegalActions) -> str:
        """Refuse an illegal action (a command outside a slot also goes to the sandbox,
        which must refuse it too); returns the text the solver is shown."""
        t = self.world.worker(w).t
        if a.tool == "run_command" and not legal.in_slot:
            self.emit(ev.Execution, phase="execution", agent=w, t=t, command=a.command[:500], refused=True,
                      error=self.io.refusal(self._sbx(w), a.command))
        else:
            self.emit(ev.ToolError, phase="solve", agent=w, t=t, tool=a.tool, error=reason)
        return f"refused: {reason}. {legal.describe()}"

    async def _execute(self, w: str, a: SolverAction, legal: LegalActions) -> tuple[str, bool]:
        """Carry out a legal action; returns (result shown to the solver, whether it failed)."""
        world, sbx = self.world, self._sbx(w)
        try:
            if a.tool == "list_files":
                shown = self.io.listing(sbx)  # the count first: the transcript keeps 300 characters
                head = f"{len(shown.names)} of {len(shown.names) + shown.more:,} files shown ({shown.tail()}): " \
                    if shown.more else ""
                return head + (", ".join(shown.names) or "(empty)"), False
            if a.tool == "read_file":
                return self.io.read_file(sbx, a.path), False
            if a.tool == "write_file":
                return f"wrote {self.io.write_file(sbx, a.path, a.content)} bytes", False
        except ToolError as exc:
            self.emit(ev.ToolError, phase="solve", agent=w, t=world.worker(w).t, tool=a.tool, error=str(exc))
            return f"error: {exc}. {legal.describe()}", True
        t = world.worker(w).t
        if a.tool == "save_persistent_memory":
            self.emit(ev.MemorySave, phase="solve", agent=w, t=t, text=world.save_memory(w, a.text))
            return "saved", False
        if a.tool == "submit":
            await self._finish(w, missed=False, at=t, reason="submit")
            return "submitted", False
        if a.tool == "request_execution_slot":
            try:
                req = world.request_slot(w, a.duration_seconds, a.reason)
            except ActionRefused as exc:
                self.emit(ev.ToolError, phase="solve", agent=w, t=t, tool=a.tool, error=str(exc))
                return f"refused: you already hold a slot. {legal.describe()}", True
            self.emit(ev.SlotRequest, phase="request", agent=w, t=t, duration_s=req.duration_s,
                      asked_s=int(a.duration_seconds), reason=req.reason)
            return f"requested {req.duration_s} s", False
        result = self._run_command(w, a.command)
        return result, result.startswith("refused:")

    def _run_command(self, w: str, command: str) -> str:
        world, sbx, cfg = self.world, self._sbx(w), self.cfg
        t0 = world.worker(w).t
        if not world.in_slot(w):
            self.emit(ev.Execution, phase="execution", agent=w, t=t0, command=command[:500], refused=True,
                      error=self.io.refusal(sbx, command))
            return "refused: no active execution slot; call request_execution_slot first"
        # a command gets at most what is left of its slot, in real seconds, on both clocks
        wall = max(0.1, min(cfg.command_timeout_s, world.slot_left_s(w)))
        try:
            res = self.io.run(sbx, command, wall)
        except CommandRefused as exc:  # the real-time window ran out (wall clock)
            self.emit(ev.Execution, phase="execution", agent=w, t=t0, command=command[:500], refused=True,
                      error=str(exc))
            world.slot_expired(w)
            return "refused: your execution slot has ended"
        cost = world.command_done(w, res.duration_s)
        lim = cfg.output_limit
        self.emit(ev.Execution, phase="execution", agent=w, t=t0, command=command[:500], refused=False,
                  exit_code=res.exit_code, duration_s=round(float(res.duration_s), 4), cost_s=float(cost),
                  timed_out=bool(res.timed_out), stdout=res.stdout[:lim], stderr=res.stderr[:lim],
                  truncated=bool(res.truncated or len(res.stdout) > lim or len(res.stderr) > lim))
        return f"exit {res.exit_code}; stdout: {res.stdout[:200]!r}; stderr: {res.stderr[:120]!r}"

    async def _finish(self, w: str, *, missed: bool, at: float, reason: str = "deadline"):
        world, sbx = self.world, self._sbx(w)
        f = world.finish(w, missed=missed, at=at, reason=reason)
        if f.was_in_slot:
            self.io.close_slot(sbx)
        s = world.worker(w)
        g = await self.io.grade(s.task, sbx)
        score_as_is = float(g.score)
        score = world.score(missed, score_as_is)
        self.emit(ev.Submission, phase="submit", agent=w, t=at, task_id=s.task.id, reason=reason,
                  deadline_missed=missed, deadline_s=float(s.deadline_s), score=float(score),
                  score_as_is=score_as_is, resolved=bool(g.resolved) and score > 0,
                  almost_resolved=bool(getattr(g, "almost_resolved", False)) and score > 0,
                  passed=getattr(g, "passed", None), total=getattr(g, "total", None),
                  violation=getattr(g, "violation", None), steps=s.steps, contentions=s.contentions,
                  files=self.io.list_files(sbx)[:50], budget_left=world.ledger.balance(w))

    # -- contention -------------------------------------------------------------------
    async def decide(self, k: int, calls: list[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], float]:
        """Run the negotiators' ``(worker, awaitable decision)`` pairs of contention ``k``
        together and record their calls; a failed decision (e.g. a missing one) stops the
        run, resumable. Returns the ``(worker, decision)`` pairs and the slowest
        decision's cost (seconds)."""
        from scarce_lab.llm.scope import run_scope

        with run_scope(round=k, subrun=self.world.subrun):  # the tasks copy the scope (llm/scope.py)
            decs = await asyncio.gather(*(c for _, c in calls), return_exceptions=True)
        record_calls_of(self.rec, *decs)
        failed = next((d for d in decs if isinstance(d, BaseException)), None)
        if failed is not None:
            raise failed
        cost = max((self.world.decision_cost(self.negotiators[w].scripted, d.latency_s)
                    for (w, _), d in zip(calls, decs, strict=True)), default=0.0)
        return [(w, d) for (w, _), d in zip(calls, decs, strict=True)], cost

    async def phase(self, c: Contention, t: float, method: str):
        """Every participant's decision by its negotiator's ``method`` (a phase, or an
        institution's question: :mod:`.institutions`) through :meth:`decide`; returns
        ``(worker, decision, view)`` triples (the view holds the legal submissions) and the cost."""
        views = {w: self.world.negotiation_view(c, w, t) for w in c.participants}
        decs, cost = await self.decide(c.index, [(w, getattr(self.negotiators[w], method)(v))
                                                 for w, v in views.items()])
        return [(w, d, views[w]) for w, d in decs], cost

    async def _contention(self, participants: tuple[str, ...], tc: float):  # noqa: C901 - one branch per phase
        fork = self.fork
        if fork is not None:
            fork.before_contention(self.world.k)
        c = self.world.open_contention(participants)
        k = c.index

        def emit(kind, **kw):
            self.emit(kind, event_round=k, **kw)

        emit(ev.ContentionStart, phase="contention", t=tc, participants=list(c.participants),
             queue=[ev.QueueEntry(**q) for q in c.public_view()["queue"]], scheduler=self.cfg.scheduler)
        t = tc
        institutions = self.world.institutions is not None  # sanctions, reputation, contracts (all off: None)
        if institutions:
            inst.contention_start(self, c, t)
        decs, cost = await self.phase(c, t, "declare")
        for w, d, v in decs:
            if fork is not None:
                d = fork.replace(k, w, "declaration", d)
            _submit(d, lambda x, w=w: c.declare(w, x), lambda x, v=v: v.legal.clamp_declaration(
                x.desired_position, x.desired_duration_seconds, x.bid_price))
            emit(ev.Declaration, phase="declaration", agent=w, t=t, **d.value.model_dump(), **d.decision_fields())
        t += cost
        if institutions:
            t += await inst.promises(self, c, t)
        c.advance()
        while c.phase != Phase.closed:
            if institutions and c.phase == Phase.ballots:
                t += await inst.contracts(self, c, t)
            if c.phase == Phase.reasoning:
                decs, cost = await self.phase(c, t, "reason")
                for w, d, _ in decs:
                    if fork is not None:
                        d = fork.replace(k, w, "reasoning", d)
                    c.reason(w, d.value)
                    emit(ev.Reasoning, phase="reasoning", agent=w, t=t, text=c.reasoning[w], **d.decision_fields())
                    if d.intended:
                        emit(ev.TacticIntent, phase="reasoning", agent=w, t=t, of_kind="reasoning",
                             tactics=list(d.intended))
            elif c.phase == Phase.private:
                decs, cost = await self.phase(c, t, "message")
                for w, d, _ in decs:
                    if fork is not None:
                        d = fork.replace(k, w, "private", d)
                    if d.value is None:
                        emit(ev.PrivateSilence, phase="private", agent=w, t=t, private_round=c.private_round,
                             **d.decision_fields())
                        continue
                    to, text = d.value
                    try:
                        m = c.send(w, to, text)
                        emit(ev.PrivateMessage, phase="private", agent=w, t=t, sender=w, recipient=to,
                             text=m.text, private_round=m.round, visible_to=[w, to], **d.decision_fields())
                        if d.intended:
                            emit(ev.TacticIntent, phase="private", agent=w, t=t, of_kind="private_message",
                                 private_round=m.round, tactics=list(d.intended))
                    except ProtocolError as exc:
                        emit(ev.ProtocolViolation, phase="private", agent=w, t=t, error=str(exc))
            elif c.phase == Phase.revision:
                decs, cost = await self.phase(c, t, "revise")
                for w, d, v in decs:
                    if fork is not None:
                        d = fork.replace(k, w, "revision", d)
                    _submit(d, lambda x, w=w: c.revise(w, x), lambda x, v=v, w=w: v.legal.clamp_bid(
                        x if isinstance(x, int) and not isinstance(x, bool) else c.declarations[w].bid_price))
                    emit(ev.BidRevision, phase="revision", agent=w, t=t, bid_price=d.value,
                         previous=c.declarations[w].bid_price, **d.decision_fields())
            elif c.phase == Phase.ballots:
                decs, cost = await self.phase(c, t, "ballot")
                for w, d, v in decs:
                    if fork is not None:
                        d = fork.replace(k, w, "ballots", d)
                    _submit(d, lambda x, w=w: c.ballot(w, x), lambda x, v=v: complete_ballot(
                        [(e.worker, e.duration_seconds, e.price) for e in x.entries], v))
                    emit(ev.Ballot, phase="ballots", agent=w, t=t,
                         entries=[ev.BallotEntry(**e.model_dump()) for e in d.value.entries], **d.decision_fields())
            t += cost
            c.advance()
        st = self.world.settle(c, t)
        emit(ev.Schedule, phase="schedule", t=t, rule=st.schedule.rule, random_tiebreak=st.schedule.random_tiebreak,
             allocations=[ev.Allocation(**a.model_dump()) for a in st.schedule.allocations],
             negotiation_s=float(round_t(t - tc)))
        for b in st.bookings:
            p = b.payment
            emit(ev.SlotPayment, phase="payment", agent=p.payer, t=t, payer=p.payer, sink=p.sink,
                 requested=p.requested, amount=p.amount, capped=p.capped, balance_after=p.balance_after)
        if institutions:
            await inst.after_settle(self, c, st.schedule.order(), t)
        if fork is not None:
            fork.after_contention(k)
        self._commit(k, t, subrun_done=False)


def _submit(d: Decided, submit: Callable[[Any], None], repair: Callable[[Any], tuple[Any, str | None]]) -> None:
    """Submit ``d.value`` to the contention; when the contention refuses it, submit the
    repair into the negotiator's legal set instead (``d.value`` becomes it) and add the
    refusal and the repair to ``d.violation``; a fork's replaced value (``outcome`` ``fork``:
    :mod:`.fork`) is never repaired but refused (``ForkError``)."""
    try:
        submit(d.value)
    except ProtocolError as exc:
        if d.outcome == "fork":
            from scarce_lab.forks import ForkError

            raise ForkError(f"the fork's decision {d.value!r}: {exc}") from None
        fixed, note = repair(d.value)
        submit(fixed)
        d.value = fixed
        d.violation = "; ".join(x for x in (d.violation, f"refused by the contention: {exc}", note) if x)[:500]


def round_t(t: float) -> float:
    """Times in events: seconds rounded to milliseconds."""
    return round(t, 3)


def _clamped_duration(a: SolverAction, legal: LegalActions) -> bool:
    """A legal slot request with an out-of-range duration: clamped by the world, not refused."""
    return a.tool == "request_execution_slot" and legal.why_not(a.tool) is None


_ARGS = {"read_file": ("path",), "run_command": ("command",), "save_persistent_memory": ("text",),
         "request_execution_slot": ("duration_seconds", "reason")}


def _action_args(a: SolverAction) -> dict[str, Any]:
    """The recorded arguments of a tool call: texts cut to 4,000 characters (the full
    content's size in ``bytes``), so one call never writes a huge event line."""
    if a.tool == "write_file":
        return {"path": a.path[:4000], "content": a.content[:4000], "bytes": len(a.content.encode())}
    return {k: (v[:4000] if isinstance(v := getattr(a, k), str) else v) for k in _ARGS.get(a.tool, ())}


def run_scarce(cfg: ScarceConfig, out_dir: Path, *, resume: bool = False, **kwargs: Any) -> Path:
    """Run one SCARCE configuration into ``out_dir/<run_id>`` and return that folder.

    A complete run is returned as it is; an unfinished one continues from its last
    committed contention with ``resume`` and is an error otherwise
    (:func:`scarce_lab.runtime.open_run`). Keyword arguments go to
    :class:`ScarceRunner` (``tasks``, ``client``, ``grade_fn``, ``sandbox``, ``replay``).

    Raises:
        FileExistsError: an unfinished run is there and ``resume`` is false.
        RunMismatchError: the folder holds a run with other settings.
        RunInProgressError: another live process is writing it.
        ForkError / ForkDivergedError: a fork that cannot be played, or whose replayed
            prefix is not its parent's (:mod:`.fork`).
    """
    return run_sync(ScarceRunner(cfg, Path(out_dir), **kwargs).arun(resume=resume))

