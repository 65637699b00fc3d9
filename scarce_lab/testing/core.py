"""The shared core of the conformance suite (see :mod:`scarce_lab.testing`): what a play
returns (:class:`Observation`, :class:`Trace`), the registry's plays (:data:`HARNESSES`) and
the checks (determinism, privacy). It names no environment: each environment's play lives
in its own module (:mod:`.sovsim`, :mod:`.scarce`, :mod:`.economy`) or package, and its
spec points at it (``EnvironmentSpec.harness``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..legal_policy import LegalPolicy

__all__ = ["HARNESSES", "LegalPolicy", "Observation", "Trace", "check_determinism", "check_environment", "check_privacy"]


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
