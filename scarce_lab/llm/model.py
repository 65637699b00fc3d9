"""One typed model per agent: a :class:`Model` is bound to a model string and its
generation settings, and decides (:meth:`Model.adecide`) or completes
(:meth:`Model.acomplete`); scripted policies implement the same interface.

- :class:`ClientModel`: a client (the litellm :class:`~scarce_lab.llm.client.LLMClient`
  or a :class:`~scarce_lab.llm.mock.MockModel`) bound to a
  model string and :class:`Generation`; the request's prompt goes to the model and the
  outcome carries the call records.
- :class:`ScriptedModel`: a policy ``(observation, rng) -> decision`` named by
  ``scripted/<policy>[:<arg>]``; the request's observation goes to the policy, the
  outcome is always valid and has no calls. It completes no text.
- :class:`HumanModel`: a person (``human/<name>``) asked through the bound front end
  (:mod:`scarce_lab.llm.human`); no calls, outcome ``human`` or ``human_timeout``.

:func:`model_for` is the one place a model string becomes a model (the registry of
names is :func:`~scarce_lab.llm.models.resolve_model`); callers branch on
``model.scripted`` where they must, never on the string. An environment passes its own
scripted registry (``policies``), since this package knows no environment.

The run, round and agent of the calls come from the bound run scope
(:mod:`scarce_lab.llm.scope`), or from the request where it names them.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from .human import (
    DEFAULT_TIME_LIMIT_S,
    HUMAN,
    HUMAN_TIMEOUT,
    FormError,
    HumanDesk,
    HumanTurn,
    NoDeskError,
    current_desk,
    default_text,
    form_answer,
    form_fields,
)
from .models import ModelRef, person_of, resolve_model
from .outcomes import CompletionResult, DecisionOutcome

T = TypeVar("T")

__all__ = ["ClientModel", "DecisionRequest", "Generation", "HumanModel", "HumanReply", "Model", "ModelHolder",
           "ScriptedModel", "model_for"]


@dataclass(frozen=True)
class Generation:
    """Typed generation settings a model is bound with (``None``: the client's
    default). Units: tokens for ``max_tokens``."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


@dataclass
class DecisionRequest(Generic[T]):
    """One decision to take.

    Attributes:
        schema: the decision's pydantic model (validated strictly by a model client).
        fallback: the documented decision for an unusable answer (never for a missing one).
        seed: the decision's seed (model: sent and part of the cache key; scripted
            policy: seeds its ``random.Random``).
        messages: the prompt, or a function that renders it (called only by a model
            that reads prompts, so scripted runs render none).
        observation: what a scripted policy decides from.
        purpose, agent, round: for the call records (``None``: from the run scope).
        max_tokens: this decision's output tokens (``None``: the bound generation's).
    """

    schema: type[Any]
    fallback: Any
    seed: int
    messages: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]] | None = None
    observation: Any = None
    purpose: str = ""
    agent: str | None = None
    round: int | None = None
    max_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def prompt(self) -> list[dict[str, Any]]:
        """The rendered messages.

        Raises:
            ValueError: the request has no prompt.
        """
        msgs = self.messages() if callable(self.messages) else self.messages
        if msgs is None:
            raise ValueError(f"decision request {self.purpose!r} has no prompt for a model")
        return msgs


class Model(ABC):
    """A model string bound to what answers it (see the module docstring)."""

    #: the model string (as in configs, manifests and records)
    name: str
    #: what the string names (:func:`~scarce_lab.llm.models.resolve_model`)
    ref: ModelRef

    @property
    def scripted(self) -> bool:
        """True for a scripted policy (no model calls, no prompts)."""
        return self.ref.kind == "scripted"

    @abstractmethod
    async def adecide(self, request: DecisionRequest[T]) -> DecisionOutcome[T]:
        """The decision for ``request`` with its call records (none for a policy)."""

    @abstractmethod
    async def acomplete(self, messages: list[dict[str, Any]], *, seed: int, purpose: str = "",
                        **kwargs: Any) -> CompletionResult:
        """One free-text completion with its call record."""


class ClientModel(Model):
    """A :class:`~scarce_lab.llm.client.LLMClient` (or a mock) bound to ``name`` and
    ``generation``; ``litellm_kwargs`` pass through to every call (``mock_response``
    in tests, ``top_p``...)."""

    def __init__(self, name: str, client: Any, generation: Generation | None = None, **litellm_kwargs: Any):
        self.name, self.ref = name, resolve_model(name)
        if self.ref.kind in ("scripted", "human"):
            raise ValueError(f"model {name!r} is a {'scripted policy' if self.ref.kind == 'scripted' else 'person'}; "
                             "model_for picks its model")
        #: the model client (``None`` only for an agent built to render prompts: a call
        #: then raises, naming the model; :func:`model_for` never gives one without)
        self.client = client
        self.generation = generation or Generation()
        self.litellm_kwargs = litellm_kwargs

    def _context(self, purpose: str, agent: str | None, round: int | None) -> Any:
        from .client import CallContext

        return CallContext(agent=agent, round=round, purpose=purpose)

    def _bound(self) -> Any:
        if self.client is None:
            raise ValueError(f"model {self.name!r} needs an LLM client (none was given; only scripted/<policy> "
                             "runs without one)")
        return self.client

    async def adecide(self, request: DecisionRequest[T]) -> DecisionOutcome[T]:
        g = self.generation
        return await self._bound().adecide(
            model=self.name, messages=request.prompt(), schema=request.schema, fallback=request.fallback,
            seed=request.seed, context=self._context(request.purpose, request.agent, request.round),
            max_tokens=request.max_tokens or g.max_tokens, temperature=g.temperature,
            reasoning_effort=g.reasoning_effort, **{**self.litellm_kwargs, **request.extra},
        )

    async def acomplete(self, messages: list[dict[str, Any]], *, seed: int, purpose: str = "",
                        agent: str | None = None, round: int | None = None, **kwargs: Any) -> CompletionResult:
        g = self.generation
        kwargs.setdefault("max_tokens", g.max_tokens)
        return await self._bound().acomplete(
            self.name, messages, seed=seed, context=self._context(purpose, agent, round),
            temperature=g.temperature, reasoning_effort=g.reasoning_effort, **{**self.litellm_kwargs, **kwargs})


class ScriptedModel(Model):
    """A scripted policy behind the model interface: ``policy(observation, rng)``
    gives the decision (``rng``: ``random.Random(request.seed)``), or an awaitable of it
    (a policy that is itself asynchronous, e.g. a SCARCE negotiator's phase)."""

    def __init__(self, name: str, policy: Callable[[Any, random.Random], Any]):
        self.name, self.ref = name, resolve_model(name)
        if self.ref.kind != "scripted":
            raise ValueError(f"model {name!r} is not a scripted/<policy> name")
        self.policy = policy

    async def adecide(self, request: DecisionRequest[T]) -> DecisionOutcome[T]:
        value = self.policy(request.observation, random.Random(request.seed))
        if inspect.isawaitable(value):
            value = await value
        return DecisionOutcome(decision=value, valid=True, repaired=False, fallback_used=False, violation=None,
                               calls=[], outcome=None, source="scripted")  # type: ignore[arg-type]

    async def acomplete(self, messages: list[dict[str, Any]], *, seed: int, purpose: str = "",
                        **kwargs: Any) -> CompletionResult:
        raise TypeError(f"{self.name!r} is a scripted policy: it decides from observations and writes no text")


@dataclass(frozen=True)
class HumanReply:
    """What stands for a call record in a person's text (:meth:`HumanModel.acomplete`):
    the outcome and the seconds taken. Never a model call: a recorder refuses it."""

    outcome: str
    latency_s: float
    finish_reason: str | None = None


class HumanModel(Model):
    """The model of a ``human/<name>`` seat: the bound :class:`HumanDesk` answers (see
    the module docstring). ``time_limit_s``: seconds per decision (re-asks included).

    Raises (from :meth:`adecide` / :meth:`acomplete`):
        NoDeskError: no desk is bound (:func:`use_desk`).
        FormError: the request's schema cannot be a form (names the field).
        Exception: whatever the desk raised other than the time limit (e.g. ``EOFError``:
            the run stops there and can be resumed, asking the same question again).
    """

    def __init__(self, name: str, time_limit_s: float = DEFAULT_TIME_LIMIT_S):
        self.name, self.ref = name, resolve_model(name)
        self.person = person_of(name)
        if not time_limit_s > 0:
            raise ValueError(f"{name}: the time limit must be > 0 seconds, got {time_limit_s!r}")
        self.time_limit_s = float(time_limit_s)

    def _desk(self, seat: str | None) -> HumanDesk:
        desk = current_desk()
        if desk is None:
            raise NoDeskError(f"seat {seat or '?'} is {self.name}, and no human desk is bound: pass human=... to "
                              "sl.run (e.g. scarce_lab.agents.human.TerminalDesk()), or --human terminal on the CLI")
        return desk

    @staticmethod
    def _where(agent: str | None, round: int | None) -> tuple[str | None, int | None]:
        from .scope import current_scope

        scope = current_scope()
        return agent if agent is not None else scope.agent, round if round is not None else scope.round

    async def _ask(self, turn: HumanTurn, accept: Any) -> tuple[Any, float, str | None, bool]:
        """Ask until ``accept(answer)`` gives ``(value, None)``; ``(value, latency,
        first problem, timed_out)``."""
        desk = self._desk(turn.seat)
        start = time.monotonic()
        first: str | None = None
        limit = asyncio.timeout(self.time_limit_s)
        try:
            async with limit:
                while True:
                    left = max(0.0, self.time_limit_s - (time.monotonic() - start))
                    answer = await desk.ask(replace(turn, time_limit_s=left))
                    value, problem = accept(answer.value)
                    if problem is None:
                        return value, time.monotonic() - start, first, False
                    first = first or problem
                    turn = replace(turn, problem=problem)
        except TimeoutError:
            if not limit.expired():  # the desk's own error, not the time limit
                raise
            return None, time.monotonic() - start, first, True

    async def adecide(self, request: DecisionRequest[T]) -> DecisionOutcome[T]:
        from .decisions import validate_decision

        seat, rnd = self._where(request.agent, request.round)
        fields = form_fields(request.schema)
        fb = request.fallback
        turn = HumanTurn(seat=seat or "", person=self.person, kind="decision", purpose=request.purpose, round=rnd,
                         messages=tuple(request.prompt()), fields=fields,
                         default=fb.model_dump(mode="json") if hasattr(fb, "model_dump") else fb,
                         default_text=default_text(fb), time_limit_s=self.time_limit_s)

        def accept(value: Any) -> tuple[Any, str | None]:
            try:
                obj = form_answer(request.schema, value, fields)
            except FormError as exc:
                return None, str(exc)
            return validate_decision(obj, request.schema)

        decision, latency, problem, timed_out = await self._ask(turn, accept)
        if timed_out:
            why = f"no answer within {self.time_limit_s:g} s" + (f" (last refused: {problem})" if problem else "")
            return DecisionOutcome(decision=fb, valid=False, repaired=False, fallback_used=True, violation=why,
                                   calls=[], outcome=HUMAN_TIMEOUT, source="human", latency_s=latency)
        return DecisionOutcome(decision=decision, valid=True, repaired=problem is not None, fallback_used=False,
                               violation=problem, calls=[], outcome=HUMAN, source="human", latency_s=latency)

    async def acomplete(self, messages: list[dict[str, Any]], *, seed: int, purpose: str = "",
                        agent: str | None = None, round: int | None = None, max_chars: int | None = None,
                        **kwargs: Any) -> CompletionResult:
        """A free text from the person (a text turn of at most ``max_chars``
        characters); on timeout the empty text (silence), outcome ``human_timeout``.
        The result's ``record`` is a :class:`HumanReply`, not a call record."""
        seat, rnd = self._where(agent, round)
        turn = HumanTurn(seat=seat or "", person=self.person, kind="text", purpose=purpose, round=rnd,
                         messages=tuple(messages), fields=(), default="", default_text=default_text(""),
                         time_limit_s=self.time_limit_s, max_chars=max_chars)

        def accept(value: Any) -> tuple[Any, str | None]:
            if not isinstance(value, str):
                return None, f"a text answer is a str, got {type(value).__name__}"
            if max_chars is not None and len(value) > max_chars:
                return None, f"the text has {len(value)} characters; at most {max_chars} are allowed"
            return value, None

        text, latency, _, timed_out = await self._ask(turn, accept)
        return CompletionResult(text="" if timed_out else text, tool_calls=None,
                                record=HumanReply(HUMAN_TIMEOUT if timed_out else HUMAN, latency))


class ModelHolder:
    """What an agent that decides through a :class:`Model` (its ``lm``) tells its runner:
    whether a scripted policy decides, the model client and the reasoning effort (both
    ``None`` for a scripted policy). Mixed into the SCARCE negotiator and solver."""

    lm: Model

    @property
    def scripted(self) -> bool:
        """Whether a scripted policy decides (no model calls; the virtual clock's scripted
        cost applies)."""
        return self.lm.scripted

    @property
    def client(self) -> Any:
        """The model client (``None`` for a scripted policy)."""
        return getattr(self.lm, "client", None)

    @property
    def reasoning_effort(self) -> str | None:
        """The bound generation's reasoning effort (``None`` for a scripted policy)."""
        g = getattr(self.lm, "generation", None)
        return None if g is None else g.reasoning_effort


def model_for(name: str, *, client: Any = None, generation: Generation | None = None,
              policies: Callable[[str, str | None], Callable[[Any, random.Random], Any]] | None = None,
              make_client: Callable[[], Any] | None = None, human_time_limit_s: float | None = None,
              **litellm_kwargs: Any) -> Model:
    """The :class:`Model` a model string names: a :class:`ScriptedModel` for
    ``scripted/<policy>[:<arg>]`` (``policies(policy, arg)`` gives its function: the
    environment's registry), a :class:`~scarce_lab.llm.human.HumanModel` for
    ``human/<name>`` (asking the bound desk within ``human_time_limit_s`` seconds per
    decision; ``None``: its default), else a :class:`ClientModel` over ``client`` (when
    it is ``None``, over ``make_client()``: called only for a name that needs a client,
    so a scripted or human run never builds one).

    Raises:
        ValueError: a bad name (:func:`resolve_model`), a scripted name without
            ``policies``, an unknown policy (raised by ``policies``), or a model
            without a client.
    """
    ref = resolve_model(name)
    if ref.kind == "scripted":
        if policies is None:
            raise ValueError(f"model {name!r} is a scripted policy, and no scripted policies were given")
        return ScriptedModel(name, policies(ref.policy, ref.arg))
    if ref.kind == "human":
        return HumanModel(name, DEFAULT_TIME_LIMIT_S if human_time_limit_s is None else human_time_limit_s)
    if client is None and make_client is not None:
        client = make_client()
    if client is None:
        raise ValueError(f"model {name!r} needs an LLM client (an LLMClient or another model client; only scripted/<policy> runs without one)")
    return ClientModel(name, client, generation, **litellm_kwargs)
