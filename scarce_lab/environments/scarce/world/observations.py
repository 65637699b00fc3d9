"""What a SCARCE worker's agents are shown, built by :class:`~.world.ScarceWorld`.

A :class:`NegotiationView` holds the *public* auction state (the contention's public
view plus public history under the memory horizon) and the worker's *own* private
state (its budget, deadline, remaining time, request, own negotiation history, saved
memories). A :class:`SolverObservation` holds the worker's task, its own files, its
slot, budget, deadline and transcript. Both are built for one worker from that
worker's state only (:meth:`ScarceWorld.negotiation_view`,
:meth:`ScarceWorld.solver_observation`), so neither holds another worker's budget,
deadline, files or private messages it was not party to
(``tests/envs/test_scarce_world.py`` checks it).

Units: credits for budgets and prices, seconds for times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .actions import LegalActions, LegalNegotiation, legal_actions, legal_negotiation


@dataclass
class NegotiationView:
    """One worker's view of one contention phase.

    Attributes:
        worker: the viewing worker.
        contention: public + own-private contention state
            (:meth:`scarce_lab.environments.scarce.world.Contention.private_view`).
        history: public outcomes of past contentions shown under the memory horizon
            (allocations and winning bids; never payments, which could reveal budgets).
        own_budget: this worker's remaining budget (credits).
        own_deadline_s: this worker's deadline (seconds since its subrun started).
        own_remaining_s: seconds left before its deadline.
        own_history: this worker's own past negotiations (declaration, position, payment).
        memories: texts this worker saved with ``save_persistent_memory`` (horizon-dependent).
        task_summary: one line about the worker's own task and progress.
        private_round: current private-message round (1-based) in the private phase.
        legal: what this worker may submit in this contention (positions, durations,
            bids, ballot prices, recipients; :class:`~.actions.LegalNegotiation`),
            derived by the environment from the contention and its own budget.
    """

    worker: str
    contention: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    own_budget: int = 0
    own_deadline_s: float = 0.0
    own_remaining_s: float = 0.0
    own_history: list[dict[str, Any]] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    task_summary: str = ""
    private_round: int = 0
    legal: LegalNegotiation = None  # type: ignore[assignment] - set in __post_init__ when not given

    def __post_init__(self) -> None:
        if self.legal is None:
            self.legal = legal_negotiation(self.worker, participants=self.participants,
                                           slot_cap_s=self.slot_cap_s, own_budget=self.own_budget)

    @property
    def participants(self) -> list[str]:
        return [q["worker"] for q in self.contention["queue"]]

    @property
    def others(self) -> list[str]:
        return [w for w in self.participants if w != self.worker]

    @property
    def requested_duration_s(self) -> int:
        return int(self.contention["your_request"]["duration_s"])

    @property
    def slot_cap_s(self) -> int:
        return int(self.contention["slot_cap_s"])

    def declared(self, worker: str) -> dict[str, Any] | None:
        return self.contention.get("declarations", {}).get(worker)

    def public_bid(self, worker: str) -> int:
        """Latest public bid of ``worker`` (revised if revised, else declared, else 0)."""
        rb = self.contention.get("revised_bids", {})
        if worker in rb:
            return int(rb[worker])
        d = self.declared(worker)
        return int(d["bid_price"]) if d else 0

    def fifo_position(self) -> int:
        """1-based position of this worker by request time."""
        return self.participants.index(self.worker) + 1


@dataclass
class SolverObservation:
    """What the solver sees before choosing its next tool call.

    Attributes:
        worker: the worker.
        task: the task's agent view (id, name, program, documentation, examples).
        files: names in its work folder.
        in_slot: whether it holds an execution window now.
        slot_remaining_s: seconds left in the window (0 outside one).
        own_remaining_s: seconds left before its deadline.
        own_budget: its remaining budget (credits).
        transcript: recent (action, result) lines of this subrun.
        memories: saved memories visible under the memory horizon.
        step: solver step number in this subrun (0-based).
        max_duration_s: the slot cap (seconds).
        legal: the solver actions legal now (the action mask; :mod:`.actions`), put
            here by :meth:`~.world.ScarceWorld.solver_observation` from the real
            listing; the runner checks the chosen action against this same object.
            An observation built by hand gets the rule's value for its own
            ``files``, ``in_slot`` and ``max_duration_s``.
    """

    worker: str
    task: dict[str, Any]
    files: list[str]
    in_slot: bool
    slot_remaining_s: float
    own_remaining_s: float
    own_budget: int
    transcript: list[dict[str, Any]]
    memories: list[str]
    step: int
    max_duration_s: int = 300
    legal: LegalActions = None  # type: ignore[assignment] - set in __post_init__ when not given

    def __post_init__(self) -> None:
        if self.legal is None:
            self.legal = legal_actions(self.worker, in_slot=self.in_slot, files=self.files,
                                       slot_cap_s=self.max_duration_s)
