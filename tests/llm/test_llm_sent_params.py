"""The record, the cache key and the condition hold what litellm
sent after its own mapping, checked against the request a local HTTP server received."""

from __future__ import annotations

import asyncio

import pytest

from scarce_lab.config import SovSimConfig
from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.llm.params import NOT_SENT, planned_params
from tests.fake_server import FakeOpenAIServer

M = [{"role": "user", "content": "q"}]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(latency_s=0.0) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _received(srv, n_before):
    bodies = srv.stats()["bodies"][n_before:]
    assert len(bodies) == 1
    return {k: v for k, v in bodies[0].items() if k not in ("messages", "model")}


@pytest.mark.parametrize("model", ["openai/o3-mini", "openai/gpt-5-mini", "openai/gpt-4o-mini", "hosted_vllm/x"])
def test_record_equals_the_request_the_server_received(server, tmp_path, model):
    c = LLMClient(LLMSettings(api_base=server.url, cache_dir=tmp_path, max_retries=0))
    n = len(server.stats()["bodies"])
    res = asyncio.run(c.acomplete(model, M, seed=5, temperature=0.7, max_tokens=33, stop=["\n\n"],
                                  response_format={"type": "json_object"}))
    assert res.record.outcome == "ok", res.record.error
    got = _received(server, n)
    rec = {k: v for k, v in res.record.params.items() if k != "api_base"}
    assert rec == got
    assert res.record.params["api_base"] == server.url
    if model in ("openai/o3-mini", "openai/gpt-5-mini"):
        # litellm drops temperature for these reasoning models and renames max_tokens
        assert "temperature" not in got and res.record.dropped_params["temperature"] == 0.7
        assert got["max_completion_tokens"] == 33 and "max_tokens" not in got
    else:
        assert got["temperature"] == 0.7 and got["max_tokens"] == 33 and not res.record.dropped_params
    assert got["seed"] == 5 and got["repeat_penalty"] == 1.0  # sent explicitly to a server


def test_settings_that_were_not_sent_do_not_change_the_cache_key(server, tmp_path):
    c = LLMClient(LLMSettings(api_base=server.url, cache_dir=tmp_path, max_retries=0))
    n = len(server.stats()["bodies"])
    a = asyncio.run(c.acomplete("openai/o3-mini", M, seed=1, temperature=0.2))
    b = asyncio.run(c.acomplete("openai/o3-mini", M, seed=1, temperature=0.7))
    assert not a.record.cache_hit and b.record.cache_hit  # the same request was sent
    assert len(server.stats()["bodies"]) == n + 1
    c4 = asyncio.run(c.acomplete("openai/gpt-4o-mini", M, seed=1, temperature=0.7))
    d4 = asyncio.run(c.acomplete("openai/gpt-4o-mini", M, seed=1, temperature=0.2))
    assert not c4.record.cache_hit and not d4.record.cache_hit  # sent: different requests


def test_mapping_is_litellms():
    sent, dropped = planned_params("openai/o3-mini", {"temperature": 0.7, "max_tokens": 10, "seed": 1})
    assert sent == {"max_completion_tokens": 10, "seed": 1} and dropped == {"temperature": 0.7}
    sent, dropped = planned_params("anthropic/claude-3-5-sonnet-latest", {"stop": ["x"], "max_tokens": 10})
    assert sent["stop_sequences"] == ["x"] and not dropped  # renamed, not dropped
    sent, dropped = planned_params("embedded/smollm2", {"temperature": 0.3, "max_tokens": 10})
    assert sent == {"temperature": 0.3, "max_tokens": 10} and not dropped


def test_a_condition_setting_the_provider_ignores_is_refused_or_recorded_as_not_sent():
    with pytest.raises(ValueError, match=r"llm.temperature=0.7.*would not be sent to model 'openai/o3-mini'"):
        SovSimConfig(model="openai/o3-mini", llm={"temperature": 0.7})
    a = SovSimConfig(model="openai/o3-mini", llm={"temperature": 0.2, "allow_ignored_settings": True})
    b = SovSimConfig(model="openai/o3-mini", llm={"temperature": 0.7, "allow_ignored_settings": True})
    assert a.condition_settings()["llm.temperature"] == NOT_SENT
    assert a.condition_settings() == b.condition_settings()
    assert a.run_id == b.run_id and a.condition_label() == b.condition_label()
    assert "temperature=not sent" in a.condition_label()
    # a model that takes temperature keeps it as a condition
    c = SovSimConfig(model="openai/gpt-4o-mini", llm={"temperature": 0.2})
    assert c.condition_settings()["llm.temperature"] == 0.2


def test_settings_left_at_their_defaults_are_recorded_not_sent_not_refused():
    """``--model openai/o3-mini`` with the default temperature runs (the user asked for
    nothing the model ignores); the condition records the temperature as not sent, the
    same as a run that set it and allowed it."""
    d = SovSimConfig(model="openai/o3-mini")
    assert d.condition_settings()["llm.temperature"] == NOT_SENT
    e = SovSimConfig(model="openai/o3-mini", llm={"temperature": 0.9, "allow_ignored_settings": True})
    assert d.run_id == e.run_id
    with pytest.raises(ValueError, match="would not be sent"):  # set explicitly, even to the default value
        SovSimConfig(model="openai/o3-mini", llm={"temperature": d.llm.temperature})
