"""SCARCE's world: workers, slots, the queue, deadlines, payments and memory, as a
pure discrete-event state machine (no I/O, no agents, no asyncio; picklable).

SCARCE: ``N`` workers share one execution sandbox for up to
four subruns. Each worker has a task, a private budget (credits) and a private
deadline (seconds since its subrun started). A worker's solver takes steps on its
own timeline; when it asks for an execution slot it waits for a *contention*
(:class:`~.protocol.Contention`), whose schedule books slots on the shared sandbox
back to back and charges payments.

Loop (the runner performs the I/O the world asks for)::

    world = ScarceWorld(rules)
    for k in range(rules.subruns):
        world.start_subrun(tasks_of_subrun_k)
        while (ev := world.next_event()).kind != EventKind.subrun_end:
            ...  # act on ev, feeding results back through the methods named below

:meth:`ScarceWorld.next_event` chooses what happens next (nothing changes until the
runner acts on it):

1. No live worker (every one ``done`` or ``missed``): ``subrun_end`` at the latest
   worker time.
2. Pending requests: a contention is due at ``tc = max(sandbox free time, earliest
   pending request time)``.
3. The worker that is not waiting for a contention with the earliest *next time*
   (its slot start when ``queued``, else its clock; ties: worker order) moves if its
   next time is ``<= tc``; its move is, in this order of checks:
   ``deadline_miss`` (queued and its slot starts at or after its deadline: the booked,
   paid slot stays idle), ``slot_open`` (queued), ``slot_close`` (in its slot and its
   clock reached the slot end or its deadline), ``deadline_miss`` (its clock reached
   its deadline), ``step_limit`` (``max_solver_steps`` steps taken; an automatic
   submission), else ``solver_step``.
4. Otherwise ``contention`` at ``tc``: first every pending worker with
   ``tc >= deadline`` misses its deadline (``missed``, in worker order, each at its
   deadline), then the others negotiate (``participants``; none when all missed).

Rules worth knowing:

* Time (:class:`~.clock.ClockConfig`): a decision costs ``call_cost`` (scripted or
  model), except a step whose tool is in :data:`~.state.FREE_TOOLS`
  (``save_persistent_memory``: "free, costs no deadline time"), which costs 0 s; a
  command ``command_cost`` and never runs past the slot end; a contention phase costs
  the slowest participant's decision; slots occupy their allocated seconds. Waiting in
  the queue counts against the deadline.
* Payments are charged when the schedule is fixed (``min(price, budget)``,
  :meth:`~.budgets.Ledger.charge_capped`), also if the worker later misses its
  deadline while queued. Credits are conserved per subrun.
* A deadline miss scores 0 when ``zero_score_on_miss`` (default); the grade of the
  work as it was is kept as ``score_as_is`` (:meth:`ScarceWorld.score`).
* ``memory`` (what a negotiator sees; :meth:`ScarceWorld.negotiation_view`): ``none``
  only the current contention; ``subrun`` adds this subrun's public history (last
  ``history_k`` contentions), its own past negotiations (last ``history_k``) and its
  saved notes; ``cross`` (the SCARCE paper's baseline, :data:`~.state.PAPER_MEMORY`,
  and the default) carries all of these, and the solver's saved notes, across
  subruns. Solvers always see their notes of the current horizon. The memory-horizon
  experiment varies this setting around the paper's ``cross``.
* Per-worker memory (``rules.worker_memory``) overrides ``memory`` for one worker;
  joins and leaves (``rules.joins`` / ``rules.leaves``, 0-based subruns) change who
  plays a subrun (:meth:`WorldRules.present`): absent workers have no state, no
  budget, no task, take part in no contention and receive no message. A newcomer's
  public history starts at the subrun it joined.
* ``clock="wall"``: measured durations on the same timeline (not bit-reproducible).

Observations come only from here (:mod:`.observations`), built from one worker's
state; see ``tests/envs/test_scarce_world.py`` for the privacy check.

Errors: acting on a worker in the wrong state raises :class:`WorldError` naming the
worker, its status and the action; :class:`ActionRefused` is a refused agent action
(the agent is told, the run goes on).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .actions import LegalActions, legal_actions, legal_negotiation
from .budgets import Ledger
from .clock import SandboxTimeline, remaining_s
from .institutions import Institutions
from .observations import NegotiationView, SolverObservation
from .protocol import AuctionHistory, Contention, Request
from .scheduler import aggregate_ballots, baseline_schedule
from .state import (
    FREE_TOOLS,
    ActionRefused,
    Booking,
    EventKind,
    Finish,
    NextEvent,
    Settlement,
    Slot,
    Status,
    WorkerState,
    WorldError,
    WorldRules,
)

__all__ = ["ScarceWorld"]


class ScarceWorld:
    """The SCARCE world of one run (see the module docstring for the rules).

    State (all picklable): ``subrun`` (-1 before the first), ``k`` (index of the next
    contention, run-wide; events between contentions carry it), ``history`` (public
    outcomes), ``ledger`` and ``timeline`` (per subrun), ``workers`` (per subrun),
    ``institutions`` (:mod:`.institutions`; ``None`` when every module is off, also in a
    world pickled before they existed).
    """

    institutions: Institutions | None = None

    def __init__(self, rules: WorldRules):
        self.rules = rules
        self.mechanism = rules.mechanism_config()
        self.history = AuctionHistory()
        self.k = 0
        self.subrun = -1
        self.memories: dict[str, list[str]] = {w: [] for w in rules.workers}
        self.own_history: dict[str, list[dict[str, Any]]] = {w: [] for w in rules.workers}
        self.ledger = Ledger(dict(rules.budgets))
        self.timeline = SandboxTimeline()
        self.workers: dict[str, WorkerState] = {}
        #: sanctions, reputation, contracts (:mod:`.institutions`); None when all are off
        ins = rules.institutions
        self.institutions: Institutions | None = Institutions(ins, rules.workers) if ins is not None and ins.on else None

    # -- subruns ----------------------------------------------------------------------
    def start_subrun(self, tasks: Mapping[str, Any]) -> None:
        """Begin the next subrun: fresh budgets, deadlines, an idle sandbox; memories
        reset unless the worker's horizon is ``cross``. Only the workers present in
        this subrun play (``rules.joins`` / ``rules.leaves``): a newcomer's budget and
        deadline apply from its first subrun, as every worker's do.

        Raises:
            WorldError: all subruns played, or the current one is not over.
            ValueError: ``tasks`` does not give one task per worker (every worker of
                the run, or exactly those present).
        """
        if self.subrun + 1 >= self.rules.subruns:
            raise WorldError(f"all {self.rules.subruns} subruns have been played")
        live = [w for w, s in self.workers.items() if not s.finished]
        if live:
            raise WorldError(f"subrun {self.subrun} is not over: {live} still live")
        present = self.rules.present(self.subrun + 1)
        if set(tasks) != set(self.rules.workers) and set(tasks) != set(present):
            raise ValueError(f"tasks must give one task per worker {list(present)}, got {sorted(tasks)}")
        self.subrun += 1
        self.ledger = Ledger({w: self.rules.budgets[w] for w in present})
        self.timeline = SandboxTimeline()
        self.workers = {}
        for w in present:
            if self.rules.memory_of(w) != "cross":
                self.memories[w] = []
                self.own_history[w] = []
            self.workers[w] = WorkerState(w, tasks[w], float(self.rules.deadlines_s[w]),
                                          memories=self.memories[w], own_history=self.own_history[w])

    @property
    def over(self) -> bool:
        """True once the last subrun has started and every worker finished it."""
        return self.subrun + 1 >= self.rules.subruns and bool(self.workers) and all(
            s.finished for s in self.workers.values())

    # -- the next event ---------------------------------------------------------------
    def next_event(self) -> NextEvent:
        """What happens next (module docstring, steps 1-4). Changes nothing.

        Raises:
            WorldError: no subrun started.
        """
        if not self.workers:
            raise WorldError("no subrun started: call start_subrun first")
        live = [s for s in self.workers.values() if not s.finished]
        if not live:
            return NextEvent(EventKind.subrun_end, t=max(s.t for s in self.workers.values()))
        pending = [s for s in live if s.status == Status.requested]
        tc = max(self.timeline.free_at, min(s.request.time_s for s in pending)) if pending else math.inf
        movers = sorted((s.next_time(), i, s.name) for i, s in enumerate(live) if s.status != Status.requested)
        if movers and movers[0][0] <= tc:
            return self._move(self.workers[movers[0][2]])
        return NextEvent(EventKind.contention, t=tc,
                         missed=tuple(s.name for s in pending if tc >= s.deadline_s),
                         participants=tuple(s.name for s in pending if tc < s.deadline_s))

    def _move(self, s: WorkerState) -> NextEvent:
        if s.status == Status.queued:
            if s.slot.start >= s.deadline_s:
                return NextEvent(EventKind.deadline_miss, t=s.deadline_s, worker=s.name)
            return NextEvent(EventKind.slot_open, t=s.slot.start, worker=s.name)
        if s.status == Status.in_slot and s.t >= min(s.slot.end, s.deadline_s):
            return NextEvent(EventKind.slot_close, t=s.t, worker=s.name)
        if s.t >= s.deadline_s:
            return NextEvent(EventKind.deadline_miss, t=s.deadline_s, worker=s.name)
        if s.steps >= self.rules.max_solver_steps:
            return NextEvent(EventKind.step_limit, t=s.t, worker=s.name)
        return NextEvent(EventKind.solver_step, t=s.t, worker=s.name)

    # -- worker moves -----------------------------------------------------------------
    def worker(self, name: str) -> WorkerState:
        """The state of worker ``name`` in this subrun.

        Raises:
            KeyError: unknown worker.
        """
        if name not in self.workers:
            raise KeyError(f"unknown worker {name!r} (this subrun has {list(self.workers)})")
        return self.workers[name]

    def _expect(self, name: str, action: str, *statuses: Status) -> WorkerState:
        s = self.worker(name)
        if s.status not in statuses:
            raise WorldError(f"{action}: worker {name!r} is {s.status}, needs {[str(x) for x in statuses]}")
        return s

    def open_slot(self, name: str) -> Slot:
        """Start a queued worker's booked slot: its clock jumps to the slot start.

        Raises:
            WorldError: not queued, or the slot starts at or after its deadline.
        """
        s = self._expect(name, "open_slot", Status.queued)
        if s.slot.start >= s.deadline_s:
            raise WorldError(f"open_slot: {name!r}'s slot starts at {s.slot.start} s, after its deadline")
        s.t, s.status = s.slot.start, Status.in_slot
        return s.slot

    def close_slot(self, name: str) -> Slot:
        """End an open slot (its end or the deadline was reached); the worker is active again.

        Raises:
            WorldError: no open slot.
        """
        s = self._expect(name, "close_slot", Status.in_slot)
        slot, s.status, s.slot = s.slot, Status.active, None
        return slot

    def finish(self, name: str, *, missed: bool, at: float, reason: str = "deadline") -> Finish:
        """End a worker's subrun at ``at`` seconds (``missed``: its deadline passed).

        Raises:
            WorldError: already finished.
        """
        s = self.worker(name)
        if s.finished:
            raise WorldError(f"finish: worker {name!r} is already {s.status}")
        was_in_slot = s.status == Status.in_slot
        s.status = Status.missed if missed else Status.done
        s.t, s.request = at, None
        return Finish(name, missed, at, reason, was_in_slot)

    def score(self, missed: bool, score_as_is: float) -> float:
        """The score that counts: 0 for a deadline miss under ``zero_score_on_miss``."""
        return 0.0 if (missed and self.rules.zero_score_on_miss) else float(score_as_is)

    # -- solver steps -----------------------------------------------------------------
    def begin_step(self, name: str, cost_s: float) -> float:
        """Account one solver decision costing ``cost_s`` seconds; returns its start time.

        Raises:
            WorldError: the worker is not active or in its slot.
        """
        s = self._expect(name, "solver step", Status.active, Status.in_slot)
        t0 = s.t
        s.t += cost_s
        s.steps += 1
        return t0

    def record_result(self, name: str, action: str, result: str) -> None:
        """Append ``(action, first 300 characters of result)`` to the worker's transcript."""
        self.worker(name).transcript.append({"action": action, "result": result[:300]})

    def save_memory(self, name: str, text: str) -> str:
        """Save a note (stripped, at most 500 characters); returns what was saved."""
        note = text.strip()[:500]
        self.worker(name).memories.append(note)
        return note

    def request_slot(self, name: str, asked_s: float, reason: str) -> Request:
        """A slot request at the worker's clock for ``asked_s`` seconds, clamped to
        ``1..slot_cap_s``; the reason is cut to 300 characters.

        Raises:
            ActionRefused: the worker holds an open slot.
            WorldError: the worker is not active.
        """
        s = self.worker(name)
        if s.status == Status.in_slot:
            raise ActionRefused("request while holding a slot")
        self._expect(name, "request_slot", Status.active)
        dur = max(1, min(int(asked_s), self.rules.slot_cap_s))
        s.request = Request(worker=name, time_s=s.t, duration_s=dur, reason=reason[:300])
        s.status = Status.requested
        return s.request

    def in_slot(self, name: str) -> bool:
        return self.worker(name).status == Status.in_slot

    def slot_left_s(self, name: str) -> float:
        """Slot end minus the worker's clock (seconds; negative when a decision overran it)."""
        s = self._expect(name, "slot_left_s", Status.in_slot)
        return s.slot.end - s.t

    def command_done(self, name: str, measured_s: float) -> float:
        """Account a command that ran for ``measured_s`` real seconds; returns its cost
        on the timeline: the clock's cost, or the real duration when that is larger (a
        slow command cannot run longer than it is charged), never past the slot end.

        Raises:
            WorldError: no open slot.
        """
        s = self._expect(name, "command_done", Status.in_slot)
        cost = max(self.rules.clock.command_cost(measured_s), max(0.0, measured_s))
        s.t = min(s.t + cost, s.slot.end)
        return cost

    def slot_expired(self, name: str) -> None:
        """The sandbox refused a command because the real-time window ran out (wall
        clock): the worker's clock moves to its slot end."""
        s = self._expect(name, "slot_expired", Status.in_slot)
        s.t = s.slot.end

    def decision_cost(self, scripted: bool, measured_s: float = 0.0, tool: str | None = None) -> float:
        """Seconds one decision takes on the timeline (:meth:`ClockConfig.call_cost`);
        0 for a solver step whose ``tool`` is in :data:`~.state.FREE_TOOLS`
        (``save_persistent_memory`` costs no deadline time)."""
        if tool in FREE_TOOLS:
            return 0.0
        return self.rules.clock.call_cost(scripted=scripted, measured_s=measured_s)

    # -- contentions ------------------------------------------------------------------
    def open_contention(self, participants: Sequence[str]) -> Contention:
        """A contention (index ``k``) among workers with pending requests.

        Raises:
            WorldError: a participant has no pending request.
        """
        reqs = [self._expect(w, "contention", Status.requested).request for w in participants]
        c = Contention(self.k, reqs, self.mechanism)
        if self.institutions is not None:
            self.institutions.open(c.index, c.participants)
        return c

    def settle(self, c: Contention, t: float) -> Settlement:
        """Fix the schedule of a closed contention at ``t`` seconds, book the slots back
        to back, charge ``min(price, balance)``, record the public outcome; ``k`` then
        moves to the next contention.

        Raises:
            WorldError: the contention is not this world's next one, or a participant
                got no allocation.
        """
        if c.index != self.k:
            raise WorldError(f"settle: contention {c.index} is not the current one ({self.k})")
        r, names = self.rules, c.participants
        times = {w: c.requests[w].time_s for w in names}
        if r.scheduler == "ballots":
            sched = aggregate_ballots(names, c.ballots, c.declarations, times, mechanism=r.mechanism,
                                      final_bids=c.revised_bids, slot_cap_s=r.slot_cap_s,
                                      seed_key=f"{r.seed}:{self.k}")
        else:
            sched = baseline_schedule(r.scheduler, names, c.declarations, times,
                                      deadlines={w: self.workers[w].deadline_s for w in names},
                                      slot_cap_s=r.slot_cap_s)
        if sorted(sched.order()) != sorted(names):
            raise WorldError(f"settle: schedule {sched.order()} does not allocate every participant {names}")
        bookings, public = [], []
        for a in sched.allocations:
            s = self.workers[a.worker]
            start, end = self.timeline.book(t, a.duration_s)
            pay = self.ledger.charge_capped(a.worker, a.price, ref=f"c{self.k}")
            s.slot = Slot(start, end, a.position, self.k, times[a.worker])
            s.status, s.request, s.t = Status.queued, None, t
            s.contentions += 1
            s.own_history.append({"contention": self.k, "bid": c.current_bid(a.worker),
                                  "desired_duration_s": c.declarations[a.worker].desired_duration_seconds,
                                  "position": a.position, "n": len(names), "duration_s": a.duration_s,
                                  "paid": pay.amount})
            public.append({"worker": a.worker, "position": a.position, "duration_s": a.duration_s,
                           "payment": pay.amount})
            bookings.append(Booking(a, s.slot, pay))
        self.history.record(self.k, public, {w: c.current_bid(w) for w in names})
        self.history.rows[-1]["subrun"] = self.subrun
        self.k += 1
        return Settlement(c.index, t, sched, tuple(bookings))

    # -- observations -----------------------------------------------------------------
    def negotiation_view(self, c: Contention, name: str, t: float) -> NegotiationView:
        """What worker ``name``'s negotiator sees at ``t`` seconds in contention ``c``:
        the contention's public view plus its own private messages, public history and
        its own past negotiations and notes under the memory horizon, its own budget,
        deadline and remaining time, and what it may submit (its legal negotiation,
        :class:`~.actions.LegalNegotiation`). Nothing of another worker's private state."""
        s, r = self.worker(name), self.rules
        memory = r.memory_of(name)
        if memory == "none":
            hist, own, notes = [], [], []
        else:  # a newcomer sees no public history from before it joined, even under cross
            first = self.subrun if memory == "subrun" else r.joins.get(name, 0)
            rows = [x for x in self.history.rows if x.get("subrun", 0) >= first] if first else self.history.rows
            hist = rows[-r.history_k:] if r.history_k else []
            own = s.own_history[-r.history_k:]
            notes = list(s.memories)
        contention = c.private_view(name)
        legal = legal_negotiation(name, participants=c.participants, slot_cap_s=c.config.slot_cap_s,
                                  own_budget=self.ledger.balance(name))
        if self.institutions is not None:  # only when a module is on: otherwise the view is as before
            contention["institutions"] = self.institutions.public(c.index) if c.phase != "declaration" else {
                k: v for k, v in self.institutions.public(c.index).items() if k != "promises"}
            if self.rules.institutions.contracts:
                contention["your_contracts"] = self.institutions.private(name)
            legal = legal.with_institutions(self.institutions.legal(
                name, c.participants, self.ledger.balance(name), negotiated=c.config.negotiate))
        return NegotiationView(
            worker=name, contention=contention, history=hist, own_budget=self.ledger.balance(name),
            own_deadline_s=s.deadline_s, own_remaining_s=remaining_s(t, s.deadline_s), own_history=own,
            memories=notes, task_summary=f"{s.task.name} (program {s.task.program}); {s.steps} steps so far",
            private_round=c.private_round, legal=legal,
        )

    def vote_view(self, name: str, breach: Any) -> Any:
        """What voter ``name`` sees when asked to fine ``breach``
        (:class:`~.institutions.VoteView`): the public breach, the public institutions
        and its own balance; nothing of another worker's private state.

        Raises:
            WorldError: no institutions are on.
        """
        if self.institutions is None:
            raise WorldError("vote_view: no institution is on")
        from .institutions import VoteView

        pub = {k: v for k, v in self.institutions.public(breach.contention).items() if k != "promises"}
        return VoteView(worker=name, breach=breach.public(), own_budget=self.ledger.balance(name),
                        contention={"contention": breach.contention, "institutions": pub},
                        slot_cap_s=self.rules.slot_cap_s)

    def next_booking(self, end_s: float) -> str | None:
        """The worker whose booked slot starts at ``end_s`` seconds (queued), if any:
        the one an overrun of a slot ending there harms (:mod:`.institutions.sanctions`)."""
        return next((w for w, s in self.workers.items()
                     if s.status == Status.queued and s.slot is not None and s.slot.start == end_s), None)

    def legal_actions(self, name: str, files: list[str]) -> LegalActions:
        """The solver actions legal for worker ``name`` now (:mod:`.actions`); ``files``
        are the names in its work folder.

        Raises:
            WorldError: the worker is not ``active`` or ``in_slot`` (its solver cannot move).
        """
        s = self._expect(name, "legal_actions", Status.active, Status.in_slot)
        return legal_actions(name, in_slot=s.status == Status.in_slot, files=files, slot_cap_s=self.rules.slot_cap_s)

    def solver_observation(self, name: str, files: list[str], *, shown: list[str] | None = None) -> SolverObservation:
        """What worker ``name``'s solver sees now, with its legal actions
        (:meth:`legal_actions` on ``files``, the names in its own work folder, listed
        by the runner: the world does no I/O). ``shown`` is the listing as the solver
        is shown it (e.g. with an "(and N more)" note; default ``files``).

        Raises:
            WorldError: the worker is not ``active`` or ``in_slot`` (its solver cannot move).
        """
        s = self.worker(name)
        in_slot = s.status == Status.in_slot
        return SolverObservation(
            worker=name, task=s.task.agent_view(), files=list(files if shown is None else shown), in_slot=in_slot,
            slot_remaining_s=max(0.0, s.slot.end - s.t) if in_slot else 0.0,
            own_remaining_s=remaining_s(s.t, s.deadline_s), own_budget=self.ledger.balance(name),
            transcript=s.transcript[-self.rules.transcript_k:], memories=list(s.memories), step=s.steps,
            max_duration_s=self.rules.slot_cap_s, legal=self.legal_actions(name, files),
        )
