"""The fields of a retrospective interview, shared by the environments that record one
(SovSim at the end of a game, SCARCE at the end of each subrun).

An interview is asked of one agent after play, from its own memory only (the events
it could see, :meth:`~.base.EventEnvelope.visible_for`); its answer is a
**researcher-only** event: no agent sees it, then or later. Each environment declares
its own ``interview`` kind on these fields (:class:`scarce_lab.environments.sovsim.events.Interview`,
:class:`scarce_lab.environments.scarce.events.Interview`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from .base import DecisionFields, Visibility

#: The self-assessments an interview answer chooses from (the say-do analytics compare
#: them with the agent's actions, :mod:`scarce_lab.analysis.saydo`).
SELF_ASSESSMENTS = ("cooperative", "fair", "self_interested")


class InterviewFields(DecisionFields):
    """One agent's retrospective interview.

    Attributes:
        answered_by: ``model`` (a language model answered from its memory) or
            ``scripted`` (a scripted policy: the answer is the policy's rule, written
            by scarce_lab, never a model's words) or ``human`` (a person answered at a
            front end; ``latency_s`` the seconds taken).
        model: the model string of the agent interviewed.
        questions: the name of the interview template asked (``interview_v1``).
        explanation: how the agent explains its own play (empty when no valid answer).
        view_of_others: its view of the other agents (empty when no valid answer).
        self_assessment: ``cooperative``, ``fair`` or ``self_interested``; ``None``
            when no valid answer (a fallback is never an assessment) or when a scripted
            policy has no single one (``random``).
        memory_events: how many events the agent's memory held (what it was shown).
        missing: no call got an answer (transport failure, over the context): nothing
            was answered and nothing is made up; the run goes on (the game is over).
    """

    default_visibility: ClassVar[Visibility] = Visibility.researcher
    answered_by: Literal["model", "scripted", "human"]
    model: str
    questions: str
    explanation: str = ""
    view_of_others: str = ""
    self_assessment: str | None = None
    memory_events: int = 0
    missing: bool = False
