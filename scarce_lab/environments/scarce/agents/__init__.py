"""SCARCE agents: a Solver (works on the task, asks for slots) and a Negotiator
(plays the four-phase contention) per worker, scripted or model-driven.

``make_negotiator`` / ``make_solver`` map a model string (once, through
:func:`~scarce_lab.llm.model.model_for`) to the one agent of each role,
:class:`ModelNegotiator` / :class:`ModelSolver`, which decides through its
:class:`~scarce_lab.llm.model.Model`: ``scripted/<policy>`` -> a scripted policy behind a
:class:`~scarce_lab.llm.model.ScriptedModel` (no client needed), anything else -> a
client model.
Scripted negotiators: the basic policies of :mod:`.negotiators` and the strategic ones
of :mod:`.scripted` and the institutional ones of :mod:`.institutional`
(:data:`SCRIPTED_NEGOTIATORS` lists them all); scripted solvers:
``scripted/skilled[:<skill>]`` (:class:`~.scripted.SkilledScriptedSolver`, stochastic
progress over several slots) or any other ``scripted/<name>`` (the oracle routine of
:class:`~.solvers.ScriptedSolver`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..world.observations import NegotiationView, SolverObservation
from .institutional import INSTITUTION_NEGOTIATORS, InstitutionalNegotiator, mix_role
from .negotiators import SCRIPTED_NEGOTIATORS as BASIC_NEGOTIATORS
from .negotiators import (
    LLMNegotiator,
    ModelNegotiator,
    ScriptedNegotiator,
    ScriptedNegotiatorPolicy,
)
from .scripted import STRATEGIC_NEGOTIATORS, SkilledScriptedSolver, StrategicNegotiator, parse_skill
from .solvers import (
    LLMSolver,
    ModelSolver,
    ScriptedSolver,
    ScriptedSolverPolicy,
    SolverAction,
)

#: Every scripted negotiator policy (``scripted/<policy>``).
SCRIPTED_NEGOTIATORS: tuple[str, ...] = (*BASIC_NEGOTIATORS, *STRATEGIC_NEGOTIATORS, *INSTITUTION_NEGOTIATORS)


#: The rules of the scripted negotiators, as their retrospective interview answers state
#: them (:func:`scarce_lab.agents.interviews.scripted_answer`; policies in
#: :mod:`.negotiators`, :mod:`.scripted` and :mod:`.institutional`).
INTERVIEW_RULES: dict[str, str] = {
    "fifo": "declare my request-time position, my requested duration and a bid of 0; rank by request time.",
    "sjf": "declare the position of my requested duration among the queue's (shortest first), bid 0; rank by "
           "declared duration.",
    "edf": "declare position 1 when less than 10 minutes remain, else my request-time position; bid more when "
           "urgent; rank by declared position.",
    "bid-first": "declare position 1 and bid a fifth of my budget; rank by public bid.",
    "highest-bid": "declare position 1 and bid a fifth of my budget; rank by public bid.",
    "random": "random position, duration and bid; a random ballot; sometimes ask another to let me go first.",
    "promise-breaker": "promise to rank myself last, then rank myself first; vote against every fine; no contract.",
    "sanctioner": "promise max(2, my request-time position) and keep it; vote to fine every breach by another "
                  "worker; accept every contract offer.",
    "contractor": "offer the worker just ahead of me a payment to let me go first; honour my signed contracts in "
                  "my ballot; make no promise; vote to fine breaches that harmed me.",
}
#: The self-assessment a scripted negotiator's rule (:data:`INTERVIEW_RULES`) implies in
#: its interview, where it implies one (none for ``random``).
INTERVIEW_ASSESSMENTS: dict[str, str] = {
    "fifo": "fair",
    "sjf": "fair",
    "bid-first": "self_interested",
    "highest-bid": "self_interested",
    "edf": "self_interested",
    "promise-breaker": "self_interested",
    "sanctioner": "fair",
    "contractor": "fair",
}


def interview_rule(model: str, worker: str | None = None) -> tuple[str | None, str | None]:
    """``(rule text, self-assessment)`` of the scripted negotiator ``model``
    (``scripted/<policy>``) for its interview (:data:`INTERVIEW_RULES`,
    :data:`INTERVIEW_ASSESSMENTS`; ``None`` for what it has not). ``institution-mix`` is
    resolved to the role ``worker`` plays in it (:func:`~.institutional.mix_role`); its
    answer names the mix."""
    name = model.split("/", 1)[-1].split(":", 1)[0]
    if name == "institution-mix" and worker is not None and any(c.isdigit() for c in worker):
        role = mix_role(worker)
        return f"(institution-mix, playing {role}) {INTERVIEW_RULES[role]}", INTERVIEW_ASSESSMENTS.get(role)
    return INTERVIEW_RULES.get(name), INTERVIEW_ASSESSMENTS.get(name)


def negotiator_policies(seed: int = 0) -> Callable[[str, str | None], ScriptedNegotiatorPolicy]:
    """The scripted negotiator registry for :func:`~scarce_lab.llm.model.model_for`:
    ``(policy, arg) -> policy object`` (randomness from ``seed``).

    Raises (from the registry):
        ValueError: a policy not in :data:`SCRIPTED_NEGOTIATORS`, or an argument (none takes one).
    """

    def policy(name: str, arg: str | None) -> ScriptedNegotiatorPolicy:
        if arg is not None:
            raise ValueError(f"scripted/{name} takes no argument, got {arg!r}")
        if name in STRATEGIC_NEGOTIATORS:
            return StrategicNegotiator(name, seed=seed)
        if name in INSTITUTION_NEGOTIATORS:
            return InstitutionalNegotiator(name, seed=seed)
        return ScriptedNegotiator(name, seed=seed)  # raises for an unknown policy

    return policy


def solver_policies(task: Any, seed: int = 0) -> Callable[[str, str | None], ScriptedSolverPolicy]:
    """The scripted solver registry for :func:`~scarce_lab.llm.model.model_for`, bound
    to the worker's ``task`` and the scripted solver's ``seed``: ``skilled[:<skill>]``
    -> :class:`SkilledScriptedSolver`, any other name -> the routine of
    :class:`ScriptedSolver`.

    Raises (from the registry):
        ValueError: a skill outside (0, 1].
    """

    def policy(name: str, arg: str | None) -> ScriptedSolverPolicy:
        if name == "skilled":
            return SkilledScriptedSolver(task, skill=parse_skill(arg), seed=seed)
        return ScriptedSolver(task, policy=name, seed=seed)

    return policy


def make_negotiator(model: Any, *, client: Any = None, seed: int = 0, make_client: Callable[[], Any] | None = None,
                    reasoning_effort: str | None = None, temperature: float | None = None,
                    human_time_limit_s: float | None = None, **kwargs: Any) -> ModelNegotiator:
    """The :class:`ModelNegotiator` of ``model``: a model string (resolved once by
    :func:`~scarce_lab.llm.model.model_for`: ``scripted/<policy>`` -> the scripted policy
    of :func:`negotiator_policies`, other models -> a client model over ``client`` or
    ``make_client()``, with ``reasoning_effort`` and ``temperature`` (``None``: the
    client's)) or a :class:`~scarce_lab.llm.model.Model` already resolved. ``kwargs`` go to
    :class:`ModelNegotiator` (``mechanism``, ``max_tokens``).

    Raises:
        ValueError: unknown scripted policy or no client for a model.
    """
    lm = _model(model, client, make_client, temperature, reasoning_effort, negotiator_policies(seed),
                human_time_limit_s)
    return ModelNegotiator(lm, seed, **kwargs)


def make_solver(model: Any, task: Any, *, client: Any = None, seed: int = 0, scripted_seed: int | None = None,
                make_client: Callable[[], Any] | None = None, reasoning_effort: str | None = None,
                temperature: float | None = None, **kwargs: Any) -> ModelSolver:
    """The :class:`ModelSolver` of ``model`` on ``task``: a model string (resolved once
    by :func:`~scarce_lab.llm.model.model_for`: ``scripted/<name>`` -> the scripted
    policy of :func:`solver_policies`, seeded with ``scripted_seed``, default ``seed``;
    other models -> a client model over ``client`` or ``make_client()``, with
    ``reasoning_effort`` and ``temperature`` (``None``: the client's), whose call seeds
    derive from ``seed``) or a
    :class:`~scarce_lab.llm.model.Model` already resolved. ``kwargs`` go to
    :class:`ModelSolver` (``native_tools``, ``prompt_tokens``, ``checklist``, ``max_tokens``).

    Raises:
        ValueError: no client for a model, or a skill outside (0, 1].
    """
    lm = _model(model, client, make_client, temperature, reasoning_effort,
                solver_policies(task, seed if scripted_seed is None else scripted_seed))
    return ModelSolver(lm, seed, **kwargs)


def _model(model: Any, client: Any, make_client: Callable[[], Any] | None, temperature: float | None,
           reasoning_effort: str | None, policies: Callable[[str, str | None], Any],
           human_time_limit_s: float | None = None) -> Any:
    """``model`` if it is a :class:`~scarce_lab.llm.model.Model`, else the one
    :func:`~scarce_lab.llm.model.model_for` resolves (with ``policies`` for a scripted name)."""
    from scarce_lab.llm.model import Generation, Model, model_for

    return model if isinstance(model, Model) else model_for(
        model, client=client, make_client=make_client,
        generation=Generation(temperature=temperature, reasoning_effort=reasoning_effort), policies=policies,
        human_time_limit_s=human_time_limit_s)


__all__ = [
    "SCRIPTED_NEGOTIATORS", "STRATEGIC_NEGOTIATORS",
    "SkilledScriptedSolver", "StrategicNegotiator", "INSTITUTION_NEGOTIATORS", "InstitutionalNegotiator", "parse_skill", "LLMNegotiator", "ScriptedNegotiator",
    "LLMSolver", "ScriptedSolver", "SolverAction", "NegotiationView", "SolverObservation",
    "make_negotiator", "make_solver", "ModelNegotiator", "ModelSolver", "ScriptedNegotiatorPolicy",
    "ScriptedSolverPolicy", "negotiator_policies", "solver_policies", "INTERVIEW_RULES", "INTERVIEW_ASSESSMENTS",
    "interview_rule",
]
