"""The shared core of the conformance suite (see :mod:`scarce_lab.testing`): what a play
returns (:class:`Observation`, :class:`Trace`), the registry's plays (:data:`HARNESSES`), the
checks (determinism, privacy) and the generic part of the policy that plays every world
(:class:`LegalPolicy`, :func:`refused`). It names no environment: each environment's play,
and its policy's choices from its own legal-action types, live in its package's
``conformance`` module, and its spec points at the play (``EnvironmentSpec.harness``)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HARNESSES", "LegalPolicy", "Observation", "Trace", "check_determinism", "check_environment",
           "check_privacy", "refused"]


@dataclass(frozen=True)
class Observation:
    """What ``agent`` was shown (as JSON text), with the canaries of other agents found
    in it (``leaks``) and whether its own private state was visible (``own``; ``None``
    when the agent has no private state in this observation)."""

    agent: str
    text: str
    leaks: tuple[str, ...] = ()
    own: bool | None = None


@dataclass
class Trace:
    """One played game: every observation in order and a log of outcomes."""

    observations: list[Observation] = field(default_factory=list)
    outcomes: list[Any] = field(default_factory=list)

    def fingerprint(self) -> str:
        """JSON of everything that must be equal for equal seeds."""
        return json.dumps([[o.agent, o.text] for o in self.observations] + [self.outcomes], default=str)


class LegalPolicy:
    """A random and adversarial policy driven only by the legal actions an observation
    carries (PettingZoo's action mask): the part every environment shares. Each
    environment's conformance play extends it with its choices (a subclass whose methods
    draw from its own legal-action types, and give, for the same legal set, a value just
    outside it: the illegal-action probe that the world must refuse).

    Each choice draws from a generator seeded by ``seed`` and the decision point's
    ``key`` (:meth:`rng`; so a replay, or a pickled world continued, chooses alike).
    Bounded integers are the lowest value, the highest value or a uniform one
    (:meth:`integer`: a third each, the adversarial edges are played as often as the
    middle). Free text (notes, messages) comes from ``text(kind, key)``, where a harness
    plants its canaries (default ``"<kind> <key>"``).

    ``weights`` weighs the legal options a subclass draws among by name (default 1
    each; a harness favours some so that the states it checks are frequent).
    ``max_money`` narrows amounts of money to ``0..min(legal bound, max_money)``
    (:meth:`money`; a subset of a legal set is legal): an amount equal to an agent's
    budget or balance would publish it by the agent's own choice, which a canary cannot
    tell from a leak.
    """

    def __init__(self, seed: int, text: Callable[[str, tuple], str] | None = None, *, max_money: int | None = None,
                 weights: dict[str, float] | None = None):
        self.seed = seed
        self.text = text or (lambda kind, key: f"{kind} {key}")
        self.max_money = max_money
        self.weights = dict(weights or {})

    def money(self, bound: int) -> int:
        """The largest amount drawn under the legal ``bound``: ``bound``, at most ``max_money``."""
        return bound if self.max_money is None else min(bound, self.max_money)

    def rng(self, *key: Any) -> random.Random:
        """The generator of decision point ``key`` (seeded with ``f"{seed}:{key!r}"``)."""
        return random.Random(f"{self.seed}:{key!r}")

    def integer(self, rng: random.Random, low: int, high: int, step: int = 1) -> int:
        """One of ``low, low + step, ..., high``: an edge or a uniform value."""
        pick = rng.randrange(3)
        if pick == 0 or high <= low:
            return low
        if pick == 1:
            return low + (high - low) // step * step
        return rng.randrange(low, high + 1, step)


def refused(errors: tuple[type[BaseException], ...], what: str, attempt: Callable[[], Any]) -> str:
    """Run ``attempt`` (an illegal action, described by ``what``); return the world's
    refusal (one of ``errors``) as ``"<type>: <message>"``.

    Raises:
        AssertionError: the world accepted it.
    """
    try:
        attempt()
    except errors as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"the world accepted an illegal action: {what}")


class _Harnesses(Mapping[str, Callable[[int], Trace]]):
    """Environment name -> its conformance play ``seed -> Trace``: a live view of the
    registry (:func:`scarce_lab.registry.get`, each spec's ``harness``), so an
    environment registered later is checked too."""

    def __getitem__(self, name: str) -> Callable[[int], Trace]:
        from ..registry import UnknownEnvironmentError, get

        try:
            return get(name).harness
        except UnknownEnvironmentError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        from ..registry import names

        return iter(names())

    def __len__(self) -> int:
        from ..registry import names

        return len(names())


#: Environment name -> a function ``seed -> Trace`` (every registered environment).
HARNESSES: Mapping[str, Callable[[int], Trace]] = _Harnesses()


# -- the checks ---------------------------------------------------------------------------
def check_determinism(play: Callable[[int], Trace], seeds: tuple[int, ...] = (0, 1)) -> None:
    """The same seed gives the same trajectory.

    Raises:
        AssertionError: two plays of one seed differ (the first differing seed named).
    """
    for s in seeds:
        a, b = play(s), play(s)
        assert a.fingerprint() == b.fingerprint(), f"seed {s}: two plays differ"
        assert a.observations, f"seed {s}: the harness showed no observation (a check that cannot fail)"


def check_privacy(play: Callable[[int], Trace], seed: int = 0) -> None:
    """No observation of one agent holds another agent's private fields.

    Raises:
        AssertionError: the first leak (agent, what leaked), or an agent with private
            state never saw it (the canaries would then prove nothing).
    """
    trace = play(seed)
    assert trace.observations, "the harness showed no observation"
    for o in trace.observations:
        assert not o.leaks, f"{o.agent} sees {', '.join(o.leaks)}"
    holders = {o.agent for o in trace.observations if o.own is not None}
    seen_own = {o.agent for o in trace.observations if o.own}
    assert seen_own == holders, f"agents {sorted(holders - seen_own)} never saw their own private state"


def check_environment(play: Callable[[int], Trace]) -> None:
    """Run every conformance check on ``play`` (see the module docstring)."""
    check_determinism(play)
    check_privacy(play)
