"""Typed decisions of the Economy of Minds partial agents (EoM sec. 3.3): a note-only
step and a step that may give the final answer.

Both derive from :class:`~scarce_lab.llm.decisions.DecisionModel`: strict JSON types
(the one policy of every decision schema; e.g. ``"answer": 42`` is not the string
``"42"``). Extra keys are ignored. The schema's description is left out of the JSON
schema: small models copy it into their answer.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from scarce_lab.llm.decisions import DecisionModel, register_decision_family


def _no_description(schema: dict, _cls) -> None:
    # small models copy a schema's description into their answer; keep it out
    schema.pop("description", None)


class NoteDecision(DecisionModel):
    """A note-only step (plan, compute, check)."""

    model_config = ConfigDict(json_schema_extra=_no_description)

    note: str = Field(max_length=120)


class AnswerDecision(DecisionModel):
    """A step that may end the episode with a final answer (answer, full)."""

    model_config = ConfigDict(json_schema_extra=_no_description)

    note: str = Field(max_length=120)
    answer: str = Field(max_length=16)


register_decision_family("economy.note", NoteDecision, {"note": "carry the 1"})
register_decision_family("economy.answer", AnswerDecision, {"note": "done", "answer": "42"})
