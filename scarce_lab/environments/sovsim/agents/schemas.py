"""Typed decisions of a SovSim agent (pydantic; the JSON schema the model must follow).

Small integer ranges are enumerated (:func:`~scarce_lab.llm.decisions.int_choice`)
because the embedded model's grammar ignores ``minimum``/``maximum``/``multipleOf``
(see docs/embedded_model.md). The ``reasoning`` field comes first so the number is
generated after the model's short rationale; it is capped at
:data:`REASONING_MAX_CHARS` characters.

Both schemas derive from :class:`~scarce_lab.llm.decisions.DecisionModel`: strict
JSON types (no booleans as numbers, no numeric strings, no ``15.0`` for 15), the one
policy of every decision schema; extra keys are rejected.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import ConfigDict, Field, create_model

from scarce_lab.llm.decisions import DecisionModel, int_choice, register_decision_family

#: Longest rationale accepted (characters). The client's max_tokens leaves room beyond it.
REASONING_MAX_CHARS = 120

#: Largest announced pool accepted in kcpr_m (the paper's 0..999 range).
ANNOUNCE_MAX = 999


class ExtractionDecision(DecisionModel):
    """Base class of the extraction schemas: ``extraction`` in pool units."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(..., max_length=REASONING_MAX_CHARS)
    extraction: int


class AnnouncementDecision(DecisionModel):
    """The king's public claim about the pool (kcpr_m), an integer 0..999.

    The bounds are validated here (the grammar cannot enforce them); an answer out of
    range is a recorded violation, then repair, then the fallback.
    """

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(..., max_length=REASONING_MAX_CHARS)
    announced_pool: int = Field(..., ge=0, le=ANNOUNCE_MAX)


@lru_cache(maxsize=256)
def extraction_schema(max_extraction: int, step: int = 3) -> type[ExtractionDecision]:
    """Schema whose ``extraction`` is one of ``0, step, ..., max_extraction`` (pool units).

    Args:
        max_extraction: the agent's cap this phase (pool units, a multiple of ``step``).

    Raises:
        ValueError: ``max_extraction`` negative or not a multiple of ``step``.
    """
    if max_extraction < 0 or max_extraction % step:
        raise ValueError(f"max_extraction must be a non-negative multiple of {step}, got {max_extraction!r}")
    values = tuple(range(0, max_extraction + 1, step))
    return create_model(  # type: ignore[call-overload]
        f"Extraction0to{max_extraction}",
        __base__=ExtractionDecision,
        extraction=(int_choice(values), Field(..., description=f"multiple of {step} from 0 to {max_extraction}")),
    )


@lru_cache(maxsize=64)
def announcement_schema(announce_max: int = ANNOUNCE_MAX) -> type[AnnouncementDecision]:
    """Schema whose ``announced_pool`` is an integer ``0..announce_max`` (the legal
    announcements of the observation, :attr:`scarce_lab.environments.sovsim.world.commons.Observation.legal`);
    :class:`AnnouncementDecision` itself for the paper's 0..999.

    Raises:
        ValueError: ``announce_max`` negative.
    """
    if announce_max < 0:
        raise ValueError(f"announce_max must be >= 0, got {announce_max!r}")
    if announce_max == ANNOUNCE_MAX:
        return AnnouncementDecision
    return create_model(  # type: ignore[call-overload]
        f"Announcement0to{announce_max}", __base__=AnnouncementDecision,
        announced_pool=(int, Field(..., ge=0, le=announce_max)),
    )


class TalkDecision(DecisionModel):
    """Base class of the talk schemas: ``message`` (``""`` = stay silent) and, under
    ``talk: public+private``, ``to`` (the recipients' names; empty = to everyone)."""

    model_config = ConfigDict(extra="forbid")

    message: str


@lru_cache(maxsize=256)
def talk_schema(max_chars: int, recipients: tuple[str, ...] = ()) -> type[TalkDecision]:
    """Schema of one talk turn: ``message`` of at most ``max_chars`` characters and, when
    ``recipients`` (the names the speaker may address privately) are given, ``to``: a
    list of them (empty for a public message).

    Raises:
        ValueError: ``max_chars`` < 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars!r}")
    fields: dict = {"message": (str, Field(..., max_length=max_chars,
                                           description=f'what you say (at most {max_chars} characters; "" to stay silent)'))}
    if recipients:
        fields["to"] = (list[Literal[recipients]],  # type: ignore[valid-type]
                        Field(..., description="names of the recipients of a private message; [] for everyone"))
    return create_model(  # type: ignore[call-overload]
        f"Talk{max_chars}{'Private' if recipients else ''}", __base__=TalkDecision, **fields,
    )


register_decision_family(
    "sovsim.extraction", ExtractionDecision, {"reasoning": "r", "extraction": 9}, lambda: extraction_schema(30)
)
register_decision_family("sovsim.announcement", AnnouncementDecision, {"reasoning": "r", "announced_pool": 120})
register_decision_family("sovsim.talk", TalkDecision, {"message": "let us each take 9"}, lambda: talk_schema(200))
