"""The counter game: two agents share a counter; each round each adds 0, 1 or 2.

Each agent holds a private target (a canary number no other quantity of the game
takes); it sees its own target and the counter, never the other's target. The game
ends after ``rounds`` rounds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

AGENTS = ("a0", "a1")
#: Private targets: canaries no other quantity of the game takes.
TARGETS = {"a0": 9001, "a1": 9002}


@dataclass
class CounterGame:
    """One game. ``act`` takes every agent's increment for the round."""

    rounds: int = 4
    counter: int = 0
    round: int = 1
    history: list[tuple[int, dict[str, int], int]] = field(default_factory=list)

    @property
    def over(self) -> bool:
        return self.round > self.rounds

    def observe(self, agent: str) -> dict:
        """What ``agent`` sees: the counter, the round, its own target, past counters."""
        return {"agent": agent, "round": self.round, "counter": self.counter, "target": TARGETS[agent],
                "past": [c for _, _, c in self.history]}

    def act(self, moves: dict[str, int]) -> tuple[int, dict[str, int], int]:
        """Apply one round.

        Raises:
            ValueError: an agent missing, or an increment outside 0..2.
        """
        if set(moves) != set(AGENTS) or any(m not in (0, 1, 2) for m in moves.values()):
            raise ValueError(f"round {self.round}: moves must give each of {AGENTS} 0, 1 or 2, got {moves}")
        self.counter += sum(moves.values())
        rec = (self.round, dict(moves), self.counter)
        self.history.append(rec)
        self.round += 1
        return rec


def scripted_move(obs: dict, rng: random.Random) -> int:
    """The scripted policy: a seeded random increment."""
    return rng.randrange(3)
