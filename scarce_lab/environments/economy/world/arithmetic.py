"""Multi-step arithmetic word problems generated from a seed, with verifiable answers.

A problem starts with a quantity and applies ``n_steps`` operations (add, remove,
add k groups of m, keep 1/k share); every intermediate value stays a non-negative
integer, so the answer is exact. Same seed -> same problem.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .qa import QAItem

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana")
ITEMS = ("apples", "marbles", "stickers", "coins", "books", "pencils")


@dataclass(frozen=True)
class ArithmeticProblem:
    """A generated problem: ``steps`` are ``(op, operand(s), value after)``."""

    question: str
    answer: int
    start: int
    steps: tuple[tuple, ...]

    def to_item(self, item_id: str = "") -> QAItem:
        return QAItem(self.question, str(self.answer), item_id)


def make_problem(seed: int | str, n_steps: int = 3) -> ArithmeticProblem:
    """Generate one problem from ``seed`` with ``n_steps`` operations (1..6).

    Raises:
        ValueError: ``n_steps`` outside 1..6.
    """
    if not isinstance(n_steps, int) or not 1 <= n_steps <= 6:
        raise ValueError(f"n_steps must be an int in 1..6, got {n_steps!r}")
    rng = random.Random(f"arith:{seed}:{n_steps}")
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    value = rng.randint(5, 30)
    start = value
    sentences = [f"{name} has {value} {item}."]
    steps = []
    for _ in range(n_steps):
        op = rng.choice(("add", "remove", "groups", "share"))
        if op == "remove" and value < 2:
            op = "add"
        if op == "share":
            divisors = [k for k in (2, 3, 4, 5) if value % k == 0 and value > 0]
            if not divisors:
                op = "groups"
        if op == "add":
            k = rng.randint(2, 20)
            value += k
            sentences.append(f"Then {name} gets {k} more {item}.")
            steps.append(("add", k, value))
        elif op == "remove":
            k = rng.randint(1, value - 1)
            value -= k
            sentences.append(f"Then {name} gives away {k} {item}.")
            steps.append(("remove", k, value))
        elif op == "groups":
            k, m = rng.randint(2, 5), rng.randint(2, 6)
            value += k * m
            sentences.append(f"Then {name} buys {k} bags with {m} {item} in each bag.")
            steps.append(("groups", (k, m), value))
        else:
            k = rng.choice(divisors)
            value //= k
            sentences.append(
                f"Then {name} shares all the {item} equally among {k} people, {name} included, "
                f"and keeps one share."
            )
            steps.append(("share", k, value))
    sentences.append(f"How many {item} does {name} have now?")
    return ArithmeticProblem(" ".join(sentences), value, start, tuple(steps))


def make_problems(seed: int, count: int, n_steps: int = 3) -> list[ArithmeticProblem]:
    """``count`` problems derived from ``seed`` (problem i uses seed ``f"{seed}:{i}"``)."""
    return [make_problem(f"{seed}:{i}", n_steps) for i in range(count)]
