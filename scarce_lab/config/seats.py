"""Seats: a model, and per-seat settings, for each agent of a run (one spelling for
every environment).

A config's ``seats`` maps a *seat key* to a model string or to a mapping of per-seat
settings::

    seats: {king: openai/gpt-4o, "*": embedded/smollm2}
    seats: {w0: {model: openai/gpt-4o, temperature: 0.5}, "*": scripted/fifo}
    -S seats.king=openai/gpt-4o -S 'seats.*=embedded/smollm2'

A seat key is an agent id (``a3``, ``w0``), a role or alias the environment gives
some seats (``king``, ``leader``, ``newcomer``), optionally with a part after a dot
for environments whose agents are several models (SCARCE: ``w0.solver``,
``*.negotiator``), or ``*`` (every seat). The most specific key that sets a field
wins, field by field: agent id, then alias, then ``*``, then the config's own
``model`` / ``llm`` settings (so a bare ``--model`` still means every seat).

The resolved composition is a condition setting: an environment records it per
agent in the run's manifest, hashes it into the run id and labels it readably
(:func:`composition_label`, e.g. ``king=gpt-4o, others=smollm2``); two compositions
are never pooled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: The key that matches every seat.
ANY_SEAT = "*"


class SeatSettings(BaseModel):
    """What one seat (or a group of seats) runs with; ``None`` means "from a less
    specific key" (finally the config's ``model`` and ``llm`` settings).

    Fields: ``model`` (a litellm model, ``embedded/...`` or ``scripted/<policy>``),
    ``temperature`` (0..2), ``max_tokens`` (>= 1), ``reasoning_effort`` (a level the
    environment's config accepts). An environment whose seats take more settings
    subclasses it with them and parses its seats with that class (:func:`parse_seats`);
    any other setting is refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(None, min_length=1, description="the seat's model")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="the seat's sampling temperature")
    max_tokens: int | None = Field(None, ge=1, description="the seat's answer tokens per decision")
    reasoning_effort: str | None = Field(None, min_length=1, description="the seat's reasoning effort")

    @field_validator("model")
    @classmethod
    def _model_text(cls, v: str | None) -> str | None:
        if v is not None and (v != v.strip() or any(c in v for c in "\n\r\t,=")):
            raise ValueError(f"model {v!r} has whitespace, ',' or '=' (seat labels and run ids use them)")
        return v


def parse_seats(raw: Any, settings: type[SeatSettings] = SeatSettings) -> dict[str, SeatSettings]:
    """``seats`` as given (``None``, or a mapping of key -> model string or mapping)
    -> ``{key: settings}``, each value parsed with ``settings`` (:class:`SeatSettings`
    or an environment's subclass of it). A setting given as ``None`` (null) is unset,
    as if left out.

    Raises:
        ValueError: not a mapping, a key that is empty/has whitespace or ``=``/``,``,
            a value that is neither a model string nor a settings mapping (the
            message names the key and value), or a setting that ``settings`` does not
            have or whose value it refuses (the message names ``seats.<key>.<setting>``).
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"seats must be a mapping of seat -> model or settings, got {raw!r}")
    out: dict[str, SeatSettings] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key or key != key.strip() or any(c in key for c in " \n\r\t,="):
            raise ValueError(f"seats: seat key {key!r} must be an agent id, a role, or '*' (no spaces, ',' or '=')")
        if type(value) is settings:
            out[key] = value
            continue
        if isinstance(value, SeatSettings):
            value = value.model_dump(exclude_none=True)
        elif isinstance(value, str):
            value = {"model": value}
        elif not isinstance(value, Mapping):
            raise ValueError(f"seats.{key}: {value!r} is neither a model string nor a mapping of seat settings")
        try:
            out[key] = settings.model_validate({k: v for k, v in value.items() if v is not None})
        except ValidationError as exc:
            raise ValueError("; ".join(_seat_error(key, e, settings) for e in exc.errors())) from None
    return out


def _seat_error(key: str, error: Any, settings: type[SeatSettings]) -> str:
    """One refused setting of seat ``key``, named ``seats.<key>.<setting>``."""
    where = ".".join(["seats", key, *(str(x) for x in error["loc"])])
    if error["type"] == "extra_forbidden":
        return f"{where}: not a seat setting here (a seat sets {', '.join(settings.model_fields)})"
    return f"{where}: {error['msg']}"


def check_seat_keys(
    seats: Mapping[str, SeatSettings], valid: Iterable[str], *, parts: Iterable[str] = (), where: str = "seats",
) -> None:
    """Refuse a seat key this run has no seat for (a typo would silently leave the
    seat on the default model).

    Args:
        seats: parsed seats.
        valid: the agent ids and aliases of this run (``*`` is always valid).
        parts: the allowed part names after a dot (SCARCE: ``solver``, ``negotiator``);
            empty: no dotted keys.

    Raises:
        ValueError: a key that matches no seat, naming it and the valid keys.
    """
    valid = set(valid) | {ANY_SEAT}
    parts = set(parts)
    for key in seats:
        base, _, part = key.partition(".")
        if base not in valid or (part and part not in parts) or (key.endswith(".") and not part):
            allowed = sorted(valid) + ([f"<seat>.{p}" for p in sorted(parts)] if parts else [])
            raise ValueError(f"{where}: no seat {key!r} in this run; seats are {allowed}")


def resolve_seat(
    seats: Mapping[str, SeatSettings], agent: str, aliases: Iterable[str] = (), part: str | None = None,
    default: SeatSettings | None = None,
) -> SeatSettings:
    """The settings of one seat: each field from the most specific key that sets it,
    as ``default``'s class (:class:`SeatSettings` without one; an environment whose
    seats take more settings passes a default of its subclass).

    Order (most specific first): ``agent.part``, ``agent``, each alias's ``alias.part``
    then ``alias`` (in the order given), ``*.part``, ``*``, then ``default``.
    """
    keys: list[str] = []
    for base in (agent, *aliases, ANY_SEAT):
        if part:
            keys.append(f"{base}.{part}")
        keys.append(base)
    chosen: dict[str, Any] = {}
    for s in (*(seats.get(key) for key in keys), default):
        for name, value in (s.model_dump(exclude_none=True) if s is not None else {}).items():
            chosen.setdefault(name, value)
    return (SeatSettings if default is None else type(default))(**chosen)


def short_model(model: str | None) -> str:
    """A model's name for labels: the part after the provider, e.g. ``gpt-4o`` for
    ``openai/gpt-4o``, ``smollm2`` for ``embedded/smollm2``; scripted policies keep
    their ``scripted/`` prefix's policy (``greedy`` for ``scripted/greedy``)."""
    return model.rsplit("/", 1)[-1] if model else "?"


def _describe(s: SeatSettings, shown: Mapping[str | None, str] | None = None) -> str:
    # fields read directly, not model_dump: a label's model_construct'ed seat may hold text
    extra = [f"{k}={getattr(s, k)}" for k in type(s).model_fields if k != "model" and getattr(s, k) is not None]
    name = shown[s.model] if shown is not None else short_model(s.model)
    return name + (f" ({', '.join(extra)})" if extra else "")


def _shown_names(models: Iterable[str | None]) -> dict[str | None, str]:
    """Model -> its name in a label: :func:`short_model`, or the whole model string
    where two different models of the composition share a short name
    (``openai/gpt-4o`` and ``azure/gpt-4o``), so a label never groups them as one."""
    models = list(dict.fromkeys(models))
    shorts: dict[str, set[str | None]] = {}
    for m in models:
        shorts.setdefault(short_model(m), set()).add(m)
    return {m: short_model(m) if len(shorts[short_model(m)]) == 1 else (m or "?") for m in models}


def composition_label(resolved: Mapping[str, SeatSettings], names: Mapping[str, str] | None = None) -> str:
    """A readable label of a composition: seats that run the same settings are grouped;
    a strictly largest group reads ``others`` when there are other groups (with a tie
    for largest every group is named by its seats), one group reads ``all``.

    Args:
        resolved: agent id -> resolved settings, in seat order.
        names: agent id -> how to name it in the label (a role such as ``king``);
            default the agent id.

    Models read by :func:`short_model`, or whole where two models of the composition
    share a short name; every other setting a seat's class has (a subclass's too) is
    named where set. Examples: ``all=smollm2``; ``king=gpt-4o, others=smollm2``;
    ``w0=gpt-4o (temperature=0.5), others=fifo``; ``a0=openai/gpt-4o, a1=azure/gpt-4o, others=smollm2``.
    """
    names = dict(names or {})
    shown = _shown_names(s.model for s in resolved.values())
    groups: dict[str, list[str]] = {}
    for agent, s in resolved.items():
        groups.setdefault(_describe(s, shown), []).append(agent)
    if not groups:
        return ""
    if len(groups) == 1:
        return f"all={next(iter(groups))}"
    order = list(groups)
    largest = max(order, key=lambda d: (len(groups[d]), -order.index(d)))
    if sum(len(v) == len(groups[largest]) for v in groups.values()) > 1:
        largest = None  # no majority: name every seat
    parts = [f"{'+'.join(names.get(a, a) for a in groups[desc])}={desc}" for desc in order if desc != largest]
    if largest is not None:
        parts.append(f"others={largest}")
    return ", ".join(parts)
