"""Which JSON object in a model's text is its answer, validated into a decision.

The rule (:func:`parse_answer`):

1. **Reasoning blocks are not answers.** ``<think>...</think>``, ``<thinking>``,
   ``<reasoning>`` and ``<reflection>`` blocks are removed (tags in any case, with
   attributes); a closing tag with no opening one (the opening tag was in the chat
   template) removes everything before it; an opening tag at the start that is never
   closed removes the whole rest (the model ran out of tokens while thinking). Tags
   inside a JSON object's strings are text, not delimiters.
2. **Candidates** are the top-level JSON objects of the remaining text, bare or in
   fences, left to right (an object inside another object is part of it, not a
   candidate; an object that does not decode is skipped).
3. **Only valid candidates count.** Each candidate is validated against the schema
   under the coercion policy of :mod:`scarce_lab.llm.decisions`; an object that does
   not validate (a quoted example, a schema, an earlier invalid draft) never hides a
   later one that does. An object that gives one key twice with different values
   (``{"extraction": 3, "extraction": 30}``) is not valid either: which value is
   meant cannot be known (JSON's last-key-wins would pick one silently).
4. **One answer or ambiguous.** One valid candidate, or several equal ones, is the
   answer. Several *different* valid candidates: the last one wins only if it is
   **final**, i.e. it stands on its own at the end: it starts a line or is the
   content of the last fenced block (directly after an opening fence such as
   ```` ```json ````), and only whitespace or a closing fence follows it. Otherwise the result is an ``ambiguous`` error.
5. No valid candidate: an ``invalid`` error quoting the validation errors of the last
   candidate (the likeliest intended answer; ``ambiguous`` when that candidate repeats
   a key), or ``no_json`` when there is none.

So ``'{"extraction": 12}\\nToo greedy.\\n{"extraction": 9}'`` gives 9, ``'I could
do {..6} or {..9}'`` is ambiguous, and a quoted verdict followed inline by another
(``'... Verdict: {...}'``) is ambiguous.

Lone UTF-16 surrogates in decoded strings (``"\\ud800"``) become U+FFFD, so a decision
can always be written as UTF-8.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from ..data import limits as _limits
from ..data.schema import scrub_surrogates
from .decisions import validate_decision

T = TypeVar("T", bound=BaseModel)

ParseStatus = Literal["ok", "invalid", "ambiguous", "no_json"]

#: Tags whose content is the model's reasoning, never its answer.
REASONING_TAGS = ("think", "thinking", "reasoning", "reflection")

_TAGS = "|".join(REASONING_TAGS)
_BLOCK = re.compile(rf"<({_TAGS})(?:\s[^<>]*)?>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_CLOSE = re.compile(rf"</(?:{_TAGS})\s*>", re.IGNORECASE)
_LEADING_OPEN = re.compile(rf"^\s*<(?:{_TAGS})(?:\s[^<>]*)?>", re.IGNORECASE)
_AFTER_FINAL = re.compile(r"\s*(?:```\s*)?")
_BEFORE_FINAL = re.compile(r"(?:[^\n]*```[\w+-]*)?[ \t]*")


class _Object(dict):
    """A decoded JSON object that remembers its repeated keys (``repeated``: key ->
    every value it was given, in order), which a plain ``dict`` silently drops."""

    repeated: dict[str, list[Any]]


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = _Object()
    repeated: dict[str, list[Any]] = {}
    for k, v in pairs:
        if k in obj:
            repeated.setdefault(k, [obj[k]]).append(v)
        obj[k] = v
    if repeated:
        obj.repeated = repeated
        return obj
    return dict(obj)


def repeated_keys(obj: Any) -> dict[str, list[Any]]:
    """Every key given more than once, with different values, in ``obj`` or in any
    object nested in it (dotted path -> the values in order). Only objects decoded by
    this module remember repeated keys; a key repeated with one value is harmless."""
    out: dict[str, list[Any]] = {}

    def walk(o: Any, path: str) -> None:
        if isinstance(o, dict):
            for k, vals in getattr(o, "repeated", {}).items():
                if len({json.dumps(v, sort_keys=True) for v in vals}) > 1:
                    out[f"{path}{k}"] = vals
            for k, v in o.items():
                walk(v, f"{path}{k}.")
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, f"{path}{i}.")

    walk(obj, "")
    return out


def loads_answer(text: str) -> Any:
    """``json.loads`` for a model's JSON (tool-call arguments): control characters in
    strings allowed, repeated keys kept visible to :func:`repeated_keys`.

    Raises:
        ValueError: the text is not one JSON value.
    """
    return _DECODER.decode(text)


def _repeated_error(rep: dict[str, list[Any]]) -> str:
    key, vals = next(iter(rep.items()))
    shown = ", ".join(json.dumps(v, ensure_ascii=False)[:40] for v in vals)
    return f"ambiguous: key {key!r} given {len(vals)} times ({shown}); give each field once"


_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_object_pairs)


@dataclass
class Candidate:
    """A top-level JSON object found in the text: ``text[start:end]``."""

    start: int
    end: int
    obj: dict[str, Any]
    #: keys given more than once with different values (see :func:`repeated_keys`)
    repeated: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class ParseResult:
    """Outcome of :func:`parse_answer`.

    ``status``: ``ok`` (``decision`` set), ``invalid`` (objects, none valid),
    ``ambiguous`` (several different valid objects, none final), ``no_json``.
    ``error`` names the offending field and value (pydantic's message), or starts with
    ``ambiguous:`` / ``no JSON object``, so it can be recorded and shown to the model in
    the repair prompt. ``n_objects``/``n_valid`` count the candidates outside reasoning
    blocks.
    """

    decision: Any
    error: str | None
    status: ParseStatus
    n_objects: int = 0
    n_valid: int = 0


def _tag_pattern(closing: bool) -> re.Pattern[str]:
    return re.compile(rf"</({_TAGS})\s*>" if closing else rf"<({_TAGS})(?:\s[^<>]*)?>", re.IGNORECASE)


_OPEN_TAG, _CLOSE_TAG = _tag_pattern(False), _tag_pattern(True)


def strip_reasoning(text: str) -> str:
    """``text`` without reasoning blocks (rule 1 of the module docstring), in time
    linear in ``len(text)`` (one pass over the tags; n log n in the number of tags).

    Tags inside a JSON object of the text (``{"reasoning": "no </think> needed"}``)
    are part of that object's strings, not reasoning delimiters: they are masked
    before the tags are searched. A block is an opening tag and the first closing tag
    of the same name after it, taken left to right (a block inside a block goes with
    it); each is replaced by one space.
    """
    if _OPEN_TAG.search(text) is None and _CLOSE_TAG.search(text) is None:
        return text  # no tag at all: nothing to mask or strip
    pieces, at = [], 0
    for c in json_objects(text):
        pieces += [text[at:c.start], "\0" * (c.end - c.start)]
        at = c.end
    masked = "".join([*pieces, text[at:]])
    closes: dict[str, list[tuple[int, int]]] = {}
    for m in _CLOSE_TAG.finditer(masked):
        closes.setdefault(m.group(1).lower(), []).append((m.start(), m.end()))
    cuts: list[tuple[int, int]] = []
    pos = 0
    for m in _OPEN_TAG.finditer(masked):
        if m.start() < pos:
            continue
        ends = closes.get(m.group(1).lower(), [])
        k = bisect.bisect_left(ends, (m.end(), -1))
        if k < len(ends):
            cuts.append((m.start(), ends[k][1]))
            pos = ends[k][1]
    # a closing tag outside every block: everything before the last one goes
    inside = [a for a, _ in cuts]
    lone = [e for v in closes.values() for st, e in v
            if not (k := bisect.bisect_right(inside, st)) or st >= cuts[k - 1][1]]
    start = max(lone, default=0)
    kept, kept_masked, at = [], [], start
    for a, b in cuts:
        if b <= start:
            continue
        kept += [text[at:a], " "]
        kept_masked += [masked[at:a], " "]
        at = b
    if _LEADING_OPEN.match("".join([*kept_masked, masked[at:]])):
        return ""
    return "".join([*kept, text[at:]])


#: Most failed decodes per answer: bounds the work on adversarial text (thousands of
#: nested braces around something that does not decode); real answers fail a handful.
MAX_DECODE_ATTEMPTS = 500
# The parser's bounds (characters parsed, candidates searched, the size parsed off the
# event loop) are fields of the one table of limits, scarce_lab.data.limits.LIMITS
# (parse_chars, parse_candidates, parse_in_thread_chars), read at call time.

#: Outside strings, what matters to brace matching: runs of braces and a quote.
_OUTSIDE = re.compile(r'\{+|\}+|"')
#: A whole JSON string from its opening quote (escapes respected; possessive: no backtracking).
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)


def _span_ends(text: str, i: int) -> tuple[dict[int, int], int]:
    """``(ends, stop)`` for the brace region starting at ``text[i] == "{"``: ``ends``
    maps each ``{`` of the region whose braces close (JSON strings respected) to the end
    of its span; ``stop`` is where the region ends (``len(text)`` when it never closes).
    One pass in which runs of braces and whole strings are single regex steps, so linear
    with a small constant."""
    if text.find("}", i) == -1:  # nothing closes after it
        return {}, len(text)
    ends: dict[int, int] = {}
    firsts: list[int] = []  # runs of open braces: first position, and how many are still open
    counts: list[int] = []  # (plain int lists: no objects for the garbage collector to walk)
    j, n = i, len(text)
    while (m := _OUTSIDE.search(text, j)) is not None:
        tok, j = m.group(), m.end()
        if tok == '"':
            sm = _STRING.match(text, m.start())
            if sm is None:  # a string that never closes: nothing after it closes
                break
            j = sm.end()
        elif tok[0] == "{":
            firsts.append(m.start())
            counts.append(len(tok))
        else:
            at = m.start()  # the closing run: each brace closes the innermost open one
            while at < j and counts:
                first, count = firsts[-1], counts[-1]
                take = min(count, j - at)
                opened = range(first + count - 1, first + count - 1 - take, -1)
                ends.update(zip(opened, range(at + 1, at + 1 + take), strict=True))
                at += take
                if take == count:
                    firsts.pop()
                    counts.pop()
                else:
                    counts[-1] -= take
            if not counts:
                return ends, at
    return ends, n


def json_objects(text: str) -> list[Candidate]:
    """The top-level JSON objects of ``text``, left to right (rule 2).

    Never raises, and takes linear time in the text plus at most
    :data:`MAX_DECODE_ATTEMPTS` failed decodes (after those, the rest of the text is
    not searched); it stops after ``LIMITS.parse_candidates + 1`` objects. A ``{`` whose braces never close is skipped
    without decoding (it cannot start a complete object); text that does not decode is
    skipped one brace at a time (so a broken draft never hides a later object); an
    object nested deeper than the interpreter's recursion limit is skipped whole (its
    inner parts are fragments, not candidates); integers beyond Python's digit limit
    fail to decode.
    """
    out: list[Candidate] = []
    attempts, most = 0, _limits.LIMITS.parse_candidates
    i = text.find("{")
    while i != -1 and attempts < MAX_DECODE_ATTEMPTS and len(out) <= most:
        ends, stop = _span_ends(text, i)
        starts = sorted(ends)  # the braces of this region that close: the only places an object can start
        k, pos = 0, i
        while k < len(starts) and attempts < MAX_DECODE_ATTEMPTS and len(out) <= most:
            j = starts[k]
            k += 1
            if j < pos:
                continue
            try:
                obj, end = _DECODER.raw_decode(text, j)
                repeated = repeated_keys(obj)
                obj = scrub_surrogates(obj)
            except RecursionError:
                attempts += 1
                pos = ends[j]  # too deep: its inner parts are fragments, not candidates
                continue
            except ValueError:  # JSONDecodeError is a ValueError
                attempts += 1
                continue
            out.append(Candidate(j, end, obj, repeated))
            pos = end
        i = text.find("{", max(stop, pos))
    return out


def _is_final(text: str, c: Candidate) -> bool:
    line_start = text.rfind("\n", 0, c.start) + 1
    return bool(_BEFORE_FINAL.fullmatch(text, line_start, c.start)) and bool(
        _AFTER_FINAL.fullmatch(text, c.end)
    )


def _snippet(text: str, n: int = 80) -> str:
    return text.strip().replace("\n", " ")[:n]


def _canonical(decision: BaseModel) -> str:
    return json.dumps(decision.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def parse_answer(text: str | None, schema: type[T]) -> ParseResult:
    """Pick and validate the answer in ``text`` by the module docstring's rule, in time
    linear in ``len(text)``; an answer over ``LIMITS.parse_chars`` characters or with
    more than ``LIMITS.parse_candidates`` objects (:mod:`scarce_lab.data.limits`) is ``invalid`` with an error naming the bound.

    Never raises for any text.
    """
    if text is None or not text.strip():
        return ParseResult(None, "empty answer (no text)", "no_json")
    bounds = _limits.LIMITS
    if len(text) > bounds.parse_chars:
        return ParseResult(None, f"answer too long to parse: {len(text):,} characters, over the limit of "
                           f"{bounds.parse_chars:,} (LIMITS.parse_chars, scarce_lab/data/limits.py)", "invalid")
    body = strip_reasoning(text)
    cands = json_objects(body)
    if len(cands) > bounds.parse_candidates:
        return ParseResult(None, f"too many JSON objects: more than {bounds.parse_candidates:,} "
                           "(LIMITS.parse_candidates, scarce_lab/data/limits.py); give one answer", "invalid",
                           len(cands))
    if not cands:
        where = "outside reasoning blocks " if body != text else ""
        return ParseResult(None, f"no JSON object {where}in the response (starts: {_snippet(text)!r})", "no_json")
    valid: list[tuple[Candidate, BaseModel]] = []
    last_error = None
    last_repeated = False
    for c in cands:
        if c.repeated:
            decision, error = None, _repeated_error(c.repeated)
        else:
            decision, error = validate_decision(c.obj, schema)
        if decision is None:
            last_error, last_repeated = error, bool(c.repeated)
        else:
            valid.append((c, decision))
    n, k = len(cands), len(valid)
    if not valid:
        where = f" (the last of {n} JSON objects; none is valid)" if n > 1 else ""
        return ParseResult(None, f"{last_error}{where}", "ambiguous" if last_repeated else "invalid", n, 0)
    distinct = {_canonical(d) for _, d in valid}
    last_c, last_d = valid[-1]
    if len(distinct) == 1 or _is_final(body, last_c):
        return ParseResult(last_d, None, "ok", n, k)
    shown = " vs ".join(_snippet(body[c.start:c.end], 60) for c, _ in valid[-2:])
    return ParseResult(
        None,
        f"ambiguous: {len(distinct)} different valid JSON objects and the last one is not "
        f"final (alone at the end, starting a line): {shown}",
        "ambiguous",
        n,
        k,
    )


@dataclass
class ReplyParse:
    """Outcome of :func:`parse_reply`: ``status`` as in :class:`ParseResult`;
    ``source`` is ``text`` or ``tool_call`` when ``decision`` is set."""

    decision: Any
    error: str | None
    status: ParseStatus
    source: str | None = None


def parse_reply(text: str | None, tool_calls: list[dict[str, Any]] | None, schema: type[T]) -> ReplyParse:
    """The decision in a reply's text and/or tool calls.

    The text is parsed by :func:`parse_answer`; each tool call's ``arguments`` (a JSON
    string or an object) the same way. One distinct valid decision is the answer (its
    source is ``text`` when the text gave it); different valid decisions from text and
    tool calls are ``ambiguous``. Never raises.
    """
    found: list[tuple[str, BaseModel]] = []
    errors: list[str] = []
    status: ParseStatus = "no_json"
    if text is not None and text.strip():
        pr = parse_answer(text, schema)
        status = pr.status
        if pr.decision is not None:
            found.append(("text", pr.decision))
        else:
            errors.append(pr.error or "no answer")
    for tc in tool_calls or []:
        args = tc.get("arguments")
        if isinstance(args, dict):
            args = json.dumps(args)
        pr = parse_answer(args if isinstance(args, str) else None, schema)
        if pr.decision is not None:
            found.append(("tool_call", pr.decision))
        else:
            if pr.status in ("ambiguous", "invalid") and status != "ambiguous":
                status = pr.status
            errors.append(f"tool call {tc.get('name')!r}: {pr.error}")
    distinct = {_canonical(d) for _, d in found}
    if len(distinct) == 1:
        source, decision = found[0]
        return ReplyParse(decision, None, "ok", source)
    if len(distinct) > 1:
        return ReplyParse(None, f"ambiguous: {len(distinct)} different valid answers in the text and tool calls", "ambiguous")
    return ReplyParse(None, "; ".join(errors) or "no answer", status)
