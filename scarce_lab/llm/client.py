"""One LLM client over litellm for every agent.

``LLMClient.adecide`` asks a model for a decision that must validate against a
pydantic model:

1. the request carries the model's JSON schema in the form ``llm.structured_output``
   names (``json_schema``, ``json_object``, ``tools`` or ``prompt``; ``auto`` adapts
   per server, :mod:`scarce_lab.llm.structured`), and each call records its form;
2. the answer gets an outcome (:mod:`scarce_lab.llm.outcomes`) and, when it is text
   or a tool call, is parsed and validated (:mod:`scarce_lab.llm.parsing`, under the
   coercion policy of :mod:`scarce_lab.llm.decisions`);
3. at most **one second call** follows an unusable answer:

   - ``invalid`` or ``ambiguous``: a **repair** (the raw answer and the validation
     error are shown to the model), when ``settings.repair``;
   - ``truncated`` (``finish_reason`` ``length``): the **original** prompt is resent
     (never the partial text) with ``max_tokens`` times
     :data:`TRUNCATION_RETRY_FACTOR`, capped at :data:`TRUNCATION_RETRY_CAP` and at the
     room the context window leaves; no resend when that is not more than before;
   - ``empty``: the original prompt is resent once;
   - ``refusal``: nothing (a refusal is the model's answer; it is not repaired);

4. if no usable answer came, the caller's documented **fallback** decision applies,
   or the decision is **missing** when no call got an answer (the rule, in
   :mod:`scarce_lab.llm.outcomes`: agents raise its ``MissingDecisionError``).

Every attempt is returned as an :class:`~scarce_lab.data.schema.LLMCallRecord` (raw
text, outcome, ``finish_reason``, parsed decision or error, tokens, latency, cost,
cache hit), so a malformed answer is data, never a crash. Transport errors (rate
limits, server errors, timeouts, connection errors) are retried with backoff before a
call is given up as ``transport_error``. Before a call is sent, the prompt's tokens are
counted against the context window (:mod:`scarce_lab.llm.context`).

The recorded ``params`` are what litellm sent after its own mapping, and the response
cache key holds every mapped parameter that can change the answer
(:mod:`scarce_lab.llm.params`, :func:`scarce_lab.llm.cache.answer_params`). Dollar caps
(``llm.max_cost_usd``, ``llm.sweep_max_cost_usd``) are checked before each call
(:mod:`scarce_lab.llm.costs`).

API keys are read by litellm from the environment and never recorded.

Size: one module holds the decision protocol (structured form, repair, resend,
fallback, missing decision) and the single call path every agent goes through (mapping,
cache, context check, dollar caps, transport, record); the rules they apply live in
:mod:`.params`, :mod:`.structured`, :mod:`.costs`, :mod:`.outcomes` and :mod:`.parsing`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._sync import run_sync as run_sync  # re-exported: callers import it here
from ..data import limits as _limits
from ..data.schema import LLMCallRecord, messages_hash
from . import outcomes as oc
from .cache import ResponseCache, answer_params, cache_key
from .concurrency import ConcurrencyLimit
from .context import ContextWindowError, check_context, output_room
from .costs import (
    ModelPrice,
    call_cost,
    check_usage,
    counted_prompt,
    is_local_endpoint,
    price_of,
    prompt_range,
    reserve_call,
    settle_call,
    worst_case_usd,
)
from .models import is_embedded, scripted_policy
from .outcomes import CompletionResult, DecisionOutcome, ResponseParts, classify, response_parts
from .params import WireCapture, planned_params, wire_params
from .parsing import parse_reply
from .ratelimit import RateLimit, RateLimiter, shared_limiter
from .scope import call_id_for, current_scope
from .structured import (
    MODE_MEMORY,
    REFUSED_PREFIX,
    StructuredOutput,
    prompt_instruction,
    request_for,
)
from .transport import TOO_LARGE_PREFIX, call_with_retries
from .transport import load_litellm as load_litellm  # re-exported: callers import it here

T = TypeVar("T", bound=BaseModel)

#: A truncated answer is resent with ``max_tokens`` times this factor...
TRUNCATION_RETRY_FACTOR = 2
#: ...but never more than this many tokens (nor more than the context window leaves).
TRUNCATION_RETRY_CAP = 4096

#: Extra litellm arguments that litellm maps per provider like the client's own.
_MAPPED_EXTRA = frozenset({"top_p", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "n",
                           "logprobs", "top_logprobs", "parallel_tool_calls"})

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
    structured_output: StructuredOutput = Field(
        "auto", description="how a decision's JSON schema is sent: auto (json_schema, then on a refusal that names "
        "it the next form the server takes), json_schema, json_object (llama.cpp's server), tools, or prompt "
        "(no constraint; answers validated strictly)")
    repeat_penalty: float | None = Field(
        1.0, gt=0, description="sent to the embedded model and to servers at an api_base (llama.cpp's server "
        "applies 1.1 unless told); not sent to hosted APIs, which take none")
    allow_ignored_settings: bool = Field(
        False, description="run although the provider ignores a condition setting (e.g. temperature for "
        "o3-mini): the condition then records it as 'not sent'")
    max_cost_usd: float | None = Field(
        None, gt=0, description="dollar cap per run: a call whose worst case would pass it is not sent and the run "
        "stops as a missing decision (resumable)")
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="USD per million tokens by model string: {input_per_mtok, output_per_mtok}"
        " (overrides litellm's list; needed for a capped model litellm does not price)")
    sweep_max_cost_usd: float | None = Field(
        None, gt=0, description="dollar cap of the whole sweep (set by --max-cost-usd), shared through spend_ledger")
    spend_ledger: Path | None = Field(
        None, description="SQLite file of the sweep's spending (shared by its processes and Ray tasks)")


@dataclass(frozen=True)
class CallContext:
    """Where a call belongs in a run (copied into its LLMCallRecord). Fields left
    ``None`` are taken from the bound :func:`~scarce_lab.llm.scope.run_scope` (see
    :func:`effective_context`), so agents need not pass the run id."""

    agent: str | None = None
    round: int | None = None
    purpose: str = ""
    run_id: str | None = None


def effective_context(context: CallContext | None) -> CallContext:
    """``context`` with its unset ``run_id``, ``agent`` and ``round`` filled from the
    current :class:`~scarce_lab.llm.scope.RunScope` (explicit values win)."""
    ctx = context or CallContext()
    scope = current_scope()
    return replace(ctx, run_id=ctx.run_id if ctx.run_id is not None else scope.run_id,
                   agent=ctx.agent if ctx.agent is not None else scope.agent,
                   round=ctx.round if ctx.round is not None else scope.round)


@functools.lru_cache(maxsize=1024)
def _schema_json(schema: type[BaseModel]) -> str:
    """A decision schema's JSON text, generated once per class (pydantic takes ~1 ms per
    generation); ``json.loads`` of it gives each request its own dict."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


class LLMClient:
    """litellm wrapper: structured decisions, repair, fallback, retries, cache, accounting.

    One client can serve many concurrent games: calls are bounded by
    ``settings.max_concurrency`` (one bound for the client, whatever loop or thread the
    calls come from) and paced by a :class:`~scarce_lab.llm.ratelimit.RateLimiter`
    (``rate_limiter``, default the process-wide shared one, which takes
    ``settings.rate_limits``).
    """

    def decide(self, **kwargs: Any) -> Any:
        """Synchronous :meth:`adecide` (works inside Jupyter's running loop too)."""
        return run_sync(self.adecide(**kwargs))

    def __init__(self, settings: LLMSettings | None = None, cache: ResponseCache | None = None,
                 rate_limiter: RateLimiter | None = None):
        self.settings = settings or LLMSettings()
        self.rate_limiter = rate_limiter if rate_limiter is not None else shared_limiter()
        for name, spec in self.settings.rate_limits.items():
            self.rate_limiter.configure(name, spec)
        self._slots = ConcurrencyLimit(self.settings.max_concurrency)
        self.cache = cache
        if cache is None and self.settings.cache:
            self.cache = ResponseCache(self.settings.cache_dir)

    # -- public API ----------------------------------------------------------------
    def structured_mode(self, model: str, api_base: str | None = None) -> str:
        """The form a decision's schema is sent in to ``model`` at ``api_base``
        (``llm.structured_output``; under ``auto`` what :data:`MODE_MEMORY` learnt for
        that server, ``json_schema`` at first; always ``json_schema`` for the
        embedded model, whose provider turns it into a grammar)."""
        if is_embedded(model):
            return "json_schema"
        mode = self.settings.structured_output
        if mode != "auto":
            return mode
        return MODE_MEMORY.current(api_base or self.settings.api_base, model)

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
        """Ask ``model`` for a decision validating against ``schema`` (see the module
        docstring for outcomes, the second call, fallback and missing decisions).

        Args:
            model: litellm model string or ``embedded/...``; ``scripted/...`` is refused.
            messages: OpenAI-style chat messages.
            schema: pydantic model of the decision (validated strictly, see
                :mod:`scarce_lab.llm.decisions`).
            fallback: decision applied when the model answered but no answer is
                usable (the caller documents which one); never for a missing decision.
            seed: per-call seed (part of the cache key; passed to the backend); the
                second call uses ``seed + 1``.
            context: run/agent/round/purpose for the records.
            max_tokens: output tokens of the first call (``settings.max_tokens`` if
                ``None``).
            **litellm_kwargs: passed through (``mock_response`` in tests, ``top_p``,
                ``stop``, ``api_key``...); all but credentials and timeouts are part of
                the cache key and recorded.

        Raises:
            ValueError: ``model`` is a ``scripted/`` policy name.
        """
        if scripted_policy(model) is not None:
            raise ValueError(f"model {model!r} is a scripted policy; agents handle it without the client")
        ctx = effective_context(context)
        base_tokens = max_tokens or self.settings.max_tokens
        ids: dict[str, str] = {}  # the decision's id: its first call's id (deterministic, llm/scope.py)

        api_base = litellm_kwargs.get("api_base") or self.settings.api_base
        refused: list[Any] = []

        async def call(msgs, call_seed, tokens, attempt):
            # llm.structured_output (scarce_lab.llm.structured): auto moves an (api base,
            # model) to the next form once a server refuses the current one by name
            while True:
                mode = self.structured_mode(model, api_base)
                form = request_for(mode, schema.__name__, json.loads(_schema_json(schema)))
                sent = [*msgs, prompt_instruction(_schema_json(schema))] if mode == "prompt" else msgs
                res = await self.acomplete(
                    model, sent, seed=call_seed, context=ctx, max_tokens=tokens, temperature=temperature,
                    reasoning_effort=reasoning_effort, attempt=attempt, decision_id=ids.get("decision"),
                    structured_output=mode, **form, **litellm_kwargs,
                )
                ids.setdefault("decision", res.record.call_id)
                if (res.record.outcome != oc.REQUEST_REFUSED or self.settings.structured_output != "auto"
                        or MODE_MEMORY.refused(api_base, model, mode) is None):
                    return res
                refused.append(res.record)

        res = await call(messages, seed, base_tokens, 0)
        decision, error = await self._avalidate(res, schema)
        calls = [*refused, res.record]
        refused.clear()
        first_error = error
        second = None
        first_outcome = res.record.outcome
        if decision is None and first_outcome in (oc.INVALID, oc.AMBIGUOUS, oc.TEXT_FOR_TOOL) and self.settings.repair:
            repair = _REPAIR_TEMPLATE.format(error=error, schema=_schema_json(schema))
            second = ([*messages, {"role": "assistant", "content": res.text or ""}, {"role": "user", "content": repair}],
                      base_tokens)
        elif decision is None and first_outcome == oc.EMPTY:
            second = (messages, base_tokens)
        elif decision is None and first_outcome == oc.TRUNCATED:
            tokens = min(base_tokens * TRUNCATION_RETRY_FACTOR, TRUNCATION_RETRY_CAP)
            room = output_room(model, messages, _litellm_for(model))
            if room is not None:
                tokens = min(tokens, room)
            if tokens > base_tokens:
                second = (messages, tokens)
        if second is not None:
            res2 = await call(second[0], seed + 1, second[1], 1)
            decision, _ = await self._avalidate(res2, schema)
            calls.extend([*refused, res2.record])
        used = calls[-1] if decision is not None else None
        answered = [c for c in calls if c.outcome not in oc.NO_ANSWER]
        missing = decision is None and not answered
        fallback_used = decision is None and not missing
        if fallback_used:
            decision = fallback
            calls[-1].fallback_used = True
        if missing:
            calls[-1].missing = True
        if used is not None:
            outcome, source = used.outcome, used.decision_source
        elif answered:
            outcome, source = answered[-1].outcome, "fallback"
        else:
            outcome, source = calls[-1].outcome, None
        return DecisionOutcome(decision=decision, valid=used is not None, repaired=used is not None and len(calls) > 1,
                               fallback_used=fallback_used, violation=first_error, calls=calls,
                               outcome=outcome or oc.INVALID, missing=missing, source=source)

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
        decision_id: str | None = None,
        structured_output: str | None = None,
        **litellm_kwargs: Any,
    ) -> CompletionResult:
        """One chat completion (cached, retried, bounded, capped). Never raises for
        transport or provider errors, an empty ``choices`` list, a prompt too long or
        a dollar cap: each becomes the record's ``outcome`` (``error`` is set when no
        answer came back).

        The record's ``params`` are the parameters litellm sent after its own mapping
        (:mod:`scarce_lab.llm.params`: the request body litellm built where it built
        one, else its mapping of the call), plus ``api_base``; settings it dropped
        are in ``dropped_params``. The cache is keyed on the mapped parameters.
        With ``tools``, ``tool_choice`` defaults to ``"required"`` (``"auto"`` at an
        ``api_base``: llama.cpp's server refuses ``"required"``); a text answer to a
        tool request is the outcome ``text_for_tool``, never a usable answer.

        Units: ``max_tokens`` tokens; latency in the record in seconds; cost in USD.
        ``decision_id`` groups the calls of one decision (the call's own id if
        ``None``); ``structured_output`` is the mode recorded for the call. The call's
        ``call_id`` is deterministic (:func:`scarce_lab.llm.scope.call_id_for`: run,
        agent, round, purpose, seed, prompt, attempt), so a resumed run and a cached
        answer carry the id the first run gave; run, agent and round not in
        ``context`` come from the bound run scope.
        """
        ctx = effective_context(context)
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
        api_base = litellm_kwargs.pop("api_base", None) or s.api_base
        if tools:
            params["tools"] = tools
            # "required" where the provider takes it; llama.cpp's server takes only "auto"
            # or a named function (HTTP 500 with an empty message for "required")
            params["tool_choice"] = tool_choice if tool_choice is not None else ("auto" if api_base else "required")
        embedded = is_embedded(model)
        if s.repeat_penalty is not None and (embedded or api_base):
            # a server's own default (llama.cpp: 1.1) would change the answers silently
            eb = dict(litellm_kwargs.pop("extra_body", None) or {})
            eb.setdefault("repeat_penalty", s.repeat_penalty)
            litellm_kwargs["extra_body"] = eb
        mapped = {k: v for k, v in litellm_kwargs.items() if k in _MAPPED_EXTRA}
        sent, dropped = planned_params(model, {**params, **mapped})
        extra = {k: v for k, v in litellm_kwargs.items() if k not in _MAPPED_EXTRA}
        if api_base:
            sent["api_base"] = api_base
        key_params = answer_params(sent, extra)
        mhash = messages_hash(messages)
        call_id = call_id_for(run_id=ctx.run_id, agent=ctx.agent, round=ctx.round, purpose=ctx.purpose, seed=seed,
                              messages_hash=mhash, attempt=attempt, model=model, params=key_params)
        record = LLMCallRecord(run_id=ctx.run_id, call_id=call_id, round=ctx.round, agent=ctx.agent,
                               purpose=ctx.purpose, model=model, params=key_params,
                               dropped_params=answer_params(dropped, {}) or None, structured_output=structured_output,
                               messages=messages, messages_hash=mhash, attempt=attempt,
                               decision_id=decision_id or call_id)
        form = {"json_schema": "response_format", "json_object": "response_format", "tools": "tools"}.get(
            structured_output or "")
        if form is not None and form in dropped:  # never unconstrained text without the record saying so
            record.outcome = oc.REQUEST_REFUSED
            record.error = (f"{REFUSED_PREFIX}: litellm does not send {form} to {model!r} (the provider takes "
                            f"no {structured_output}); nothing was sent")
            return CompletionResult(None, None, record, error=record.error)
        key = cache_key(model, messages, key_params)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            return _from_cache(record, cached, tools=bool(tools))
        try:
            check_context(model, messages, params["max_tokens"], agent=ctx.agent, round=ctx.round,
                          litellm=_litellm_for(model))
        except ContextWindowError as exc:
            record.outcome, record.error = oc.CONTEXT_OVERFLOW, str(exc)
            return CompletionResult(None, None, record, error=str(exc))
        price = price_of(model, api_base, s.prices)
        # counted for a priced call only (a free call costs 0 whatever it claims): the
        # reservation's worst case and the range a claimed prompt_tokens must lie in
        shape = [v for v in (params.get("tools"), params.get("response_format")) if v]
        counted = counted_prompt(model, messages, shape) if price is not None and any(price) else None
        reservation = reserve_call(s, model, counted or 0, params["max_tokens"], price, ctx.run_id)
        if isinstance(reservation, str):  # the cap refuses the call: nothing is sent
            record.outcome, record.error = oc.COST_CAP, reservation
            return CompletionResult(None, None, record, error=reservation)

        wire = WireCapture()
        call_params = dict(params)
        if api_base:
            call_params["api_base"] = api_base
        # the calls of games furthest behind (lowest round) first (llm/concurrency.py)
        async with self._slots.slot(ctx.round if ctx.round is not None else 0):
            # the same request may have been answered while this one waited for a slot
            # (another game of the sweep asked it first: a cross-play grid's shared prefixes)
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is None:
                t0 = time.perf_counter()
                response, error = await call_with_retries(  # rate limits and transport retries
                    s, self.rate_limiter, model, messages, call_params, {**litellm_kwargs, "logger_fn": wire},
                    sent=sent, pool_size=s.max_concurrency)
                record.latency_s = time.perf_counter() - t0
        if cached is not None:
            settle_call(reservation, 0.0)
            return _from_cache(record, cached, tools=bool(tools))
        if wire.body is not None:
            record.params = answer_params({**wire_params(wire.body), **({"api_base": api_base} if api_base else {})},
                                          {})
        if error is not None:
            record.error = error
            record.outcome = (oc.REQUEST_REFUSED if error.startswith(REFUSED_PREFIX) else
                              oc.TOO_LARGE if error.startswith(TOO_LARGE_PREFIX) else oc.TRANSPORT_ERROR)
            # a refused form is not billed; a transport error (or an answer cut at the byte
            # limit) may have been (a timeout after the server began): its reservation, the
            # worst case, stays counted
            settle_call(reservation, 0.0 if record.outcome == oc.REQUEST_REFUSED else None)
            return CompletionResult(None, None, record, error=error)
        parts = response_parts(response)  # any shape, an empty ``choices`` list included
        # what the server says about itself is a claim (llm/costs.py, llm/outcomes.py)
        claim = check_usage(oc._get(response, "usage"), max_tokens=params["max_tokens"], counted=counted)
        record.prompt_tokens, record.completion_tokens = claim.prompt_tokens, claim.completion_tokens
        record.usage_reported, record.usage_problem = claim.reported, claim.problem
        served = oc._get(response, "model")
        record.served_model = oc.scrub_surrogates(served[:200]) if isinstance(served, str) and served else None
        # a free local server names its own file (llama.cpp): its name moves no money
        free_local = is_local_endpoint(api_base) and price == (0.0, 0.0)
        other = None if embedded or free_local or oc.same_model(model, record.served_model) else record.served_model
        record.cost_usd, floor, why = _charge(response, model, api_base, s.prices, record, price, counted,
                                              params["max_tokens"], other, capped=reservation is not None)
        settle_call(reservation, None if why else record.cost_usd, floor)
        if why:
            record.cost_usd = reservation[2]  # type: ignore[index]  # the worst case stays counted
        if other is not None:  # an answer of another model: recorded, priced, never a decision
            _result(record, parts, tools=bool(tools))
            record.outcome = oc.MODEL_MISMATCH
            record.error = why or f"model mismatch: {model!r} was asked for and {other!r} answered"
            return CompletionResult(None, None, record, error=record.error)
        if self.cache is not None:
            self.cache.put(key, model, {
                "text": parts.text, "tool_calls": parts.tool_calls, "finish_reason": parts.finish_reason,
                "refusal": parts.refusal, "n_choices": parts.n_choices, "prompt_tokens": record.prompt_tokens,
                "completion_tokens": record.completion_tokens, "latency_s": record.latency_s, "params": record.params,
                "served_model": record.served_model})
        return _result(record, parts, tools=bool(tools))

    # -- internals ----------------------------------------------------------------
    @classmethod
    async def _avalidate(cls, res: CompletionResult, schema: type[T]) -> tuple[T | None, str | None]:
        """:meth:`_validate` in a worker thread for an answer over
        ``LIMITS.parse_in_thread_chars`` characters (:mod:`scarce_lab.data.limits`) (parsing is
        linear but a long answer would still hold the event loop), else in the loop."""
        size = len(res.text or "") + sum(len(str(tc.get("arguments") or "")) for tc in res.tool_calls or [])
        if size > _limits.LIMITS.parse_in_thread_chars:
            return await asyncio.to_thread(cls._validate, res, schema)
        return cls._validate(res, schema)

    @staticmethod
    def _validate(res: CompletionResult, schema: type[T]) -> tuple[T | None, str | None]:
        """Turn one call into ``(decision, None)`` or ``(None, error)`` and set its
        record's ``outcome``, ``parsed``, ``error`` and ``decision_source``.

        Only ``ok`` and ``tool_call`` answers are parsed
        (:func:`~scarce_lab.llm.parsing.parse_reply`): a truncated, refused or empty
        answer is never turned into a value.
        """
        rec = res.record
        if rec.outcome not in oc.USABLE:
            return None, rec.error or f"no usable answer ({rec.outcome})"
        pr = parse_reply(res.text, res.tool_calls, schema)
        if pr.decision is None:
            rec.outcome = oc.AMBIGUOUS if pr.status == "ambiguous" else oc.INVALID
            rec.error = pr.error
            return None, pr.error
        rec.parsed = pr.decision.model_dump(mode="json")
        rec.outcome = oc.TOOL_CALL if pr.source == "tool_call" else oc.OK
        rec.decision_source = pr.source
        return pr.decision, None


def _from_cache(record: Any, cached: dict[str, Any], *, tools: bool) -> CompletionResult:
    """A stored answer as this call's result: recorded as a cache hit, at no cost, with
    the parameters, tokens and latency stored with it."""
    parts = ResponseParts(text=cached.get("text"), tool_calls=cached.get("tool_calls"),
                          finish_reason=cached.get("finish_reason"), refusal=cached.get("refusal"),
                          n_choices=cached.get("n_choices", 1))
    if cached.get("params") is not None:
        record.params = cached["params"]
    record.prompt_tokens = cached.get("prompt_tokens")
    record.completion_tokens = cached.get("completion_tokens")
    record.original_latency_s = cached.get("latency_s")
    record.served_model = cached.get("served_model")
    record.cost_usd = 0.0
    record.cache_hit = True
    return _result(record, parts, tools=tools)


def _result(record: LLMCallRecord, parts: ResponseParts, *, tools: bool = False) -> CompletionResult:
    """Fill ``record`` from ``parts`` (raw text, tool calls, finish_reason, outcome).
    A text answer to a request that required a tool call (``tools``) is
    ``text_for_tool``."""
    record.raw_response = parts.text if parts.text is not None else parts.refusal
    record.tool_calls = parts.tool_calls
    record.finish_reason = parts.finish_reason
    record.outcome, error = classify(parts)
    if tools and record.outcome in (oc.OK, oc.EMPTY) and not parts.tool_calls:
        record.outcome = oc.TEXT_FOR_TOOL
        error = "text answer to a request that required a tool call"
    if error is not None:
        record.error = error
    return CompletionResult(parts.text, parts.tool_calls, record)


def _litellm_for(model: str) -> Any:
    """litellm for a hosted model's token counts and window; ``None`` for the embedded
    model, which counts with its own tokenizer (its path never imports litellm)."""
    return None if is_embedded(model) else load_litellm()


def _charge(response, model: str, api_base: str | None, prices: dict[str, Any], record: LLMCallRecord,
            price: tuple[float, float] | None, counted: tuple[int, int] | None, max_tokens: int, served: str | None,
            *, capped: bool) -> tuple[float | None, float, str | None]:
    """``(USD recorded, floor, why)`` of one response (``served``: the other model that
    answered, ``None`` when the requested one did).

    The price is the model's (:func:`scarce_lab.llm.costs.price_of`: ``llm.prices``, a
    free local endpoint, else litellm's price of a model called at its provider), the
    higher of the two models' prices on a mismatch. A claim :func:`check_usage` did not
    accept costs the worst case (:func:`worst_case_usd`); an accepted one its tokens,
    never less than ``floor`` (the bottom of the prompt range at the input price).
    ``why`` is set when a cap is set and the price is unknown (the reservation is kept).

    A model called through an ``api_base`` is priced only from ``llm.prices`` or as a
    local endpoint: litellm would price it by its name, which names no model that
    server runs. Otherwise litellm prices every response during the call and keeps the
    result in ``_hidden_params["response_cost"]``; it is only recomputed when that key is
    missing (recomputing for a model without a price costs ~1 ms of CPU for nothing).
    """
    if served is not None:
        other = price_of(served if "/" in served or "/" not in model else f"{model.split('/', 1)[0]}/{served}",
                         api_base, prices)
        price = None if price is None or other is None else (max(price[0], other[0]), max(price[1], other[1]))
        if price is not None and counted is None and any(price):  # the requested model was free: count now
            counted = counted_prompt(model, record.messages)
    if price is None:
        why = (f"model mismatch: {model!r} was asked for and {served!r} answered, whose price is unknown under a "
               "cost cap: refused, kept at its reservation") if served is not None and capped else None
        return _litellm_cost(response, model, api_base, prices) if served is None and not record.usage_problem \
            else None, 0.0, why
    floor = prompt_range(counted)[0] * price[0] if counted is not None else 0.0
    if record.usage_problem is not None:
        worst = worst_case_usd(price, counted or 0, max_tokens)
        return worst, worst, None
    key = next((k for k in (model, model.split("/", 1)[-1]) if k in prices), None)
    if served is None and key is None and not api_base and not is_embedded(model):
        cost = _litellm_cost(response, model, api_base, prices)
        if cost is None or not math.isfinite(cost) or cost < 0:
            cost = worst_case_usd(price, counted or 0, max_tokens)
        return max(cost, floor), floor, None
    return max(call_cost(price, record.prompt_tokens, record.completion_tokens), floor), floor, None


def _litellm_cost(response, model: str, api_base: str | None, prices: dict[str, Any]) -> float | None:
    """litellm's price of ``response`` (``None`` when it has none)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:
        cost = hidden["response_cost"]
        return None if cost is None else float(cost)
    litellm = load_litellm()
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - unknown price is not an error
        return None
