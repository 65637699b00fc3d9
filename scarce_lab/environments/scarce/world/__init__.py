"""SCARCE slot auctions (pure environment logic, no I/O).

- :mod:`.protocol`: the four-phase contention state machine and its message types.
- :mod:`.scheduler`: ballot aggregation (Borda) and centralised baselines.
- :mod:`.budgets`: private integer budgets, payments to a recorded sink.
- :mod:`.clock`: virtual / wall time accounting and the sandbox timeline.
- :mod:`.auction`: the world of a run (:class:`ScarceWorld`): workers, slots, queue,
  deadlines, payments, memory horizons and the choice of the next event (its types and
  rules: :mod:`.state`).

This package's names are the world's face (``from ..world import ScarceWorld, Ballot``);
each is defined once, in the module listed.
- :mod:`.observations`: what a worker's solver and negotiator are shown.
- :mod:`.actions`: the solver's legal actions now (the action mask).
- :mod:`.institutions`: optional sanctions, public reputation and contracts.
"""

from .actions import BUILD_SCRIPT, SOLVER_TOOLS, LegalActions, legal_actions
from .auction import ScarceWorld
from .budgets import DEFAULT_BUDGET, InsufficientFunds, Ledger
from .clock import ClockConfig, SandboxTimeline
from .institutions import InstitutionRules
from .observations import NegotiationView
from .protocol import (
    DEFAULT_PRIVATE_ROUNDS,
    Ballot,
    BallotEntry,
    Contention,
    Declaration,
    Mechanism,
    MechanismConfig,
    Phase,
    ProtocolError,
    Request,
)
from .scheduler import aggregate_ballots, baseline_schedule
from .state import (
    MEMORY_HORIZONS,
    PAPER_MEMORY,
    ActionRefused,
    EventKind,
    Status,
    WorldError,
    WorldRules,
    assign_tasks,
)

__all__ = [
    "BUILD_SCRIPT", "SOLVER_TOOLS", "LegalActions", "legal_actions", "DEFAULT_BUDGET", "InsufficientFunds", "Ledger",
    "ClockConfig", "SandboxTimeline", "DEFAULT_PRIVATE_ROUNDS", "Ballot", "BallotEntry", "Contention", "Declaration",
    "Mechanism", "MechanismConfig", "Phase", "ProtocolError", "Request", "aggregate_ballots", "baseline_schedule",
    "NegotiationView", "InstitutionRules", "MEMORY_HORIZONS", "PAPER_MEMORY", "ActionRefused", "EventKind",
    "ScarceWorld", "Status", "WorldError", "WorldRules", "assign_tasks",
]
