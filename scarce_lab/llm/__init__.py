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

from .client import (
    CallContext,
    CompletionResult,
    DecisionOutcome,
    LLMClient,
    LLMSettings,
)
from .context import ContextWindowError
from .decisions import DecisionModel, DecisionPart, int_choice, register_decision_family
from .model import ClientModel, DecisionRequest, Generation, Model, ScriptedModel, model_for
from .models import (
    EMBEDDED_MODEL,
    ModelRef,
    is_embedded,
    is_scripted,
    needs_client,
    resolve_model,
    scripted_policy,
)
from .outcomes import OUTCOMES, MissingDecisionError
from .scope import RunScope, current_scope, run_scope


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
    "ClientModel",
    "DecisionRequest",
    "Generation",
    "Model",
    "RunScope",
    "ScriptedModel",
    "current_scope",
    "is_scripted",
    "model_for",
    "needs_client",
    "run_scope",
    "CompletionResult",
    "ContextWindowError",
    "DecisionModel",
    "DecisionOutcome",
    "DecisionPart",
    "EMBEDDED_MODEL",
    "LLMClient",
    "LLMSettings",
    "ModelRef",
    "MissingDecisionError",
    "OUTCOMES",
    "int_choice",
    "make_client",
    "resolve_model",
    "is_embedded",
    "register_decision_family",
    "scripted_policy",
]
