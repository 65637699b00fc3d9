"""The client and the mock run the same parsing path, agents take either; one model
registry and one client factory."""

from __future__ import annotations

import asyncio

import pytest

from scarce_lab.environments.sovsim.agents.agent import make_agent
from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
from scarce_lab.environments.sovsim.world.commons import CommonsGame
from scarce_lab.llm import (
    LLMClient,
    LLMSettings,
    make_client,
    resolve_model,
)
from scarce_lab.llm.mock import MockModel
from scarce_lab.llm.models import needs_client

S = extraction_schema(30)
MSG = [{"role": "user", "content": "how much?"}]


def test_the_mock_is_a_client_and_runs_the_real_parsing_path():
    assert issubclass(MockModel, LLMClient)
    m = MockModel(['{"reasoning": "share", "extraction": 15}', "no json here"])
    ok = m.decide(model="mock/any", messages=MSG, schema=S, fallback=S(reasoning="fb", extraction=3), seed=1)
    assert (ok.decision.extraction, ok.outcome, ok.fallback_used) == (15, "ok", False)
    bad = m.decide(model="mock/any", messages=MSG, schema=S, fallback=S(reasoning="fb", extraction=3), seed=2)
    assert bad.fallback_used and bad.outcome == "invalid" and bad.decision.extraction == 3  # repaired once, then fallback
    assert len(m.seen) == 3 and all(c.model == "mock/any" for c in ok.calls + bad.calls)


def test_an_agent_takes_any_client():
    game = CommonsGame("cpr")
    agent = make_agent("mock/any", MockModel(['{"reasoning": "r", "extraction": 9}']))
    d = asyncio.run(agent.adecide(game.observe("a0"), seed=1))
    assert d.value == 9 and d.outcome == "ok" and d.calls


@pytest.mark.parametrize(("name", "kind", "policy", "arg"), [
    ("scripted/fixed:15", "scripted", "fixed", "15"),
    ("scripted/greedy", "scripted", "greedy", None),
    ("embedded/smollm2", "embedded", None, None),
    ("openai/gpt-4o-mini", "litellm", None, None),
])
def test_one_registry_of_model_names(name, kind, policy, arg):
    ref = resolve_model(name)
    assert (ref.kind, ref.policy, ref.arg, needs_client(name)) == (kind, policy, arg, kind != "scripted")


@pytest.mark.parametrize("bad", ["", "  ", "scripted/", " openai/x"])
def test_bad_model_names_are_named(bad):
    with pytest.raises(ValueError):
        resolve_model(bad)


def test_make_client_takes_an_environment_llm_model_and_overrides():
    from scarce_lab.environments.scarce.config import ScarceLLM

    c = make_client(ScarceLLM(temperature=0.3), max_concurrency=3, cache=False)
    assert isinstance(c, LLMClient) and c.settings.temperature == 0.3 and c.settings.max_concurrency == 3
    assert c.settings.max_tokens == LLMSettings().max_tokens  # unset per-decision budget: the client's default
