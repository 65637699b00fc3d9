"""The event envelope shared by every environment, and the payload base class.

An event on disk is one JSON object per line of ``events.jsonl``::

    {"run_id": ..., "seq": 0, "round": 1, "phase": "extract", "agent": "a0",
     "kind": "extraction", "visibility": "private", "visible_to": ["a0"],
     "t": null, "payload": {...}}

``kind`` is the tag of the payload: each environment declares one pydantic model per
kind (``scarce_lab.environments.sovsim.events`` / ``scarce`` / ``economy``), and
:func:`scarce_lab.data.events.event_model` builds the envelope whose ``payload`` is the
tagged union of that environment's kinds. Readers validate every line against it, so a
payload that does not match its kind is an error naming the file and line.

Payload models forbid unknown fields and use exact JSON types (a JSON ``true`` is never
an integer, ``"15"`` is never a number). Dicts whose keys are agent names are stored as
lists of records (``[{"agent": "a0", "credits": 3}]``) so that every payload has a fixed
shape and loads into typed columns.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Version of the on-disk trajectory format (manifest, events, llm calls). Bump it with
#: every change of any event model, and add a migration in ``migrations.py``; the golden
#: schema test (``tests/data/test_trajectory_contract.py``) fails until both are done.
SCHEMA_VERSION = 7


class Visibility(StrEnum):
    """Who could see an event's content while the run was played.

    - ``public``: every agent of the run.
    - ``private``: only the agents listed in ``Event.visible_to`` (the acting agent; for
      a private message its sender and recipient).
    - ``researcher``: no agent (bookkeeping, grading, hidden state, the mechanism's
      own inputs such as ballots).
    """

    public = "public"
    private = "private"
    researcher = "researcher"


class Payload(BaseModel):
    """Base of every event payload: strict, closed, tagged by ``kind``.

    Subclasses set ``kind: Literal["..."] = "..."``; ``round_meaning`` on the
    environment's module says what ``Event.round`` counts.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=False)

    #: Default visibility of this kind (the recorder uses it unless told otherwise).
    default_visibility: ClassVar[Visibility] = Visibility.public


class RoundCommitted(Payload):
    """Marker written by the recorder after the last event of a durable round
    (SovSim round, SCARCE contention or subrun end, Economy episode). Events after the
    last marker belong to an unfinished round and are dropped on resume."""

    kind: Literal["round_committed"] = "round_committed"
    default_visibility: ClassVar[Visibility] = Visibility.researcher


class EventEnvelope(BaseModel):
    """Fields every event has, whatever its environment.

    Attributes:
        run_id: the run's id (as in its manifest).
        seq: 0-based position in the run's event stream (strictly increasing).
        round: the environment's unit of durability: SovSim round (1-based; 0 = setup),
            SCARCE contention index (run-wide, 0-based; solver events between
            contentions carry the next contention's index), Economy episode index
            (training episodes first, then frozen evaluation). ``None`` where none applies.
        phase: protocol phase within the round (environment-specific names).
        agent: the acting agent, or ``None`` for the environment itself.
        kind: the payload's tag.
        visibility: who could see the content during the run (:class:`Visibility`).
        visible_to: the agents who could see a ``private`` event (empty otherwise).
        t: environment clock in seconds since the (sub)run started, where the
            environment has one (SCARCE); ``None`` elsewhere.
    """

    #: strict JSON types, as for payloads: ``"seq": true`` or ``"round": "1"`` is an
    #: error naming the line, not a silent 1 (an integer is accepted for ``t``)
    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str
    seq: int = Field(ge=0)
    round: int | None = None
    phase: str = ""
    agent: str | None = None
    kind: str
    visibility: Visibility = Field(Visibility.public, strict=False)  # its value, from JSON text
    visible_to: list[str] = Field(default_factory=list)
    t: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _tag_payload(cls, data: Any) -> Any:
        """Copy the envelope's ``kind`` into the payload (its union discriminator), so a
        payload on disk does not repeat its kind."""
        if isinstance(data, dict) and isinstance(data.get("payload"), dict) and "kind" in data:
            payload = data["payload"]
            if "kind" not in payload:
                data = {**data, "payload": {**payload, "kind": data["kind"]}}
        return data

    @model_validator(mode="after")
    def _check_visibility(self) -> EventEnvelope:
        if self.visibility == Visibility.private and not self.visible_to:
            raise ValueError("a private event needs visible_to (the agents who saw it)")
        if self.visibility != Visibility.private and self.visible_to:
            raise ValueError(f"visible_to is only for private events, got {self.visibility.value!r}")
        payload = getattr(self, "payload", None)
        if payload is not None and getattr(payload, "kind", self.kind) != self.kind:
            raise ValueError(f"kind {self.kind!r} does not match its payload ({payload.kind!r})")
        return self

    def dump_line(self) -> str:
        """One JSON line (without newline); the payload's ``kind`` is not repeated."""
        return self.model_dump_json(exclude={"payload": {"kind"}})

    def visible_for(self, agent: str) -> bool:
        """True when ``agent`` could see this event during the run."""
        if self.visibility == Visibility.public:
            return True
        return self.visibility == Visibility.private and agent in self.visible_to


class DecisionFields(Payload):
    """How an agent's decision came about (every environment's decision payloads).

    Attributes:
        valid: a model answer (first or repaired) validated; always true for scripted
            policies.
        repaired: the first answer was invalid and the repair answer validated.
        fallback_used: no valid answer: the environment's documented fallback applied
            (its value is in the payload, and it is *not* the agent's choice).
        violation: the first validation or protocol error, if any (text).
        outcome: the outcome of the decision's last model call (``ok``, ``invalid``,
            ``truncated``, ``refusal``, ``empty``, ``tool_call``, ...); ``None`` for
            scripted policies.
        call_ids: the ``call_id`` of each model call behind the decision, in order
            (first call, then a repair or resend), as in ``llm_calls.jsonl``; empty for
            scripted policies and for files written before schema version 4 (never
            guessed). :func:`scarce_lab.data.tables.calls.decision_calls` joins them.
    """

    valid: bool = True
    repaired: bool = False
    fallback_used: bool = False
    violation: str | None = None
    outcome: str | None = None
    call_ids: list[str] = Field(default_factory=list)
