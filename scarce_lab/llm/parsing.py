"""Turn a model's raw text into a validated pydantic decision, or an error string."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..data.schema import scrub_surrogates

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict:
    """Find the first JSON object in ``text`` (bare, or inside a ```json fence).

    Lone UTF-16 surrogates in decoded strings (``"\\ud800"``) become U+FFFD, so the
    result can always be written as UTF-8.

    Raises:
        ValueError: no JSON object could be decoded (also for nesting too deep to
            decode); the message quotes the start of the text.
    """
    if text is None:
        raise ValueError("empty response (None)")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder(strict=False)
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            try:
                obj, _ = decoder.raw_decode(cand, start)
            except json.JSONDecodeError:
                start = cand.find("{", start + 1)
                continue
            except RecursionError:  # nesting deeper than the interpreter's stack
                break
            if isinstance(obj, dict):
                return scrub_surrogates(obj)
            start = cand.find("{", start + 1)
    snippet = text.strip().replace("\n", " ")[:80]
    raise ValueError(f"no JSON object in the response (starts: {snippet!r})")


def parse_decision(text: str | None, schema: type[T]) -> tuple[T | None, str | None]:
    """Parse ``text`` into ``schema``; return ``(decision, None)`` or ``(None, error)``.

    The error string names the offending field and value (pydantic's message), so it can
    be recorded as a protocol violation and shown to the model in the repair prompt.
    """
    try:
        obj = extract_json_object(text or "")
    except ValueError as exc:
        return None, str(exc)
    try:
        return schema.model_validate(obj), None
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            parts.append(f"field {loc!r}: {err['msg']} (got {err.get('input')!r})")
        return None, "; ".join(parts)
