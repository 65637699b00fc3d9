"""Question/answer task for partial LLM agents: the population writes short notes on a
shared scratchpad until one agent gives a final answer (EoM sec. 4, math reasoning:
one agent acts per step and only the answer step ends the episode).

Works for the generated arithmetic problems (:mod:`.arithmetic`) and for a user's JSONL
of question/answer pairs (read by the runner; this module does no I/O).

Reward (credits): ``reward`` if the final answer is correct, else 0; the episode ends at
the first final answer or after ``max_steps`` steps. Step kinds (for specialisation):
:func:`step_kind`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .engine import StepResult

CAPABILITIES: tuple[str, ...] = ("plan", "compute", "check", "answer")


@dataclass(frozen=True)
class QAItem:
    """One problem: ``answer`` as text (numbers are compared numerically)."""

    question: str
    answer: str
    item_id: str = ""


@dataclass(frozen=True)
class Contribution:
    """One agent's step: a short note and, for answer-capable agents, a final answer."""

    capability: str
    text: str
    answer: str | None = None

    def to_json(self) -> dict:
        return {"capability": self.capability, "text": self.text, "answer": self.answer}


@dataclass(frozen=True)
class QAObs:
    """What agents see: the question and the notes so far ``(capability, text)``."""

    question: str
    notes: tuple[tuple[str, str], ...]
    step: int


def step_kind(obs: QAObs) -> str:
    """The step kind of an observation with notes (a question's, a program's):
    ``start`` before any note, else ``after_<capability>`` of the last note."""
    return f"after_{obs.notes[-1][0]}" if obs.notes else "start"


_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def normalize_answer(text: str) -> str:
    """Canonical form of an answer: the last number in it if any, else lower-cased words."""
    text = (text or "").strip().replace(",", "")
    nums = _NUM.findall(text)
    if nums:
        v = float(nums[-1])
        return str(int(v)) if v.is_integer() else str(v)
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def answers_match(given: str, expected: str) -> bool:
    """Whether ``given`` matches ``expected`` after :func:`normalize_answer`."""
    return normalize_answer(given) == normalize_answer(expected) and normalize_answer(given) != ""


class QATask:
    """One QA problem as a :class:`~.engine.TaskEnv`."""

    def __init__(self, item: QAItem, *, reward: int = 100, max_steps: int = 6):
        if not item.question.strip():
            raise ValueError("question must not be empty")
        if not isinstance(reward, int) or reward < 0:
            raise ValueError(f"reward must be an int >= 0 credits, got {reward!r}")
        self.item = item
        self.reward = reward
        self.max_steps = max_steps
        self.notes: list[tuple[str, str]] = []
        self.final_answer: str | None = None
        self.done = False

    def observe(self) -> QAObs:
        return QAObs(self.item.question, tuple(self.notes), len(self.notes))

    def step_kind(self, obs: QAObs) -> str:
        return step_kind(obs)

    def apply(self, action: Contribution) -> StepResult:
        """Append the note; a non-empty ``answer`` ends the episode and is graded.

        Raises:
            RuntimeError: the episode is already done.
            TypeError: ``action`` is not a :class:`Contribution`.
        """
        if self.done:
            raise RuntimeError("episode is done")
        if not isinstance(action, Contribution):
            raise TypeError(f"action must be a Contribution, got {type(action).__name__}")
        self.notes.append((action.capability, action.text))
        if action.answer is not None and str(action.answer).strip():
            self.done = True
            self.final_answer = str(action.answer)
            ok = answers_match(self.final_answer, self.item.answer)
            return StepResult(self.reward if ok else 0, True, ok, {"answer": self.final_answer})
        return StepResult(0, False, False)
