"""Transport of LLMClient: retries wait at least the provider's hint,
and the shared rate limiter keeps a sweep under a provider's limit,
checked against the local fake server's 429 mode."""

from __future__ import annotations

import asyncio
import os
import time

import httpx
import pytest

from scarce_lab.llm import LLMClient, LLMSettings
from scarce_lab.llm.client import load_litellm
from scarce_lab.llm.ratelimit import RateLimit, RateLimiter
from tests.fake_server import FakeOpenAIServer

MSGS = [{"role": "user", "content": "How many units?"}]


def _429(headers=None, text="rate limited"):
    lit = load_litellm()
    resp = httpx.Response(
        429, headers=headers or {}, request=httpx.Request("POST", "https://x/v1/chat/completions")
    )
    return lit.RateLimitError(text, "openai", "x", response=resp)


def _ok():
    lit = load_litellm()
    return lit.ModelResponse(
        choices=[{"index": 0, "message": {"role": "assistant", "content": "fine"}}]
    )


@pytest.fixture
def scripted_transport(monkeypatch):
    """litellm.acompletion answering from a list, and asyncio.sleep recorded (not slept)."""
    lit = load_litellm()
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay, *a, **k):
        sleeps.append(delay)
        await real_sleep(0)

    replies: list = []

    async def fake_acompletion(**kw):
        reply = replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    monkeypatch.setattr(lit, "acompletion", fake_acompletion)
    return replies, sleeps


def _client(**kw) -> LLMClient:
    return LLMClient(LLMSettings(cache=False, backoff_base_s=0.5, **kw), rate_limiter=RateLimiter())


@pytest.mark.parametrize(
    "error, hint",
    [
        (lambda: _429({"retry-after": "7"}), 7.0),
        (lambda: _429({"retry-after-ms": "2500"}), 2.5),
        (lambda: _429(text="Rate limit reached. Please try again in 12.5s."), 12.5),
        (lambda: _429(text="Please retry after 20 seconds"), 20.0),
    ],
)
def test_retry_waits_at_least_the_hint(scripted_transport, error, hint):
    replies, sleeps = scripted_transport
    replies[:] = [error(), _ok()]
    res = asyncio.run(_client().acomplete("openai/x", MSGS, seed=1))
    assert res.error is None and res.text == "fine"
    assert sleeps and sleeps[0] >= hint  # the first retry wait, never shorter than asked
    assert sleeps[0] < hint + 1.0  # and not the old blind exponential wait on top


def test_without_hint_the_backoff_applies(scripted_transport):
    replies, sleeps = scripted_transport
    replies[:] = [_429(), _429(), _ok()]
    res = asyncio.run(_client().acomplete("openai/x", MSGS, seed=1))
    assert res.error is None
    assert 0.25 <= sleeps[0] < 0.75 and 0.5 <= sleeps[1] < 1.5  # 0.5 x 2^attempt x U[0.5, 1.5)


def test_a_hint_beyond_max_retry_wait_fails_at_once_and_names_it(scripted_transport):
    replies, sleeps = scripted_transport
    replies[:] = [_429({"retry-after": "3600"}), _ok()]
    client = _client(max_retry_wait_s=60)
    res = asyncio.run(client.acomplete("openai/x", MSGS, seed=1))
    assert res.text is None and sleeps == []
    assert "RateLimitError" in res.error and "3600" in res.error and "max_retry_wait_s=60" in res.error
    assert res.record.error == res.error
    assert client.rate_limiter.stats("openai")["paused_until"] == float("-inf")  # no pause


def test_a_429_hint_pauses_the_other_calls_of_the_provider(scripted_transport):
    replies, sleeps = scripted_transport
    replies[:] = [_429({"retry-after": "5"}), _ok()]
    client = _client()
    t0 = time.monotonic()
    asyncio.run(client.acomplete("openai/x", MSGS, seed=1))
    st = client.rate_limiter.stats("openai")
    # the 5 s of the hint from when the 429 came (after t0): not "still paused now", which
    # a loaded machine could make false by taking 5 s to get here
    assert st["rate_limited"] == 1 and st["paused_until"] >= t0 + 5


@pytest.mark.embedded  # the embedded model's tokenizer counts the prompt
def test_embedded_errors_are_not_retried(scripted_transport, monkeypatch):
    from scarce_lab.llm import embedded

    _, sleeps = scripted_transport
    tries = []

    def failing(*a, **k):
        tries.append(1)
        raise RuntimeError("llama failed")

    monkeypatch.setattr(embedded, "generate", failing)
    res = asyncio.run(_client().acomplete("embedded/smollm2", MSGS, seed=1))
    assert res.error == "RuntimeError: llama failed" and sleeps == [] and tries == [1]


def test_request_larger_than_the_token_limit_is_an_error_not_a_hang(scripted_transport):
    replies, _ = scripted_transport
    replies[:] = [_ok()]
    client = _client(rate_limits={"openai": RateLimit(tpm=100)})
    res = asyncio.run(client.acomplete("openai/x", MSGS, seed=1, max_tokens=500))
    assert res.text is None and "RateLimitExceedsLimit" in res.error and "'openai'" in res.error
    assert replies == [_ok()] or len(replies) == 1  # never sent


# -- against the fake server -----------------------------------------------------------
def _burst(client: LLMClient, url: str, n: int, concurrency: int) -> tuple[list, float]:
    """``n`` calls, ``concurrency`` at a time; litellm's first-call set-up (a second or
    more on a loaded machine) is done first by a call through litellm's mock path, so
    the burst's first requests are not sent late."""
    asyncio.run(client.acomplete("openai/warm", MSGS, seed=0, mock_response="ok"))

    async def main():
        sem = asyncio.Semaphore(concurrency)

        async def one(i):
            async with sem:
                return await client.acomplete(
                    "openai/fake", [{"role": "user", "content": f"q{i}"}], seed=i, api_base=url
                )

        t0 = time.monotonic()
        res = await asyncio.gather(*(one(i) for i in range(n)))
        return res, time.monotonic() - t0

    return asyncio.run(main())


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY", "sk-fake-local"))


@pytest.mark.slow
def test_configured_limit_keeps_the_sweep_under_the_server_limit(api_key):
    window = 1.5
    with FakeOpenAIServer(0.05, rpm_limit=8, window_s=window, hint="header") as server:
        # the server counts arrivals, the limiter departures: on a loaded CI machine a
        # send can lag its admission by a few hundred ms, hence the wider margin
        limiter = RateLimiter(
            {"openai": RateLimit(rpm=8)}, headroom=0.9, window_s=window, margin_s=0.5
        )
        client = LLMClient(
            LLMSettings(cache=False, max_concurrency=16, max_retries=0), rate_limiter=limiter
        )
        results, elapsed = _burst(client, server.url, 21, 16)
        stats = server.stats()
    assert [r.error for r in results] == [None] * 21
    assert stats["rate_limited"] == 0 and stats["requests"] == 21
    # 7 per window (8 x 0.9): admitted at 0, then a window (+ margin) later, twice
    assert elapsed >= 2 * window - 0.05


@pytest.mark.slow
def test_a_stated_limit_is_learned_from_the_first_answers(api_key):
    window = 1.0
    with FakeOpenAIServer(
        0.05, rpm_limit=6, window_s=window, hint="both", state_limit=True
    ) as server:
        limiter = RateLimiter(window_s=window)
        client = LLMClient(
            LLMSettings(cache=False, max_concurrency=4, max_retries=6, backoff_base_s=0.05),
            rate_limiter=limiter,
        )
        results, _ = _burst(client, server.url, 18, 4)
        stats = server.stats()
    key = limiter.key_for("openai/fake", "openai", server.url)
    assert [r.error for r in results] == [None] * 18
    assert limiter.stats(key)["source"] == "announced" and limiter.limits(key).rpm == 6
    # the limit is announced with the first answer: only the first wave can be refused
    assert stats["rate_limited"] <= 4


@pytest.mark.slow
def test_an_unstated_limit_is_inferred_and_429s_stop(api_key):
    """A 429 with only a Retry-After: the limiter infers a limit from the first burst
    and the refusals almost stop. (Measured: 7 refusals, in the first 1.3 s; with
    learning off, pausing alone, 18 to 22 spread over every window.)"""
    window = 1.0
    with FakeOpenAIServer(0.02, rpm_limit=10, window_s=window, hint="header") as server:
        limiter = RateLimiter(window_s=window, infer=True)
        client = LLMClient(
            LLMSettings(cache=False, max_concurrency=16, max_retries=8, backoff_base_s=0.05),
            rate_limiter=limiter,
        )
        results, elapsed = _burst(client, server.url, 40, 16)
        stats = server.stats()
    key = limiter.key_for("openai/fake", "openai", server.url)
    assert [r.error for r in results] == [None] * 40
    st = limiter.stats(key)
    assert st["source"] == "inferred" and st["rpm"] < 16
    assert st["rate_limited"] == stats["rate_limited"]  # every 429 reached the limiter
    # refused: the first burst, then at most an occasional probe of the growing limit
    late = [t for t in stats["rate_limited_at"] if t > 2.5 * window]
    assert stats["rate_limited"] <= 12 and len(late) <= 2, stats["rate_limited_at"]
    assert elapsed >= 3 * window - 0.05  # 40 calls at about the server's 10 per window


def test_response_format_schema_is_built_once_and_copied_per_call():
    import json

    from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
    from scarce_lab.llm.client import _schema_json

    schema = extraction_schema(30, 3)
    a, b = json.loads(_schema_json(schema)), json.loads(_schema_json(schema))  # as each request gets it
    assert a == b and a == schema.model_json_schema()
    a["properties"].clear()  # a caller (or litellm) mutating it...
    assert json.loads(_schema_json(schema)) == b  # ...does not change the next one


def test_mocked_answers_bypass_the_rate_limiter():
    limiter = RateLimiter({"openai": RateLimit(rpm=1)}, window_s=60)
    client = LLMClient(LLMSettings(cache=False), rate_limiter=limiter)

    async def three():
        return [
            await client.acomplete("openai/x", MSGS, seed=i, mock_response="ok") for i in range(3)
        ]

    t0 = time.monotonic()
    assert [r.text for r in asyncio.run(three())] == ["ok"] * 3
    assert time.monotonic() - t0 < 30  # one request per minute would have made it wait
    assert limiter._states == {}
