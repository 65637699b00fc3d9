"""The OpenAI-compatible path (openai SDK) against the local fake server: the same
records and request bodies as the litellm path, answers past the byte limit recorded as
``too_large``, SDK errors classified like litellm's; and start-up paths that must not
import litellm."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Literal

import httpx2
import openai
import pytest
from pydantic import BaseModel

from scarce_lab.data import limits
from scarce_lab.llm import LLMClient, LLMSettings, transport
from scarce_lab.llm.ratelimit import RateLimiter
from tests.fake_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "You trade grain."}, {"role": "user", "content": "Offer for 17 sacks?"}]


class Offer(BaseModel):
    side: Literal["buy", "sell", "hold"]
    sacks: int


FALLBACK = Offer(side="hold", sacks=0)


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-local")


def _decide(url: str, mode: str = "json_schema", seed: int = 5, **settings):
    client = LLMClient(LLMSettings(api_base=url, cache=False, structured_output=mode, **settings),
                       rate_limiter=RateLimiter())
    return asyncio.run(client.adecide(model="openai/fake-trader", messages=MSGS, schema=Offer, fallback=FALLBACK,
                                      seed=seed))


RECORD_FIELDS = ("params", "dropped_params", "outcome", "raw_response", "tool_calls", "finish_reason",
                 "prompt_tokens", "completion_tokens", "cost_usd", "parsed", "error", "decision_source")


@pytest.mark.parametrize("mode", ["json_schema", "tools", "json_object"])
def test_both_paths_send_the_same_body_and_record_the_same(api_key, monkeypatch, mode):
    with FakeOpenAIServer(latency_s=0.0) as server:
        via_sdk = _decide(server.url, mode)
        monkeypatch.setattr(transport, "SDK_PATH", False)
        via_litellm = _decide(server.url, mode)
        bodies = server.stats()["bodies"]
    assert via_sdk.valid and via_litellm.valid and via_sdk.decision == via_litellm.decision
    a, b = via_sdk.calls[-1].model_dump(), via_litellm.calls[-1].model_dump()
    for rec in (a, b):  # the fake server numbers its tool calls
        rec["tool_calls"] = [{**tc, "id": None} for tc in rec["tool_calls"] or []]
    assert {k: a[k] for k in RECORD_FIELDS} == {k: b[k] for k in RECORD_FIELDS}
    assert a["params"]["repeat_penalty"] == 1.0  # extra_body reached the body and the record
    assert bodies[0] == bodies[1]  # byte for byte the same request as litellm's


@pytest.mark.parametrize("sdk", [True, False])
def test_an_answer_past_the_byte_limit_is_too_large_never_ok(api_key, monkeypatch, sdk):
    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, response_bytes=200_000))
    monkeypatch.setattr(transport, "SDK_PATH", sdk)
    with FakeOpenAIServer(latency_s=0.0, pad_bytes=3_000_000) as server:  # chunked, no Content-Length
        out = _decide(server.url, seed=11)
        sent = server.stats()["requests"]
    rec = out.calls[-1]
    assert rec.outcome == "too_large" and rec.raw_response is None and rec.parsed is None
    assert "200,000 bytes" in rec.error and "LIMITS.response_bytes" in rec.error
    assert out.fallback_used and out.decision == FALLBACK and not out.missing
    assert sent == 1  # not retried


def test_a_small_limit_stops_the_sdk_read_before_the_whole_body(api_key, monkeypatch):
    """The bound holds while reading: the stream raises at the limit, it never holds the body."""
    seen = []
    stream_cls = transport._transport_classes()[1]
    orig = stream_cls.__aiter__

    async def counting(self):  # what the bounded stream hands on to the SDK
        async for chunk in orig(self):
            seen.append(len(chunk))
            yield chunk

    monkeypatch.setattr(stream_cls, "__aiter__", counting)
    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, response_bytes=300_000))
    with FakeOpenAIServer(latency_s=0.0, pad_bytes=5_000_000) as server:
        out = _decide(server.url, seed=12)
    assert out.calls[-1].outcome == "too_large"
    assert 0 < sum(seen) <= 300_000  # of a 5 MB body


def _status_error(status: int, text: str = "boom"):
    req = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    resp = httpx2.Response(status, request=req, json={"error": {"message": text}})
    cls = {401: openai.AuthenticationError, 429: openai.RateLimitError, 500: openai.InternalServerError,
           400: openai.BadRequestError}.get(status, openai.APIStatusError)
    return cls(text, response=resp, body=None)


@pytest.mark.parametrize("exc, retry, limited, credential", [
    (lambda: _status_error(429), True, True, False),
    (lambda: _status_error(502), True, False, False),
    (lambda: _status_error(408), True, False, False),
    (lambda: _status_error(401), False, False, True),
    (lambda: _status_error(500, "Missing credentials. Please pass an api_key"), False, False, True),
    (lambda: _status_error(400), False, False, False),
    (lambda: openai.APIConnectionError(request=httpx2.Request("POST", "http://x")), True, False, False),
    (lambda: openai.APITimeoutError(request=httpx2.Request("POST", "http://x")), True, False, False),
])
def test_sdk_errors_are_classified_like_litellms(exc, retry, limited, credential):
    e = exc()
    assert transport.retryable(e) is retry
    assert transport.rate_limited(e) is limited
    assert transport.credential_error(e) is credential


def test_a_body_past_the_limit_wrapped_by_the_sdk_is_not_retried():
    try:
        try:
            raise transport.ResponseTooLarge("more than 9 bytes")
        except transport.ResponseTooLarge as inner:
            raise openai.APIConnectionError(request=httpx2.Request("POST", "http://x")) from inner
    except openai.APIConnectionError as exc:
        assert transport.too_large(exc) is not None and not transport.retryable(exc)


def test_a_429_on_the_sdk_path_waits_the_hint_and_succeeds(api_key):
    with FakeOpenAIServer(latency_s=0.0, rpm_limit=1, window_s=0.6, hint="header") as server:
        outs = [_decide(server.url, seed=s, backoff_base_s=0.01) for s in (21, 22)]
        stats = server.stats()
    assert all(o.valid for o in outs) and stats["rate_limited"] >= 1


_NO_LITELLM = "assert 'litellm' not in sys.modules and 'openai' not in sys.modules, sorted(sys.modules)[:0]"


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout)


# import scarce_lab and the CLI's help: tests/cli/test_cli_startup.py


@pytest.mark.embedded
def test_an_embedded_decision_imports_neither_litellm_nor_the_sdk():
    from scarce_lab.llm.embedded import available

    if not available():
        pytest.skip("the embedded model is not installed (scripts/install.sh)")
    code = ("import sys\n"
            "from typing import Literal\n"
            "from pydantic import BaseModel\n"
            "from scarce_lab.llm import LLMClient, LLMSettings\n"
            "class Pick(BaseModel):\n    colour: Literal['red', 'blue']\n"
            "out = LLMClient(LLMSettings(cache=False, max_tokens=20)).decide(model='embedded/smollm2', "
            "messages=[{'role': 'user', 'content': 'Pick a colour.'}], schema=Pick, "
            "fallback=Pick(colour='red'), seed=3)\n"
            "assert out.valid and out.calls[-1].outcome == 'ok', out.calls[-1]\n"
            f"{_NO_LITELLM}\n")
    res = _run(code, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]


def test_the_sdk_path_takes_every_argument_litellm_maps():
    from scarce_lab.llm.params import MAPPED

    assert transport.openai_compatible("openai/x", "http://127.0.0.1:1/v1", dict.fromkeys(MAPPED))
    assert not transport.openai_compatible("openai/x", "http://127.0.0.1:1/v1", {"mock_response": "hi"})
    assert not transport.openai_compatible("hosted_vllm/x", "http://127.0.0.1:1/v1", {})
    assert not transport.openai_compatible("openai/x", None, {})


@pytest.mark.parametrize("encoding, declared", [("", True), ("gzip", False)])
def test_the_bound_holds_for_a_declared_length_and_for_a_compression_bomb(monkeypatch, encoding, declared):
    import gzip

    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, response_bytes=50_000))
    raw = b"0" * 3_000_000  # 3 MB, ~3 KB gzipped
    body = gzip.compress(raw) if encoding else raw
    headers = {"content-encoding": encoding} if encoding else {}
    http, _, bounded, _ = transport._transport_classes()
    inner = http.MockTransport(lambda req: http.Response(200, content=body, headers=headers))

    async def get():
        async with http.AsyncClient(transport=bounded(inner)) as client:
            return await client.get("http://127.0.0.1:9/v1/chat/completions")

    with pytest.raises(transport.ResponseTooLarge, match="announced" if declared else "more than 50,000"):
        asyncio.run(get())
