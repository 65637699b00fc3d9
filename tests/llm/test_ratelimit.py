"""The shared rate limiter, the retry hints it reads, and the loop-agnostic
concurrency bound."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import threading
import time
import weakref

import pytest

from scarce_lab.llm.concurrency import ConcurrencyLimit
from scarce_lab.llm.hints import (
    AnnouncedLimits,
    limits_from_headers,
    limits_from_text,
    parse_duration_text,
    retry_after_from_headers,
)
from scarce_lab.llm.ratelimit import (
    MIN_REQUESTS_TO_INFER,
    RateLimit,
    RateLimiter,
    RateLimitExceedsLimit,
    estimate_tokens,
)


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


# -- hints -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, seconds",
    [
        ("Rate limit reached. Please try again in 20s. Visit https://x", 20.0),
        ("Please try again in 1m30.5s.", 90.5),
        ("Please try again in 6ms.", 0.006),
        ("Requests ... Please retry after 20 seconds.", 20.0),
        ('{"details": [{"retryDelay": "37s"}]}', 37.0),
        ("Try again in 2 minutes", 120.0),
        ("try again in 3s ... or try again in 9s", 9.0),  # the largest hint wins
        ("retry 3 times", None),
        ("server overloaded", None),
        ("", None),
    ],
)
def test_parse_duration_text(text, seconds):
    got = parse_duration_text(text)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_headers_seconds_ms_date_and_litellm_prefix():
    assert retry_after_from_headers({"retry-after": "7"}) == 7.0
    assert retry_after_from_headers({"retry-after": "0.5"}) == 0.5
    # retry-after-ms is more precise and wins
    assert retry_after_from_headers({"retry-after": "2", "retry-after-ms": "1500"}) == 1.5
    assert retry_after_from_headers({"llm_provider-retry-after": "4"}) == 4.0
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_from_headers({"retry-after": date}, now=now) == pytest.approx(30, abs=1)
    assert retry_after_from_headers({"retry-after": "soon"}) is None
    assert retry_after_from_headers({}) is None


def test_limits_from_text_and_headers():
    text = (
        "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): "
        "Limit 30000, Used 29500, Requested 900. Please try again in 1.8s."
    )
    assert limits_from_text(text) == AnnouncedLimits(None, 30000)
    assert limits_from_text("on requests per min (RPM): Limit 3, Used 3") == AnnouncedLimits(3, None)
    assert limits_from_text("slow down") is None
    h = {"x-ratelimit-limit-requests": "500", "x-ratelimit-limit-tokens": "200000"}
    assert limits_from_headers(h) == AnnouncedLimits(500, 200000)
    assert limits_from_headers({"llm_provider-anthropic-ratelimit-requests-limit": "50"}) == (
        AnnouncedLimits(50, None)
    )
    assert limits_from_headers({"x-ratelimit-limit-requests": "n/a"}) is None


def test_estimate_tokens_counts_text_and_max_tokens():
    msgs = [{"role": "user", "content": "x" * 400}, {"role": "user", "content": [{"text": "y" * 40}]}]
    assert estimate_tokens(msgs, 100) == 110 + 100


# -- the limiter -------------------------------------------------------------------
def _window_counts(times: list[float], window: float) -> int:
    """Largest number of admissions inside any half-open window (t - window, t]."""
    times = sorted(times)
    return max(sum(1 for u in times if t - window < u <= t) for t in times)


def test_requests_per_window_never_exceed_headroom_times_limit():
    clock = FakeClock()
    lim = RateLimiter({"openai": RateLimit(rpm=10)}, headroom=0.9, margin_s=0, clock=clock)
    times = [lim.reserve("openai").at - clock.t for _ in range(25)]
    # 9 per window (10 x 0.9): at 0, then one window later, then two
    assert times[:9] == [0.0] * 9 and times[9:18] == [60.0] * 9 and times[18:] == [120.0] * 7
    assert _window_counts(times, 60.0) == 9


def test_tokens_per_window_and_oversized_request():
    clock = FakeClock()
    lim = RateLimiter({"p": RateLimit(tpm=1000, headroom=1.0)}, margin_s=0, clock=clock)
    assert lim.reserve("p", 600).at == clock.t
    assert lim.reserve("p", 300).at == clock.t  # 900 <= 1000
    t3 = lim.reserve("p", 300)  # 1200 > 1000: waits until the 600 leaves the window
    assert t3.at == clock.t + 60
    with pytest.raises(RateLimitExceedsLimit, match=r"'p'.*1500 tokens.*allows 1000"):
        lim.reserve("p", 1500)


def test_settle_replaces_the_estimate_with_real_usage():
    clock = FakeClock()
    lim = RateLimiter({"p": RateLimit(tpm=1000)}, headroom=1.0, clock=clock)
    t1 = lim.reserve("p", 900)
    lim.settle(t1, 100)  # the call really used 100 tokens
    assert lim.reserve("p", 800).at == clock.t  # 100 + 800 fits now


def test_model_limits_win_over_provider_and_api_base_keeps_keys_apart():
    lim = RateLimiter({"openai": RateLimit(rpm=100), "openai/gpt-4o": RateLimit(rpm=5)})
    assert lim.key_for("openai/gpt-4o", "openai") == "openai/gpt-4o"
    assert lim.key_for("openai/gpt-4o-mini", "openai") == "openai"
    local = lim.key_for("openai/x", "openai", "http://127.0.0.1:9/v1")
    assert local != "openai" and lim.limits(local).rpm == 100


def test_a_429_hint_pauses_every_call_of_the_key():
    clock = FakeClock()
    lim = RateLimiter(clock=clock)
    t = lim.reserve("openai")
    lim.on_rate_limited(t, hint_s=7.0)
    assert lim.reserve("openai").at == clock.t + 7.0
    assert lim.reserve("anthropic").at == clock.t  # other keys go on


def test_without_infer_a_429_that_states_nothing_only_pauses():
    clock = FakeClock()
    lim = RateLimiter(clock=clock)
    tickets = [lim.reserve("k") for _ in range(40)]
    lim.on_rate_limited(tickets[-1], hint_s=None)
    assert lim.limits("k").rpm is None and lim.stats("k")["source"] is None


def test_a_few_429s_teach_nothing_but_a_burst_infers_a_limit_once():
    clock = FakeClock()
    lim = RateLimiter(clock=clock, infer=True)
    t = lim.reserve("k")
    lim.on_rate_limited(t, hint_s=None)
    assert lim.stats("k")["source"] is None and lim.limits("k").rpm is None
    tickets = [lim.reserve("k") for _ in range(20)]
    lim.on_rate_limited(tickets[-1], hint_s=1.0)  # 20 sent, 1 rejected -> 19 counted
    assert lim.stats("k")["source"] == "inferred"
    assert lim.limits("k").rpm == int(19 * 0.9) and 19 >= MIN_REQUESTS_TO_INFER
    # the rest of the same burst (admitted before the change) does not shrink it again
    for t in tickets[:5]:
        lim.on_rate_limited(t, hint_s=1.0)
    assert lim.limits("k").rpm == 17
    assert lim.stats("k")["rate_limited"] == 7
    # two quiet windows later the inferred limit has grown back by 10% per window
    clock.t += 125
    lim.reserve("k")
    assert lim.limits("k").rpm == 21  # ceil(17 x 1.1^2)


def test_stated_limits_are_taken_and_kept():
    clock = FakeClock()
    lim = RateLimiter(clock=clock)
    t = lim.reserve("k")
    lim.on_rate_limited(t, hint_s=0.5, text="on requests per min (RPM): Limit 3, Used 3")
    assert lim.stats("k")["source"] == "announced" and lim.limits("k").rpm == 3
    clock.t += 600
    lim.reserve("k")
    assert lim.limits("k").rpm == 3  # a stated limit does not drift
    lim.on_headers("j", {"llm_provider-x-ratelimit-limit-tokens": "40000"})
    assert lim.limits("j") == RateLimit(tpm=40000)


def test_configured_limits_are_not_overridden_by_learning():
    clock = FakeClock()
    lim = RateLimiter({"k": RateLimit(rpm=50)}, clock=clock)
    tickets = [lim.reserve("k") for _ in range(30)]
    lim.on_rate_limited(tickets[0], hint_s=2.0, text="requests per min (RPM): Limit 3")
    lim.on_headers("k", {"x-ratelimit-limit-requests": "4"})
    assert lim.limits("k").rpm == 50 and lim.stats("k")["source"] == "configured"
    assert lim.reserve("k").at == clock.t + 2.0  # the pause still applies


def test_reset_forgets_learned_state_but_keeps_configured_limits():
    clock = FakeClock()
    lim = RateLimiter({"k": RateLimit(rpm=5)}, clock=clock)
    t = lim.reserve("j")
    lim.on_rate_limited(t, hint_s=30.0, text="requests per min (RPM): Limit 3")
    lim.reserve("k")
    lim.reset()
    assert lim.reserve("j").at == clock.t and lim.limits("j").rpm is None
    assert lim.limits("k").rpm == 5


def test_bad_settings_are_refused_with_the_value():
    with pytest.raises(ValueError, match="headroom.*1.5"):
        RateLimiter(headroom=1.5)
    with pytest.raises(ValueError, match="window_s.*0"):
        RateLimiter(window_s=0)
    with pytest.raises(ValueError, match="margin_s.*-1"):
        RateLimiter(margin_s=-1)
    with pytest.raises(ValueError, match="rpm"):
        RateLimit(rpm=0)


def test_acquire_sleeps_until_admission_on_any_loop():
    lim = RateLimiter({"k": RateLimit(rpm=2)}, headroom=1.0, window_s=0.3, margin_s=0)

    async def three():
        t0 = time.monotonic()
        for _ in range(3):
            await lim.acquire("k")
        return time.monotonic() - t0

    assert asyncio.run(three()) >= 0.29  # the third waits a window
    # the same limiter from another thread's loop: no loop binding
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("dt", asyncio.run(three())))
    th.start()
    th.join(10)
    assert out["dt"] >= 0.29


def test_cancelled_wait_gives_its_slot_back():
    lim = RateLimiter({"k": RateLimit(rpm=1)}, headroom=1.0, window_s=30)

    async def main():
        await lim.acquire("k")
        waiter = asyncio.ensure_future(lim.acquire("k"))
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter

    asyncio.run(main())
    assert len(lim._states["k"].requests) == 1


# -- concurrency bound ---------------------------------------------------------------
def test_concurrency_limit_bounds_calls_across_loops_and_threads():
    limit = ConcurrencyLimit(3)
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    async def work():
        async with limit:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.02)
            with lock:
                state["now"] -= 1

    async def many():
        await asyncio.gather(*(work() for _ in range(12)))

    threads = [threading.Thread(target=lambda: asyncio.run(many())) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(20)
    assert state["peak"] == 3 and limit.in_use == 0


def test_concurrency_limit_survives_cancelled_waiters():
    limit = ConcurrencyLimit(1)

    async def main():
        async with limit:
            waiter = asyncio.ensure_future(limit.__aenter__())
            await asyncio.sleep(0.01)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        async with limit:  # the slot came back
            return limit.in_use

    assert asyncio.run(main()) == 1
    assert limit.in_use == 0


def test_concurrency_limit_serves_lowest_priority_then_arrival():
    """Waiting calls of the games furthest behind (lowest round) go
    first; equal priorities keep arrival order."""
    limit = ConcurrencyLimit(1)
    order = []

    async def call(name, prio):
        async with limit.slot(prio):
            order.append(name)
            await asyncio.sleep(0)

    async def main():
        async with limit:  # hold the slot while the others queue
            tasks = [asyncio.ensure_future(call(n, p)) for n, p in
                     [("r5a", 5), ("r1a", 1), ("r5b", 5), ("r0", 0), ("r1b", 1)]]
            await asyncio.sleep(0.01)
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert order == ["r0", "r1a", "r1b", "r5a", "r5b"]


def test_concurrency_limit_refuses_priorities_it_cannot_order():
    """None (pushed before its comparison failed) lost a slot for good; NaN broke the order."""
    limit = ConcurrencyLimit(1)

    async def main():
        async with limit:
            for bad in (None, float("nan"), "1", True):
                with pytest.raises(ValueError, match="priority"):
                    await limit.acquire(bad)
        await asyncio.wait_for(limit.acquire(2), timeout=2)  # the slot was not lost
        limit.release()
        return limit.in_use

    assert asyncio.run(main()) == 0


def test_concurrency_limit_free_slot_after_cancelled_waiters_is_taken_at_once():
    limit = ConcurrencyLimit(1)

    async def main():
        async with limit:
            waiter = asyncio.ensure_future(limit.acquire(3))
            await asyncio.sleep(0.01)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        # the cancelled waiter is still in the heap; a new caller must not queue behind it
        await asyncio.wait_for(limit.acquire(), timeout=2)
        limit.release()
        return limit.in_use

    assert asyncio.run(main()) == 0


def test_client_keeps_no_state_per_event_loop():
    """A client used from many loops (``decide`` makes one per call)
    must not keep them alive."""
    from scarce_lab.llm import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(cache=False, max_concurrency=1))
    refs = []

    async def two():  # two calls contend for the one slot, so a bound sees the loop
        refs.append(weakref.ref(asyncio.get_running_loop()))
        msgs = [{"role": "user", "content": "hi"}]
        res = await asyncio.gather(
            *(client.acomplete("openai/x", msgs, seed=i, mock_response="ok") for i in range(2))
        )
        return [r.text for r in res]

    for _ in range(4):
        assert asyncio.run(two()) == ["ok", "ok"]
    gc.collect()
    # litellm's global logging worker holds on to the last loop it ran on (one, not
    # one per loop); every earlier loop is gone
    assert [r() is None for r in refs[:-1]] == [True, True, True]
