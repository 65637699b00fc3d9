"""SCARCE agents: a Solver (works on the task, asks for slots) and a Negotiator
(plays the four-phase contention) per worker, scripted or model-driven.

``make_negotiator`` / ``make_solver`` map a model string to an agent:
``scripted/<policy>`` -> scripted policies (no client needed), anything else -> LLM.
Scripted negotiators: the basic policies of :mod:`.negotiators` and the strategic ones
of :mod:`.scripted` (:data:`SCRIPTED_NEGOTIATORS` lists both); scripted solvers:
``scripted/skilled[:<skill>]`` (:class:`~.scripted.SkilledScriptedSolver`, stochastic
progress over several slots) or any other ``scripted/<name>`` (the oracle routine of
:class:`~.solvers.ScriptedSolver`).
"""

from __future__ import annotations

from typing import Any

from .decided import Decided, derive_seed
from .negotiators import SCRIPTED_NEGOTIATORS as BASIC_NEGOTIATORS
from .negotiators import LLMNegotiator, Negotiator, ScriptedNegotiator
from .scripted import STRATEGIC_NEGOTIATORS, SkilledScriptedSolver, StrategicNegotiator, parse_skill
from .solvers import LLMSolver, ScriptedSolver, Solver, SolverAction
from .views import NegotiationView, SolverObservation

#: Every scripted negotiator policy (``scripted/<policy>``).
SCRIPTED_NEGOTIATORS: tuple[str, ...] = (*BASIC_NEGOTIATORS, *STRATEGIC_NEGOTIATORS)
#: Scripted solver policies with their own class (any other scripted name: the routine).
SCRIPTED_SOLVERS: tuple[str, ...] = ("skilled",)


def _policy(model: str) -> str | None:
    """The scripted policy a model string names (:func:`scarce_lab.llm.resolve_model`)."""
    from ...llm.models import resolve_model

    return resolve_model(model).policy


def make_negotiator(model: str, *, client: Any = None, seed: int = 0, **kwargs: Any) -> Negotiator:
    """``scripted/<policy>`` -> :class:`ScriptedNegotiator` (policy must be one of
    ``SCRIPTED_NEGOTIATORS``); other models -> :class:`LLMNegotiator` (needs ``client``).

    Raises:
        ValueError: unknown scripted policy or no client for a model.
    """
    p = _policy(model)
    if p is not None:
        return StrategicNegotiator(p, seed=seed) if p in STRATEGIC_NEGOTIATORS else ScriptedNegotiator(p, seed=seed)
    if client is None:
        raise ValueError(f"model {model!r} needs an LLM client")
    return LLMNegotiator(model, client, seed, **kwargs)


def make_solver(model: str, task: Any, *, client: Any = None, seed: int = 0, **kwargs: Any) -> Solver:
    """``scripted/skilled[:<skill>]`` -> :class:`SkilledScriptedSolver`; other
    ``scripted/<name>`` -> :class:`ScriptedSolver`; other models -> :class:`LLMSolver`.

    Raises:
        ValueError: no client for a model, or a skill outside (0, 1].
    """
    if _policy(model) == "skilled":
        return SkilledScriptedSolver(task, skill=parse_skill(model.partition(":")[2] or None), seed=seed)
    if _policy(model) is not None:
        return ScriptedSolver(task, policy=_policy(model), seed=seed)
    if client is None:
        raise ValueError(f"model {model!r} needs an LLM client")
    return LLMSolver(model, client, seed, **kwargs)


__all__ = [
    "Decided", "derive_seed", "SCRIPTED_NEGOTIATORS", "SCRIPTED_SOLVERS", "STRATEGIC_NEGOTIATORS",
    "SkilledScriptedSolver", "StrategicNegotiator", "parse_skill", "LLMNegotiator", "Negotiator", "ScriptedNegotiator",
    "LLMSolver", "ScriptedSolver", "Solver", "SolverAction", "NegotiationView", "SolverObservation",
    "make_negotiator", "make_solver",
]
