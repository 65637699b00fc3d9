"""Economy of Minds (a Hayek machine): a pure, seeded economy of agents that bid for
the right to act, pay each other by bucket brigade, pay rent, go bankrupt and
reproduce; plus the tasks it runs on (Blocks World, arithmetic, user QA pairs).

No I/O, no agents, no LLM: behaviour comes in as callables (see :mod:`.engine`).
"""

from .core import ABLATIONS, AgentRecord, AuctionResult, Economy, EconomyConfig, EpisodeEnd
from .engine import EpisodeResult, StepResult, TaskEnv, run_episode
from .ledger import BANK, RENT_SINK, Ledger, LedgerError, Transfer

__all__ = [
    "ABLATIONS",
    "AgentRecord",
    "AuctionResult",
    "BANK",
    "Economy",
    "EconomyConfig",
    "EpisodeEnd",
    "EpisodeResult",
    "Ledger",
    "LedgerError",
    "RENT_SINK",
    "StepResult",
    "TaskEnv",
    "Transfer",
    "run_episode",
]
