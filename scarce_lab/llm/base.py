"""The two-method language-model interface every agent talks to.

A :class:`LanguageModel` offers ``acomplete`` (one chat completion: text, tool calls
and the call's record with its outcome) and ``adecide`` (a decision validated against a
pydantic schema, with repair, fallback and the missing-decision rule). Implementations:

- :class:`scarce_lab.llm.client.LLMClient`: litellm (hosted models, local servers, the
  embedded model), with cache, retries, rate limits and accounting;
- :class:`scarce_lab.llm.mock.MockModel`: scripted answers through the same parsing and
  outcome path, no network (tests, notebooks, examples);
- wrappers that hold another model, e.g. :class:`CallBudget` (stop a run before it
  spends more than N calls).

Agents take any ``LanguageModel``; :func:`scarce_lab.llm.make_client` builds the
default one from settings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class LanguageModel(ABC):
    """What an agent needs from a model (see the module docstring)."""

    @abstractmethod
    async def acomplete(self, model: str, messages: list[dict[str, Any]], *, seed: int, **kwargs: Any) -> Any:
        """One chat completion; returns a ``CompletionResult`` (text, tool calls, record).
        Never raises for transport or provider errors: they are the record's outcome."""

    @abstractmethod
    async def adecide(self, **kwargs: Any) -> Any:
        """A decision validated against ``schema`` (keyword arguments as
        :meth:`scarce_lab.llm.client.LLMClient.adecide`); returns a ``DecisionOutcome``."""

    def decide(self, **kwargs: Any) -> Any:
        """Synchronous :meth:`adecide` (works inside Jupyter's running loop too)."""
        from .._sync import run_sync

        return run_sync(self.adecide(**kwargs))

    def complete(self, model: str, messages: list[dict[str, Any]], *, seed: int, **kwargs: Any) -> Any:
        """Synchronous :meth:`acomplete`."""
        from .._sync import run_sync

        return run_sync(self.acomplete(model, messages, seed=seed, **kwargs))


class CallBudgetExceeded(RuntimeError):
    """A :class:`CallBudget` wrapper refused a call beyond its budget."""


class CallBudget(LanguageModel):
    """Wraps a model and refuses calls beyond ``max_calls`` (a guard for costly hosted
    runs: the run stops with :class:`CallBudgetExceeded` and can be resumed with a new
    budget). Attribute access falls through to the wrapped model (``settings``...).

    Attributes:
        calls: completions made so far through this wrapper (repairs and resends count).
    """

    def __init__(self, inner: LanguageModel, max_calls: int):
        if max_calls < 0:
            raise ValueError(f"max_calls must be >= 0, got {max_calls}")
        self.inner = inner
        self.max_calls = max_calls
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _spend(self) -> None:
        if self.calls >= self.max_calls:
            raise CallBudgetExceeded(f"the call budget of {self.max_calls} model calls is spent")
        self.calls += 1

    async def acomplete(self, model: str, messages: list[dict[str, Any]], *, seed: int, **kwargs: Any) -> Any:
        self._spend()
        return await self.inner.acomplete(model, messages, seed=seed, **kwargs)

    async def adecide(self, **kwargs: Any) -> Any:
        self._spend()
        return await self.inner.adecide(**kwargs)
