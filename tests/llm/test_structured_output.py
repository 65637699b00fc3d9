"""Structured output that adapts to the server and says what it did
(against the fake server refusing forms as llama-cpp-python's server does: HTTP 500)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.llm.structured import MODE_MEMORY, capped_schema, is_form_refusal
from tests.fake_server import FakeOpenAIServer

M = [{"role": "user", "content": "x?"}]


class D(BaseModel):
    x: int = Field(ge=0, le=9)
    note: str = Field("", max_length=200_000)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _decide(srv, mode="auto", model="openai/m", **kw):
    c = LLMClient(LLMSettings(api_base=srv.url, cache=False, structured_output=mode, max_retries=4,
                              backoff_base_s=0.5, **kw))
    return c.decide(model=model, messages=M, schema=D, fallback=D(x=0), seed=1)


def _forms(bodies):
    return ["tools" if b.get("tools") else (b.get("response_format") or {}).get("type", "prompt") for b in bodies]


@pytest.mark.parametrize(("refuse", "mode"), [
    (("json_schema",), "json_object"),
    (("json_schema", "json_object"), "tools"),
    (("json_schema", "json_object", "tools"), "prompt"),
])
def test_auto_moves_once_to_the_next_form_the_server_takes(refuse, mode):
    with FakeOpenAIServer(latency_s=0.0, refuse=refuse) as srv:
        out = _decide(srv, model=f"openai/auto-{len(refuse)}")
        assert out.valid and not out.missing
        assert [c.outcome for c in out.calls] == ["request_refused"] * len(refuse) + [
            "tool_call" if mode == "tools" else "ok"]
        assert [c.structured_output for c in out.calls][-1] == mode
        # each refused form was sent once: a refusal of the form is not retried
        assert _forms(srv.stats()["bodies"]) == [*refuse, mode]
        again = _decide(srv, model=f"openai/auto-{len(refuse)}")  # remembered for this (api base, model)
        assert [c.structured_output for c in again.calls] == [mode]
        if mode == "prompt":  # never silent: the record says so and the schema is in the prompt
            assert "JSON schema" in again.calls[0].messages[-1]["content"]
        # the bound a grammar engine cannot take is not in the constraint sent (the prompt
        # mode's text may state it: no grammar reads it); pydantic still enforces it
        body = srv.stats()["bodies"][-1]
        constraint = str(body.get("response_format") or body.get("tools") or "")
        assert "200000" not in constraint and "maxLength" not in constraint


def test_a_fixed_mode_is_not_changed_and_a_refusal_is_a_missing_decision():
    with FakeOpenAIServer(latency_s=0.0, refuse=("json_schema",)) as srv:
        out = _decide(srv, mode="json_schema", model="openai/fixed")
        assert out.missing and [c.outcome for c in out.calls] == ["request_refused"]
        assert "request refused for its form" in out.calls[0].error
        assert len(srv.stats()["bodies"]) == 1
    assert MODE_MEMORY.current(srv.url, "openai/fixed") == "json_schema"


def test_form_refusal_classification():
    class Err(Exception):
        def __init__(self, msg, status):
            super().__init__(msg)
            self.status_code = status

    assert is_form_refusal(Err("Input should be 'text' or 'json_object' (response_format.type)", 500))
    assert not is_form_refusal(Err("upstream overloaded", 500))
    assert not is_form_refusal(Err("rate limit on response_format", 429))
    assert capped_schema({"type": "string", "maxLength": 300}) == {"type": "string"}
    assert capped_schema({"type": "string", "maxLength": 30}) == {"type": "string", "maxLength": 30}


def test_a_form_litellm_would_drop_is_not_sent_and_auto_moves_on():
    # litellm drops response_format and tools for replicate models: auto does not send a
    # request it knows would be unconstrained; it ends at prompt, and says so
    c = LLMClient(LLMSettings(cache=False, max_retries=0))
    out = c.decide(model="replicate/meta/llama-2-70b-chat", messages=M, schema=D, fallback=D(x=0), seed=1,
                   mock_response='{"x": 4}')
    modes = [(r.outcome, r.structured_output) for r in out.calls]
    assert modes[-1] == ("ok", "prompt") and out.decision == D(x=4)
    refused = [r for r in out.calls if r.outcome == "request_refused"]
    assert refused and all("nothing was sent" in r.error for r in refused)
    fixed = LLMClient(LLMSettings(cache=False, structured_output="json_schema")).decide(
        model="replicate/meta/llama-2-70b-chat", messages=M, schema=D, fallback=D(x=0), seed=1, mock_response='{"x": 4}')
    assert fixed.missing and fixed.calls[0].outcome == "request_refused"
