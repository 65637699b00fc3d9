"""The one type-coercion policy of every decision a model gives, and the registry of
decision schemas.

Policy (applied to every decision schema: SovSim extraction and announcement; SCARCE
declaration, reasoning, private message, revision, ballot and solver actions; Economy
of Minds notes and answers; the judge's answer):

- **Strict JSON types.** A number field takes a JSON number, a text field a JSON
  string, a list a JSON array; nothing is converted from another type.
- **Booleans are never numbers.** ``true``/``false`` in an integer field (plain
  ``int`` or an enumerated ``Literal`` of integers) is an error, not 1/0.
- **Numeric strings are rejected everywhere.** ``"15"`` is not 15, in any schema;
  ``"$12"``, ``"12 tons"`` or ``"1,000"`` are never normalised either. The
  ``response_format`` sent with the request says ``"type": "integer"``, so a string
  there is the model's format error: it is recorded and repaired like any other.
- **An integer is written without a fraction.** ``15.0`` (and ``1.5e1``) is rejected
  for an integer field in every schema, as is ``15.5``.
- Extra keys, and whether a JSON ``null`` for an optional text field reads as empty,
  follow each schema's own settings (not part of this policy).

Where it is implemented: :class:`DecisionModel` (``strict=True``) and
:func:`int_choice` (an enumerated integer that refuses ``bool`` and ``float``, which
pydantic's ``Literal`` would otherwise accept even in strict mode because
``False == 0`` and ``3.0 == 3`` in Python) for the schemas themselves, and
:func:`validate_decision`, the single validation call of the LLM client, which
validates *any* schema strictly and refuses a JSON boolean or fraction-written number
that validated into an integer. So the policy also holds for a schema that does not
derive from :class:`DecisionModel`.

Registry: every decision schema family registers itself with
:func:`register_decision_family` (a root class, and a function that builds one
representative schema); tests and the fuzz suite run over :func:`decision_families`,
and a test checks that every :class:`DecisionModel` subclass has a registered root
(nested parts derive from :class:`DecisionPart` instead).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

T = TypeVar("T", bound=BaseModel)

__all__ = [
    "DecisionFamily",
    "DecisionModel",
    "DecisionPart",
    "decision_families",
    "format_validation_error",
    "int_choice",
    "register_decision_family",
    "validate_decision",
]


class DecisionModel(BaseModel):
    """Base of every decision schema a model answers: strict JSON types (see the
    module docstring for the policy). Subclasses set their own ``extra``."""

    model_config = ConfigDict(strict=True)


class DecisionPart(DecisionModel):
    """A nested part of a decision (e.g. one ballot line): the same policy, validated
    as part of its parent; not registered as a family of its own."""


def _integer_only(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a JSON boolean is not an integer")
    if isinstance(value, float | Decimal):
        raise ValueError("an integer is written without a fraction")
    if isinstance(value, str):
        raise ValueError("a number must be a JSON number, not a string")
    return value


def int_choice(values: tuple[int, ...] | list[int]) -> Any:
    """An integer that must be one of ``values`` (a JSON-schema ``enum``, which the
    embedded model's grammar enforces), refusing ``bool``, ``float`` and ``str``.

    Raises:
        ValueError: ``values`` is empty or holds a non-integer (or a bool).
    """
    vals = tuple(values)
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
        raise ValueError(f"int_choice needs a non-empty list of integers, got {values!r}")
    return Annotated[Literal[vals], BeforeValidator(_integer_only)]  # type: ignore[valid-type]


# -- validation ------------------------------------------------------------------------
def format_validation_error(exc: ValidationError) -> str:
    """One line per error: ``field 'a.b': message (got value)``; what the repair
    prompt shows the model and the record keeps."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        numeric = err["type"] in ("int_type", "int_parsing", "float_type") or (
            err["type"] == "literal_error" and "'" not in str(err.get("ctx", {}).get("expected", "'")))
        if numeric and isinstance(got, bool):
            msg += "; a JSON boolean is not a number"
        elif numeric and isinstance(got, str):
            msg += "; a number must be a JSON number, not a string"
        text = repr(got)
        if len(text) > 120:
            text = text[:117] + "..."
        parts.append(f"field {loc!r}: {msg} (got {text})")
    return "; ".join(parts)


def _coerced_numbers(given: Any, result: Any, path: str = "") -> list[str]:
    """Paths where a JSON boolean or a fraction-written number became an integer."""
    out: list[str] = []
    if isinstance(result, dict) and isinstance(given, dict):
        for k, v in result.items():
            if k in given:
                out += _coerced_numbers(given[k], v, f"{path}.{k}" if path else str(k))
    elif isinstance(result, list) and isinstance(given, list) and len(result) == len(given):
        for i, (g, r) in enumerate(zip(given, result, strict=True)):
            out += _coerced_numbers(g, r, f"{path}.{i}" if path else str(i))
    elif isinstance(result, int) and not isinstance(result, bool):
        if isinstance(given, bool):
            out.append(f"field {path!r}: a JSON boolean is not an integer (got {json.dumps(given)})")
        elif isinstance(given, float | Decimal):
            out.append(f"field {path!r}: an integer is written without a fraction (got {given!r})")
    return out


def validate_decision(obj: Any, schema: type[T]) -> tuple[T | None, str | None]:
    """Validate a decoded JSON value against ``schema`` under the policy above.

    Returns ``(decision, None)`` or ``(None, error)``; never raises for bad input: a
    ``RecursionError`` on absurdly nested input becomes an error string, and so does
    an exception other than a validation error raised by one of the schema's own
    validators (e.g. a ``TypeError`` on an unexpected type); that error names the
    exception, so a validator bug shows in the records instead of crashing a game.
    """
    try:
        decision = schema.model_validate(obj, strict=True)
    except ValidationError as exc:
        return None, format_validation_error(exc)
    except RecursionError:
        return None, "the JSON object is nested too deeply to validate"
    except Exception as exc:  # noqa: BLE001 - a schema validator choked on the answer
        return None, f"validator of {schema.__name__} raised {type(exc).__name__}: {exc}"[:500]
    try:
        coerced = _coerced_numbers(obj, decision.model_dump(mode="python"))
    except RecursionError:
        return None, "the JSON object is nested too deeply to validate"
    if coerced:
        return None, "; ".join(coerced)
    return decision, None


# -- registry --------------------------------------------------------------------------
@dataclass(frozen=True)
class DecisionFamily:
    """A family of decision schemas: ``root`` is the base class every schema of the
    family derives from; ``sample()`` builds one representative schema (e.g. the
    extraction schema for a cap of 30); ``example`` is one valid answer of it."""

    name: str
    root: type[BaseModel]
    sample: Callable[[], type[BaseModel]]
    example: dict[str, Any]


_FAMILIES: dict[str, DecisionFamily] = {}


def register_decision_family(
    name: str,
    root: type[BaseModel],
    example: dict[str, Any],
    sample: Callable[[], type[BaseModel]] | None = None,
) -> DecisionFamily:
    """Register a decision schema family (idempotent for the same name and root).

    Raises:
        ValueError: ``name`` already registered for another root, or ``example`` is
            not a valid answer of ``sample()`` under the policy.
    """
    old = _FAMILIES.get(name)
    if old is not None and old.root is not root:
        raise ValueError(f"decision family {name!r} is already registered for {old.root.__qualname__}")
    fam = DecisionFamily(name, root, sample or (lambda: root), dict(example))
    decision, error = validate_decision(fam.example, fam.sample())
    if decision is None:
        raise ValueError(f"example of decision family {name!r} does not validate: {error}")
    _FAMILIES[name] = fam
    return fam


def decision_families() -> dict[str, DecisionFamily]:
    """The registered families, by name (import the agent modules first; the
    judge's family is registered by ``scarce_lab.judge.panel`` if it does so)."""
    return dict(_FAMILIES)
