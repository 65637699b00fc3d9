"""A random and adversarial policy driven only by the legal actions an observation
carries (PettingZoo's action mask), for every environment: the conformance suite
(:mod:`scarce_lab.testing`) plays each world with it, and probes each decision with
an action just outside the legal set, which the world must refuse.

Pure: it imports only the environments' legal-action types.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .environments.economy.world.blocksworld import LegalMoves, Move
from .environments.scarce.world import BUILD_SCRIPT, SOLVER_TOOLS, Ballot, BallotEntry, Declaration
from .environments.scarce.world import LegalActions as SolverLegal
from .environments.scarce.world.actions import LegalNegotiation
from .environments.sovsim.world.commons import LegalActions as CommonsLegal

__all__ = ["LegalPolicy", "refused"]


class LegalPolicy:
    """A random and adversarial policy driven only by the legal actions an observation
    carries (PettingZoo's action mask), the same for every environment.

    Each choice draws from a generator seeded by ``seed`` and the decision point's
    ``key`` (so a replay, or a pickled world continued, chooses alike). Bounded
    integers are the lowest value, the highest value or a uniform one (a third each:
    the adversarial edges are played as often as the middle). Free text (notes,
    messages) comes from ``text(kind, key)``, where a harness plants its canaries.

    ``weights`` weighs the solver's legal tools (default 1 each; a harness favours
    slot requests so that contentions are frequent). ``max_money`` narrows bids and prices to ``0..min(legal bound, max_money)``
    credits (a subset of a legal set is legal): a bid equal to an agent's budget or
    balance would publish it by the agent's own choice, which a canary cannot tell
    from a leak.

    The ``*_illegal`` methods give, for the same legal set, a value just outside it
    (the illegal-action probe): the harness checks that the world refuses it.
    """

    def __init__(self, seed: int, text: Callable[[str, tuple], str] | None = None, *, max_money: int | None = None,
                 weights: dict[str, float] | None = None):
        self.seed = seed
        self.text = text or (lambda kind, key: f"{kind} {key}")
        self.max_money = max_money
        self.weights = dict(weights or {})

    def _money(self, bound: int) -> int:
        return bound if self.max_money is None else min(bound, self.max_money)

    def rng(self, *key: Any) -> random.Random:
        """The generator of decision point ``key``."""
        return random.Random(f"{self.seed}:{key!r}")

    def integer(self, rng: random.Random, low: int, high: int, step: int = 1) -> int:
        """One of ``low, low + step, ..., high``: an edge or a uniform value."""
        pick = rng.randrange(3)
        if pick == 0 or high <= low:
            return low
        if pick == 1:
            return low + (high - low) // step * step
        return rng.randrange(low, high + 1, step)

    # SovSim: one integer (an extraction or an announced pool)
    def sovsim(self, legal: CommonsLegal, *key: Any) -> int:
        return self.integer(self.rng("sovsim", *key), legal.low, legal.high, legal.step)

    def sovsim_illegal(self, legal: CommonsLegal, *key: Any) -> int:
        """Above the cap, below zero, or (with a step) between two legal values."""
        options = [legal.high + legal.step, legal.low - 1] + ([legal.low + 1] if legal.step > 1 else [])
        return self.rng("sovsim-illegal", *key).choice(options)

    # Economy of Minds (Blocks World): one move
    def move(self, legal: LegalMoves, *key: Any) -> Move:
        """A legal move: an effective one, or (a third of the time, adversarially)
        any legal move, ineffective ones included."""
        rng = self.rng("move", *key)
        pool = legal.effective if legal.effective and rng.randrange(3) else legal.moves
        return rng.choice(pool)

    # SCARCE: a solver tool call, negotiation submissions
    def solver(self, legal: SolverLegal, *key: Any) -> dict[str, Any]:
        """``{"tool": ..., <its arguments>}`` drawn from ``legal``: a legal tool (by
        ``weights``), then its arguments inside their legal ranges."""
        rng = self.rng("solver", *key)
        tool = rng.choices(legal.tools, [self.weights.get(t, 1.0) for t in legal.tools])[0]
        call: dict[str, Any] = {"tool": tool}
        if tool == "read_file":
            call["path"] = rng.choice(legal.read_paths)
        elif tool == "write_file":
            call["path"] = rng.choice((BUILD_SCRIPT, f"src/{legal.worker}.c", "notes.txt"))
            call["content"] = self.text("file", key)
        elif tool == "request_execution_slot":
            call["duration_seconds"] = self.integer(rng, 1, legal.max_duration_s)
        elif tool == "run_command":
            call["command"] = "./executable"
        elif tool == "save_persistent_memory":
            call["text"] = self.text("note", key)
        return call

    def solver_illegal(self, legal: SolverLegal, *key: Any) -> dict[str, Any]:
        """A tool the mask forbids now, or a legal tool with an argument outside it."""
        rng = self.rng("solver-illegal", *key)
        banned = [t for t in SOLVER_TOOLS if t not in legal.tools]
        if banned and rng.random() < 0.5:
            return {"tool": rng.choice(banned)}
        if "request_execution_slot" in legal.tools:
            return {"tool": "request_execution_slot",
                    "duration_seconds": rng.choice((0, legal.max_duration_s + 1))}
        return {"tool": "read_file", "path": f"../{legal.worker}-nowhere"}

    def declaration(self, legal: LegalNegotiation, requested_s: int, *key: Any) -> Declaration:
        rng = self.rng("declaration", *key)
        return Declaration(desired_position=self.integer(rng, 1, legal.max_position),
                           desired_duration_seconds=self.integer(rng, 1, min(requested_s, legal.max_duration_s)),
                           bid_price=self.integer(rng, 0, self._money(legal.max_bid)))

    def message(self, legal: LegalNegotiation, *key: Any) -> tuple[str, str] | None:
        rng = self.rng("message", *key)
        if not legal.recipients or rng.random() < 0.3:
            return None
        to = rng.choice(legal.recipients)
        return to, self.text("message", (*key, to))

    def revision(self, legal: LegalNegotiation, *key: Any) -> int:
        return self.integer(self.rng("revision", *key), 0, self._money(legal.max_bid))

    def ballot(self, legal: LegalNegotiation, *key: Any) -> Ballot:
        rng = self.rng("ballot", *key)
        order = list(legal.participants)
        rng.shuffle(order)
        return Ballot(entries=[BallotEntry(worker=w, duration_seconds=self.integer(rng, 0, legal.max_duration_s),
                                           price=self.integer(rng, 0, self._money(legal.max_price)))
                            for w in order])


def refused(errors: tuple[type[BaseException], ...], what: str, attempt: Callable[[], Any]) -> str:
    """Run ``attempt`` (an illegal action); return the world's refusal. Raises
    AssertionError when the world accepted it."""
    try:
        attempt()
    except errors as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"the world accepted an illegal action: {what}")
