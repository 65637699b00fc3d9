"""What a provider tells about its limits: retry hints and announced rate limits.

- :func:`retry_hint_s`: the wait a failed call was asked to respect, from the
  ``retry-after-ms`` / ``retry-after`` headers (seconds or an HTTP date, RFC 9110
  section 10.2.3) or from the error text ("Please try again in 1m30.5s", "Please retry
  after 20 seconds", ``"retryDelay": "37s"``);
- :func:`limits_from_headers` / :func:`limits_from_text`: per-minute request and token
  limits announced by OpenAI-style ``x-ratelimit-limit-*`` and Anthropic
  ``anthropic-ratelimit-*-limit`` headers, or stated in a 429's text.

Pure functions, no I/O; used by the client's retries and by
:mod:`scarce_lab.llm.ratelimit`.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple


class AnnouncedLimits(NamedTuple):
    """Limits a provider announced. Units: requests per minute, tokens per minute;
    ``None`` when not announced."""

    rpm: int | None
    tpm: int | None


_UNIT_S = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hours": 3600.0,
}  # fmt: skip
_PART = r"(\d+(?:\.\d+)?)\s*(ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hr|hours?)(?![a-z])"
#: "try again in 1m30.5s", "Please retry after 20 seconds", "retry in 7s", "retryDelay": "37s"
_HINT_RE = re.compile(
    r"(?:try\s+again|retry|wait)\s*(?:in|after)?\s*:?\s*((?:" + _PART + r"\s*)+)"
    r"|\"?retry_?delay\"?\s*[:=]\s*\"?((?:" + _PART + r"\s*)+)",
    re.IGNORECASE,
)
_PART_RE = re.compile(_PART, re.IGNORECASE)


def parse_duration_text(text: str) -> float | None:
    """Seconds asked for by a retry hint in free text, or ``None`` when there is none.

    Understands the forms providers use: "Please try again in 1m30.5s" and "in 6ms"
    (OpenAI), "Please retry after 20 seconds" (Azure), ``"retryDelay": "37s"``
    (Gemini). The largest hint in the text wins.
    """
    best: float | None = None
    for match in _HINT_RE.finditer(text or ""):
        chunk = match.group(1) or match.group(4) or ""
        total = sum(float(n) * _UNIT_S[u.lower()] for n, u in _PART_RE.findall(chunk))
        if best is None or total > best:
            best = total
    return best


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
        if value is None:
            value = headers.get(f"llm_provider-{name}")  # litellm's prefix in additional_headers
    except Exception:  # noqa: BLE001 - not a mapping: no header
        return None
    return None if value is None else str(value)


def retry_after_from_headers(
    headers: Mapping[str, str] | Any, now: float | None = None
) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    Args:
        headers: a case-insensitive mapping (httpx.Headers) or a plain dict; litellm's
            ``llm_provider-`` prefixed names are read too.
        now: Unix time for HTTP dates (default: the current time).
    """
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - (time.time() if now is None else now))


def exception_headers(exc: BaseException) -> list[Any]:
    """Every header mapping an exception carries (its HTTP response, litellm's copies)."""
    out = []
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        out.append(response.headers)
    for attr in ("litellm_response_headers", "headers"):
        h = getattr(exc, attr, None)
        if h:
            out.append(h)
    return out


def retry_hint_s(exc: BaseException) -> float | None:
    """The wait the provider asked for in a failed call, in seconds, or ``None``.

    Headers first (``retry-after-ms``, ``retry-after``), then the error text ("try
    again in N s"). The largest value found wins: waiting longer than asked is safe,
    shorter is not.
    """
    hints = [
        h for h in (retry_after_from_headers(x) for x in exception_headers(exc)) if h is not None
    ]
    text = parse_duration_text(str(exc))
    if text is not None:
        hints.append(text)
    return max(hints) if hints else None


_LIMIT_TEXT_RE = re.compile(
    r"(tokens|requests)\s+per\s+min(?:ute)?\s*(?:\((?:TPM|RPM)\))?\s*:?\s*limit\s*:?\s*(\d+)",
    re.IGNORECASE,
)


def limits_from_text(text: str) -> AnnouncedLimits | None:
    """Limits stated in a 429's text, e.g. OpenAI's "Rate limit reached for gpt-4o in
    organization org-x on tokens per min (TPM): Limit 30000, Used ..."."""
    rpm = tpm = None
    for kind, value in _LIMIT_TEXT_RE.findall(text or ""):
        if kind.lower() == "tokens":
            tpm = int(value)
        else:
            rpm = int(value)
    return AnnouncedLimits(rpm, tpm) if (rpm or tpm) else None


def limits_from_headers(headers: Any) -> AnnouncedLimits | None:
    """Per-minute limits announced in response headers (OpenAI ``x-ratelimit-limit-*``,
    Anthropic ``anthropic-ratelimit-*-limit``), or ``None``."""

    def _int(*names: str) -> int | None:
        for name in names:
            raw = _header(headers, name)
            if raw is not None:
                try:
                    value = int(float(raw))
                except ValueError:
                    continue
                if value > 0:
                    return value
        return None

    rpm = _int("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit")
    tpm = _int("x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit")
    return AnnouncedLimits(rpm, tpm) if (rpm or tpm) else None
