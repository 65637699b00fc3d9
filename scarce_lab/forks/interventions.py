"""What a fork changes at its step: one typed intervention (a pydantic union on ``kind``).

Kinds (the environment says which it supports and checks a fork before any run starts,
``EnvironmentSpec.fork_check``):

- ``none``: nothing; the continuation only re-seeds (the baseline of every effect);
- ``replace_message(agent, text)``: the agent's message at the fork step is ``text``;
- ``replace_decision(agent, decision)``: the agent's decision at the fork step is
  ``decision`` (the fields of the environment's decision, e.g. ``{"value": 9}``);
- ``seat_model(seat, model)``: a seat plays ``model`` from the fork step on;
- ``rule(setting, value)``: a rule (a dotted config key, or a rule the environment
  names) takes ``value`` from the fork step on;
- ``remove_agent(agent)``: the agent leaves at the fork step;
- ``add_agent(model, role=None)``: a newcomer joins at the fork step.

Text form (``scarce-lab fork --intervene``): ``KIND`` or ``KIND:key=value,key=value``,
each value read as YAML with the YAML 1.2 core schema's scalars, as ``-S`` reads them
(:func:`scarce_lab.data.yamlcore.load_yaml`: ``010`` is 10, ``off`` and ``1:30`` stay
text) (``rule:setting=talk,value=public``,
``replace_decision:agent=a1,decision={value: 9}``); ``text=`` comes last and takes the
rest of the line as the message, commas and ``=`` included
(``replace_message:agent=a2,text=I take 5, you=3?``); a key given twice is refused;
:func:`parse_intervention`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class _Kind(BaseModel):
    """What every intervention shares: closed (an unknown field is an error), frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoIntervention(_Kind):
    """Nothing changes: the continuation is the parent's game re-seeded (seed 0: the parent)."""

    kind: Literal["none"] = "none"


class ReplaceMessage(_Kind):
    """``agent``'s message at the fork step is ``text`` (what the others are shown)."""

    kind: Literal["replace_message"] = "replace_message"
    agent: str = Field(min_length=1)
    text: str


class ReplaceDecision(_Kind):
    """``agent``'s decision at the fork step is ``decision`` (environment's decision fields)."""

    kind: Literal["replace_decision"] = "replace_decision"
    agent: str = Field(min_length=1)
    decision: dict[str, Any]


class SeatModel(_Kind):
    """The seat ``seat`` (an agent id or a seat alias the environment names) plays ``model``
    from the fork step on."""

    kind: Literal["seat_model"] = "seat_model"
    seat: str = Field(min_length=1)
    model: str = Field(min_length=1)


class Rule(_Kind):
    """The rule ``setting`` takes ``value`` from the fork step on."""

    kind: Literal["rule"] = "rule"
    setting: str = Field(min_length=1)
    value: Any


class RemoveAgent(_Kind):
    """``agent`` leaves at the fork step."""

    kind: Literal["remove_agent"] = "remove_agent"
    agent: str = Field(min_length=1)


class AddAgent(_Kind):
    """A newcomer playing ``model`` (in ``role``, the environment's default when ``None``)
    joins at the fork step."""

    kind: Literal["add_agent"] = "add_agent"
    model: str = Field(min_length=1)
    role: str | None = None



Intervention = Annotated[
    NoIntervention | ReplaceMessage | ReplaceDecision | SeatModel | Rule | RemoveAgent | AddAgent,
    Field(discriminator="kind"),
]
#: Every kind's name, in the order above.
KINDS: tuple[str, ...] = ("none", "replace_message", "replace_decision", "seat_model", "rule", "remove_agent",
                          "add_agent")
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Intervention)


def as_intervention(value: Any) -> Any:
    """``value`` (an intervention, a dict with ``kind``, or the text form) as a typed
    intervention.

    Raises:
        ValueError: an unknown kind, a missing or unknown field (named), or bad text.
    """
    if isinstance(value, _Kind):
        return value
    if isinstance(value, str):
        return parse_intervention(value)
    try:
        return _ADAPTER.validate_python(value)
    except ValidationError as exc:
        raise ValueError(_describe(exc, value)) from None


def parse_intervention(text: str) -> Any:
    """The text form (module docstring) as a typed intervention.

    Raises:
        ValueError: an unknown kind (the kinds are listed), a part that is not
            ``key=value``, or a field the kind does not take or lacks (named).
    """
    import yaml

    from ..data.yamlcore import load_yaml

    kind, _, rest = text.lstrip().partition(":")
    kind = kind.rstrip()
    if kind not in KINDS:
        raise ValueError(f"--intervene {text!r}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    fields: dict[str, Any] = {"kind": kind}
    # a message is free text: ``text=`` takes the rest of the line (so a message may hold
    # ``, key=`` without being cut into fields)
    rest, has_text, message = rest.partition("text=") if re.match(r"(?:.*,)?\s*text=", rest, re.S) else (rest, "", "")
    if has_text and rest.strip() and not rest.rstrip().endswith(","):
        raise ValueError(f"--intervene {text!r}: {rest!r} before text= is not key=value,")
    rest = rest.rstrip().removesuffix(",")
    for part in (re.split(r",(?=\s*\w+\s*=)", rest) if rest.strip() else []) + (["text=" + message] if has_text else []):
        key, sep, raw = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--intervene {text!r}: {part!r} is not key=value")
        if key.strip() in fields:  # never the last one silently
            raise ValueError(f"--intervene {text!r}: {key.strip()!r} is given twice")
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        # a message or a model is text whatever YAML reads in it
        fields[key.strip()] = raw if key.strip() == "text" else \
            raw.strip() if key.strip() in ("model", "agent", "seat", "setting") else value
    try:
        return _ADAPTER.validate_python(fields)
    except ValidationError as exc:
        hint = ("; text= takes the rest of the line as the message: put it last"
                if has_text and re.search(r",\s*\w+\s*=", message) else "")
        raise ValueError(f"--intervene {text!r}: {_describe(exc, fields)}{hint}") from None


def _describe(exc: ValidationError, value: Any) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"][1:]) or "kind"
        parts.append(f"{loc}: {err['msg']}")
    kind = value.get("kind") if isinstance(value, dict) else None
    return f"intervention {kind!r}: " + "; ".join(parts)
