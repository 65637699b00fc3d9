"""How a decision's JSON schema is sent to a server, and how ``auto`` adapts.

Servers differ in what they accept for structured output:

- ``json_schema``: ``response_format={"type": "json_schema", "json_schema": {...}}``
  (OpenAI, vLLM, the embedded model);
- ``json_object``: ``response_format={"type": "json_object", "schema": {...}}``
  (llama-cpp-python's server: it refuses ``json_schema``; OpenAI ignores ``schema``);
- ``tools``: one function tool whose parameters are the schema, forced with
  ``tool_choice`` (servers with tool calls only);
- ``prompt``: no constraint; the prompt carries the schema and the answer is
  validated strictly, as every answer is.

``llm.structured_output: auto`` starts with ``json_schema``; when a server refuses the
request's form and names the form (``response_format``, ``json_schema``, ``tools``...),
:class:`ModeMemory` moves that ``(api base, model)`` once to the next mode in
:data:`AUTO_ORDER`, for every later call of the process. Every call records its mode
(``LLMCallRecord.structured_output``) and the run's manifest lists the modes used;
reaching ``prompt`` is never silent.

Schema bounds a grammar engine cannot take (``maxLength`` above
:data:`GRAMMAR_MAX_STRING_BOUND`: each bounded character is a nested grammar rule; a
200,000-character bound crashed llama.cpp's server, 6,000 its sampler) are removed from
the schema sent (:func:`capped_schema`), for servers as for the embedded model;
pydantic still enforces them on the answer.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Literal

StructuredOutput = Literal["auto", "json_schema", "json_object", "tools", "prompt"]
MODES = ("json_schema", "json_object", "tools", "prompt")
#: The order ``auto`` tries.
AUTO_ORDER = MODES

#: Strings longer than this get no length bound in the schema sent (see module docstring).
GRAMMAR_MAX_STRING_BOUND = 256

#: Words in a server's refusal that name the request's structured-output form.
_FORM_WORDS = re.compile(r"response_format|json_schema|json_object|tool_choice|\btools?\b|function.call|grammar",
                         re.IGNORECASE)
#: HTTP statuses of a request refused for its form (the llama.cpp Python server answers 500).
_FORM_STATUSES = frozenset({400, 404, 415, 422, 500, 501})


def capped_schema(node: Any) -> Any:
    """A copy of a JSON schema without string ``maxLength`` bounds above
    :data:`GRAMMAR_MAX_STRING_BOUND` (other bounds kept)."""
    if isinstance(node, dict):
        out = {k: capped_schema(v) for k, v in node.items()}
        if out.get("type") == "string" and isinstance(out.get("maxLength"), int) \
                and out["maxLength"] > GRAMMAR_MAX_STRING_BOUND:
            out.pop("maxLength")
        return out
    if isinstance(node, list):
        return [capped_schema(v) for v in node]
    return node


def request_for(mode: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The request arguments that carry ``schema`` in ``mode`` (``response_format``,
    or ``tools`` + ``tool_choice``; nothing for ``prompt``). ``schema`` is capped
    (:func:`capped_schema`).

    Raises:
        ValueError: an unknown mode.
    """
    schema = capped_schema(schema)
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": name, "schema": schema, "strict": False}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "tools":
        return {"tools": [{"type": "function", "function": {"name": name, "description": f"answer with {name}",
                                                             "parameters": schema}}],
                "tool_choice": {"type": "function", "function": {"name": name}}}
    if mode == "prompt":
        return {}
    raise ValueError(f"llm.structured_output must be one of auto, {', '.join(MODES)}; got {mode!r}")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a provider error, if it has one."""
    code = getattr(exc, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def is_form_refusal(exc: BaseException) -> bool:
    """True when a server refused the request for its structured-output form: an HTTP
    error (400, 404, 415, 422, 500, 501) whose text names the form
    (``response_format``, ``json_schema``, ``tools``, ``tool_choice``, ``grammar``).
    Such a refusal is permanent for that request: it is not retried."""
    status = status_of(exc)
    if status is not None and status not in _FORM_STATUSES:
        return False
    name = type(exc).__name__
    if status is None and not any(w in name for w in ("BadRequest", "InternalServer", "UnprocessableEntity")):
        return False
    return bool(_FORM_WORDS.search(str(exc)))


#: Prefix of the error of a call whose form was refused (outcome ``request_refused``).
REFUSED_PREFIX = "request refused for its form"


class ModeMemory:
    """The mode each ``(api base, model)`` uses under ``auto`` (process-wide, thread-safe).

    Starts at ``json_schema``; :meth:`refused` moves a key to the next mode of
    :data:`AUTO_ORDER` once per refused mode (a late refusal of a mode already left
    changes nothing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mode: dict[tuple[str | None, str], str] = {}
        self.switches: list[tuple[str | None, str, str, str]] = []

    def current(self, api_base: str | None, model: str) -> str:
        with self._lock:
            return self._mode.get((api_base, model), AUTO_ORDER[0])

    def refused(self, api_base: str | None, model: str, mode: str) -> str | None:
        """Record that ``mode`` was refused; the next mode, or ``None`` when none is left."""
        with self._lock:
            key = (api_base, model)
            now = self._mode.get(key, AUTO_ORDER[0])
            if now != mode:
                return now
            i = AUTO_ORDER.index(mode)
            if i + 1 >= len(AUTO_ORDER):
                return None
            nxt = AUTO_ORDER[i + 1]
            self._mode[key] = nxt
            self.switches.append((api_base, model, mode, nxt))
            return nxt


#: The process-wide memory (servers do not change what they accept during a run).
MODE_MEMORY = ModeMemory()


def prompt_instruction(schema_json: str) -> dict[str, str]:
    """The message added in ``prompt`` mode: the schema the answer must follow."""
    return {"role": "system", "content": "Answer with one JSON object only, no other text, that follows this "
                                         f"JSON schema: {schema_json}"}
