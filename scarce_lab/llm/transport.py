"""Transport of model calls: three ways out, one retry loop, one answer shape.

- **the OpenAI-compatible path**: an ``openai/<name>`` model at an ``api_base`` (a local
  llama.cpp or vLLM server, a gateway) is one aiohttp POST (:func:`_send_http`), one
  session and connection pool per (event loop, api_base), sized for the client's
  concurrency. litellm still maps the parameters
  (:func:`scarce_lab.llm.params.planned_params`) so the body is the one litellm would
  send, but its per-call cost calculation, model-info lookups, response metadata and
  logging are skipped (we price calls ourselves, :mod:`scarce_lab.llm.costs`), and so
  is the openai SDK's request building: errors are still the SDK's exceptions with its
  texts. The body is read within ``LIMITS.response_bytes`` (outcome ``too_large``);
- **the embedded model** (``embedded/...``) is run in-process by
  :func:`scarce_lab.llm.embedded.generate` in a worker thread: neither litellm nor the
  openai SDK is imported;
- **every other model** (hosted providers, other routes at an ``api_base``, mocked
  answers) goes through litellm (:func:`load_litellm`: imported offline-safe, once).

Each path gives back the provider's answer as an OpenAI-style object or dict, which
:func:`scarce_lab.llm.outcomes.response_parts` reads for all three.
:func:`call_with_retries` wraps them with the shared rate limiter
(:mod:`scarce_lab.llm.ratelimit`) and transport retries that wait at least the
provider's hint (:mod:`scarce_lab.llm.hints`); errors are classified on the openai
SDK's exception classes, which litellm's subclass.

The decision logic (validation, repair, fallback, records, cache) is in
:mod:`scarce_lab.llm.client`.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import os
import random
import threading
import weakref
from typing import Any

from ..data import limits as _limits
from .hints import exception_headers, retry_hint_s
from .models import is_embedded
from .ratelimit import RateLimiter, RateLimitExceedsLimit, estimate_tokens
from .structured import REFUSED_PREFIX, is_form_refusal, status_of

_LITELLM_LOCK = threading.Lock()
_LITELLM: list = []  # the module once loaded (the fast path of load_litellm)

# Bytes of one HTTP response body read: LIMITS.response_bytes (scarce_lab/data/limits.py,
# the one table of limits, read at call time); reading stops past it, outcome ``too_large``.
#: Prefix of the error of a response past ``LIMITS.response_bytes``.
TOO_LARGE_PREFIX = "response too large"


class ResponseTooLarge(Exception):
    """A response body passed ``LIMITS.response_bytes``; it was not read further."""


def load_litellm():
    """Import litellm offline-safe (no price-list download). The import takes a few
    seconds, so it is done lazily, once, and only for a model routed through litellm."""
    if _LITELLM:
        return _LITELLM[0]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    with _LITELLM_LOCK:
        import jsonschema  # noqa: F401 - see below
        import litellm

        # litellm imports jsonschema inside a call (its json_schema validation): a
        # notebook's Interrupt Kernel landing in that import leaves a half-imported
        # package whose later imports fail ("module jsonschema has no attribute
        # exceptions", altair's included). Imported here, with litellm, before any call.

        if not getattr(litellm, "_scarce_lab_ready", False):
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            litellm.telemetry = False
            from .._sync import at_loop_end

            at_loop_end(flush_litellm_logging)
            litellm._scarce_lab_ready = True
            # litellm (with the openai SDK, pydantic models, tokenizer tables) leaves
            # ~380k objects the cycle collector would walk in every full collection
            # (215 ms each, one per ~200 calls: 13% of the wall time of 32 calls in
            # flight, benchmarks/bench_calls.py). They live as long as the process:
            # out of its reach (freed by reference counting as before, never walked)
            gc.freeze()
        _LITELLM[:] = [litellm]
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
    """A missing or rejected credential: an HTTP 401 (the openai SDK's and litellm's
    AuthenticationError), or an error whose message says a credential is missing
    (whatever class it came in). Never transient: no retry."""
    if status_of(exc) == 401:
        return True
    text = str(exc).lower()
    return any(p in text for p in _CREDENTIAL_PHRASES)


def retryable(exc: Exception) -> bool:
    """Transient transport errors: rate limit (429), request timeout (408), any 5xx,
    connection errors and timeouts (the openai SDK's ``APIConnectionError`` and
    ``APITimeoutError``, which litellm's ``APIConnectionError`` and ``Timeout``
    subclass); never a missing or rejected credential (:func:`credential_error`)."""
    if credential_error(exc) or too_large(exc) is not None:
        return False
    if isinstance(exc, asyncio.TimeoutError):
        return True
    status = status_of(exc)
    if status is not None:
        return status in (408, 429) or status >= 500
    import openai

    return isinstance(exc, openai.APIConnectionError)


def rate_limited(exc: Exception) -> bool:
    """A 429 from the provider (any error with HTTP status 429)."""
    return status_of(exc) == 429


@functools.lru_cache(maxsize=256)
def provider_of(model: str) -> str:
    """The provider of a model string, for rate limits: ``openai`` for ``openai/x``
    (the prefix), else litellm's routing of it (``gpt-4o`` -> ``openai``)."""
    if model.startswith("openai/"):
        return "openai"
    try:
        return load_litellm().get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001 - unknown to litellm: the prefix names it
        return model.split("/", 1)[0] if "/" in model else model


# -- the OpenAI-compatible path ------------------------------------------------------------
#: litellm keyword arguments the SDK path takes; any other sends the call through litellm.
_SDK_EXTRA = frozenset({"api_key", "extra_body", "extra_headers", "logger_fn", "timeout",
                        # the OpenAI arguments litellm maps (params.MAPPED): sent in ``sent``
                        "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens",
                        "presence_penalty", "frequency_penalty", "logit_bias", "response_format", "seed", "tools",
                        "tool_choice", "logprobs", "top_logprobs", "parallel_tool_calls", "reasoning_effort"})
_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> {key: aiohttp.ClientSession}


#: ``False`` sends every hosted call through litellm (tests that fake ``litellm.acompletion``).
SDK_PATH = True


def openai_compatible(model: str, api_base: str | None, extra: dict[str, Any]) -> bool:
    """True when a call takes the OpenAI-compatible path: an ``openai/<name>`` model at an
    ``api_base``, with no litellm-only argument (``mock_response``, ``metadata``...), while
    :data:`SDK_PATH`."""
    return SDK_PATH and bool(api_base) and model.startswith("openai/") and _SDK_EXTRA.issuperset(extra)


async def http_session(api_base: str, pool_size: int):
    """The ``aiohttp.ClientSession`` of this event loop for ``api_base``: at most
    ``max(100, 2 x pool_size)`` connections (``pool_size``: the client's
    ``max_concurrency``), kept alive between calls, bodies left encoded (they are decoded
    within ``LIMITS.response_bytes`` by :func:`read_bounded`), no redirects followed.
    Connections belong to one event loop, so each loop (``run_sync`` makes one per sync
    call) gets its own sessions, closed when the loop shuts down its async generators
    (``asyncio.run`` does, before it closes the loop)."""
    import aiohttp

    loop = asyncio.get_running_loop()
    pools = _POOLS.get(loop)
    if pools is None:
        pools = _POOLS[loop] = {}
        closer = _close_at_loop_end(pools)
        await closer.__anext__()  # the loop now holds it, and closes it as it shuts down
        pools[None] = closer
    key = (api_base, pool_size)
    session = pools.get(key)
    if session is None:
        session = pools[key] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(100, 2 * pool_size)), auto_decompress=False)
    return session


async def _close_at_loop_end(pools: dict):
    """An async generator left suspended: ``loop.shutdown_asyncgens()`` closes it, and
    with it the sessions of that loop (unclosed ones warn at exit)."""
    try:
        yield
    finally:
        for key, session in list(pools.items()):
            if key is not None:
                await session.close()
        pools.clear()


async def read_bounded(chunks: Any, encoding: str) -> bytes:
    """The body of a response from its raw ``chunks`` (an async iterator of bytes),
    decoded (``gzip``, ``deflate`` or none) and stopped past ``LIMITS.response_bytes``
    decoded bytes: a compression bomb stops at the limit like any other large body.

    Raises:
        ResponseTooLarge: the body passes the limit, or its encoding cannot be read
            within a bound.
    """
    import zlib

    limit, size, out = _limits.LIMITS.response_bytes, 0, []
    if encoding in ("gzip", "deflate"):
        decoder = zlib.decompressobj(47)  # gzip or zlib header, detected
    elif encoding in ("", "identity"):
        decoder = None
    else:
        raise ResponseTooLarge(f"content-encoding {encoding!r} cannot be read within a bound")
    async for chunk in chunks:
        if decoder is not None:
            chunk = decoder.decompress(chunk, limit + 1 - size)
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(f"more than {limit:,} bytes")
        out.append(chunk)
    return b"".join(out)


def too_large(exc: BaseException) -> ResponseTooLarge | None:
    """The :class:`ResponseTooLarge` behind ``exc`` (the SDK wraps errors of a body read
    in ``APIConnectionError``), or ``None``."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, ResponseTooLarge):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


@functools.lru_cache(maxsize=1)
def _sdk_errors():
    """``(http module, an AsyncOpenAI that never sends)``: the openai SDK's own mapping
    of an HTTP error response to its exception classes and texts (``RateLimitError``,
    ``AuthenticationError``... "Error code: 429 - ..."), which the retry rules and the
    records read. The http module is the one the SDK is built on (``httpx2`` in the
    releases that vendor it, else httpx)."""
    import openai

    try:
        import httpx2 as http
    except ImportError:  # an SDK on plain httpx
        import httpx as http
    return http, openai.AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1", max_retries=0,
                                    http_client=http.AsyncClient())


def _sdk_timeout(exc: BaseException) -> bool:
    """Whether the openai SDK on its aiohttp transport reported this aiohttp error as a
    timeout (``APITimeoutError``, "Request timed out.") rather than a connection error:
    its vendored map, under which a refused or dropped connection counts as a connect
    timeout; the records keep the SDK's wording. Without that map, only timeouts."""
    try:
        from openai._vendor.httpx_aiohttp.transport import AIOHTTP_EXC_MAP
    except ImportError:  # an SDK without the aiohttp transport
        return isinstance(exc, TimeoutError)
    mapped = None
    for source, target in AIOHTTP_EXC_MAP.items():  # the SDK's rule: the most specific target wins
        if isinstance(exc, source) and (mapped is None or issubclass(target, mapped)):
            mapped = target
    return mapped is not None and issubclass(mapped, _sdk_errors()[0].TimeoutException)


async def _send_http(model: str, messages: list[dict[str, Any]], sent: dict[str, Any], extra: dict[str, Any],
                     timeout_s: float, pool_size: int) -> tuple[dict[str, Any], Any]:
    """One request on the OpenAI-compatible path: ``(answer as a dict, response headers)``.
    The body is litellm's (``model`` without its ``openai/`` prefix, ``messages``, the
    mapped ``sent`` parameters, ``extra_body`` merged) serialized as the openai SDK does;
    it is handed to ``logger_fn`` as litellm hands its request body. Reading stops past
    ``LIMITS.response_bytes``. Plain aiohttp, not the SDK's client: its request
    building and the httpx layer were ~0.8 of the 1.7 ms of client CPU per call, and
    under 32 calls in flight every answer's CPU delays the others
    (benchmarks/bench_calls.py). Errors are the SDK's.

    Raises:
        openai.APIStatusError: an HTTP status outside 2xx, as the SDK maps it (429:
            ``RateLimitError``...).
        openai.APITimeoutError: connecting or reading took over ``timeout_s``.
        openai.APIConnectionError: the connection failed or broke.
        ResponseTooLarge: the body passed the limit.
        openai.OpenAIError: no key given and ``OPENAI_API_KEY`` unset (as the SDK does).
    """
    import aiohttp
    import openai

    body = {k: v for k, v in sent.items() if k != "api_base"}
    eb = dict(extra.get("extra_body") or {})
    if extra.get("logger_fn") is not None:
        extra["logger_fn"]({"additional_args": {"complete_input_dict": {
            "model": model[len("openai/"):], "messages": messages, **body, "extra_body": eb}}})
    key = extra.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not key:  # the SDK's own missing-credential error (a credential error: never retried)
        openai.AsyncOpenAI(base_url=sent["api_base"], api_key=None, http_client=_sdk_errors()[0].AsyncClient())
        raise openai.OpenAIError("Missing credentials: pass api_key or set OPENAI_API_KEY")
    data = json.dumps({"model": model[len("openai/"):], "messages": messages, **body, **eb}, ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False).encode()  # the SDK's serialization
    url = sent["api_base"].rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", "Accept": "application/json",
               "Accept-Encoding": "gzip, deflate", **(extra.get("extra_headers") or {})}
    session = await http_session(sent["api_base"], pool_size)
    try:
        async with session.post(url, data=data, headers=headers, allow_redirects=False, timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=timeout_s, sock_read=timeout_s)) as response:
            encoding = response.headers.get("content-encoding", "").strip().lower()
            declared = response.headers.get("content-length", "")
            if not encoding and declared.isdigit() and int(declared) > _limits.LIMITS.response_bytes:
                raise ResponseTooLarge(f"the server announced {int(declared):,} bytes")
            content = await read_bounded(response.content.iter_any(), encoding)
            status, got = response.status, response.headers
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        request = _sdk_errors()[0].Request("POST", url)
        if _sdk_timeout(exc):
            raise openai.APITimeoutError(request=request) from exc
        raise openai.APIConnectionError(request=request) from exc
    if not 200 <= status < 300:
        http, sdk = _sdk_errors()
        kept = [(k, v) for k, v in got.items() if k.lower() not in ("content-encoding", "content-length")]
        raise sdk._make_status_error_from_response(
            http.Response(status, headers=kept, content=content, request=http.Request("POST", url)))
    return json.loads(content), got


# -- the embedded path --------------------------------------------------------------------
async def _send_embedded(model: str, messages: list[dict[str, Any]], params: dict[str, Any],
                         extra: dict[str, Any]) -> dict[str, Any]:
    """One completion of the embedded model in a worker thread (an OpenAI-style dict)."""
    from .embedded import generate

    eb = extra.get("extra_body") or {}
    out = await asyncio.to_thread(
        generate, messages, name=model.split("/", 1)[1], temperature=float(params.get("temperature") or 0.0),
        max_tokens=int(params.get("max_tokens") or 256), seed=params.get("seed"),
        response_format=params.get("response_format"), repeat_penalty=eb.get("repeat_penalty"))
    out["model"] = model
    return out


def _check_size(response: Any) -> None:
    """litellm reads whole bodies: an answer past ``LIMITS.response_bytes`` (its text,
    refusal and tool calls whole, ids and names too, in characters) is refused after the
    fact, never ``ok``.

    Raises:
        ResponseTooLarge: the answer passes the limit.
    """
    from .outcomes import response_parts

    parts = response_parts(response)
    size = len(parts.text or "") + len(parts.refusal or "") + len(json.dumps(parts.tool_calls or [], default=str))
    if size > _limits.LIMITS.response_bytes:
        raise ResponseTooLarge(f"an answer of {size:,} characters")


async def call_with_retries(
    settings: Any,
    limiter: RateLimiter,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    extra: dict[str, Any],
    sent: dict[str, Any] | None = None,
    pool_size: int = 8,
) -> tuple[Any, str | None]:
    """One completion with transport retries and rate limiting, through the path the
    model takes (module docstring).

    Hosted models: every attempt first waits for the rate limiter (one request and
    its estimated tokens under the call's limit key); a 429 pauses that key for the
    provider's hint and may teach the limiter the limit. A retryable error (rate
    limit, 5xx, timeout, connection) is retried after the larger of the exponential
    backoff (``backoff_base_s`` x 2^attempt x U[0.5, 1.5)) and the provider's hint
    (``retry-after-ms``, ``Retry-After``, "try again in N s"); a
    hint longer than ``max_retry_wait_s`` ends the call at once with the hint in the
    error. A response past ``LIMITS.response_bytes`` is not retried (the error
    starts with :data:`TOO_LARGE_PREFIX`). The embedded model runs in-process: no
    rate limit, no retries.

    Args:
        settings: the client's :class:`~scarce_lab.llm.client.LLMSettings`
            (``timeout_s``, ``max_retries``, ``backoff_base_s``, ``max_retry_wait_s``).
        limiter: the rate limiter shared by the calls.
        params: temperature, max_tokens, seed, response_format, api_base... as asked.
        extra: further litellm keyword arguments (``mock_response``, ``api_key``...).
        sent: the parameters after litellm's mapping
            (:func:`scarce_lab.llm.params.planned_params`, with ``api_base``): the
            OpenAI-compatible path sends them; without them the call goes through litellm.
        pool_size: connections the OpenAI-compatible path keeps alive (the client's
            concurrency).

    Returns ``(response, None)`` or ``(None, "ErrorType: message")``; never raises for
    provider errors. The response is an OpenAI-style object (litellm) or dict (SDK path,
    embedded model): read it with :func:`scarce_lab.llm.outcomes.response_parts`.
    """
    s = settings
    embedded = is_embedded(model)
    sdk = sent is not None and not embedded and openai_compatible(model, params.get("api_base"), extra)
    kwargs = dict(params)
    key = None
    tokens = 0
    if not embedded:
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
        headers = None
        try:
            # The embedded model runs in-process and may wait for the machine-wide
            # lock; its generation is bounded by max_tokens, so no wall timeout.
            if embedded:
                response = await _send_embedded(model, messages, params, extra)
            elif sdk:
                # asyncio.timeout, not wait_for: wait_for ran the send as a task of its
                # own, one loop turn later, so every queued call's preparation ran before
                # the first request went out
                async with asyncio.timeout(s.timeout_s + 5):
                    response, headers = await _send_http(model, messages, sent, extra, s.timeout_s, pool_size)
            else:
                call = load_litellm().acompletion(
                    model=model, messages=messages, timeout=s.timeout_s, **kwargs, **extra)
                async with asyncio.timeout(s.timeout_s + 5):
                    response = await call
                headers = (getattr(response, "_hidden_params", None) or {}).get("additional_headers")
                _check_size(response)
        except Exception as exc:  # noqa: BLE001 - every provider error becomes data
            last = exc
            if embedded:
                break  # in-process: its errors are not transient
            big = too_large(exc)
            if big is not None:
                return None, (f"{TOO_LARGE_PREFIX}: {big}; the limit is {_limits.LIMITS.response_bytes:,} bytes "
                              "(LIMITS.response_bytes, scarce_lab/data/limits.py); not read further")
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
            limiter.on_headers(key, headers)
            usage = response.get("usage") if isinstance(response, dict) else getattr(response, "usage", None)
            total = usage.get("total_tokens") if isinstance(usage, dict) else getattr(usage, "total_tokens", None)
            limiter.settle(ticket, total)
        return response, None
    return None, f"{type(last).__name__}: {last}"[:2000]
