"""The SCARCE world's state and rule types (pure data; picklable), and the seeded task
plan (:func:`assign_tasks`); the world that moves them is
:class:`scarce_lab.environments.scarce.world.auction.ScarceWorld`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .budgets import Ledger, Payment
from .clock import ClockConfig
from .institutions.rules import InstitutionRules
from .protocol import DEFAULT_PRIVATE_ROUNDS, Mechanism, MechanismConfig, Request
from .scheduler import SCHEDULERS, Allocation, Schedule

MEMORY_HORIZONS = ("none", "subrun", "cross")
#: The SCARCE paper's memory horizon: history and saved notes carried across subruns.
PAPER_MEMORY = "cross"
#: Solver tools whose step costs no deadline time (SCARCE: ``save_persistent_memory`` is
#: "free, costs no deadline time").
FREE_TOOLS = frozenset({"save_persistent_memory"})


class WorldError(RuntimeError):
    """The runner asked the world for something its state does not allow."""


class ActionRefused(ValueError):
    """A solver action the rules refuse (the solver is told why; the run goes on)."""


class Status(StrEnum):
    """Where a worker is in its subrun."""

    active = "active"  #: working on its task (its solver moves)
    requested = "requested"  #: waiting for a contention
    queued = "queued"  #: holds a booked slot that has not started
    in_slot = "in_slot"  #: its execution slot is open
    done = "done"  #: submitted (or hit the step limit)
    missed = "missed"  #: its deadline passed before it submitted


FINISHED = frozenset({Status.done, Status.missed})


class EventKind(StrEnum):
    """What :meth:`ScarceWorld.next_event` says must happen next."""

    solver_step = "solver_step"
    slot_open = "slot_open"
    slot_close = "slot_close"
    deadline_miss = "deadline_miss"
    step_limit = "step_limit"
    contention = "contention"
    subrun_end = "subrun_end"


@dataclass(frozen=True)
class NextEvent:
    """The next thing to happen. ``t``: seconds since the subrun started.

    ``worker`` is set for worker moves; a ``contention`` lists ``missed`` (finish
    them first, each at its deadline) and ``participants`` (then negotiate).
    """

    kind: EventKind
    t: float
    worker: str | None = None
    participants: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Slot:
    """A booked execution slot: seconds on the subrun's timeline, 1-based queue
    ``position``, the ``contention`` that booked it and when it was requested."""

    start: float
    end: float
    position: int
    contention: int
    requested_at: float


@dataclass
class WorkerState:
    """One worker in one subrun. Times in seconds since the subrun started.

    ``memories`` and ``own_history`` are shared with the world's per-worker lists,
    which outlive the subrun under ``cross`` memory.
    """

    name: str
    task: Any
    deadline_s: float
    memories: list[str]
    own_history: list[dict[str, Any]]
    status: Status = Status.active
    t: float = 0.0
    steps: int = 0
    request: Request | None = None
    slot: Slot | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    contentions: int = 0

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def next_time(self) -> float:
        """When this worker moves next: its slot start when queued, else its clock."""
        if self.status == Status.queued:
            assert self.slot is not None
            return self.slot.start
        return self.t


@dataclass(frozen=True)
class Finish:
    """A worker's end of subrun: ``at`` seconds, ``reason`` (submit, step_limit,
    deadline), whether its slot was open (the sandbox slot must be closed)."""

    worker: str
    missed: bool
    at: float
    reason: str
    was_in_slot: bool


@dataclass(frozen=True)
class Booking:
    """One allocation of a settled contention: its slot and its payment."""

    allocation: Allocation
    slot: Slot
    payment: Payment


@dataclass(frozen=True)
class Settlement:
    """A settled contention: index, time the schedule was fixed (s), schedule, bookings
    in schedule order."""

    index: int
    t: float
    schedule: Schedule
    bookings: tuple[Booking, ...]


@dataclass(frozen=True)
class WorldRules:
    """Everything the world's rules depend on. Units: seconds, credits.

    Args:
        workers: worker names in order (the order breaks ties between movers).
        subruns: number of subruns (1..4 in SCARCE).
        budgets: worker -> budget per subrun (credits, int >= 0).
        deadlines_s: worker -> deadline per subrun (seconds since it started, > 0).
        scheduler: ``ballots`` (four-phase negotiation) or a baseline of
            :data:`~.scheduler.SCHEDULERS`.
        mechanism, slot_cap_s, private_rounds: contention rules (:class:`~.protocol.MechanismConfig`;
            ``private_rounds`` default 2: a message and the recipient's reply).
        memory: ``none``, ``subrun`` or ``cross`` (the paper's baseline and the default;
            :mod:`.world` docstring).
        clock: time costs.
        max_solver_steps: steps before an automatic submission.
        history_k: past contentions / own negotiations shown (0: none).
        transcript_k: recent solver (action, result) lines shown.
        zero_score_on_miss: a deadline miss scores 0.
        seed: seeds the ballot rule's last-resort tie-break.
        worker_memory: worker -> its own memory horizon, overriding ``memory``
            (per-worker seats; empty: every worker has ``memory``).
        joins: worker -> the subrun (0-based) it joins at; absent before it.
        leaves: worker -> the last subrun (0-based) it plays; absent after it.
        institutions: sanctions, reputation and contracts (:mod:`.institutions`);
            ``None`` or all off: none (the default).

    Raises:
        ValueError: a field out of range, naming the field and the value.
    """

    workers: tuple[str, ...]
    budgets: Mapping[str, int]
    deadlines_s: Mapping[str, float]
    subruns: int = 1
    scheduler: str = "ballots"
    mechanism: Mechanism = Mechanism.fixed
    slot_cap_s: int = 300
    private_rounds: int = DEFAULT_PRIVATE_ROUNDS
    memory: str = PAPER_MEMORY
    clock: ClockConfig = field(default_factory=ClockConfig)
    max_solver_steps: int = 60
    history_k: int = 5
    transcript_k: int = 8
    zero_score_on_miss: bool = True
    seed: int = 0
    worker_memory: Mapping[str, str] = field(default_factory=dict)
    joins: Mapping[str, int] = field(default_factory=dict)
    leaves: Mapping[str, int] = field(default_factory=dict)
    institutions: InstitutionRules | None = None

    def __post_init__(self) -> None:
        names = tuple(self.workers)
        if not names or len(set(names)) != len(names):
            raise ValueError(f"workers must be distinct names, at least one, got {list(names)}")
        for fname in ("budgets", "deadlines_s"):
            have = getattr(self, fname)
            if set(have) != set(names):
                raise ValueError(f"{fname} must name exactly the workers {list(names)}, got {sorted(have)}")
        for w, d in self.deadlines_s.items():
            if not d > 0:
                raise ValueError(f"deadlines_s[{w!r}] must be > 0 seconds, got {d!r}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be one of {list(SCHEDULERS)}, got {self.scheduler!r}")
        if self.memory not in MEMORY_HORIZONS:
            raise ValueError(f"memory must be one of {list(MEMORY_HORIZONS)}, got {self.memory!r}")
        for fname, lo in (("subruns", 1), ("max_solver_steps", 1), ("history_k", 0), ("transcript_k", 1)):
            v = getattr(self, fname)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{fname} must be an integer >= {lo}, got {v!r}")
        for fname in ("worker_memory", "joins", "leaves"):
            unknown = sorted(set(getattr(self, fname)) - set(names))
            if unknown:
                raise ValueError(f"{fname}: unknown worker(s) {unknown} (have {list(names)})")
        for w, m in self.worker_memory.items():
            if m not in MEMORY_HORIZONS:
                raise ValueError(f"worker_memory[{w!r}] must be one of {list(MEMORY_HORIZONS)}, got {m!r}")
        for fname in ("joins", "leaves"):
            for w, k in getattr(self, fname).items():
                if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.subruns:
                    raise ValueError(f"{fname}[{w!r}] must be a subrun in 0..{self.subruns - 1}, got {k!r}")
        for k in range(self.subruns):
            if not self.present(k):
                raise ValueError(f"joins/leaves leave subrun {k} without a worker")
        Ledger(dict(self.budgets))  # validates the budgets
        self.mechanism_config()  # validates slot_cap_s, private_rounds, mechanism
        object.__setattr__(self, "workers", names)

    def memory_of(self, worker: str) -> str:
        """``worker``'s memory horizon (its own, else the run's ``memory``)."""
        return self.worker_memory.get(worker, self.memory)

    def present(self, subrun: int) -> tuple[str, ...]:
        """The workers that play ``subrun`` (0-based), in worker order (:func:`present_workers`)."""
        return present_workers(self.workers, self.joins, self.leaves, subrun)

    def mechanism_config(self) -> MechanismConfig:
        """The contention rules; centralised baselines play the declaration only."""
        return MechanismConfig(mechanism=self.mechanism, slot_cap_s=self.slot_cap_s,
                               private_rounds=self.private_rounds, negotiate=self.scheduler == "ballots")


def present_workers(workers: Sequence[str], joins: Mapping[str, int], leaves: Mapping[str, int],
                    subrun: int) -> tuple[str, ...]:
    """The ``workers`` that play ``subrun`` (0-based: from their ``joins`` subrun through
    their ``leaves`` subrun), in worker order."""
    return tuple(w for w in workers if joins.get(w, 0) <= subrun <= leaves.get(w, subrun))


def assign_tasks(pool: Sequence[Any], workers: Sequence[str], subruns: int, assignment: str,
                 seed: int) -> list[dict[str, Any]]:
    """Tasks per subrun: ``[{worker: task}]``, one dict per subrun.

    ``distinct``: each worker its own task, a seeded rotation of the shuffled pool;
    ``shared``: one task per subrun for everyone. Deterministic for a seed.

    Raises:
        ValueError: empty pool or unknown assignment.
    """
    if not pool:
        raise ValueError("tasks: the task pool is empty")
    if assignment not in ("distinct", "shared"):
        raise ValueError(f"task_assignment must be 'distinct' or 'shared', got {assignment!r}")
    order = list(range(len(pool)))
    random.Random(f"{seed}:tasks").shuffle(order)
    n = len(workers)
    plan = []
    for k in range(subruns):
        if assignment == "shared":
            plan.append({w: pool[order[k % len(pool)]] for w in workers})
        else:
            plan.append({w: pool[order[(k * n + i) % len(pool)]] for i, w in enumerate(workers)})
    return plan
