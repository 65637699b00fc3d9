"""SovSim agents: an LLM agent (prompt -> typed decision via the LLM client) and a
scripted agent; :func:`make_agent` picks one from a model string.

Fallback after an unusable answer (the client records the outcome and makes one
second call first): an extraction falls back to the **sustainable share** floor3(P/8)
of the pool the agent sees, clamped to its cap; an announcement falls back to the
**true pool** (an honest announcement). A missing decision (no answer at all:
transport failure after retries, or a prompt too long for the context window) is
never replaced: :meth:`LLMAgent.adecide` raises
:class:`~scarce_lab.llm.MissingDecisionError` carrying the call records, and the run
stops (resumable).
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from ...envs.commons import Observation, Phase
from ...llm.outcomes import MissingDecisionError
from ..decided import Decided
from .prompts import render_messages
from .schemas import announcement_schema, extraction_schema
from .scripted import Policy, get_policy, sustainable

#: SovSim agents return the package-wide decision type; ``value`` is an extraction or
#: an announced pool (pool units).
AgentDecision = Decided


class SovSimAgent(Protocol):
    """Anything that turns an observation (plus a per-decision seed) into a decision."""

    model: str

    async def adecide(self, obs: Observation, seed: int, run_id: str | None = None) -> AgentDecision: ...


def fallback_value(obs: Observation) -> int:
    """The documented fallback: sustainable share (extraction) or the true pool
    (announcement), inside the observation's legal actions (an announcement is capped
    at the largest legal one)."""
    return obs.legal.clamp(sustainable(obs, random.Random(0)))


class ScriptedAgent:
    """A scripted policy; ``seed`` drives its random choices."""

    def __init__(self, model: str, policy: Policy):
        self.model = model
        self.policy = policy

    async def adecide(self, obs: Observation, seed: int, run_id: str | None = None) -> AgentDecision:
        value = self.policy(obs, random.Random(seed))
        return AgentDecision(value=value, reasoning=f"scripted policy {self.model}")


class LLMAgent:
    """Asks ``model`` through an LLMClient for an extraction or announcement.

    ``litellm_kwargs`` pass through to litellm (e.g. ``mock_response`` in tests).
    The schema is built per phase: ``extraction`` is one of the multiples of 3 up to
    the agent's cap; ``announced_pool`` an int validated to 0..999. See the module
    docstring for the fallback.

    Raises (from :meth:`adecide`):
        MissingDecisionError: no call got an answer (the records are attached).
    """

    def __init__(
        self,
        model: str,
        client: Any,
        role_labels: str = "default",
        max_tokens: int = 110,
        temperature: float | None = None,
        litellm_kwargs: dict[str, Any] | None = None,
    ):
        self.model = model
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self.client = client
        self.role_labels = role_labels
        self.max_tokens = max_tokens
        self.temperature = temperature

    async def adecide(self, obs: Observation, seed: int, run_id: str | None = None) -> AgentDecision:
        from ...llm import CallContext

        messages = render_messages(obs, self.role_labels)
        fb = fallback_value(obs)
        if obs.phase == Phase.announce:
            schema: Any = announcement_schema(obs.max_extraction)  # the observation's legal announcements
            fallback = schema(reasoning="fallback: honest announcement", announced_pool=fb)
            purpose, attr = "announcement", "announced_pool"
        else:
            schema = extraction_schema(obs.max_extraction, obs.step)
            fallback = schema(reasoning="fallback: sustainable share", extraction=fb)
            purpose, attr = "extraction", "extraction"
        out = await self.client.adecide(
            model=self.model,
            messages=messages,
            schema=schema,
            fallback=fallback,
            seed=seed,
            context=CallContext(agent=obs.agent, round=obs.round, purpose=purpose, run_id=run_id),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            **self.litellm_kwargs,
        )
        if out.missing:
            raise MissingDecisionError.from_calls(out.calls)
        return AgentDecision(
            value=int(getattr(out.decision, attr)),
            reasoning=out.decision.reasoning,
            valid=out.valid,
            repaired=out.repaired,
            fallback_used=out.fallback_used,
            violation=out.violation,
            outcome=out.outcome,
            calls=list(out.calls),
        )


def make_agent(model: str, client: Any = None, role_labels: str = "default", llm: Any = None) -> SovSimAgent:
    """A :class:`ScriptedAgent` for ``scripted/<policy>[:arg]``, else an :class:`LLMAgent`
    whose sampling settings (``temperature``, ``max_tokens``) come from ``llm`` (an
    ``LLMSettings``; default: the agent's own defaults).

    Raises:
        ValueError: unknown scripted policy, or an LLM model without a client.
    """
    from ...llm.models import resolve_model

    ref = resolve_model(model)
    if ref.kind == "scripted":
        return ScriptedAgent(model, get_policy(ref.policy, ref.arg))
    if client is None:
        raise ValueError(f"model {model!r} needs an LLMClient (only scripted/<policy> runs without one)")
    if llm is None:
        return LLMAgent(model, client, role_labels=role_labels)
    return LLMAgent(model, client, role_labels=role_labels, max_tokens=llm.max_tokens, temperature=llm.temperature)
