"""Code evolution as an Economy task: the population edits one program; a verifier
scores it (the task-directory format of the authors' CloudCast task: an
``instruction.md``, the program in ``environment/``, an offline verifier in ``tests/``).

Pure: the verifier comes in as a callable ``verify(program text) -> Verdict``, read only
by its attributes (:class:`Verdict`; the runner passes one that runs the task's verifier
inside the sandbox and returns a :class:`scarce_lab.tasks.taskdir.Verification`); this
module does no I/O.

One episode: agents act in turn on a shared scratchpad. The capabilities of the
question-answer agents keep their roles: ``plan`` and ``check`` write notes,
``compute`` edits the program (its action carries the whole new program text),
``answer`` submits: the verifier runs on the current program and the episode ends with
its score in [0, 1] (``StepResult.info["score"]``; a verifier that gives no usable score
ends it with ``score`` None, which the reference rules count as
``missing_terminal_score``). An episode without a submission has no score.

Across episodes the program carries over (the reference's CloudCast
``preserve_workspace_across_episodes``): the next episode starts from the best-scoring
program so far (its best-snapshot rollback), and so does a replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .engine import StepResult
from .qa import step_kind

MAX_PROGRAM_BYTES = 256_000


class Verdict(Protocol):
    """What an episode reads of one verifier run: ``score`` in [0, 1] or None (no usable
    score), ``reason`` (the verifier's or the runner's) and ``to_json()``, the record of
    the run kept in :attr:`ProgramState.verifications` and the step's ``info``."""

    @property
    def score(self) -> float | None: ...

    @property
    def reason(self) -> str: ...

    def to_json(self) -> dict: ...


@dataclass(frozen=True)
class ProgramObs:
    """What agents see: the instruction, the current program, the notes
    ``(capability, text)`` so far, the step, and the best score so far (None before any)."""

    instruction: str
    program: str
    notes: tuple[tuple[str, str], ...]
    step: int
    best_score: float | None = None

    @property
    def question(self) -> str:
        """The instruction (the field the question-answer agents read)."""
        return self.instruction


@dataclass(frozen=True)
class ProgramEdit:
    """One agent's step: a note (``text``), for ``compute`` a new ``program`` (None: no
    edit), for ``answer`` a submission (``submit``)."""

    capability: str
    text: str
    program: str | None = None
    submit: bool = False

    def to_json(self) -> dict:
        """As a trajectory action: ``text`` is the new program for an edit, else the note;
        ``answer`` is ``submit`` for a submission."""
        return {"capability": self.capability, "text": self.program if self.program is not None else self.text,
                "answer": "submit" if self.submit else None}


@dataclass
class ProgramState:
    """What carries over between episodes: the program to start from and the best score."""

    program: str
    best_score: float | None = None
    verifications: list[dict] = field(default_factory=list)


class ProgramEpisode:
    """One episode on a program as a :class:`~.engine.TaskEnv`.

    Raises (from :meth:`apply`):
        RuntimeError: the episode is already done.
        TypeError: ``action`` is not a :class:`ProgramEdit`.
    """

    def __init__(self, instruction: str, state: ProgramState, verify: Callable[[str], Verdict], *,
                 max_steps: int):
        self.instruction = instruction
        self.state = state
        self.program = state.program
        self.verify = verify
        self.max_steps = max_steps
        self.notes: list[tuple[str, str]] = []
        self.done = False

    def observe(self) -> ProgramObs:
        return ProgramObs(self.instruction, self.program, tuple(self.notes), len(self.notes), self.state.best_score)

    def step_kind(self, obs: ProgramObs) -> str:
        return step_kind(obs)

    def apply(self, action: ProgramEdit) -> StepResult:
        if self.done:
            raise RuntimeError("episode is done")
        if not isinstance(action, ProgramEdit):
            raise TypeError(f"action must be a ProgramEdit, got {type(action).__name__}")
        invalid = False
        if action.program is not None:
            try:
                size = len(action.program.encode("utf-8"))
            except UnicodeEncodeError:  # e.g. lone surrogates from a model's reply
                size = -1
            if size < 0 or size > MAX_PROGRAM_BYTES or not action.program.strip():
                invalid = True  # refused: not UTF-8, empty or over the size bound; the program stays as it was
            else:
                self.program = action.program
        self.notes.append((action.capability, action.text[:400]))
        if not action.submit:
            return StepResult(0, False, False, {"invalid": True} if invalid else {})
        self.done = True
        v = self.verify(self.program)
        best = self.state.best_score
        if v.score is not None and (best is None or v.score > best):
            self.state.best_score = v.score
            self.state.program = self.program  # the best snapshot carries over
        self.state.verifications.append(v.to_json())
        # the trajectory's record of the verification: the submission step's graded answer
        shown = f"score={v.score!r}" if v.score is not None else f"score=none ({v.reason[:200]})"
        info = {"verification": v.to_json(), "score": v.score, "answer": shown}
        return StepResult(0, True, v.score is not None and v.score >= 1.0, info)
