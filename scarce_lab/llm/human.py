"""People at the table: the human protocol, read by
:class:`~scarce_lab.llm.model.HumanModel` (the model behind ``human/<name>`` seats).

The protocol (front ends code against it: the terminal's in :mod:`scarce_lab.agents.human`,
the JupyterLab form in :mod:`scarce_lab.agents.human_widget`):

- :class:`FormField`: one input of a decision form, derived from the decision schema's
  JSON schema (:func:`form_fields`);
- :class:`HumanTurn`: what a person is asked (exactly the prompt the seat's model would
  get, the legal actions as a form, the default action said in words, the time left);
- :class:`HumanAnswer`: what the front end gives back;
- :class:`HumanDesk`: a front end (``await desk.ask(turn)``); bound by the caller with
  :func:`use_desk`, never by a config.

:class:`~scarce_lab.llm.model.HumanModel` asks the bound desk under the seat's time limit (the config's
``human_time_limit_s``, default :data:`DEFAULT_TIME_LIMIT_S`), validates the answer with
the request's schema under the one decision policy
(:func:`~scarce_lab.llm.decisions.validate_decision`), asks again within the time left
when it does not validate (the turn's ``problem`` says why), and on timeout plays the
request's documented fallback. Its outcome has ``source="human"``, outcome ``human`` or
``human_timeout``, no calls, and the seconds from the first prompt to the accepted
answer (``latency_s``): recorded with the decision in events, never as a model call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

__all__ = [
    "DEFAULT_TIME_LIMIT_S", "HUMAN", "HUMAN_OUTCOMES", "HUMAN_TIMEOUT", "FormError", "FormField", "HumanAnswer",
    "HumanDesk", "HumanTurn", "NoDeskError", "answer_text", "current_desk", "default_text",
    "form_answer", "form_fields", "use_desk",
]

#: Seconds a person has for one decision unless the config says otherwise.
DEFAULT_TIME_LIMIT_S = 120.0
#: Outcome of a decision a person took.
HUMAN = "human"
#: Outcome of a decision a person did not take in time (the fallback was played).
HUMAN_TIMEOUT = "human_timeout"
HUMAN_OUTCOMES = frozenset({HUMAN, HUMAN_TIMEOUT})
#: Fixed-length arrays longer than this are not spread into a form (one field per item).
MAX_FORM_ITEMS = 32


@dataclass(frozen=True)
class FormField:
    """One input of a decision form, from the decision schema's JSON schema.

    Attributes:
        name: the schema field; a nested one is a dotted path (``entries.0.price``:
            item 0 of the fixed-length list ``entries``).
        kind: ``int``, ``float``, ``str``, ``bool`` or ``choice``.
        description: the schema's description (else its title, else the name).
        minimum, maximum: bounds of a number (inclusive), ``None`` when unbounded.
        choices: the legal values of a ``choice``, as text (a front end returns one of
            them; :func:`form_answer` maps it back to the schema's value, e.g. ``"9"`` -> 9).
        values: the schema's values of ``choices``, in their order (``9``, ``True``,
            ``"citizen A"``): a front end may return these instead of the texts. A
            count per key (:func:`_keyed`) that must be at least 1 also offers 0, which
            means no entry, as an empty answer does.
        max_length: the longest text of a ``str`` (characters).
        required: ``False`` for a field with a default (an empty answer keeps it).
        multiple: a ``choice`` of several values (a list of ``choices``; may be empty).
    """

    name: str
    kind: Literal["int", "float", "str", "bool", "choice"]
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    required: bool = True
    multiple: bool = False
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class HumanTurn:
    """One question to a person.

    Attributes:
        seat: the agent id (``a2``, ``w1``).
        person: the name after ``human/``.
        kind: ``decision`` (answer ``fields``) or ``text`` (a free text, at most ``max_chars``).
        purpose: the decision's purpose (``extraction``, ``talk``, ``ballot`` ...).
        round: the environment's round, ``None`` where none applies.
        messages: exactly the prompt (chat messages) the seat's model would get.
        fields: the legal actions as a form (empty for text).
        default: the action taken on timeout (the request's documented fallback), as a
            dict (a text turn: the default text).
        default_text: the default said in words.
        time_limit_s: seconds left to answer (the whole limit on the first ask).
        max_chars: the longest text of a text turn.
        problem: why the previous answer to this question was refused (``None`` on the
            first ask); a front end shows it.
    """

    seat: str
    person: str
    kind: Literal["decision", "text"]
    purpose: str
    round: int | None
    messages: tuple[dict, ...]
    fields: tuple[FormField, ...]
    default: Any
    default_text: str
    time_limit_s: float
    max_chars: int | None = None
    problem: str | None = None


@dataclass(frozen=True)
class HumanAnswer:
    """A front end's answer: ``value`` is a dict field name -> value (a decision) or a
    str (a text turn); ``latency_s`` the seconds the person took on this ask."""

    value: Any
    latency_s: float


class HumanDesk(Protocol):
    """A front end: shows a :class:`HumanTurn` and returns the person's answer. The
    call may be cancelled (the time limit): the front end then tells the person that
    the default was taken (and forgets any half-typed answer).

    A desk may also have ``finish(error: BaseException | None) -> None``: called once
    when the block that bound it (:func:`use_desk`) ends, that is when the game is over
    (``error`` ``None``) or stopped (the error), so the front end can say so; no
    further question comes from that game."""

    async def ask(self, turn: HumanTurn) -> HumanAnswer: ...


class NoDeskError(RuntimeError):
    """A human seat was asked and no front end is bound (:func:`use_desk`)."""


class FormError(ValueError):
    """A decision schema (or an answer to it) that cannot be a form; names the field."""


_DESK: ContextVar[HumanDesk | None] = ContextVar("scarce_lab_human_desk", default=None)


@contextmanager
def use_desk(desk: HumanDesk | None) -> Iterator[HumanDesk | None]:
    """Bind ``desk`` as the front end every human seat asks inside the block (also in
    tasks started there); ``None`` unbinds. ``sl.run(..., human=desk)`` and the CLI's
    ``--human`` bind it. When the block ends, the desk's ``finish(error)`` is called if
    it has one (:class:`HumanDesk`): ``None`` when the block ended normally, else the
    exception that ends it (re-raised after)."""
    token = _DESK.set(desk)
    try:
        yield desk
    except BaseException as exc:
        try:
            _finish(desk, exc)
        except Exception as bad:  # the game's error stays the one raised (a resumable stop stays one)
            exc.add_note(f"the front end's finish() failed too: {bad!r}")
        raise
    else:
        _finish(desk, None)
    finally:
        _DESK.reset(token)


def _finish(desk: Any, error: BaseException | None) -> None:
    finish = getattr(desk, "finish", None)
    if callable(finish):
        finish(error)


def current_desk() -> HumanDesk | None:
    """The bound front end (:func:`use_desk`), ``None`` when none is."""
    return _DESK.get()


# -- forms -------------------------------------------------------------------------------
def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if ref is not None:
        target = defs.get(ref.rsplit("/", 1)[-1])
        if target is None:
            raise FormError(f"unresolved schema reference {ref!r}")
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    if "allOf" in prop and len(prop["allOf"]) == 1:
        prop = {**_resolve(prop["allOf"][0], defs), **{k: v for k, v in prop.items() if k != "allOf"}}
    return prop


def _leaf(name: str, prop: dict[str, Any], required: bool, defs: dict[str, Any]) -> list[FormField]:
    prop = _resolve(prop, defs)
    options = prop.get("anyOf") or prop.get("oneOf")
    if options:  # X | None: an optional X
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) != 1:
            raise FormError(f"field {name!r}: a choice between {len(kept)} types cannot be a form field")
        return _leaf(name, {**{k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}, **kept[0]},
                     False, defs)
    desc = str(prop.get("description") or prop.get("title") or name)
    if "const" in prop:
        prop = {**prop, "enum": [prop["const"]]}
    if "enum" in prop:
        return [FormField(name, "choice", desc, choices=tuple(_text(v) for v in prop["enum"]), required=required,
                          values=tuple(prop["enum"]))]
    kind = prop.get("type")
    if kind in ("integer", "number"):
        lo = prop.get("minimum", prop.get("exclusiveMinimum"))
        hi = prop.get("maximum", prop.get("exclusiveMaximum"))
        if kind == "integer":
            lo = None if lo is None else (lo + 1 if "exclusiveMinimum" in prop and "minimum" not in prop else lo)
            hi = None if hi is None else (hi - 1 if "exclusiveMaximum" in prop and "maximum" not in prop else hi)
        return [FormField(name, "int" if kind == "integer" else "float", desc, minimum=lo, maximum=hi,
                          required=required)]
    if kind == "string":
        return [FormField(name, "str", desc, max_length=prop.get("maxLength"), required=required)]
    if kind == "boolean":
        return [FormField(name, "bool", desc, required=required)]
    if kind == "object" or "properties" in prop:
        return _object(name + ".", prop, defs)
    if kind == "array":
        items = _resolve(prop.get("items") or {}, defs)
        if "enum" in items:
            return [FormField(name, "choice", desc, choices=tuple(_text(v) for v in items["enum"]), required=required,
                              multiple=True, values=tuple(items["enum"]))]
        n, m = prop.get("minItems"), prop.get("maxItems")
        keyed = _keyed(items, defs)
        if keyed is not None and not n and (m is None or m >= len(keyed[3])):  # a list of key -> value entries
            key, _, other_schema, keys = keyed
            if any("." in _text(k) or _text(k).isdigit() for k in keys):
                raise FormError(f"field {name!r}: its entries' {key!r} values {keys!r} cannot name form fields")
            return [_none_as_zero(replace(f, required=False, description=f"{f.description} for {_text(k)}"),
                                  _count(other_schema, defs))
                    for k in keys for f in _leaf(f"{name}.{_text(k)}", other_schema, False, defs)]
        if n is not None and n == m and 0 < n <= MAX_FORM_ITEMS:
            return [f for i in range(n) for f in _leaf(f"{name}.{i}", items, True, defs)]
        raise FormError(f"field {name!r}: a list of {items.get('type') or items.get('title') or 'values'} of "
                        f"{'any' if n != m else 'this'} length cannot be asked as a form")
    raise FormError(f"field {name!r}: type {kind!r} cannot be a form field")


def _keyed(items: dict[str, Any], defs: dict[str, Any]) -> tuple[str, str, dict[str, Any], list[Any]] | None:
    """``(key, value field, value schema, key values)`` when a list's items are ``{key: one of a few
    values, value: anything}`` objects, both required (e.g. punishment points by target:
    ``[{"name": "citizen B", "points": 3}]``): such a list is a mapping, asked as one
    optional field per key value (empty: no entry). ``None`` for any other item."""
    props = items.get("properties") or {}
    if len(props) != 2 or set(items.get("required", ())) != set(props):
        return None
    for key, other in (tuple(props), tuple(props)[::-1]):
        p = _resolve(props[key], defs)
        values = p.get("enum", [p["const"]] if "const" in p else None)
        if values and len(values) <= MAX_FORM_ITEMS and len({_text(v) for v in values}) == len(values):
            return key, other, props[other], list(values)
    return None


def _count(prop: dict[str, Any], defs: dict[str, Any]) -> bool:
    """Whether ``prop`` (the value of a key -> value entry) is a count of at least 1: a
    whole number bounded below by 1 or more, or a choice among such. Then 0 of it is no
    entry (0 points: nobody punished), asked as the choice or bound 0 and dropped by
    :func:`form_answer`."""
    prop = _resolve(prop, defs)
    if "enum" in prop:
        return all(type(v) is int and v >= 1 for v in prop["enum"])
    return prop.get("type") == "integer" and prop.get("minimum", prop.get("exclusiveMinimum", -1) + 1) >= 1


def _none_as_zero(f: FormField, count: bool) -> FormField:
    if not count:
        return f
    desc = f"{f.description} (0 or empty: none)"
    if f.kind == "choice":
        return replace(f, description=desc, choices=("0", *f.choices), values=(0, *f.values))
    return replace(f, description=desc, minimum=0)


def _object(prefix: str, js: dict[str, Any], defs: dict[str, Any]) -> list[FormField]:
    required = set(js.get("required", ()))
    out: list[FormField] = []
    for key, prop in (js.get("properties") or {}).items():
        out += _leaf(prefix + key, prop, key in required, defs)
    return out


def _text(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def form_fields(schema: type[Any]) -> tuple[FormField, ...]:
    """The form of a decision schema (a pydantic model): one :class:`FormField` per
    leaf of its JSON schema, in the schema's order. Integers and numbers keep their
    bounds, enumerations (``Literal``, ``Enum``, :func:`~scarce_lab.llm.decisions.int_choice`)
    become choices, texts keep their ``max_length``; a nested model is spread into dotted
    fields, a fixed-length list (at most :data:`MAX_FORM_ITEMS` items) into one group
    per item, a list of enumerated values into a multiple choice, a list of key -> value
    entries (:func:`_keyed`) into one optional field per key (``punish.citizen B``).

    Raises:
        FormError: a field that cannot be a form (a list of variable length of anything
            but enumerated values, a union of types), naming the field.
    """
    js = schema.model_json_schema()
    return tuple(_object("", js, js.get("$defs") or {}))


def _set(root: dict[str, Any], path: list[str], value: Any) -> None:
    node = root
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def _lists(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _lists(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
    return node


def form_answer(schema: type[Any], value: Any, fields: tuple[FormField, ...] | None = None) -> dict[str, Any]:
    """A front end's answer (field name -> value, see :class:`FormField`) as the JSON
    object the schema validates: choices mapped back to the schema's values (``"9"`` ->
    9, ``"true"`` -> True), dotted names nested again, an optional field answered
    ``None`` left out (its default applies). Types are not converted otherwise: the
    schema's strict validation judges them.

    Raises:
        FormError: not a dict, a required field unanswered, an unknown field, or a
            choice that is none of its choices (the message names the field).
    """
    if not isinstance(value, dict):
        raise FormError(f"a decision answer is a dict of field -> value, got {type(value).__name__}")
    fields = form_fields(schema) if fields is None else fields
    by_name = {f.name: f for f in fields}
    unknown = sorted(set(value) - set(by_name))
    if unknown:
        raise FormError(f"field {unknown[0]!r} is not in the form (fields: {', '.join(by_name)})")
    js = schema.model_json_schema()
    out: dict[str, Any] = {}
    for f in fields:
        v = value.get(f.name)
        if v is None:
            if f.required:
                raise FormError(f"field {f.name!r}: no answer")
            continue
        if f.kind == "choice":
            raw = list(f.values) if f.values else _choice_values(js, f.name)
            if not f.multiple:
                v = _pick(f, raw, v)
            elif isinstance(v, list | tuple):
                v = [_pick(f, raw, x) for x in v]
            else:
                raise FormError(f"field {f.name!r}: a list of choices among {', '.join(f.choices)} is needed, "
                                f"got {v!r}")
        _set(out, f.name.split("."), v)
    return _unkey(_lists(out), js, js.get("$defs") or {})


def _unkey(node: Any, prop: dict[str, Any], defs: dict[str, Any]) -> Any:
    """``node`` (an answer nested by field names) in the schema's shape: the answered keys
    of a list of key -> value entries (:func:`_keyed`) become its entries, a required
    such list left unanswered ``[]``."""
    prop = _resolve(prop, defs)
    for o in prop.get("anyOf") or prop.get("oneOf") or ():
        if o.get("type") != "null":
            prop = _resolve(o, defs)
    if isinstance(node, dict) and "properties" in prop:
        props, required = prop["properties"], set(prop.get("required", ()))
        missing = {k: [] for k, p in props.items() if k not in node and k in required and _is_keyed(p, defs)}
        return {k: _unkey(v, props.get(k, {}), defs) for k, v in node.items()} | missing
    if prop.get("type") == "array":
        items = _resolve(prop.get("items") or {}, defs)
        keyed = _keyed(items, defs)
        if keyed is not None and isinstance(node, dict):
            key, other, other_schema, keys = keyed
            raw = {_text(k): k for k in keys}
            zero_is_none = _count(other_schema, defs)
            return [{key: raw[t], other: _unkey(v, other_schema, defs)} for t, v in node.items()
                    if not (zero_is_none and v == 0 and type(v) is int)]
        if isinstance(node, list):
            return [_unkey(x, items, defs) for x in node]
    return node


def _is_keyed(prop: dict[str, Any], defs: dict[str, Any]) -> bool:
    prop = _resolve(prop, defs)
    return prop.get("type") == "array" and _keyed(_resolve(prop.get("items") or {}, defs), defs) is not None


def _pick(f: FormField, raw: list[Any], given: Any) -> Any:
    for r in raw:
        if (given == r and type(given) is type(r)) or (isinstance(given, str) and given.strip() == _text(r)):
            return r
    raise FormError(f"field {f.name!r}: {given!r} is not one of {', '.join(f.choices)}")


def _choice_values(js: dict[str, Any], name: str) -> list[Any]:
    """The raw enumerated values of the (dotted) field ``name``."""
    defs = js.get("$defs") or {}
    prop: dict[str, Any] = js
    for part in name.split("."):
        prop = _resolve(prop, defs)
        if prop.get("type") == "array" and not part.isdigit():  # a key of a list of key -> value entries
            _, other, _, _ = _keyed(_resolve(prop.get("items") or {}, defs), defs) or (None, None, None, None)
            prop = _resolve(prop["items"], defs)["properties"][other]
            continue
        prop = prop["items"] if part.isdigit() else prop["properties"][part]
    prop = _resolve(prop, defs)
    for o in prop.get("anyOf") or prop.get("oneOf") or ():
        if o.get("type") != "null":
            prop = _resolve(o, defs)
    if prop.get("type") == "array" and "enum" not in prop:
        prop = _resolve(prop.get("items") or {}, defs)
    return list(prop["enum"]) if "enum" in prop else [prop["const"]]


def default_text(fallback: Any) -> str:
    """The default action in words: ``extraction 9; reasoning 'fallback: sustainable
    share' (the documented fallback)``."""
    data = fallback.model_dump(mode="json") if hasattr(fallback, "model_dump") else fallback
    if isinstance(data, str) and not data:
        return "silence (the documented fallback)"
    return answer_text(data) + " (the documented fallback)"


def answer_text(data: Any) -> str:
    """An answer or decision in its own terms, one ``field value`` per leaf: ``extraction
    9; reasoning 'fair share'`` (texts quoted, numbers and choices as the schema's values;
    a nested field by its dotted path, spaced). A text answer: the text, quoted."""
    if isinstance(data, str):
        return repr(data)
    return "; ".join(f"{k.replace('.', ' ')} {v!r}" if isinstance(v, str) else f"{k.replace('.', ' ')} {v}"
                     for k, v in _flat(data).items())


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        out = {}
        for i, v in enumerate(obj):
            out.update(_flat(v, f"{prefix}{i}."))
        return out
    return {prefix.rstrip("."): obj}


# -- the model ---------------------------------------------------------------------------
