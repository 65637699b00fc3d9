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
from .models import EMBEDDED_MODEL, is_embedded, scripted_policy

__all__ = [
    "CallContext",
    "CompletionResult",
    "DecisionOutcome",
    "EMBEDDED_MODEL",
    "LLMClient",
    "LLMSettings",
    "is_embedded",
    "scripted_policy",
]
