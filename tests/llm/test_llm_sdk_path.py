"""The OpenAI-compatible path (one aiohttp POST) against the local fake server: the same
records and request bodies as the litellm path, answers past the byte limit recorded as
``too_large``, the openai SDK's errors raised and classified like litellm's; and
start-up paths that must not import litellm."""

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


def test_a_small_limit_stops_the_read_before_the_whole_body(api_key, monkeypatch):
    """The bound holds while reading: the read raises at the limit, it never holds the body."""
    seen = []
    orig = transport.read_bounded

    async def counting(chunks, encoding):  # the raw chunks the bounded read takes in
        async def count():
            async for chunk in chunks:
                seen.append(len(chunk))
                yield chunk
        return await orig(count(), encoding)

    monkeypatch.setattr(transport, "read_bounded", counting)
    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, response_bytes=300_000))
    with FakeOpenAIServer(latency_s=0.0, pad_bytes=5_000_000) as server:
        out = _decide(server.url, seed=12)
    assert out.calls[-1].outcome == "too_large"
    # of a 5 MB body: the read stops at the limit (the last chunk is what aiohttp had
    # buffered, its size depends on scheduling, so the bound is loose)
    assert 300_000 < sum(seen) < 1_500_000


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


def _serve(handler):
    """An aiohttp server on this loop answering every POST with ``handler``: ``(url, runner)``."""
    from aiohttp import web

    async def start():
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1", runner

    return start()


async def _send(url: str, timeout_s: float = 5.0, **extra):
    return await transport._send_http("openai/m", MSGS, {"api_base": url, "seed": 3}, extra, timeout_s, 4)


@pytest.mark.parametrize("encoding, declared", [("", True), ("gzip", False), ("deflate", False)])
def test_the_bound_holds_for_a_declared_length_and_for_a_compression_bomb(api_key, monkeypatch, encoding, declared):
    import gzip
    import zlib

    from aiohttp import web

    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, response_bytes=50_000))
    raw = b"1" * 2_500_000  # 2.5 MB, a few KB compressed
    body = {"": raw, "gzip": gzip.compress(raw), "deflate": zlib.compress(raw)}[encoding]

    async def handler(request):
        return web.Response(body=body, headers={"Content-Encoding": encoding} if encoding else {})

    async def go():
        url, runner = await _serve(handler)
        try:
            await _send(url)
        finally:
            await runner.cleanup()

    with pytest.raises(transport.ResponseTooLarge, match="announced" if declared else "more than 50,000"):
        asyncio.run(go())


def test_the_direct_path_raises_the_sdks_errors(api_key, monkeypatch):
    """HTTP errors, timeouts, broken connections and a missing key come out as the
    openai SDK's exceptions with its texts, which the retry rules and records read."""
    from aiohttp import web

    async def handler(request):
        if request.headers.get("x-case") == "slow":
            await asyncio.sleep(1.0)
        if request.headers.get("x-case") == "cut":
            request.transport.close()
        return web.json_response({"error": {"message": "quota gone"}}, status=429, headers={"retry-after-ms": "1500"})

    async def go():
        url, runner = await _serve(handler)
        got = []
        try:
            for case, timeout in (("429", 5.0), ("slow", 0.2), ("cut", 5.0)):
                try:
                    await _send(url, timeout, extra_headers={"x-case": case})
                except Exception as exc:  # noqa: BLE001 - the exception is what is checked
                    got.append(exc)
        finally:
            await runner.cleanup()
        return got

    limited, slow, cut = asyncio.run(go())
    assert isinstance(limited, openai.RateLimitError) and str(limited) == "Error code: 429 - quota gone"
    assert transport.rate_limited(limited) and transport.retry_hint_s(limited) == 1.5
    assert type(slow) is openai.APITimeoutError and transport.retryable(slow)
    # the SDK's aiohttp transport called a dropped connection a connect timeout: kept
    assert type(cut) is openai.APITimeoutError and transport.retryable(cut)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(openai.OpenAIError, match="Missing credentials") as missing:
        asyncio.run(_send("http://127.0.0.1:9/v1"))
    assert transport.credential_error(missing.value) and not transport.retryable(missing.value)
