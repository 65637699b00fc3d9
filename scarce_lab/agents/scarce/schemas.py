"""Typed decisions of the SCARCE agents: the negotiator's four phases (declaration,
public reasoning, private message, bid revision, ballot) and the solver's actions
(a JSON action, or the arguments of a native tool call).

Every schema derives from :class:`~scarce_lab.llm.decisions.DecisionModel`: strict
JSON types (no booleans as numbers, no numeric strings, no ``15.0`` for 15), the one
policy of every decision schema. Extra keys are ignored (only the fields below are
read). Enumerated integers use :func:`~scarce_lab.llm.decisions.int_choice`.

Units: ``*_seconds`` seconds; ``bid_price`` and ``price`` credits. Range checks
(position, slot cap, budget) are applied by the negotiator as documented clamps, not
here (see :mod:`.negotiators`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, create_model

from ...llm.decisions import DecisionModel, DecisionPart, int_choice, register_decision_family

Tool = Literal[
    "list_files", "read_file", "write_file", "request_execution_slot",
    "run_command", "save_persistent_memory", "submit",
]
TOOLS: tuple[str, ...] = Tool.__args__  # type: ignore[attr-defined]


def _lit(values: list | tuple) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


# -- negotiator ---------------------------------------------------------------------
class SlotDeclarationBase(DecisionModel):
    """Root of the declaration schemas (phase 1): desired position (1..n), desired
    duration (seconds) and bid price (credits)."""


@lru_cache(maxsize=64)
def _declaration_schema(n: int) -> type[SlotDeclarationBase]:
    return create_model(
        "SlotDeclaration",
        __base__=SlotDeclarationBase,
        desired_position=(int_choice(list(range(1, n + 1))), ...),
        desired_duration_seconds=(int, ...),
        bid_price=(int, ...),
    )


def declaration_schema(n: int) -> type[SlotDeclarationBase]:
    """Declaration schema for ``n`` participants (``desired_position`` in 1..n).

    Raises:
        ValueError: ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"a declaration needs at least one participant, got n={n!r}")
    return _declaration_schema(int(n))


class ReasoningText(DecisionModel):
    """Phase 2 answer. ``max_tokens`` leaves room beyond ``max_length`` (digits are
    one token each for the embedded model)."""

    reasoning: str = Field(max_length=240)


class PrivateMessageBase(DecisionModel):
    """Root of the private-message schemas (phase 3): a recipient or ``nobody``,
    and the text."""


@lru_cache(maxsize=256)
def _private_schema(others: tuple[str, ...]) -> type[PrivateMessageBase]:
    return create_model(
        "PrivateMessageChoice",
        __base__=PrivateMessageBase,
        to=(_lit([*others, "nobody"]), ...),
        text=(str, Field(max_length=200)),
    )


def private_schema(others: list[str]) -> type[PrivateMessageBase]:
    """Private-message schema whose recipient is one of ``others`` or ``nobody``."""
    return _private_schema(tuple(others))


class Revision(DecisionModel):
    """Bid revision (revisable-bid mechanism): the new bid in credits."""

    bid_price: int


class SlotBallotBase(DecisionModel):
    """Root of the ballot schemas (phase 4): one line per participant."""


@lru_cache(maxsize=256)
def _ballot_schema(names: tuple[str, ...]) -> type[SlotBallotBase]:
    entry = create_model(
        "BallotLine", __base__=DecisionPart, worker=(_lit(names), ...), duration_seconds=(int, ...), price=(int, ...)
    )
    return create_model(
        "SlotBallot",
        __base__=SlotBallotBase,
        entries=(list[entry], Field(min_length=len(names), max_length=len(names))),
    )


def ballot_schema(names: list[str]) -> type[SlotBallotBase]:
    """Ballot schema over the participants ``names`` (exactly one line each)."""
    return _ballot_schema(tuple(names))


# -- solver ---------------------------------------------------------------------------
class SolverAction(DecisionModel):
    """One tool call. Only the fields the tool needs are read; also the schema of a
    native tool call's arguments (``tool`` is the call's name).

    Units: ``duration_seconds`` seconds (clamped by the runner to 1..slot cap).
    """

    tool: Tool
    path: str = ""
    content: str = ""
    command: str = ""
    duration_seconds: int = 60
    reason: str = ""
    text: str = ""

    def describe(self) -> str:
        """Short text of the call for transcripts."""
        if self.tool in ("read_file", "write_file"):
            return f"{self.tool}({self.path!r})"
        if self.tool == "run_command":
            return f"run_command({self.command[:120]!r})"
        if self.tool == "request_execution_slot":
            return f"request_execution_slot({self.duration_seconds}, {self.reason[:80]!r})"
        if self.tool == "save_persistent_memory":
            return f"save_persistent_memory({self.text[:80]!r})"
        return f"{self.tool}()"


class JsonAction(DecisionModel):
    """The schema-constrained JSON action (models without native tool calling).

    String limits keep the decoding grammar small (a 6,000-character limit made a
    60 kB grammar for the embedded model) and leave room in ``max_tokens``; the
    runner truncates nothing else. Converted to :class:`SolverAction`.
    """

    tool: Tool
    path: str = Field("", max_length=80)
    content: str = Field("", max_length=600)
    command: str = Field("", max_length=160)
    duration_seconds: int = 60
    reason: str = Field("", max_length=120)
    text: str = Field("", max_length=160)


register_decision_family(
    "scarce.declaration", SlotDeclarationBase,
    {"desired_position": 2, "desired_duration_seconds": 60, "bid_price": 10}, lambda: declaration_schema(3),
)
register_decision_family("scarce.reasoning", ReasoningText, {"reasoning": "I need 60 s soon."})
register_decision_family(
    "scarce.private_message", PrivateMessageBase, {"to": "w1", "text": "may I go first?"},
    lambda: private_schema(["w1", "w2"]),
)
register_decision_family("scarce.revision", Revision, {"bid_price": 25})
register_decision_family(
    "scarce.ballot", SlotBallotBase,
    {"entries": [{"worker": "w0", "duration_seconds": 60, "price": 5},
                 {"worker": "w1", "duration_seconds": 30, "price": 0}]},
    lambda: ballot_schema(["w0", "w1"]),
)
register_decision_family(
    "scarce.solver_action", SolverAction, {"tool": "request_execution_slot", "duration_seconds": 30, "reason": "run"}
)
register_decision_family(
    "scarce.solver_json_action", JsonAction, {"tool": "run_command", "command": "ls", "duration_seconds": 30}
)
