"""The LLM client at its boundary: valid, malformed and out-of-range answers, repair,
fallback, retries, cache, accounting; the embedded model end to end (marked)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from scarce_lab.llm import CallContext, LLMClient, LLMSettings
from scarce_lab.llm.client import load_litellm
from scarce_lab.llm.parsing import json_objects, parse_answer


class Extraction(BaseModel):
    reasoning: str = Field(max_length=200)
    extraction: Literal[0, 3, 6, 9, 12, 15]


FALLBACK = Extraction(reasoning="fallback", extraction=6)
MSGS = [{"role": "user", "content": "how much?"}]


def client(**kw) -> LLMClient:
    return LLMClient(LLMSettings(backoff_base_s=0.0, **kw))


def decide(c: LLMClient, mock, **kw):
    return c.decide(
        model="openai/gpt-4o-mini",
        messages=MSGS,
        schema=Extraction,
        fallback=FALLBACK,
        seed=7,
        context=CallContext(agent="a1", round=2, purpose="extraction"),
        mock_response=mock,
        **kw,
    )


def test_valid_answer_is_parsed_and_recorded():
    out = decide(client(), '{"reasoning": "share", "extraction": 9}')
    assert out.valid and not out.fallback_used and not out.repaired
    assert out.decision == Extraction(reasoning="share", extraction=9)
    (rec,) = out.calls
    assert rec.parsed == {"reasoning": "share", "extraction": 9}
    assert rec.agent == "a1" and rec.round == 2 and rec.purpose == "extraction"
    assert rec.raw_response == '{"reasoning": "share", "extraction": 9}'
    assert rec.error is None and rec.cache_hit is False
    assert rec.prompt_tokens and rec.completion_tokens


def test_out_of_range_answer_falls_back_after_one_repair():
    out = decide(client(), '{"reasoning": "greedy", "extraction": 10}')
    assert out.fallback_used and not out.valid
    assert out.decision == FALLBACK
    assert len(out.calls) == 2  # first try + one repair
    assert "extraction" in out.violation and "10" in out.violation
    assert out.calls[0].attempt == 0 and out.calls[1].attempt == 1
    assert out.calls[1].fallback_used and out.calls[1].parsed is None
    # the repair prompt shows the model its answer and the error
    repair_msgs = out.calls[1].messages
    assert repair_msgs[-2] == {"role": "assistant", "content": '{"reasoning": "greedy", "extraction": 10}'}
    assert "extraction" in repair_msgs[-1]["content"]


def test_repair_that_succeeds(monkeypatch):
    litellm = load_litellm()
    answers = iter(["I think I'll take ten.", '{"reasoning": "fixed", "extraction": 3}'])
    real = litellm.acompletion

    async def fake(**kwargs):
        kwargs["mock_response"] = next(answers)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", fake)
    out = client(cache=False).decide(
        model="openai/gpt-4o-mini", messages=MSGS, schema=Extraction, fallback=FALLBACK, seed=1
    )
    assert out.valid and out.repaired and not out.fallback_used
    assert out.decision.extraction == 3
    assert out.violation.startswith("no JSON object")
    assert out.calls[0].error and out.calls[0].raw_response == "I think I'll take ten."


def test_garbage_and_non_object_json_are_violations():
    for raw in ["", "[1, 2]", "{not json", '{"extraction": "lots"}']:
        res = parse_answer(raw, Extraction)
        d, err = res.decision, res.error
        assert d is None and err, raw
    assert [c.obj for c in json_objects('text ```json\n{"a": 1}\n``` more')] == [{"a": 1}]


def test_transport_errors_are_retried_then_the_decision_is_missing(monkeypatch):
    litellm = load_litellm()
    calls = {"n": 0}

    async def failing(**kwargs):
        calls["n"] += 1
        raise litellm.RateLimitError("slow down", llm_provider="openai", model="gpt-4o-mini")

    monkeypatch.setattr(litellm, "acompletion", failing)
    out = client(max_retries=2, cache=False).decide(
        model="openai/gpt-4o-mini", messages=MSGS, schema=Extraction, fallback=FALLBACK, seed=1
    )
    assert calls["n"] == 3  # first try + 2 retries; no repair after a transport failure
    assert out.missing and out.decision is None and not out.fallback_used  # never a made-up move
    assert out.outcome == "transport_error" and out.source is None
    assert "RateLimitError" in out.violation
    assert len(out.calls) == 1 and out.calls[0].error and out.calls[0].missing


def test_non_retryable_error_is_not_retried(monkeypatch):
    litellm = load_litellm()
    calls = {"n": 0}

    async def bad(**kwargs):
        calls["n"] += 1
        raise litellm.AuthenticationError("bad key", llm_provider="openai", model="x")

    monkeypatch.setattr(litellm, "acompletion", bad)
    out = client(max_retries=3, cache=False).decide(
        model="openai/x", messages=MSGS, schema=Extraction, fallback=FALLBACK, seed=1
    )
    assert calls["n"] == 1 and out.missing and not out.fallback_used


def test_cache_returns_the_same_answer_for_free(tmp_path):
    c = client(cache_dir=tmp_path)
    first = decide(c, '{"reasoning": "a", "extraction": 12}')
    second = decide(c, '{"reasoning": "a", "extraction": 12}')
    assert not first.calls[0].cache_hit and second.calls[0].cache_hit
    assert second.decision == first.decision
    assert second.calls[0].latency_s == 0.0
    assert second.calls[0].original_latency_s == pytest.approx(first.calls[0].latency_s)
    # a different seed is a different key
    third = c.decide(
        model="openai/gpt-4o-mini", messages=MSGS, schema=Extraction, fallback=FALLBACK,
        seed=8, mock_response='{"reasoning": "a", "extraction": 12}',
    )
    assert not third.calls[0].cache_hit


def test_api_key_never_recorded():
    out = decide(client(), '{"reasoning": "a", "extraction": 0}', api_key="sk-very-secret-123")
    blob = json.dumps([c.model_dump(mode="json") for c in out.calls])
    assert "sk-very-secret-123" not in blob


def test_scripted_models_are_refused():
    with pytest.raises(ValueError, match="scripted policy"):
        client().decide(
            model="scripted/greedy", messages=MSGS, schema=Extraction, fallback=FALLBACK, seed=1
        )


@pytest.mark.embedded
def test_embedded_model_decides_deterministically(embedded_model, tmp_path):
    c = LLMClient(LLMSettings(cache=False))
    msgs = [
        {"role": "system", "content": "You share a lake of 120 tons of fish with 3 others."},
        {"role": "user", "content": 'How many tons do you take? Answer JSON {"reasoning": str, "extraction": int}.'},
    ]
    a = c.decide(model=embedded_model, messages=msgs, schema=Extraction, fallback=FALLBACK, seed=3, max_tokens=120)
    b = c.decide(model=embedded_model, messages=msgs, schema=Extraction, fallback=FALLBACK, seed=3, max_tokens=120)
    assert a.calls[0].raw_response == b.calls[0].raw_response
    assert a.valid, a.violation  # schema-constrained decoding parses
    assert a.decision.extraction in (0, 3, 6, 9, 12, 15)
    assert a.calls[0].completion_tokens > 0 and a.calls[0].latency_s > 0
