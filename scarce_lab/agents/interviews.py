"""Retrospective interviews: after play, an agent explains its play and its view of
the others, from its own memory only.

- **Memory** (:func:`memory_of`): the events of the run the agent could see while it
  played (:meth:`~scarce_lab.data.events.EventEnvelope.visible_for`: public events and
  private ones addressed to it, its own decisions included), never a researcher-only
  event (another agent's ballot, hidden state, an earlier interview) nor another
  agent's private message. Only the last :data:`MEMORY_EVENTS` are shown (the
  embedded model reads 4,096 tokens); the answer records how many it held.
- **Questions**: the environment's template, a Jinja file beside its agents that it
  passes to :func:`interview_messages` (version :data:`QUESTIONS`), answered as
  :class:`InterviewAnswer` (explanation, view of the others, a self-assessment among
  :data:`~scarce_lab.data.events.interview.SELF_ASSESSMENTS`).
- **Models** answer through their :class:`~scarce_lab.llm.model.Model` (so the calls
  are recorded with call ids like every other call, purpose ``interview``). An
  unusable answer records ``fallback_used`` with no text and no assessment (a fallback
  is never an answer); no answer at all records ``missing`` and the run goes on.
- **Scripted policies** get no model: their answer is labelled ``answered_by:
  scripted`` and is their rule (the policy's docstring, written by scarce_lab) and, where
  the rule has one, the assessment it implies (each environment's agents keep the table
  of their rules' assessments); never presented as a model's words.

The answer is recorded as a researcher-only ``interview`` event by the runner; no agent
is shown it, then or later (``tests/agents/test_interviews.py`` plants a canary).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import ConfigDict, Field

from ..data.events import DecisionFields, EventEnvelope
from ..data.events.interview import SELF_ASSESSMENTS
from ..llm.decisions import DecisionModel, register_decision_family
from ..llm.quoting import dumps, template_env

#: the version of the questions (the templates' name in the records)
QUESTIONS = "interview_v1"
#: events of its memory an agent is shown at most (the most recent ones)
MEMORY_EVENTS = 40
#: characters of one memory line at most
LINE_CHARS = 240
#: answer tokens of an interview
MAX_TOKENS = 220


class InterviewAnswer(DecisionModel):
    """A model's interview answer (strict JSON types, closed)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    explanation: str = Field(max_length=600)
    view_of_others: str = Field(max_length=600)
    self_assessment: Literal["cooperative", "fair", "self_interested"]


register_decision_family("interview", InterviewAnswer,
                         {"explanation": "I took a fair share.", "view_of_others": "They did too.",
                          "self_assessment": "fair"})
assert tuple(InterviewAnswer.model_fields["self_assessment"].annotation.__args__) == SELF_ASSESSMENTS


@lru_cache(maxsize=8)
def _env(folder: Path) -> jinja2.Environment:
    return template_env(folder, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)


_DECISION_KEYS = set(DecisionFields.model_fields) | {"kind", "subrun"}


def memory_of(agent: str, events: Iterable[EventEnvelope]) -> list[EventEnvelope]:
    """The events ``agent`` could see while it played, in order (see the module
    docstring): public ones, private ones whose ``visible_to`` names it, and its own
    decisions (its ballot is researcher-only as an input of the mechanism, but it cast
    it). Never an interview (its own earlier ones included) nor a commit marker."""
    return [e for e in events if e.kind not in ("round_committed", "interview")
            and (e.visible_for(agent) or (e.agent == agent and isinstance(e.payload, DecisionFields)))]


def memory_line(e: EventEnvelope, names: dict[str, str] | None = None, me: str | None = None) -> str:
    """One event as a line of the agent's memory (its payload as compact JSON, the
    decision bookkeeping left out, escaped by :func:`~scarce_lab.llm.quoting.dumps`; agent
    ids renamed by ``names``; the agent itself is "you"). At most :data:`LINE_CHARS` characters:
    long texts are cut inside the JSON, so the line stays JSON."""
    names = names or {}

    def who(a: str | None) -> str:
        return "you" if a is not None and a == me else names.get(a or "", a or "the game")

    body = {k: v for k, v in e.payload.model_dump(mode="json").items() if k not in _DECISION_KEYS}
    head = f"round {e.round} {e.kind}" + (f" by {who(e.agent)}" if e.agent else "")
    chars = LINE_CHARS
    while True:  # long texts cut inside the JSON (it stays JSON), halving until the line fits
        text = dumps(_cut(body, chars))
        for a, n in names.items():
            text = text.replace(f'"{a}"', f'"{n}"')
        line = f"{head}: {text}"
        if len(line) <= LINE_CHARS or chars < 8:
            return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 3] + "..."
        chars //= 2


def _cut(value: Any, chars: int) -> Any:
    """``value`` with every string longer than ``chars`` cut to ``chars`` characters and "..."."""
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + "..."
    if isinstance(value, list):
        return [_cut(v, chars) for v in value]
    if isinstance(value, dict):
        return {k: _cut(v, chars) for k, v in value.items()}
    return value


def interview_messages(template: Path, memory: list[EventEnvelope], *, me: str,
                       names: dict[str, str] | None = None, **context: Any) -> list[dict[str, str]]:
    """The interview prompt (one user message): the environment's ``template`` (a Jinja
    file, rendered strictly with ``trim_blocks`` and ``lstrip_blocks``) with ``me`` (the
    agent's name in the prompt), ``memory`` (the lines of the last
    :data:`MEMORY_EVENTS` events of ``memory``, by :func:`memory_line` with ``names``
    and ``context["agent_id"]`` as "you"), ``shown`` and ``total`` (how many events are
    shown, of how many) and ``context``.

    Raises:
        jinja2.TemplateNotFound: no file ``template``.
        jinja2.UndefinedError: the template needs a variable not given.
    """
    shown = memory[-MEMORY_EVENTS:]
    lines = [memory_line(e, names, context.get("agent_id")) for e in shown]
    text = _env(Path(template).parent).get_template(Path(template).name).render(
        me=me, memory=lines, shown=len(shown), total=len(memory), **context)
    return [{"role": "user", "content": text.strip()}]


def scripted_answer(model: str, rule: str | Callable[..., Any] | None, *,
                    assessment: str | None = None) -> dict[str, Any]:
    """The labelled answer of the scripted policy ``model``: its rule (a text, or a
    policy function whose docstring states it) and ``assessment``, the self-assessment
    the rule implies (one of :data:`~scarce_lab.data.events.interview.SELF_ASSESSMENTS`;
    the environment's agents look it up in their own table; ``None`` where the rule
    implies none).

    Raises:
        ValueError: ``assessment`` is not a self-assessment.
    """
    if assessment is not None and assessment not in SELF_ASSESSMENTS:
        raise ValueError(f"assessment {assessment!r} is not one of {SELF_ASSESSMENTS}")
    text = rule if isinstance(rule, str) or rule is None else getattr(rule, "__doc__", None)
    doc = " ".join((text or "").split())
    rule = f"scripted policy {model}, not a model: its rule is: {doc}" if doc else \
        f"scripted policy {model}, not a model (no rule text)"
    return {"answered_by": "scripted", "model": model, "questions": QUESTIONS, "explanation": rule[:600],
            "view_of_others": "(a scripted policy holds no view of the others)",
            "self_assessment": assessment, "valid": True, "outcome": None}


async def amodel_answer(lm: Any, messages: list[dict[str, str]], *, seed: int, agent: str,
                        round: int | None) -> tuple[dict[str, Any], list[Any]]:
    """Ask ``lm`` (a :class:`~scarce_lab.llm.model.Model` of a model, not a policy) the
    interview; returns the payload fields and the call records (to record).
    Never raises for an unusable or missing answer: those are recorded as such."""
    from ..llm.model import DecisionRequest

    fallback = InterviewAnswer(explanation="", view_of_others="", self_assessment="fair")  # never recorded as an answer
    out = await lm.adecide(DecisionRequest(schema=InterviewAnswer, fallback=fallback, seed=seed, messages=messages,
                                           purpose="interview", agent=agent, round=round, max_tokens=MAX_TOKENS))
    human = lm.ref.kind == "human"
    fields: dict[str, Any] = {"answered_by": "human" if human else "model", "model": lm.name, "questions": QUESTIONS,
                              "valid": bool(out.valid), "repaired": bool(out.repaired),
                              "fallback_used": bool(out.fallback_used), "violation": out.violation,
                              "outcome": out.outcome, "call_ids": [c.call_id for c in out.calls]}
    if human:
        fields["latency_s"] = float(f"{out.latency_s or 0.0:.3f}")  # (`round` is the game round here)
    if getattr(out, "missing", False):
        fields.update(missing=True, valid=False, fallback_used=False)
    elif out.valid and not out.fallback_used:
        d = out.decision
        fields.update(explanation=d.explanation, view_of_others=d.view_of_others, self_assessment=d.self_assessment)
    return fields, list(out.calls)
