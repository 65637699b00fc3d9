"""Admission of model calls: a shared per-provider rate limiter and a concurrency bound.

A sweep of many games sends its calls through one :class:`RateLimiter`, so together
they stay just under the provider's limits instead of hammering it with requests that
come back as HTTP 429:

- **limits**: requests per minute (RPM) and tokens per minute (TPM) per *limit key*.
  A key is a full model string (``openai/gpt-4o-mini``) or a provider name
  (``openai``); the model's own entry wins over its provider's. Limits come from the
  settings (:class:`RateLimit`), from the provider's rate-limit headers
  (``x-ratelimit-limit-requests`` / ``-tokens``, ``anthropic-ratelimit-*-limit``), or
  are learned from 429 answers (their text, e.g. OpenAI's "Limit 30000 ... tokens per
  min", or else, opt-in, the number of requests sent in the last window);
- **sliding window**: in any window of ``window_s`` seconds (60 for per-minute
  limits) at most ``headroom x limit`` requests, and ``headroom x limit`` tokens, are
  admitted (an admission counts ``margin_s`` longer, for differences in transit time;
  a request refused with a 429 stops counting). Calls are admitted in order (each
  reserves the earliest time at which it fits), so waiting calls never overtake;
- **pauses**: a 429 with a hint (``Retry-After``, ``retry-after-ms``, "try again in
  N s") pauses every call of that key until the hint has passed;
- **inferred limits** (opt-in, ``infer=True``: a 429 that states no limit, after at least
  ``MIN_REQUESTS_TO_INFER`` requests in the window): 90% of the requests the window
  holds; they shrink at most once per burst of 429s (a 429 for a request admitted
  before the last change does not count again) and grow back by 10% per window without
  a 429; limits the provider states are kept as stated.

Retry hints and announced limits are read by :mod:`scarce_lab.llm.hints`. Tokens of a
request are estimated before the call (characters / 4 of the messages plus
``max_tokens``, as providers count ``max_tokens`` against TPM at admission) and replaced
by the real usage afterwards (:meth:`RateLimiter.settle`).

State is per process (one :func:`shared_limiter` per process, used by every
:class:`~scarce_lab.llm.client.LLMClient` unless one is passed), keyed by limit key and
``api_base``, so a local server never shares a learned limit with the hosted API. It
is guarded by a thread lock and waits with ``asyncio.sleep`` on the caller's loop, so
one limiter serves every event loop and thread of the process. Sweeps split over
several processes should give each process its share of the limits.

Why not a library: ``aiolimiter`` binds each limiter to one event loop (it warns when
reused across loops, and ``run_sync`` makes a fresh loop per call) and has no token
weights per window; ``pyrate-limiter`` keeps a loop-bound async lock per thread, starts
a leak thread per bucket, and cannot change a bucket's rates at run time, which the
learned limits need.

The bound on calls in flight per client is :class:`~scarce_lab.llm.concurrency.ConcurrencyLimit`.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .hints import limits_from_headers, limits_from_text


class RateLimit(BaseModel):
    """A provider's (or model's) limits. Units: requests per minute, tokens per minute
    (prompt plus completion tokens). ``None`` means no limit of that kind."""

    model_config = ConfigDict(extra="forbid")

    rpm: int | None = Field(None, gt=0, description="requests per minute")
    tpm: int | None = Field(None, gt=0, description="tokens per minute")
    headroom: float | None = Field(
        None, gt=0, le=1, description="fraction of the limits used; default: the limiter's (0.9)"
    )


def estimate_tokens(messages: list[dict[str, Any]], max_tokens: int) -> int:
    """Tokens a request may use, for admission: characters / 4 of the message texts
    (the usual rule of thumb for English) plus ``max_tokens``."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(
                len(str(part.get("text", ""))) for part in content if isinstance(part, dict)
            )
    return chars // 4 + int(max_tokens)


# -- the limiter -----------------------------------------------------------------------


@dataclass
class Ticket:
    """One admitted request: its limit key, admission time (limiter clock, seconds),
    reserved tokens, and the limit epoch it was admitted under."""

    key: str
    at: float
    tokens: int
    epoch: int
    _entry: list | None = field(default=None, repr=False)


_SEP = "|"  # limit name | api_base (model strings may contain "@")

#: A 429 that states no limit teaches a request limit only when at least this many
#: requests were sent in the window; below it, the 429 may come from tokens, a burst
#: limit or other users of the key, and only its pause applies.
MIN_REQUESTS_TO_INFER = 10


class RateLimitExceedsLimit(ValueError):
    """A single request asks for more tokens than the key's whole per-window limit."""


@dataclass
class _KeyState:
    configured: RateLimit | None = None
    rpm: int | None = None  # in force
    tpm: int | None = None
    source: str | None = None  # configured | announced (headers, 429 text) | inferred (429 count)
    epoch: int = 0
    changed_at: float = -math.inf
    paused_until: float = -math.inf
    requests: deque = field(default_factory=deque)  # admission times
    tokens: deque = field(default_factory=deque)  # [time, tokens]
    token_total: int = 0
    rate_limited: int = 0


class RateLimiter:
    """Sliding-window RPM/TPM limiter shared by every call to the same limit key.

    Args:
        limits: limit key (provider or full model string) -> :class:`RateLimit`.
        headroom: fraction of each limit actually used (0 < headroom <= 1; default 0.9,
            so a sweep stays just under the provider's limit).
        learn: take the limits a provider states (rate-limit headers, 429 texts).
        infer: also infer a request limit from a 429 that states none (off by default:
            such a 429 is ambiguous, and a burst of them, e.g. injected by tests or
            caused by other users of the key, would throttle every later call).
        window_s: window of the limits in seconds (60 for per-minute limits; tests
            use shorter windows).
        margin_s: extra seconds a request stays counted after its window, for the
            difference in transit time between requests (the provider counts arrivals,
            the limiter counts departures).
        clock: monotonic clock in seconds (tests pass a fake one).

    Raises:
        ValueError: ``headroom`` or ``window_s`` out of range.
    """

    def __init__(
        self,
        limits: Mapping[str, RateLimit] | None = None,
        *,
        headroom: float = 0.9,
        learn: bool = True,
        infer: bool = False,
        window_s: float = 60.0,
        margin_s: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not 0 < headroom <= 1:
            raise ValueError(f"headroom must be in (0, 1], got {headroom!r}")
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        if margin_s < 0:
            raise ValueError(f"margin_s must be >= 0, got {margin_s!r}")
        self.headroom = headroom
        self.learn = learn
        self.infer = infer
        self.window_s = window_s
        self.margin_s = margin_s
        self._span = window_s + margin_s  # how long an admission counts
        self.clock = clock
        self._lock = threading.Lock()
        self._limits: dict[str, RateLimit] = {}
        self._states: dict[str, _KeyState] = {}
        for name, spec in (limits or {}).items():
            self.configure(name, spec)

    # -- configuration ---------------------------------------------------------------
    def configure(self, name: str, spec: RateLimit | Mapping[str, Any]) -> None:
        """Set the limits of ``name`` (a provider or a full model string); they replace
        any earlier or learned limits of that name."""
        spec = spec if isinstance(spec, RateLimit) else RateLimit.model_validate(spec)
        with self._lock:
            self._limits[name] = spec
            for key, st in self._states.items():
                if key.split(_SEP, 1)[0] == name:
                    st.configured, st.rpm, st.tpm, st.source = spec, spec.rpm, spec.tpm, "configured"
                    st.epoch += 1

    def reset(self) -> None:
        """Forget what was learned and admitted (limits in force, pauses, windows);
        configured limits stay. Tests reset the shared limiter between tests."""
        with self._lock:
            self._states.clear()

    def key_for(self, model: str, provider: str, api_base: str | None = None) -> str:
        """The limit key of a call: the model string if it has limits of its own, else
        the provider; with ``|api_base`` appended when the call goes to one."""
        name = model if model in self._limits else provider
        return f"{name}{_SEP}{api_base}" if api_base else name

    def _state(self, key: str) -> _KeyState:
        st = self._states.get(key)
        if st is None:
            spec = self._limits.get(key.split(_SEP, 1)[0])
            st = _KeyState()
            if spec is not None:
                st.configured, st.rpm, st.tpm, st.source = spec, spec.rpm, spec.tpm, "configured"
            self._states[key] = st
        return st

    def limits(self, key: str) -> RateLimit:
        """The limits in force for ``key`` (before headroom)."""
        with self._lock:
            st = self._state(key)
            return RateLimit(rpm=st.rpm, tpm=st.tpm)

    def stats(self, key: str) -> dict[str, Any]:
        """Limits in force, their source (``configured``, ``announced`` by the provider,
        ``inferred`` from 429s, or ``None``), 429s seen and the pause end (clock s)."""
        with self._lock:
            st = self._state(key)
            return {
                "rpm": st.rpm,
                "tpm": st.tpm,
                "source": st.source,
                "rate_limited": st.rate_limited,
                "paused_until": st.paused_until,
            }

    # -- admission -------------------------------------------------------------------
    def _headroom(self, st: _KeyState) -> float:
        if st.configured is not None and st.configured.headroom is not None:
            return st.configured.headroom
        return self.headroom

    def _cap(self, st: _KeyState, limit: int | None) -> int | None:
        return None if limit is None else max(1, math.floor(limit * self._headroom(st)))

    def reserve(self, key: str, tokens: int = 0) -> Ticket:
        """Reserve the earliest admission time for one request of ``tokens`` tokens.

        Returns a :class:`Ticket`; the caller waits until ``ticket.at`` (see
        :meth:`acquire`).

        Raises:
            RateLimitExceedsLimit: ``tokens`` exceeds the key's whole token limit.
        """
        tokens = max(0, int(tokens))
        with self._lock:
            st = self._state(key)
            now = self.clock()
            self._expire(st, now)
            self._grow_learned(st, now)
            at = max(now, st.paused_until)
            if st.requests:
                at = max(at, st.requests[-1])  # in order: never overtake a waiting call
            cap = self._cap(st, st.rpm)
            if cap is not None and len(st.requests) >= cap:
                at = max(at, st.requests[-cap] + self._span)
            tcap = self._cap(st, st.tpm)
            if tcap is not None and tokens:
                if tokens > tcap:
                    raise RateLimitExceedsLimit(
                        f"rate limit {key!r}: one request needs ~{tokens} tokens but the limit "
                        f"allows {tcap} per {self.window_s:g} s (tpm {st.tpm} x headroom {self._headroom(st)})"
                    )
                # walk the window from its oldest entry: an entry stops counting once
                # `at` is a full window past it; move `at` until the request fits
                total = st.token_total
                for t_entry, w in st.tokens:
                    if t_entry <= at - self._span:
                        total -= w  # already out of the window at `at`
                        continue
                    if total + tokens <= tcap:
                        break
                    at = t_entry + self._span
                    total -= w
            entry = [at, tokens]
            st.requests.append(at)
            st.tokens.append(entry)
            st.token_total += tokens
            return Ticket(key, at, tokens, st.epoch, entry)

    async def acquire(self, key: str, tokens: int = 0) -> Ticket:
        """Wait (``asyncio.sleep``, on the caller's loop) until one request of ``tokens``
        tokens may be sent to ``key``; also waits out a pause that starts meanwhile.

        Raises:
            RateLimitExceedsLimit: see :meth:`reserve`.
        """
        ticket = self.reserve(key, tokens)
        target = max(ticket.at, self._paused_until(key))
        try:
            while True:
                wait = target - self.clock()
                if wait > 0:
                    await asyncio.sleep(wait)
                later = max(ticket.at, self._paused_until(key))
                if later <= target:  # no pause began while we waited
                    return ticket
                target = later
        except asyncio.CancelledError:
            self.release(ticket)
            raise

    def _paused_until(self, key: str) -> float:
        with self._lock:
            return self._state(key).paused_until

    def release(self, ticket: Ticket) -> None:
        """Give back a reservation that used none of the limit (the call was cancelled
        or rejected with a 429). Idempotent."""
        with self._lock:
            st = self._state(ticket.key)
            entry = ticket._entry
            index = next((i for i, e in enumerate(st.tokens) if e is entry), None)
            if index is None:
                return  # already released or expired
            del st.tokens[index]
            st.requests.remove(ticket.at)
            st.token_total -= entry[1]
            ticket._entry = None  # settle() then changes nothing

    def settle(self, ticket: Ticket, used_tokens: Any) -> None:
        """Replace a ticket's estimated tokens by the tokens the call really used: the
        server's ``usage.total_tokens``, a claim taken only when it is an integer in
        ``[0, 2**31)`` (whole-number floats included); anything else (absent, a string,
        a list, a bool, NaN, negative, huge) keeps the estimate."""
        if isinstance(used_tokens, float) and used_tokens.is_integer():
            used_tokens = int(used_tokens)
        if not isinstance(used_tokens, int) or isinstance(used_tokens, bool) or not 0 <= used_tokens < 2**31:
            return
        if ticket._entry is None:
            return
        with self._lock:
            st = self._state(ticket.key)
            old = ticket._entry[1]
            new = used_tokens
            # still in the window (entries leave it oldest first, in admission order):
            # a scan of the window per call cost O(calls per minute) at high throughput
            if st.tokens and ticket._entry[0] >= st.tokens[0][0]:
                st.token_total += new - old
            ticket._entry[1] = new
            ticket.tokens = new

    # -- feedback from the provider ----------------------------------------------------
    def on_rate_limited(
        self, ticket: Ticket, *, hint_s: float | None, headers: Any = None, text: str = ""
    ) -> None:
        """Record a 429 for the request of ``ticket``: pause the key for ``hint_s``
        seconds and, when learning, take the limits from the headers (one mapping or a
        list) or the text, or else (after at least ``MIN_REQUESTS_TO_INFER`` requests in
        the window) shrink the request limit to 90% of the requests sent in it."""
        self.release(ticket)  # a rejected request used none of the provider's limit
        with self._lock:
            st = self._state(ticket.key)
            now = self.clock()
            st.rate_limited += 1
            if hint_s is not None and hint_s > 0:
                st.paused_until = max(st.paused_until, now + hint_s)
            if not self.learn or st.configured is not None or ticket.epoch != st.epoch:
                return
            told = None
            for h in headers if isinstance(headers, list | tuple) else [headers]:
                told = limits_from_headers(h) if h is not None else None
                if told is not None:
                    break
            told = told or limits_from_text(text)
            if told is not None:
                st.rpm, st.tpm, st.source = told.rpm or st.rpm, told.tpm or st.tpm, "announced"
            else:
                self._expire(st, now)
                sent = sum(1 for t in st.requests if t <= now)
                if not self.infer or sent < MIN_REQUESTS_TO_INFER:
                    return  # too few requests to tell a limit: the pause alone applies
                current = st.rpm if st.rpm is not None else sent
                st.rpm, st.source = max(1, math.floor(min(current, sent) * 0.9)), "inferred"
            st.epoch += 1
            st.changed_at = now

    def on_headers(self, key: str, headers: Any) -> None:
        """Take the limits a successful response announces (when learning and the key
        has no configured limits)."""
        if not self.learn or headers is None:
            return
        told = limits_from_headers(headers)
        if told is None:
            return
        with self._lock:
            st = self._state(key)
            if st.configured is not None:
                return
            rpm, tpm = told.rpm or st.rpm, told.tpm or st.tpm
            if (rpm, tpm) != (st.rpm, st.tpm):
                st.rpm, st.tpm, st.source = rpm, tpm, "announced"
                st.epoch += 1
                st.changed_at = self.clock()

    # -- internals -------------------------------------------------------------------
    def _expire(self, st: _KeyState, now: float) -> None:
        horizon = now - self._span
        while st.requests and st.requests[0] <= horizon:
            st.requests.popleft()
        while st.tokens and st.tokens[0][0] <= horizon:
            st.token_total -= st.tokens.popleft()[1]

    def _grow_learned(self, st: _KeyState, now: float) -> None:
        if st.source != "inferred" or st.rpm is None:
            return
        windows = int((now - max(st.changed_at, st.paused_until)) // self.window_s)
        if windows >= 1:
            st.rpm = math.ceil(st.rpm * 1.1**windows)
            st.changed_at = now


_SHARED: RateLimiter | None = None
_SHARED_LOCK = threading.Lock()


def shared_limiter() -> RateLimiter:
    """The process-wide limiter every LLMClient uses unless it is given its own."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = RateLimiter()
        return _SHARED
