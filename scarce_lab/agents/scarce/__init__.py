"""SCARCE agents: a Solver (works on the task, asks for slots) and a Negotiator
(plays the four-phase contention) per worker, scripted or model-driven.

``make_negotiator`` / ``make_solver`` map a model string to an agent:
``scripted/<policy>`` -> scripted policies (no client needed), anything else -> LLM.
"""

from __future__ import annotations

from typing import Any

from .decided import Decided, derive_seed
from .negotiators import SCRIPTED_NEGOTIATORS, LLMNegotiator, Negotiator, ScriptedNegotiator
from .solvers import LLMSolver, ScriptedSolver, Solver, SolverAction
from .views import NegotiationView, SolverObservation


def _policy(model: str) -> str | None:
    if not model.startswith("scripted/"):
        return None
    p = model.removeprefix("scripted/").partition(":")[0]
    if not p:
        raise ValueError(f"model {model!r}: 'scripted/' needs a policy name, e.g. scripted/fifo")
    return p


def make_negotiator(model: str, *, client: Any = None, seed: int = 0, **kwargs: Any) -> Negotiator:
    """``scripted/<policy>`` -> :class:`ScriptedNegotiator` (policy must be one of
    ``SCRIPTED_NEGOTIATORS``); other models -> :class:`LLMNegotiator` (needs ``client``).

    Raises:
        ValueError: unknown scripted policy or no client for a model.
    """
    p = _policy(model)
    if p is not None:
        return ScriptedNegotiator(p, seed=seed)
    if client is None:
        raise ValueError(f"model {model!r} needs an LLM client")
    return LLMNegotiator(model, client, seed, **kwargs)


def make_solver(model: str, task: Any, *, client: Any = None, seed: int = 0, **kwargs: Any) -> Solver:
    """``scripted/<anything>`` -> :class:`ScriptedSolver`; other models -> :class:`LLMSolver`.

    Raises:
        ValueError: no client for a model.
    """
    if _policy(model) is not None:
        return ScriptedSolver(task, policy=_policy(model), seed=seed)
    if client is None:
        raise ValueError(f"model {model!r} needs an LLM client")
    return LLMSolver(model, client, seed, **kwargs)


__all__ = [
    "Decided", "derive_seed", "SCRIPTED_NEGOTIATORS", "LLMNegotiator", "Negotiator", "ScriptedNegotiator",
    "LLMSolver", "ScriptedSolver", "Solver", "SolverAction", "NegotiationView", "SolverObservation",
    "make_negotiator", "make_solver",
]
