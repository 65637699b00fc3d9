"""Model access for every agent: one client over litellm, an on-disk response cache,
and the embedded offline model (``embedded/smollm2``) registered as a litellm provider.
"""

from .client import (
    CallContext,
    CompletionResult,
    DecisionOutcome,
    LLMClient,
    LLMSettings,
)
from .context import ContextWindowError
from .decisions import DecisionModel, DecisionPart, int_choice, register_decision_family
from .models import EMBEDDED_MODEL, is_embedded, scripted_policy
from .outcomes import OUTCOMES, MissingDecisionError

__all__ = [
    "CallContext",
    "CompletionResult",
    "ContextWindowError",
    "DecisionModel",
    "DecisionOutcome",
    "DecisionPart",
    "EMBEDDED_MODEL",
    "LLMClient",
    "LLMSettings",
    "MissingDecisionError",
    "OUTCOMES",
    "int_choice",
    "is_embedded",
    "register_decision_family",
    "scripted_policy",
]
