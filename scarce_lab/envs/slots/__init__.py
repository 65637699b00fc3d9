"""SCARCE slot auctions (pure environment logic, no I/O).

- :mod:`.protocol`: the four-phase contention state machine and its message types.
- :mod:`.scheduler`: ballot aggregation (Borda) and centralised baselines.
- :mod:`.budgets`: private integer budgets, payments to a recorded sink.
- :mod:`.clock`: virtual / wall time accounting and the sandbox timeline.
"""

from .budgets import DEFAULT_BUDGET, SINK, InsufficientFunds, Ledger, Payment
from .clock import ClockConfig, SandboxTimeline, remaining_s
from .protocol import (
    DEFAULT_SLOT_CAP_S,
    AuctionHistory,
    Ballot,
    BallotEntry,
    Contention,
    Declaration,
    Mechanism,
    MechanismConfig,
    Phase,
    PrivateMessage,
    ProtocolError,
    Request,
)
from .scheduler import SCHEDULERS, Allocation, Schedule, aggregate_ballots, baseline_schedule

__all__ = [
    "DEFAULT_BUDGET", "SINK", "InsufficientFunds", "Ledger", "Payment",
    "ClockConfig", "SandboxTimeline", "remaining_s",
    "DEFAULT_SLOT_CAP_S", "AuctionHistory", "Ballot", "BallotEntry", "Contention", "Declaration",
    "Mechanism", "MechanismConfig", "Phase", "PrivateMessage", "ProtocolError", "Request",
    "SCHEDULERS", "Allocation", "Schedule", "aggregate_ballots", "baseline_schedule",
]
