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

Talk (``talk`` public or public+private): :meth:`ModelAgent.atalk` returns an
:class:`~scarce_lab.environments.sovsim.world.talk.Utterance`. A model answers ``{"message", "to"}``
(recipients by their prompt names); an unusable answer falls back to **silence** (the
documented talk fallback). A scripted policy talks through its talk function
(:func:`~.scripted.talk_policy`) or stays silent.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from scarce_lab.agents.decided import Decided
from scarce_lab.llm.outcomes import MissingDecisionError

from ..world.commons import Observation, Phase
from ..world.talk import TalkObservation, Utterance
from .prompts import agent_names, render_messages, render_talk_messages
from .schemas import announcement_schema, extraction_schema, talk_schema
from .scripted import Policy, get_policy, sustainable, talk_policy


class SovSimAgent(Protocol):
    """Anything that turns an observation (plus a per-decision seed) into a decision
    (``value``: an extraction or an announced pool, pool units)."""

    model: str

    async def adecide(self, obs: Observation, seed: int) -> Decided: ...


def fallback_value(obs: Observation) -> int:
    """The documented fallback: sustainable share (extraction) or the true pool
    (announcement), inside the observation's legal actions (an announcement is capped
    at the largest legal one)."""
    return obs.legal.clamp(sustainable(obs, random.Random(0)))


def _decided(out: Any, value: Any, reasoning: str) -> Decided:
    """A model's decision with the provenance of its outcome ``out``."""
    return Decided.from_outcome(out, value, reasoning)


class ModelAgent:
    """A SovSim agent over a :class:`~scarce_lab.llm.model.Model`: it builds the
    decision request (prompt rendered only when a model reads it, observation for a
    scripted policy, schema and the documented fallback per phase) and turns the
    outcome into a :class:`Decided`; model and scripted agents differ only in their
    :class:`~scarce_lab.llm.model.Model`.

    Raises (from :meth:`adecide` and :meth:`atalk`):
        MissingDecisionError: no call got an answer (the records are attached).
    """

    def __init__(self, lm: Any, role_labels: str = "default"):
        self.lm = lm
        self.model = lm.name
        self.role_labels = role_labels

    async def _ask(self, obs: Observation | TalkObservation, seed: int, schema: Any, fallback: Any, purpose: str,
                   messages: Any) -> Any:
        """The model's outcome of one decision request; the run its calls belong to comes
        from the bound run scope (:mod:`scarce_lab.llm.scope`)."""
        from scarce_lab.llm.model import DecisionRequest

        out = await self.lm.adecide(DecisionRequest(schema=schema, fallback=fallback, seed=seed, observation=obs,
                                                    messages=messages, purpose=purpose, agent=obs.agent,
                                                    round=obs.round))
        if out.missing and not self.lm.scripted:
            raise MissingDecisionError.from_calls(out.calls)
        return out

    async def adecide(self, obs: Observation, seed: int) -> Decided:
        """The decision of ``obs``'s phase (an extraction, or a king's announcement)."""
        fb = fallback_value(obs)
        if obs.phase == Phase.announce:
            schema: Any = announcement_schema(obs.max_extraction)  # the observation's legal announcements
            fallback = schema(reasoning="fallback: honest announcement", announced_pool=fb)
            purpose, attr = "announcement", "announced_pool"
        else:
            schema = extraction_schema(obs.max_extraction, obs.step)
            fallback = schema(reasoning="fallback: sustainable share", extraction=fb)
            purpose, attr = "extraction", "extraction"
        out = await self._ask(obs, seed, schema, fallback, purpose, lambda: render_messages(obs, self.role_labels))
        if self.lm.scripted:
            return Decided(value=out.decision, reasoning=f"scripted policy {self.model}")
        return _decided(out, int(getattr(out.decision, attr)), out.decision.reasoning)

    async def atalk(self, obs: TalkObservation, seed: int) -> Decided[Utterance]:
        """The agent's talk turn: a model is asked for ``{"message"[, "to"]}``
        (recipients named as in its prompt, turned into agent ids here); an unusable
        answer falls back to silence (``fallback_used``)."""
        names, _, _ = agent_names(obs.condition.value, obs.config.n_agents, self.role_labels)
        by_name = {names[obs.agents.index(a)]: a for a in obs.recipients}
        schema: Any = talk_schema(obs.max_chars, tuple(by_name))
        fallback = schema(message="", **({"to": []} if by_name else {}))
        out = await self._ask(obs, seed, schema, fallback, "talk", lambda: render_talk_messages(obs, self.role_labels))
        to = tuple(dict.fromkeys(by_name[n] for n in getattr(out.decision, "to", ()) or ()))
        return _decided(out, Utterance(out.decision.message, to), "")

    async def ainstitute(self, obs: Any, seed: int) -> Decided:
        """A ballot, quota proposal or sanction (:mod:`.institutions`; its fallbacks)."""
        from .institutions import model_institution

        return await model_institution(self, obs, seed)


class ScriptedAgent(ModelAgent):
    """A scripted policy; ``seed`` drives its random choices."""

    def __init__(self, model: str, policy: Policy):
        from scarce_lab.llm.model import ScriptedModel

        super().__init__(ScriptedModel(model, policy))
        self.policy = policy

    async def atalk(self, obs: TalkObservation, seed: int) -> Decided[Utterance]:
        """The policy's talk (:func:`~.scripted.talk_policy`), or silence for a policy
        that does not talk."""
        talk = talk_policy(self.policy)
        if talk is None:
            return Decided(value=Utterance(), reasoning=f"scripted policy {self.model} (silent)")
        return Decided(value=talk(obs, random.Random(seed)), reasoning=f"scripted policy {self.model}")

    async def ainstitute(self, obs: Any, seed: int) -> Decided:
        """The policy's stated institution rule (:func:`.institutions.scripted_institution`)."""
        from .institutions import scripted_institution

        return Decided(value=scripted_institution(self.model, obs, random.Random(seed)),
                       reasoning=f"scripted policy {self.model}")


#: What an :class:`LLMAgent` built without settings sends: SovSim's recorded defaults
#: (``llm.temperature``, ``llm.max_tokens`` of :class:`scarce_lab.environments.sovsim.config.SovSimLLM`),
#: so a game given ready-made agents sends what its manifest records.
SOVSIM_TEMPERATURE = 0.7
SOVSIM_MAX_TOKENS = 110


class LLMAgent(ModelAgent):
    """Asks ``model`` through a model client for an extraction or announcement.

    ``litellm_kwargs`` pass through to litellm (e.g. ``mock_response`` in tests).
    Unset, ``temperature`` and ``max_tokens`` are SovSim's recorded defaults
    (:data:`SOVSIM_TEMPERATURE`, :data:`SOVSIM_MAX_TOKENS`). The schema is built per phase: ``extraction`` is one of the multiples of 3 up to
    the agent's cap; ``announced_pool`` an int validated to 0..999. See the module
    docstring for the fallback.
    """

    def __init__(
        self,
        model: str,
        client: Any,
        role_labels: str = "default",
        max_tokens: int = SOVSIM_MAX_TOKENS,
        temperature: float | None = SOVSIM_TEMPERATURE,
        litellm_kwargs: dict[str, Any] | None = None,
        reasoning_effort: str | None = None,
    ):
        from scarce_lab.llm.model import ClientModel, Generation

        super().__init__(ClientModel(model, client, Generation(temperature=temperature, max_tokens=max_tokens,
                                                               reasoning_effort=reasoning_effort),
                                     **dict(litellm_kwargs or {})), role_labels)


def make_agent(model: str, client: Any = None, role_labels: str = "default", llm: Any = None, *,
               make_client: Any = None, human_time_limit_s: float | None = None) -> SovSimAgent:
    """A :class:`ScriptedAgent` for ``scripted/<policy>[:arg]``, a :class:`ModelAgent`
    over a person's :class:`~scarce_lab.llm.human.HumanModel` for ``human/<name>``
    (``human_time_limit_s`` seconds per decision; ``None``: the default), else an :class:`LLMAgent`
    whose sampling settings (``temperature``, ``max_tokens``, ``reasoning_effort``) come
    from ``llm`` (an ``LLMSettings`` or a seat's
    :class:`~scarce_lab.config.seats.SeatSettings`; default: the agent's own defaults):
    they are what its calls send. The client is ``client``, else
    ``make_client()``, called only for a model that needs one.

    Raises:
        ValueError: unknown scripted policy, or an LLM model without a client.
    """
    from scarce_lab.llm.model import model_for

    # the one place a model string is resolved
    lm = model_for(model, client=client, make_client=make_client, policies=get_policy,
                   human_time_limit_s=human_time_limit_s)
    if lm.scripted:
        return ScriptedAgent(model, lm.policy)
    if lm.ref.kind == "human":
        return ModelAgent(lm, role_labels)
    if llm is None:
        return LLMAgent(model, lm.client, role_labels=role_labels)
    return LLMAgent(model, lm.client, role_labels=role_labels, max_tokens=llm.max_tokens, temperature=llm.temperature,
                    reasoning_effort=getattr(llm, "reasoning_effort", None))
