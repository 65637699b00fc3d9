"""Transport of model calls through litellm: import, rate limiting, retries, cost.

- :func:`load_litellm`: litellm imported offline-safe, once, with the embedded provider
  registered (the import takes seconds, so it is lazy);
- :func:`call_with_retries`: one completion with the shared rate limiter
  (:mod:`scarce_lab.llm.ratelimit`) and transport retries that wait at least the
  provider's hint (:mod:`scarce_lab.llm.hints`);

The decision logic (validation, repair, fallback, records, cache) is in
:mod:`scarce_lab.llm.client`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import threading
from typing import Any

from .hints import exception_headers, retry_hint_s
from .models import is_embedded
from .ratelimit import RateLimiter, RateLimitExceedsLimit, estimate_tokens
from .structured import REFUSED_PREFIX, is_form_refusal

_LITELLM_LOCK = threading.Lock()


def load_litellm():
    """Import litellm offline-safe (no price-list download) and register the embedded
    provider. Import takes a few seconds, so it is done lazily, once."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    with _LITELLM_LOCK:
        import litellm

        if not getattr(litellm, "_scarce_lab_ready", False):
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            litellm.telemetry = False
            from .embedded import register_embedded_provider

            register_embedded_provider(litellm)
            from .._sync import at_loop_end

            at_loop_end(flush_litellm_logging)
            litellm._scarce_lab_ready = True
    return litellm


async def flush_litellm_logging(timeout_s: float = 10.0) -> None:
    """Let litellm's logging worker finish the success-logging tasks it queued on this
    event loop (one per call). :func:`scarce_lab.runtime.run_sync` runs it before its
    loop closes; otherwise each sync call left its task behind, to be carried (with a
    warning) to the next loop, and they piled up. At most ``timeout_s`` seconds."""
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:  # a litellm without the worker queues nothing on the loop
        return
    try:
        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout=timeout_s)
    except TimeoutError:
        pass  # left for the next loop, as litellm itself would


#: Phrases of a missing-credential error that litellm wraps in a retryable class
#: (litellm 1.x maps the OpenAI SDK's "Missing credentials ... set the OPENAI_API_KEY"
#: to InternalServerError, which was retried for 26-28 s).
_CREDENTIAL_PHRASES = ("missing credentials", "missing api key", "api_key client option must be set",
                       "no api key provided", "api key not found")


def credential_error(exc: Exception) -> bool:
    """A missing or rejected credential: litellm's AuthenticationError, or an error whose
    message says a credential is missing (whatever class litellm gave it). Never
    transient: no retry."""
    if isinstance(exc, load_litellm().AuthenticationError):
        return True
    text = str(exc).lower()
    return any(p in text for p in _CREDENTIAL_PHRASES)


def retryable(exc: Exception) -> bool:
    """Transient transport errors: rate limit, 5xx, connection, timeout; never a missing
    or rejected credential (:func:`credential_error`)."""
    if credential_error(exc):
        return False
    litellm = load_litellm()
    kinds = (
        litellm.RateLimitError,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
        litellm.APIConnectionError,
        litellm.Timeout,
    )
    return isinstance(exc, kinds) or isinstance(exc, asyncio.TimeoutError)


def rate_limited(exc: Exception) -> bool:
    """A 429 from the provider (litellm's RateLimitError or any error with status 429)."""
    return (
        isinstance(exc, load_litellm().RateLimitError) or getattr(exc, "status_code", None) == 429
    )


@functools.lru_cache(maxsize=256)
def provider_of(model: str) -> str:
    """litellm's provider of a model string (``openai/x`` -> ``openai``), for rate limits."""
    try:
        return load_litellm().get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001 - unknown to litellm: the prefix names it
        return model.split("/", 1)[0] if "/" in model else model


async def call_with_retries(
    settings: Any,
    limiter: RateLimiter,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    extra: dict[str, Any],
) -> tuple[Any, str | None]:
    """One completion through litellm, with transport retries and rate limiting.

    Hosted models: every attempt first waits for the rate limiter (one request and
    its estimated tokens under the call's limit key); a 429 pauses that key for the
    provider's hint and may teach the limiter the limit. A retryable error (rate
    limit, 5xx, timeout, connection) is retried after the larger of the exponential
    backoff (``backoff_base_s`` x 2^attempt x U[0.5, 1.5)) and the provider's hint
    (``retry-after-ms``, ``Retry-After``, "try again in N s"); a
    hint longer than ``max_retry_wait_s`` ends the call at once with the hint in the
    error. The embedded model runs in-process: no rate limit, no retries.

    Args:
        settings: the client's :class:`~scarce_lab.llm.client.LLMSettings`
            (``timeout_s``, ``max_retries``, ``backoff_base_s``, ``max_retry_wait_s``).
        limiter: the rate limiter shared by the calls.
        params: temperature, max_tokens, seed, response_format, api_base... as sent.
        extra: further litellm keyword arguments (``mock_response``, ``api_key``...).

    Returns ``(response, None)`` or ``(None, "ErrorType: message")``; never raises for
    provider errors.
    """
    litellm = load_litellm()
    s = settings
    embedded = is_embedded(model)
    kwargs = dict(params)
    key = None
    tokens = 0
    if embedded:
        # litellm only forwards provider-specific params it knows; pass ours explicitly.
        kwargs = {"temperature": params["temperature"], "max_tokens": params["max_tokens"]}
        kwargs["extra_body"] = {
            **(extra.get("extra_body") or {}),
            "seed": params["seed"],
            "response_format": params.get("response_format"),
        }
        extra = {k: v for k, v in extra.items() if k != "extra_body"}
    else:
        if "mock_response" not in extra:  # a mocked answer reaches no provider
            key = limiter.key_for(model, provider_of(model), params.get("api_base"))
            tokens = estimate_tokens(messages, params["max_tokens"])
        # the provider SDK's own retries (2 by default for OpenAI-style clients)
        # would resend 429s behind the limiter's back: retries are ours
        kwargs.setdefault("max_retries", 0)
    last = None
    for attempt in range(s.max_retries + 1):
        ticket = None
        if key is not None:
            try:
                ticket = await limiter.acquire(key, tokens)
            except RateLimitExceedsLimit as exc:
                return None, f"{type(exc).__name__}: {exc}"
        try:
            call = litellm.acompletion(
                model=model, messages=messages, timeout=s.timeout_s, **kwargs, **extra
            )
            # The embedded model runs in-process and may wait for the machine-wide
            # lock; its generation is bounded by max_tokens, so no wall timeout.
            if embedded:
                response = await call
            else:
                response = await asyncio.wait_for(call, timeout=s.timeout_s + 5)
        except Exception as exc:  # noqa: BLE001 - every provider error becomes data
            last = exc
            if embedded:
                break  # in-process: its errors are not transient
            hint = retry_hint_s(exc)
            too_long = hint is not None and hint > s.max_retry_wait_s
            if ticket is not None and rate_limited(exc):
                # a hint beyond max_retry_wait_s fails this call (below) and does
                # not pause the other calls: each of them reports it in turn
                limiter.on_rate_limited(
                    ticket,
                    hint_s=None if too_long else hint,
                    headers=exception_headers(exc),
                    text=str(exc),
                )
            if is_form_refusal(exc):  # a refused request form is permanent
                return None, f"{REFUSED_PREFIX}: {type(exc).__name__}: {exc}"[:2000]
            if attempt >= s.max_retries or not retryable(exc):
                break
            if too_long:
                msg = f"{type(exc).__name__}: {exc}"[:1800]
                return None, (
                    f"{msg} [not retried: the provider asks to wait {hint:g} s, more than "
                    f"max_retry_wait_s={s.max_retry_wait_s:g}]"
                )
            backoff = s.backoff_base_s * (2**attempt) * (0.5 + random.random())
            await asyncio.sleep(max(backoff, hint or 0.0))
            continue
        if ticket is not None:
            hidden = getattr(response, "_hidden_params", None) or {}
            limiter.on_headers(key, hidden.get("additional_headers"))
            usage = getattr(response, "usage", None)
            limiter.settle(ticket, getattr(usage, "total_tokens", None))
        return response, None
    return None, f"{type(last).__name__}: {last}"[:2000]
