"""Prompt tokens are counted before the call; a prompt that does
not fit (with its requested output tokens) is a clear ``context_overflow`` error naming
agent, round, prompt tokens and window, never a silent fallback or fewer tokens."""

from __future__ import annotations

import asyncio

import pytest
from _llm_fakes import FakeLLM, response

from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
from scarce_lab.llm import CallContext, LLMClient, LLMSettings, MissingDecisionError
from scarce_lab.llm.client import load_litellm
from scarce_lab.llm.context import (
    ContextWindowError,
    check_context,
    context_window,
    count_prompt_tokens,
)

S = extraction_schema(30)
FB = S(reasoning="fallback", extraction=9)
CTX = CallContext(agent="a2", round=7, purpose="extraction")
SMALL = "ollama/llama3"  # litellm's model map: 8192 tokens


def client() -> LLMClient:
    return LLMClient(LLMSettings(cache=False, max_retries=0))


LIT = load_litellm()


def test_known_windows():
    assert context_window("openai/gpt-4o-mini", LIT) == 128000
    assert context_window(SMALL, LIT) == 8192
    assert context_window("openai/no-such-model", LIT) is None
    assert context_window(SMALL) is None  # without litellm a hosted window is unknown


def test_prompt_near_the_limit_is_refused_not_given_fewer_tokens(monkeypatch):
    fake = FakeLLM().install(monkeypatch)  # any call would fail the test
    msgs = [{"role": "user", "content": "word " * 4000}]
    n = count_prompt_tokens(SMALL, msgs, LIT)
    assert 3900 < n < 4200
    out = client().decide(model=SMALL, messages=msgs, schema=S, fallback=FB, seed=1, context=CTX,
                          max_tokens=8192 - n + 1)
    assert fake.requests == []  # nothing was sent
    assert out.missing and not out.fallback_used and out.outcome == "context_overflow"
    err = out.calls[0].error
    for part in ("agent 'a2'", "round 7", f"{n} prompt tokens", "max_tokens 4", "8192 tokens", SMALL):
        assert part in err, (part, err)
    # one token less fits, and the request keeps its max_tokens
    fake.script(response('{"reasoning": "r", "extraction": 3}'))
    ok = client().decide(model=SMALL, messages=msgs, schema=S, fallback=FB, seed=1, max_tokens=8192 - n)
    assert ok.valid and fake.requests[0]["max_tokens"] == 8192 - n


def test_prompt_longer_than_the_window(monkeypatch):
    FakeLLM().install(monkeypatch)
    msgs = [{"role": "user", "content": "word " * 9000}]
    res = asyncio.run(client().acomplete(SMALL, msgs, seed=1, context=CTX, max_tokens=10))
    assert res.outcome == "context_overflow" and res.error and "does not fit" in res.error


def test_unknown_window_is_not_checked(monkeypatch):
    fake = FakeLLM(response('{"reasoning": "r", "extraction": 3}')).install(monkeypatch)
    out = client().decide(model="openai/no-such-model", messages=[{"role": "user", "content": "w " * 9000}],
                          schema=S, fallback=FB, seed=1, max_tokens=10**6)
    assert out.valid and len(fake.requests) == 1


def test_truncation_resend_stays_inside_the_window(monkeypatch):
    msgs = [{"role": "user", "content": "word " * 5000}]
    n = count_prompt_tokens(SMALL, msgs, LIT)
    fake = FakeLLM(response("{", finish_reason="length"), response('{"reasoning": "r", "extraction": 3}')).install(monkeypatch)
    out = client().decide(model=SMALL, messages=msgs, schema=S, fallback=FB, seed=1, max_tokens=3000)
    assert out.valid and fake.requests[1]["max_tokens"] == 8192 - n  # < 2 x 3000


def test_agent_stops_with_the_context_error(monkeypatch):
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent
    from scarce_lab.environments.sovsim.world.commons import CommonsGame

    FakeLLM().install(monkeypatch)
    agent = LLMAgent("openai/gpt-4o-mini", client(), max_tokens=128000)
    with pytest.raises(MissingDecisionError, match="context window") as exc:
        asyncio.run(agent.adecide(CommonsGame("cpr").observe("a0"), seed=1))
    assert exc.value.outcome == "context_overflow"


def test_check_context_raises_with_numbers():
    with pytest.raises(ContextWindowError) as exc:
        check_context(SMALL, [{"role": "user", "content": "hi"}], 9000, agent="x", round=1, litellm=LIT)
    assert exc.value.context_tokens == 8192 and exc.value.max_tokens == 9000 and exc.value.prompt_tokens > 0


@pytest.mark.embedded
def test_embedded_count_is_exact_and_overflow_is_refused(embedded_model):
    from scarce_lab.llm.embedded import generate

    msgs = [{"role": "system", "content": "You share a lake."}, {"role": "user", "content": "héllo wörld " * 20}]
    n = count_prompt_tokens(embedded_model, msgs)
    assert n == generate(msgs, max_tokens=1)["usage"]["prompt_tokens"]
    window = context_window(embedded_model)
    big = [{"role": "user", "content": "word " * (window - 100)}]
    res = asyncio.run(client().acomplete(embedded_model, big, seed=1, context=CTX, max_tokens=200))
    assert res.outcome == "context_overflow" and f"> {window} tokens" in res.error
