"""One LLM client over litellm for every agent.

``LLMClient.adecide`` asks a model for a decision that must validate against a
pydantic model:

1. the request carries the model's JSON schema as ``response_format`` (schema-
   constrained decoding where the backend supports it; ``litellm.drop_params`` drops it
   where it does not, and the prompt should describe the JSON anyway);
2. the answer is parsed and validated; on failure **one repair attempt** follows (the
   raw answer and the validation error are shown to the model);
3. if the repair fails too, the caller's documented **fallback** decision applies.

Every attempt is returned as an :class:`~scarce_lab.data.schema.LLMCallRecord` (raw
text, parsed decision or validation error, tokens, latency, cost, cache hit), so a
malformed answer is data, never a crash. Transport errors (rate limits, server errors,
timeouts, connection errors) are retried with exponential backoff; if they persist,
the fallback applies and the error is recorded.

API keys are read by litellm from the environment and never recorded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..data.schema import LLMCallRecord, messages_hash, scrub_surrogates
from .cache import ResponseCache, cache_key
from .models import scripted_policy
from .parsing import parse_decision
from .ratelimit import ConcurrencyLimit, RateLimit, RateLimiter, shared_limiter
from .transport import call_with_retries
from .transport import load_litellm as load_litellm  # re-exported: callers import it here

T = TypeVar("T", bound=BaseModel)

_REPAIR_TEMPLATE = (Path(__file__).parent / "prompts" / "repair.txt").read_text()
class LLMSettings(BaseModel):
    """Client-wide settings. Units: seconds for times, tokens for lengths."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(256, ge=1)
    timeout_s: float = Field(120.0, gt=0, description="per hosted call; the embedded model has none")
    max_retries: int = Field(4, ge=0, description="transport retries (rate limit, 5xx, timeout)")
    backoff_base_s: float = Field(1.0, ge=0, description="first backoff; doubles, with jitter")
    max_concurrency: int = Field(8, ge=1, description="concurrent calls per client (all loops, threads)")
    rate_limits: dict[str, RateLimit] = Field(
        default_factory=dict,
        description="requests/tokens per minute by provider ('openai') or model string; "
        "unset ones are taken from what the provider states (rate-limit headers, 429 texts; "
        "see scarce_lab.llm.ratelimit)",
    )
    max_retry_wait_s: float = Field(
        300.0, gt=0, description="longest retry wait a provider may ask for; longer fails the call"
    )
    api_base: str | None = None
    reasoning_effort: str | None = None
    cache: bool = True
    cache_dir: Path | None = None
    repair: bool = True


@dataclass(frozen=True)
class CallContext:
    """Where a call belongs in a run (copied into its LLMCallRecord)."""

    agent: str | None = None
    round: int | None = None
    purpose: str = ""
    run_id: str | None = None


@dataclass
class DecisionOutcome(Generic[T]):
    """Result of :meth:`LLMClient.adecide`.

    ``decision`` is the validated answer, or the fallback when ``fallback_used``;
    ``valid`` is true when a model answer (first or repaired) validated; ``violation``
    holds the first validation or transport error, if any; ``calls`` has one record per
    attempt.
    """

    decision: T
    valid: bool
    repaired: bool
    fallback_used: bool
    violation: str | None
    calls: list[LLMCallRecord] = field(default_factory=list)


@dataclass
class CompletionResult:
    """Result of :meth:`LLMClient.acomplete`: text, tool calls and the call record."""

    text: str | None
    tool_calls: list[dict[str, Any]] | None
    record: LLMCallRecord
    error: str | None = None


def json_schema_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """OpenAI-style ``response_format`` for a pydantic model."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
    }


def run_sync(coro):
    """Run a coroutine to completion from sync code, also inside a running event loop
    (Jupyter): then it runs on a fresh loop in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class LLMClient:
    """litellm wrapper: structured decisions, repair, fallback, retries, cache, accounting.

    One client can serve many concurrent games: calls are bounded by
    ``settings.max_concurrency`` (one bound for the client, whatever loop or thread the
    calls come from) and paced by a :class:`~scarce_lab.llm.ratelimit.RateLimiter`
    (``rate_limiter``, default the process-wide shared one, which takes
    ``settings.rate_limits``).
    """

    def __init__(
        self,
        settings: LLMSettings | None = None,
        cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
    ):
        self.settings = settings or LLMSettings()
        self.rate_limiter = rate_limiter if rate_limiter is not None else shared_limiter()
        for name, spec in self.settings.rate_limits.items():
            self.rate_limiter.configure(name, spec)
        self._slots = ConcurrencyLimit(self.settings.max_concurrency)
        if cache is not None:
            self.cache = cache
        elif self.settings.cache:
            self.cache = ResponseCache(self.settings.cache_dir)
        else:
            self.cache = None

    # -- public API ----------------------------------------------------------------
    async def adecide(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        schema: type[T],
        fallback: T,
        seed: int,
        context: CallContext | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        **litellm_kwargs: Any,
    ) -> DecisionOutcome[T]:
        """Ask ``model`` for a decision validating against ``schema``.

        Args:
            model: litellm model string or ``embedded/...``; ``scripted/...`` is refused.
            messages: OpenAI-style chat messages.
            schema: pydantic model of the decision.
            fallback: decision applied when no valid answer is obtained (the caller
                documents which one).
            seed: per-call seed (part of the cache key; passed to the backend).
            context: run/agent/round/purpose for the records.
            **litellm_kwargs: passed through (``mock_response`` in tests, ``api_key``...).

        Raises:
            ValueError: ``model`` is a ``scripted/`` policy name.
        """
        if scripted_policy(model) is not None:
            raise ValueError(f"model {model!r} is a scripted policy; agents handle it without the client")
        ctx = context or CallContext()
        response_format = json_schema_response_format(schema)
        calls: list[LLMCallRecord] = []
        res = await self.acomplete(
            model,
            messages,
            seed=seed,
            context=ctx,
            max_tokens=max_tokens,
            temperature=temperature,
            reasoning_effort=reasoning_effort,
            response_format=response_format,
            **litellm_kwargs,
        )
        decision, error = self._validate(res, schema)
        calls.append(res.record)
        first_error = error
        repaired = False
        if decision is None and self.settings.repair and res.error is None:
            schema_text = json.dumps(schema.model_json_schema(), separators=(",", ":"))
            repair_messages = [
                *messages,
                {"role": "assistant", "content": res.text or ""},
                {"role": "user", "content": _REPAIR_TEMPLATE.format(error=error, schema=schema_text)},
            ]
            res2 = await self.acomplete(
                model,
                repair_messages,
                seed=seed + 1,
                context=ctx,
                max_tokens=max_tokens,
                temperature=temperature,
                reasoning_effort=reasoning_effort,
                response_format=response_format,
                attempt=1,
                **litellm_kwargs,
            )
            decision, error = self._validate(res2, schema)
            calls.append(res2.record)
            repaired = decision is not None
        fallback_used = decision is None
        if fallback_used:
            decision = fallback
            calls[-1].fallback_used = True
        return DecisionOutcome(
            decision=decision,
            valid=not fallback_used,
            repaired=repaired,
            fallback_used=fallback_used,
            violation=first_error,
            calls=calls,
        )

    def decide(self, **kwargs: Any) -> DecisionOutcome:
        """Synchronous :meth:`adecide` (works inside Jupyter's running loop too)."""
        return run_sync(self.adecide(**kwargs))

    async def acomplete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        seed: int,
        context: CallContext | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        response_format: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        attempt: int = 0,
        **litellm_kwargs: Any,
    ) -> CompletionResult:
        """One chat completion (cached, retried, bounded). Never raises for transport or
        provider errors: they are returned in ``error`` and in the record.

        Units: ``max_tokens`` tokens; latency in the record in seconds.
        """
        ctx = context or CallContext()
        s = self.settings
        params: dict[str, Any] = {
            "temperature": s.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or s.max_tokens,
            "seed": seed,
        }
        effort = reasoning_effort or s.reasoning_effort
        if effort:
            params["reasoning_effort"] = effort
        if response_format is not None:
            params["response_format"] = response_format
        if tools:
            params["tools"] = tools
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        api_base = litellm_kwargs.pop("api_base", None) or s.api_base
        if api_base:
            params["api_base"] = api_base
        key_params = dict(params)
        if "mock_response" in litellm_kwargs:
            key_params["mock_response"] = str(litellm_kwargs["mock_response"])
        record = LLMCallRecord(
            run_id=ctx.run_id,
            call_id=uuid.uuid4().hex[:16],
            round=ctx.round,
            agent=ctx.agent,
            purpose=ctx.purpose,
            model=model,
            params={k: v for k, v in params.items() if k != "response_format"}
            | ({"response_format": response_format.get("type")} if response_format else {}),
            messages=messages,
            messages_hash=messages_hash(messages),
            attempt=attempt,
        )
        key = cache_key(model, messages, key_params)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            record.raw_response = cached.get("text")
            record.tool_calls = cached.get("tool_calls")
            record.prompt_tokens = cached.get("prompt_tokens")
            record.completion_tokens = cached.get("completion_tokens")
            record.original_latency_s = cached.get("latency_s")
            record.cost_usd = 0.0
            record.cache_hit = True
            return CompletionResult(record.raw_response, record.tool_calls, record)

        async with self._slots:
            t0 = time.perf_counter()
            response, error = await self._call_with_retries(model, messages, params, litellm_kwargs)
            record.latency_s = time.perf_counter() - t0
        if error is not None:
            record.error = error
            return CompletionResult(None, None, record, error=error)
        text, tool_calls = _message_parts(response)
        usage = getattr(response, "usage", None)
        record.raw_response = text
        record.tool_calls = tool_calls
        record.prompt_tokens = getattr(usage, "prompt_tokens", None)
        record.completion_tokens = getattr(usage, "completion_tokens", None)
        record.cost_usd = _cost(response)
        if self.cache is not None:
            self.cache.put(
                key,
                model,
                {
                    "text": text,
                    "tool_calls": tool_calls,
                    "prompt_tokens": record.prompt_tokens,
                    "completion_tokens": record.completion_tokens,
                    "latency_s": record.latency_s,
                },
            )
        return CompletionResult(text, tool_calls, record)

    # -- internals ----------------------------------------------------------------
    async def _call_with_retries(self, model, messages, params, extra):
        """One completion with rate limiting and transport retries: see
        :func:`scarce_lab.llm.transport.call_with_retries`."""
        return await call_with_retries(
            self.settings, self.rate_limiter, model, messages, params, extra
        )

    @staticmethod
    def _validate(res: CompletionResult, schema: type[T]) -> tuple[T | None, str | None]:
        if res.error is not None:
            res.record.error = res.error
            return None, res.error
        decision, error = parse_decision(res.text, schema)
        if decision is not None:
            res.record.parsed = decision.model_dump(mode="json")
        else:
            res.record.error = error
        return decision, error


def _message_parts(response) -> tuple[str | None, list[dict[str, Any]] | None]:
    msg = response.choices[0].message
    text = scrub_surrogates(getattr(msg, "content", None))
    tool_calls = None
    raw_calls = getattr(msg, "tool_calls", None)
    if raw_calls:
        tool_calls = [
            {
                "id": getattr(tc, "id", None),
                "name": tc.function.name,
                "arguments": tc.function.arguments,
            }
            for tc in raw_calls
        ]
        tool_calls = scrub_surrogates(tool_calls)
    return text, tool_calls


def _cost(response) -> float | None:
    """US dollars for one response where litellm knows the price, else ``None``.

    litellm prices every response during the call and keeps the result in
    ``_hidden_params["response_cost"]`` (``None`` when the model has no price); it is
    only recomputed when that key is missing. Recomputing for a model without a price
    cost ~1 ms of CPU per call for nothing (issue 14, section 2).
    """
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:
        cost = hidden["response_cost"]
        return None if cost is None else float(cost)
    litellm = load_litellm()
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - unknown price is not an error
        return None
