"""The one rendering gate for text that an agent, a model or a person wrote and another
prompt shows (docs/threat_model.md, "Other agents as adversaries"): such text is *quoted*, so that whatever characters it holds
it cannot open, close or imitate a section, a speaker, a message line or an answer of
the prompt it is shown in.

- :func:`quote`: a JSON string literal (``json.dumps``, ``ensure_ascii=False``, the
  project's existing safe form, as in SovSim's interview memory): one line, its own
  quotes and backslashes escaped, so a fake ``{"labels": []}`` reads as ``{\\"labels\\":
  []}`` inside the string. Characters a model may read as structure although
  ``json.dumps`` keeps them are written as ``\\uXXXX`` escapes too: Unicode line and
  paragraph separators, NEL and the other C1 controls, bidi controls, zero-width and
  other format characters (categories Cc, Cf, Zl, Zp, Cs). ``json.loads`` of the result
  gives the text back exactly.
- :func:`dumps`: a value as compact JSON with the same escapes (structured memory lines).
- :func:`block`: multi-line text (a context, an instruction, a trace) as a block quote:
  every line, split at every line boundary :meth:`str.splitlines` knows, starts with
  ``"> "``, the same escapes, so no line of it can stand as a line of the prompt.
- :func:`name`: an id as it is when it is a plain name, else quoted.
- :func:`unquote`: a rewrite reply that mirrors the quoted form, as plain text.
- :func:`fenced`: code in a Markdown fence longer than any run of backticks in it (so
  it cannot close the fence; CommonMark's rule).
- :func:`template_env`: the Jinja environment every prompt template is rendered with:
  strict undefined variables and the filters ``quote``, ``block``, ``fenced``, ``name``,
  ``tojson_compact`` and ``tojson_ascii`` (both escaped like :func:`dumps`).
  ``tests/test_prompt_quoting.py`` injects the templates' own structure lines into every
  agent-written field of every environment, the judge and the interviews and proves
  that no prompt gains a line or a header.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import jinja2

#: Unicode categories escaped on top of ``json.dumps``: controls (C0 and C1, NEL), format
#: characters (bidi controls, zero-width, BOM, tags), line and paragraph separators, surrogates.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
#: The prefix of each line of a :func:`block`.
BLOCK_PREFIX = "> "

_C0 = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _escape_char(ch: str) -> str:
    """One character as a JSON escape (a surrogate pair above U+FFFF)."""
    c = ord(ch)
    if c <= 0xFFFF:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def neutralise(text: str) -> str:
    """``text`` with every character of :data:`ESCAPED_CATEGORIES` but the line feed
    written as its JSON escape (``\\u2028``); the rest unchanged."""
    text = _C0.sub(lambda m: _escape_char(m.group()), text)
    if text.isascii():
        return text
    return "".join(_escape_char(c) if unicodedata.category(c) in ESCAPED_CATEGORIES else c for c in text)


def quote(text: Any) -> str:
    """``text`` as one JSON string literal, safe to show inside any prompt (module
    docstring). ``None`` is the empty string ``""``; anything else must be a string.

    Raises:
        TypeError: ``text`` is neither a string nor ``None`` (a field that is not text
            is a bug of the caller, never converted silently).
    """
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise TypeError(f"quote() takes agent-written text, got {type(text).__name__}: {text!r:.80}")
    return neutralise(json.dumps(text, ensure_ascii=False))


def dumps(value: Any, *, compact: bool = True) -> str:
    """``value`` as JSON (compact separators unless ``compact`` is false), every string in
    it escaped like :func:`quote`. Raises ``TypeError`` for a value JSON cannot hold."""
    seps = (",", ":") if compact else (", ", ": ")
    return neutralise(json.dumps(value, ensure_ascii=False, separators=seps))


def block(text: Any) -> str:
    """``text`` as a block quote: each of its lines (split by :meth:`str.splitlines`, so at
    ``\\r``, ``\\v``, ``\\f``, NEL, U+2028...) prefixed with :data:`BLOCK_PREFIX`, other
    controls escaped like :func:`quote`. Empty text is one line ``">"``.

    Raises:
        TypeError: ``text`` is neither a string nor ``None``.
    """
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise TypeError(f"block() takes agent-written text, got {type(text).__name__}: {text!r:.80}")
    lines = text.splitlines() or [""]
    return "\n".join((BLOCK_PREFIX + neutralise(line.replace("\t", "    "))).rstrip() for line in lines)


_NAME = re.compile(r"[^\W_][\w.@/+-]*(?: [\w.@/+-]+)*")


def name(text: Any) -> str:
    """An id or a name (an agent, a recipient) as it is when it is a plain name (words of
    letters, digits and ``_.@/+-``, single spaces, at most 80 characters), else as
    :func:`quote` writes it: a name from a file cannot smuggle a line in either.

    Raises:
        TypeError: ``text`` is neither a string nor ``None``.
    """
    return text if isinstance(text, str) and len(text) <= 80 and _NAME.fullmatch(text) else quote(text)


def fenced(code: Any, info: str = "") -> str:
    """``code`` between Markdown fences of backticks, longer (3 at least) than any run of
    backticks in it, so the code cannot close its fence; ``info`` is the fence's
    language tag. Raises ``TypeError`` for a non-string."""
    if code is None:
        code = ""
    if not isinstance(code, str):
        raise TypeError(f"fenced() takes text, got {type(code).__name__}")
    longest = max((len(r) for r in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{code.rstrip(chr(10))}\n{fence}"


def unquote(text: str) -> str:
    """A model's reply that mirrors the form a text was shown in, as plain text: one JSON
    string literal (as :func:`quote` writes) decoded, a block quote (every line starting
    with ``>``) without its prefixes; any other reply as it is. For rewrite prompts whose
    answer is the new text itself."""
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        try:
            value = json.loads(s)
        except json.JSONDecodeError:
            return text
        return value if isinstance(value, str) else text
    lines = s.splitlines()
    if lines and all(ln.startswith(">") for ln in lines):
        return "\n".join(ln[2:] if ln.startswith(BLOCK_PREFIX) else ln[1:] for ln in lines)
    return text


def template_env(folder: Path, **options: Any) -> jinja2.Environment:
    """The Jinja environment for the prompt templates in ``folder``: ``StrictUndefined``
    and the filters of the module docstring; ``options`` go to
    :class:`jinja2.Environment` (``trim_blocks``...)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined, **options)
    env.filters.update(quote=quote, block=block, fenced=fenced, name=name, tojson_compact=dumps,
                       tojson_ascii=lambda v: dumps(v, compact=False))
    return env
