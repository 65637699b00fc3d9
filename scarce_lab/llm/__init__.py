"""Model access for every agent: one client over litellm (:class:`LLMClient`:
``acomplete``/``adecide``, cache, retries, rate limits, outcomes), a
scripted :class:`~scarce_lab.llm.mock.MockModel`, the embedded offline model
(``embedded/smollm2``) registered as a litellm provider, and the one registry of model
names (:func:`resolve_model`). :func:`make_client` is the one place a client is built
from settings; :func:`model_for` the one place a model string becomes a typed
:class:`Model` (a client bound to the string and its :class:`Generation` settings, or a
scripted policy behind the same interface). The run, round and agent of every call
travel in a context variable (:func:`run_scope`, :mod:`scarce_lab.llm.scope`).
"""

from typing import Any

from .client import CallContext, CompletionResult, DecisionOutcome, LLMClient, LLMSettings
from .model import DecisionRequest, Generation, Model, model_for
from .models import resolve_model
from .outcomes import MissingDecisionError
from .scope import run_scope


def make_client(settings: LLMSettings | None = None, **overrides: Any) -> LLMClient:
    """The model client for ``settings`` (an :class:`LLMSettings`, or an environment's
    ``llm`` sub-model), with ``overrides`` applied; the one place clients are built.

    Settings a client does not take (an environment's extra fields) are left out; an
    unset ``max_tokens`` keeps the client's default (agents pass their own).

    Raises:
        pydantic.ValidationError: an override out of range.
    """
    values = {} if settings is None else settings.model_dump(exclude_none=True)
    values.update(overrides)
    return LLMClient(LLMSettings(**{k: v for k, v in values.items() if k in LLMSettings.model_fields}))


__all__ = [
    "CallContext",
    "CompletionResult",
    "DecisionOutcome",
    "DecisionRequest",
    "Generation",
    "LLMClient",
    "LLMSettings",
    "MissingDecisionError",
    "Model",
    "make_client",
    "model_for",
    "resolve_model",
    "run_scope",
]
