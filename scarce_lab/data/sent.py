"""The recorded settings are the sent ones: each model call's parameters checked against
the condition settings that govern it, at the one gate every call record passes
(:meth:`scarce_lab.data.recorder.RunRecorder.record_calls`).

Which recorded setting governs a call (rule: a condition setting that maps to a request
parameter, ``temperature``, ``max_tokens`` or ``reasoning_effort``, must equal that
parameter in every call of the agents it governs):

- ``seats`` recorded as agent -> settings (SovSim's mixed population) governs that
  agent's calls; SCARCE's ``seats`` (worker -> ``{solver, negotiator, memory}``) governs
  the worker's ``solver`` calls by its solver part and its ``negotiation...`` calls by
  its negotiator part;
- the Economy's per-seat settings (``seats.<seat>.<name>``) govern the calls of the
  agents running that seat, when the runner tells the gate each agent's seat
  (``seat_of``: agent id -> seat key, ``None`` for an agent it does not know, whose
  calls are then not compared);
- else ``llm.<name>`` governs every call of the run;
- ``purpose_max_tokens`` (purpose -> tokens) governs ``max_tokens`` of the calls of
  that purpose (the Economy's program calls on a task directory).

A setting recorded ``None`` means the part's own per-decision default (e.g. SCARCE's
per-phase answer tokens) and is not compared; one recorded ``"not sent"``
(:data:`scarce_lab.llm.params.NOT_SENT`) must be absent from the call. ``max_tokens``
is compared on a decision's first call only (a truncated answer's resend asks for more,
:mod:`scarce_lab.llm.client`). A record without any ``params`` (a test double's; the
model client always records what it sent) is not compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: request parameters a condition setting can name (:data:`scarce_lab.llm.params.CONDITION_PARAMS`)
PARAMS: tuple[str, ...] = ("temperature", "max_tokens", "reasoning_effort")
#: the names litellm may send ``max_tokens`` under (:data:`scarce_lab.llm.params.RENAMES`)
_ALIASES = {"max_tokens": ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict",
                           "max_new_tokens")}
#: how a setting litellm drops is recorded (:data:`scarce_lab.llm.params.NOT_SENT`)
NOT_SENT = "not sent"


class SentSettingError(ValueError):
    """A call sent another value than the condition setting recorded for it."""


def governing(settings: dict[str, Any], agent: str | None, purpose: str,
              seat_of: Callable[[str], str | None] | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(where, name -> recorded value)`` of the settings that govern a call of
    ``agent`` for ``purpose``; ``None`` when the record holds none this module can map
    (see the module docstring)."""
    if any(k.startswith("seats.") for k in settings):
        seat = seat_of(agent or "") if seat_of is not None else None
        if seat is None:
            return None
        return f"seats.{seat}", {p: settings.get(f"seats.{seat}.{p}") for p in PARAMS}
    seats = settings.get("seats")
    if isinstance(seats, dict):
        seat = seats.get(agent or "")
        if not isinstance(seat, dict):
            return None
        if "solver" in seat or "negotiator" in seat:
            part = "solver" if purpose.startswith("solver") else (
                "negotiator" if purpose.startswith("negotiation") else None)
            if part is None or not isinstance(seat.get(part), dict):
                return None
            return f"seats.{agent}.{part}", {p: seat[part].get(p) for p in PARAMS}
        return f"seats.{agent}", {p: seat.get(p) for p in PARAMS}
    if not any(f"llm.{p}" in settings for p in PARAMS):
        return None
    return "llm", {p: settings.get(f"llm.{p}") for p in PARAMS}


def sent_mismatches(settings: dict[str, Any], call: Any,
                    seat_of: Callable[[str], str | None] | None = None) -> list[str]:
    """Each way ``call`` (an :class:`~scarce_lab.data.schema.LLMCallRecord`) departs
    from the condition settings that govern it, as readable lines (empty: it sent
    what is recorded)."""
    params = getattr(call, "params", None) or {}
    if not params:  # a test double that records no parameters (the model client always records them)
        return []
    found = governing(settings, getattr(call, "agent", None), getattr(call, "purpose", "") or "", seat_of)
    if found is None:
        return []
    where, wanted = found
    own = (settings.get("purpose_max_tokens") or {}).get(getattr(call, "purpose", "") or "")
    if own is not None:  # a purpose recorded with its own answer tokens
        where, wanted = where, {**wanted, "max_tokens": own}
    dropped = getattr(call, "dropped_params", None) or {}
    out = []
    for name, value in wanted.items():
        if value is None or (name == "max_tokens" and getattr(call, "attempt", 0)):
            continue
        keys = [k for k in _ALIASES.get(name, (name,)) if k in params]
        if value == NOT_SENT:
            if keys:
                out.append(f"{where}.{name} is recorded {NOT_SENT!r} but the call sent {keys[0]}={params[keys[0]]!r}")
            continue
        if keys:
            if params[keys[0]] != value:
                out.append(f"{where}.{name}={value!r} is recorded but the call sent {params[keys[0]]!r}")
        elif any(k in dropped for k in _ALIASES.get(name, (name,))):
            out.append(f"{where}.{name}={value!r} is recorded but litellm dropped it (not sent)")
        # else: sent under a provider's own name (e.g. ``thinking`` for an effort): not comparable here
    return out


def check_sent(settings: dict[str, Any], calls: list[Any],
               seat_of: Callable[[str], str | None] | None = None) -> None:
    """Raise when a call sent other settings than the record says.

    Raises:
        SentSettingError: naming the call (agent, purpose, call id), the recorded
            setting and the sent value.
    """
    for c in calls:
        bad = sent_mismatches(settings, c, seat_of)
        if bad:
            raise SentSettingError(
                f"call {getattr(c, 'call_id', '?')} (agent {getattr(c, 'agent', None)!r}, purpose "
                f"{getattr(c, 'purpose', '')!r}): " + "; ".join(bad) + " (the condition settings must record "
                "what each call sends)")
