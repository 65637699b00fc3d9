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

:func:`model_for` is the one place a model string becomes a model (the registry of
names is :func:`~scarce_lab.llm.models.resolve_model`); callers branch on
``model.scripted`` where they must, never on the string. An environment passes its own
scripted registry (``policies``), since this package knows no environment.

The run, round and agent of the calls come from the bound run scope
(:mod:`scarce_lab.llm.scope`), or from the request where it names them.
"""

from __future__ import annotations

import inspect
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .models import ModelRef, resolve_model
from .outcomes import CompletionResult, DecisionOutcome

T = TypeVar("T")

__all__ = ["ClientModel", "DecisionRequest", "Generation", "Model", "ModelHolder", "ScriptedModel", "model_for"]


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
        from .human import DEFAULT_TIME_LIMIT_S, HumanModel

        return HumanModel(name, DEFAULT_TIME_LIMIT_S if human_time_limit_s is None else human_time_limit_s)
    if client is None and make_client is not None:
        client = make_client()
    if client is None:
        raise ValueError(f"model {name!r} needs an LLM client (an LLMClient or another model client; only scripted/<policy> runs without one)")
    return ClientModel(name, client, generation, **litellm_kwargs)
