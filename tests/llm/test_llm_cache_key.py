"""Every parameter sent to litellm that can change the answer is
part of the response-cache key and of the recorded params; credentials never are."""

from __future__ import annotations

import asyncio
import json

import pytest
from _llm_fakes import FakeLLM, response

from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.llm.cache import answer_params, is_secret_param

M = [{"role": "user", "content": "q"}]


def counting_fake(monkeypatch):
    n = [0]

    def reply(kwargs):
        n[0] += 1
        return response(f"reply {n[0]}")

    fake = FakeLLM(*[reply] * 50).install(monkeypatch)
    return fake, n


VARIANTS = [
    {"top_p": 0.1},
    {"top_p": 0.9},
    {"stop": ["\n"]},
    {"logit_bias": {"1234": -100}},
    {"presence_penalty": 0.5},
    {"frequency_penalty": 0.5},
    {"reasoning_effort": "high"},
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
     "tool_choice": "auto"},  # without one the client sends "required"
    {"response_format": {"type": "json_object"}},
    {"api_base": "http://localhost:8000/v1"},
    {"extra_headers": {"anthropic-beta": "x"}},
    {"n": 2},
    {"user": "u1"},
]


def test_each_answer_changing_parameter_is_a_different_key_and_recorded(tmp_path, monkeypatch):
    fake, n = counting_fake(monkeypatch)
    c = LLMClient(LLMSettings(cache_dir=tmp_path))
    base = asyncio.run(c.acomplete("openai/x", M, seed=9, temperature=0.7))
    seen = {base.text}
    for kw in VARIANTS:
        res = asyncio.run(c.acomplete("openai/x", M, seed=9, temperature=0.7, **kw))
        assert not res.record.cache_hit, kw
        assert res.text not in seen, kw
        seen.add(res.text)
        for k, v in kw.items():
            assert res.record.params[k] == json.loads(json.dumps(v)), (k, res.record.params)
        again = asyncio.run(c.acomplete("openai/x", M, seed=9, temperature=0.7, **kw))
        assert again.record.cache_hit and again.text == res.text, kw
    assert n[0] == 1 + len(VARIANTS)


def test_the_shared_case(tmp_path, monkeypatch):
    fake, n = counting_fake(monkeypatch)
    c = LLMClient(LLMSettings(cache_dir=tmp_path))
    a = asyncio.run(c.acomplete("openai/x", M, seed=9, temperature=0.7, top_p=0.1))
    b = asyncio.run(c.acomplete("openai/x", M, seed=9, temperature=0.7, top_p=0.9,
                                logit_bias={"1234": -100}, stop=["\n"]))
    assert (a.text, b.text, b.record.cache_hit, n[0]) == ("reply 1", "reply 2", False, 2)


def test_decision_response_format_schema_is_recorded_in_full(monkeypatch):
    FakeLLM(response('{"reasoning": "r", "extraction": 3}')).install(monkeypatch)
    S = extraction_schema(30)
    out = LLMClient(LLMSettings(cache=False)).decide(model="openai/x", messages=M, schema=S,
                                                    fallback=S(reasoning="f", extraction=0), seed=1)
    rf = out.calls[0].params["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == S.model_json_schema()


def test_credentials_and_transport_settings_are_neither_keyed_nor_recorded(tmp_path, monkeypatch):
    fake, n = counting_fake(monkeypatch)
    c = LLMClient(LLMSettings(cache_dir=tmp_path))
    a = asyncio.run(c.acomplete("openai/x", M, seed=1, api_key="sk-secret-1", metadata={"run": "r1"},
                                extra_headers={"Authorization": "Bearer sk-secret-2", "x-api-key": "sk-secret-3"}))
    b = asyncio.run(c.acomplete("openai/x", M, seed=1, api_key="sk-other", num_retries=3))
    assert b.record.cache_hit and b.text == a.text and n[0] == 1  # same request, other key/timeout
    blob = a.record.model_dump_json()
    for secret in ("sk-secret-1", "sk-secret-2", "sk-secret-3"):
        assert secret not in blob
    assert "metadata" not in a.record.params and "api_key" not in a.record.params
    # ...but the key reached the provider
    assert fake.requests[0]["api_key"] == "sk-secret-1"


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("azure_ad_token", True), ("aws_secret_access_key", True), ("x-api-key", True),
     ("Authorization", True), ("vertex_credentials", True), ("max_tokens", False), ("top_p", False),
     ("logit_bias", False), ("api_base", False), ("max_completion_tokens", False), ("stop", False),
     ("stop_token_ids", False), ("allowed_token_ids", False), ("client_secret", True), ("hf_token", True),
     ("azure_ad_token_provider", True), ("Cookie", True), ("aws_access_key_id", True)],
)
def test_secret_names(name, secret):
    assert is_secret_param(name) is secret


def test_answer_params_are_json_and_keep_old_keys_stable():
    # the common request (no extra arguments) keys as before the change: params as sent
    p = {"temperature": 0.0, "max_tokens": 10, "seed": 1}
    assert answer_params(p, {}) == p
    assert answer_params(p, {"mock_response": 5}) == {**p, "mock_response": "5"}
    assert answer_params(p, {"metadata": {"a": 1}, "top_p": None}) == p
