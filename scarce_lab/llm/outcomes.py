"""What model calls gave back: each call's outcome, the result types of
:meth:`LLMClient.acomplete` (:class:`CompletionResult`) and :meth:`LLMClient.adecide`
(:class:`DecisionOutcome`), and the error a missing decision raises.

Outcomes (``LLMCallRecord.outcome``):

- ``ok``: a text answer (for a decision: it validated, ``decision_source="text"``);
- ``tool_call``: the answer came as a tool call (for a decision: its arguments
  validated and were used, ``decision_source="tool_call"``);
- ``invalid``: an answer that does not validate (a repair attempt may follow, then the
  caller's documented fallback);
- ``ambiguous``: several different valid JSON objects, none final (see
  :mod:`scarce_lab.llm.parsing`); handled like ``invalid``;
- ``truncated``: the provider stopped at ``max_tokens`` (``finish_reason`` ``length``);
  never parsed into a value, even when the cut text holds a valid object;
- ``refusal``: the provider says the model refused (a ``refusal`` field in the
  message, or ``finish_reason`` ``content_filter``/``refusal``); never repaired;
- ``empty``: no choice at all (``choices: []``) or a blank message without tool calls;
- ``transport_error``: no answer after the transport retries (rate limit, server
  error, timeout, connection, authentication...);
- ``context_overflow``: the prompt plus the requested output tokens do not fit the
  model's context window, found before sending (see :mod:`scarce_lab.llm.context`);
- ``request_refused``: the server refused the request's form (e.g. a
  ``response_format`` it does not take; :mod:`scarce_lab.llm.structured`); not retried;
- ``cost_cap``: not sent, its worst case would pass a dollar cap
  (:mod:`scarce_lab.llm.costs`);
- ``text_for_tool``: a text answer to a request that required a tool call (never
  turned into an action);
- ``model_mismatch``: the response names another model than the one asked for
  (``response.model``, recorded as ``served_model``; the rule is :func:`same_model`);
  never parsed into a value (an answer of another model is no decision of this one),
  priced at the higher of the two models' prices, and kept at its reservation when a
  cap is set and either price is unknown (:mod:`scarce_lab.llm.client`).
- ``too_large``: the response passed the transport's byte limit
  (``LIMITS.response_bytes``, :mod:`scarce_lab.data.limits`); it was not read further and
  is never parsed (the fallback applies, as for any unusable answer).

A decision whose calls all ended in ``transport_error``, ``context_overflow``,
``request_refused``, ``cost_cap`` or ``model_mismatch`` is **missing**: the client returns no value, and agents raise
:class:`MissingDecisionError` so the run stops with a clear error and can be resumed.
A fallback is applied only after the model answered (invalid, ambiguous, refused,
truncated or empty answers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..data.schema import scrub_surrogates

T = TypeVar("T")

OK = "ok"
TOOL_CALL = "tool_call"
INVALID = "invalid"
AMBIGUOUS = "ambiguous"
TRUNCATED = "truncated"
REFUSAL = "refusal"
EMPTY = "empty"
TRANSPORT_ERROR = "transport_error"
CONTEXT_OVERFLOW = "context_overflow"
REQUEST_REFUSED = "request_refused"
COST_CAP = "cost_cap"
TEXT_FOR_TOOL = "text_for_tool"
MODEL_MISMATCH = "model_mismatch"
TOO_LARGE = "too_large"

#: Every outcome a call record may carry.
OUTCOMES = (OK, TOOL_CALL, INVALID, AMBIGUOUS, TRUNCATED, REFUSAL, EMPTY, TEXT_FOR_TOOL, TRANSPORT_ERROR,
            CONTEXT_OVERFLOW, REQUEST_REFUSED, COST_CAP, MODEL_MISMATCH, TOO_LARGE)
#: Outcomes whose answer is used as the decision.
USABLE = frozenset({OK, TOOL_CALL})
#: Outcomes with no answer from the requested model at all (the decision is missing).
NO_ANSWER = frozenset({TRANSPORT_ERROR, CONTEXT_OVERFLOW, REQUEST_REFUSED, COST_CAP, MODEL_MISMATCH})

#: Providers whose model strings name a deployment, not a model (Azure): their served
#: model cannot be compared with the requested name.
DEPLOYMENT_PROVIDERS = frozenset({"azure", "azure_ai"})
#: Version suffixes that keep a model in its family: a date (``-2024-08-06``,
#: ``-20241022``, ``@20240229``), a 3- or 4-digit snapshot (``-0613``, ``-002``), ``-latest``,
#: a ``-v1:0`` revision (Bedrock) or a ``:latest`` tag.
_VERSION_SUFFIX = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4}|latest|v\d+(?::\d+)?)|:latest)$")


def model_family(name: str) -> str:
    """``name`` without provider prefix (anything up to the last ``/``), case and version
    suffixes (:data:`_VERSION_SUFFIX`, repeatedly): ``openai/gpt-4o-2024-08-06`` and
    ``gpt-4o`` give ``gpt-4o``; ``gpt-4o-mini`` stays ``gpt-4o-mini``."""
    out = name.rsplit("/", 1)[-1].strip().lower()
    while (m := _VERSION_SUFFIX.search(out)) and m.start() > 0:
        out = out[: m.start()]
    return out


def same_model(requested: str, served: str | None) -> bool:
    """True when ``served`` (the response's ``model``) may answer for ``requested`` (the
    model string asked for): no served name given, a deployment provider
    (:data:`DEPLOYMENT_PROVIDERS`), or the same :func:`model_family`. So
    ``gpt-4o-2024-08-06`` answers for ``openai/gpt-4o`` and ``claude-3-5-sonnet-20241022``
    for ``anthropic/claude-3-5-sonnet-latest``; ``gpt-4o-mini`` does not answer for
    ``gpt-4o``, nor ``llama-3-8b`` for ``llama-3-70b``."""
    if not served or requested.split("/", 1)[0] in DEPLOYMENT_PROVIDERS:
        return True
    return model_family(served) == model_family(requested)

#: ``finish_reason`` values meaning "stopped at max_tokens".
LENGTH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
#: ``finish_reason`` values meaning "the provider refused or filtered the answer".
REFUSAL_REASONS = frozenset({"content_filter", "refusal", "safety"})


class MissingDecisionError(RuntimeError):
    """A decision has no value: every model call failed before an answer came back
    (transport failure after retries, or a prompt too long for the context window).

    Never replaced by a fallback; the run stops (and can be resumed). Attributes:
    ``calls`` (the LLMCallRecords to record), ``outcome`` (``transport_error`` or
    ``context_overflow``), ``agent``, ``round``, ``model``.
    """

    def __init__(self, message: str, calls: list[Any], outcome: str,
                 agent: str | None = None, round: int | None = None, model: str | None = None):
        super().__init__(message)
        self.calls = list(calls)
        self.outcome = outcome
        self.agent = agent
        self.round = round
        self.model = model

    @classmethod
    def from_calls(cls, calls: list[Any]) -> MissingDecisionError:
        """Build the error from a decision's call records (the last one names it)."""
        if not calls:
            return cls("missing decision (no call records)", [], TRANSPORT_ERROR)
        last = calls[-1]
        where = f"agent {last.agent!r}, round {last.round}, purpose {last.purpose!r}"
        msg = (
            f"missing decision from model {last.model!r} ({where}): {last.outcome}: "
            f"{(last.error or '').strip()[:500]}. No fallback is played for a missing "
            f"decision; the run stops here and can be resumed."
        )
        return cls(msg, calls, last.outcome, last.agent, last.round, last.model)


@dataclass
class ResponseParts:
    """The parts of a provider response the client uses (any response shape)."""

    text: str | None
    tool_calls: list[dict[str, Any]] | None
    finish_reason: str | None
    refusal: str | None
    n_choices: int


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a content list."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else _get(p, "text") for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def _arguments(args: Any) -> Any:
    if args is None or isinstance(args, str | dict):
        return args
    return str(args)


def response_parts(response: Any) -> ResponseParts:
    """Read text, tool calls, ``finish_reason`` and refusal of the first choice.

    Never raises: a response without choices (``choices: []``, or none at all) has
    ``n_choices == 0``; odd shapes (dicts or objects, content lists) are read as far
    as they go. Lone surrogates are replaced (U+FFFD).
    """
    choices = _get(response, "choices") or []
    try:
        n = len(choices)
    except TypeError:
        n = 0
    if n == 0:
        return ResponseParts(None, None, None, None, 0)
    first = choices[0]
    msg = _get(first, "message") or {}
    finish = _get(first, "finish_reason")
    refusal = _get(msg, "refusal")
    tool_calls = None
    raw_calls = _get(msg, "tool_calls")
    if raw_calls:
        tool_calls = []
        for tc in raw_calls:
            fn = _get(tc, "function") or {}
            tool_calls.append({"id": _get(tc, "id"), "name": _get(fn, "name"), "arguments": _arguments(_get(fn, "arguments"))})
    return ResponseParts(
        text=scrub_surrogates(_text(_get(msg, "content"))),
        tool_calls=scrub_surrogates(tool_calls),
        finish_reason=str(finish) if finish is not None else None,
        refusal=scrub_surrogates(str(refusal)) if refusal else None,
        n_choices=n,
    )


def classify(parts: ResponseParts) -> tuple[str, str | None]:
    """``(outcome, error)`` of a call that came back, before any schema is applied:
    ``empty``, ``refusal``, ``truncated``, ``tool_call`` or ``ok`` (checked in this
    order). ``error`` describes the first four."""
    if parts.n_choices == 0:
        return EMPTY, "empty response: the provider returned no choices"
    if parts.refusal or (parts.finish_reason or "").lower() in REFUSAL_REASONS:
        why = parts.refusal or f"finish_reason {parts.finish_reason!r}"
        return REFUSAL, f"refusal: {why.strip()[:300]}"
    if (parts.finish_reason or "").lower() in LENGTH_REASONS:
        return TRUNCATED, f"truncated: the answer was cut at max_tokens (finish_reason {parts.finish_reason!r})"
    if parts.tool_calls:
        return TOOL_CALL, None
    if parts.text is None or not parts.text.strip():
        return EMPTY, "empty response: blank message without tool calls"
    return OK, None


@dataclass
class DecisionOutcome(Generic[T]):
    """Result of :meth:`LLMClient.adecide`.

    ``decision`` is the validated answer, the fallback when ``fallback_used``, or
    ``None`` when ``missing`` (no call got an answer; never a fallback). ``valid`` is
    true when a model answer (first or second call) validated; ``repaired`` when it
    came from the second call; ``violation`` holds the first error, if any; ``calls``
    has one record per attempt. ``outcome`` is the outcome of the call whose answer
    was used, else of the last answer that came back (e.g. ``invalid``,
    ``refusal``, ``truncated``), else of the last call (``transport_error``,
    ``context_overflow``); ``source`` is ``text``, ``tool_call``, ``fallback``,
    ``human`` (a person answered or timed out: outcome ``human`` or ``human_timeout``,
    :mod:`scarce_lab.llm.human`) or ``None`` (missing). ``latency_s``: the seconds a
    person took (``None`` for models, whose calls carry their own latency).
    """

    decision: T | None
    valid: bool
    repaired: bool
    fallback_used: bool
    violation: str | None
    calls: list[Any] = field(default_factory=list)
    outcome: str = OK
    missing: bool = False
    source: str | None = "text"
    latency_s: float | None = None


@dataclass
class CompletionResult:
    """Result of :meth:`LLMClient.acomplete`: text, tool calls and the call record.

    ``error`` is set for ``transport_error`` and ``context_overflow`` (no answer);
    ``record.outcome`` says what came back; ``finish_reason`` is the provider's.
    """

    text: str | None
    tool_calls: list[dict[str, Any]] | None
    record: Any
    error: str | None = None

    @property
    def outcome(self) -> str | None:
        """The call's outcome (see :mod:`scarce_lab.llm.outcomes`)."""
        return self.record.outcome

    @property
    def finish_reason(self) -> str | None:
        """The provider's ``finish_reason`` of the first choice."""
        return self.record.finish_reason
