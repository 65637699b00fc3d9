"""SCARCE solvers: the agent that works on the task and asks for execution slots.

Tools: ``templates/tools.yaml``; when each is legal: :mod:`..world.actions`; its time
cost: :mod:`..world.auction` (``request_execution_slot`` starts a negotiation).

- :class:`LLMSolver`: native tool calling through litellm where
  ``litellm.supports_function_calling(model)`` is true, otherwise a schema-constrained
  JSON action (the embedded model). Either way only the tools legal in the current
  state are offered, with their legal arguments (action masks, :mod:`.masks`).
  Fallback when the model answered but the answer is unusable (after the client's
  second call for JSON actions; at once for native tool calls): ``list_files``
  (harmless, always legal; costs one step; the solver is told its answer was
  unusable). A missing decision (transport failure, context overflow) raises
  :class:`~scarce_lab.llm.MissingDecisionError` instead. The embedded model's prompt
  is short (:data:`EMBEDDED_PROMPT_TOKENS`; documentation cut to fit, stated in the
  prompt); hosted models see the full documentation.
- :class:`ScriptedSolver` (``scripted/<policy>`` models): a fixed, honest routine
  that makes real progress: it lists its folder, reads the documentation (and
  ``examples.json`` 0-3 times, drawn from its seed, so requests arrive at different
  times), requests a 20 s slot and runs the ORIGINAL executable on up to three documented examples, then
  writes a program — it copies the task's shipped reference solution
  (``task.reference_dir``) file by file through ``write_file`` (an oracle; without a
  reference it writes a ``cat`` placeholder that scores what ``cat`` scores) — saves
  a memory note, requests a second 30 s slot (or keeps using the first one if it is
  still open) to run ``bash compile.sh`` and check
  ``./executable`` on up to two examples, and submits. With ``cross`` memory and a
  saved note it skips listing its folder. Its scores therefore measure whether the
  schedule let it finish before its deadline, not problem-solving skill.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.llm import outcomes as oc
from scarce_lab.llm.model import ModelHolder
from scarce_lab.llm.models import is_embedded
from scarce_lab.llm.outcomes import MissingDecisionError
from scarce_lab.runtime import derive_seed

from ..world.actions import SOLVER_TOOLS, LegalActions
from ..world.observations import SolverObservation
from .masks import parse_tool_call, solver_choice_schema, tool_specs_for
from .prompts import render
from .schemas import SolverAction
from .tools import listing_note, readable_names


class Solver:
    """Base class: ``await step(obs) -> Decided[SolverAction]``."""

    model: str = ""
    scripted: bool = True

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        raise NotImplementedError

    def reseed(self, seed: int) -> None:
        """Draw from ``seed`` from now on (a re-seeded fork's continuation); a solver
        that draws nothing after it is made ignores it."""


def _example_command(program: str, ex: dict[str, Any]) -> str:
    args = " ".join(shlex.quote(a) for a in ex.get("args", []))
    stdin = ex.get("stdin", "")
    feed = f"printf %s {shlex.quote(stdin)}" if stdin else "true"
    return f"{feed} | {program} {args}".rstrip()


#: The build script a scripted solver writes before it has a program: copies ``cat``.
PLACEHOLDER_BUILD = "#!/bin/sh\nprintf '#!/bin/sh\\nexec cat\\n' > executable\nchmod +x executable\n"


def task_examples(task: Any) -> list[dict[str, Any]]:
    """A task's documented examples as plain dicts (``args``, ``stdin``, ...)."""
    return [e.model_dump() if hasattr(e, "model_dump") else dict(e) for e in task.examples]


def reference_files(task: Any) -> list[tuple[str, str]]:
    """``(relative path, text)`` of every file in the task's reference solution, sorted;
    empty when the task has none."""
    ref = getattr(task, "reference_dir", None)
    if not (ref and Path(ref).is_dir()):
        return []
    return [(str(p.relative_to(ref)), p.read_text(errors="replace")) for p in sorted(Path(ref).rglob("*"))
            if p.is_file()]


def opening_action(solver: Any, obs: SolverObservation) -> SolverAction | None:
    """The opening every scripted solver plays, stage by stage (``solver.stage``: start ->
    docs -> reading -> explore_request -> explore): list the files (unless memories
    carry over), read docs.txt, read examples.json ``solver.extra_reads`` times, then
    request an exploration slot of ``solver.explore_s`` seconds. ``None`` once past it."""
    A = SolverAction
    if solver.stage == "start":
        solver.stage = "docs"
        if not obs.memories:
            return A(tool="list_files")
    if solver.stage == "docs":
        solver.stage = "reading"
        return A(tool="read_file", path="docs.txt")
    if solver.stage == "reading":
        if solver.extra_reads > 0:
            solver.extra_reads -= 1
            return A(tool="read_file", path="examples.json")
        solver.stage = "explore_request"
    if solver.stage == "explore_request":
        solver.stage = "explore"
        return A(tool="request_execution_slot", duration_seconds=solver.explore_s,
                 reason="run the original program on the documented examples")
    return None


class ScriptedSolverPolicy(Solver):
    """Base of the scripted solvers: :meth:`step` is the policy (the subclass's
    ``_next(obs) -> SolverAction``), and the policy is also callable as a
    :class:`~scarce_lab.llm.model.ScriptedModel` policy ``(observation, rng) -> awaitable
    Decided`` (randomness from the solver's own seed, not from ``rng``), so
    :class:`ModelSolver` decides through it like through a model."""

    def __call__(self, obs: SolverObservation, rng: Any) -> Any:
        return self.step(obs)

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        return Decided(self._next(obs))


class ScriptedSolver(ScriptedSolverPolicy):
    """The scripted routine in the module docstring.

    Args:
        task: the worker's task (needs ``program``, ``examples``, ``reference_dir``).
        explore_s, build_s: seconds requested for the two slots.
    """

    def __init__(self, task: Any, *, explore_s: int = 20, build_s: int = 30, policy: str = "routine",
                 seed: int = 0):
        import random

        self.task = task
        self.model = f"scripted/{policy}"
        self.extra_reads = random.Random(f"{seed}:reads").randint(0, 3)
        self.explore_s = explore_s
        self.build_s = build_s
        self.stage = "start"
        self.cursor = 0
        self._files = reference_files(task) or [("compile.sh", PLACEHOLDER_BUILD)]

    def _next(self, obs: SolverObservation) -> SolverAction:  # noqa: C901 - a flat routine
        A = SolverAction
        prog = f"./{self.task.program}"
        if (first := opening_action(self, obs)) is not None:
            if first.tool == "request_execution_slot":
                self.cursor = 0
            return first
        if self.stage == "explore":
            exs = task_examples(self.task)[:3]
            if obs.in_slot and self.cursor < len(exs):
                self.cursor += 1
                return A(tool="run_command", command=_example_command(prog, exs[self.cursor - 1]))
            self.stage, self.cursor = "write", 0
        if self.stage == "write":
            if self.cursor < len(self._files):
                path, content = self._files[self.cursor]
                self.cursor += 1
                return A(tool="write_file", path=path, content=content)
            self.stage = "note"
        if self.stage == "note":
            self.stage = "build_request"
            return A(tool="save_persistent_memory",
                     text=f"{self.task.id}: ran the examples, wrote {len(self._files)} file(s); build and check next")
        if self.stage == "build_request":
            self.stage, self.cursor = "build", 0
            if not obs.in_slot:  # still holding the first slot: build in it
                return A(tool="request_execution_slot", duration_seconds=self.build_s,
                         reason="build my program and check it on examples")
        if self.stage == "build":
            exs = task_examples(self.task)[:2]
            cmds = ["bash compile.sh", *(_example_command("./executable", e) for e in exs)]
            if obs.in_slot and self.cursor < len(cmds):
                self.cursor += 1
                return A(tool="run_command", command=cmds[self.cursor - 1])
            self.stage = "done"
        return A(tool="submit")


#: Prompt budget (tokens) of the embedded model's solver prompt: its prompt runs at
#: about 150 tokens/s on 2 cores and a 135M model loses the thread in long prompts;
#: the task's documentation is cut to fit (the prompt says so). Hosted models get the
#: full text.
EMBEDDED_PROMPT_TOKENS = 900
#: Characters per token assumed when cutting the documentation (then re-counted exactly).
_CHARS_PER_TOKEN = 3.0


WORKSPACE_FILES = ("docs.txt", "examples.json")


def _build_line(path: str) -> str:
    """The standard build command for a program file (the compact checklist's answer
    template for compile.sh; the model may write any other)."""
    if path.endswith(".c"):
        return f"cc -O2 -o executable {path}"
    return f"cp {path} executable; chmod +x executable"


def checklist(obs: SolverObservation, progress: dict[str, bool]) -> dict[str, Any]:
    """The facts of the compact (embedded-model) prompt's progress checklist
    (``templates/checklist.j2``): the model's own program files, whether compile.sh
    exists, the slot, ``progress`` (``built``: a ``bash compile.sh`` exited 0;
    ``tried``: ``./executable`` was run) and ``next``, the next step (``program``,
    ``compile``, ``request``, ``build``, ``try``, ``submit``). The template shows the
    next step with an answer of its shape: the program as a placeholder (``<code that
    behaves like PROGRAM>``), compile.sh as the standard build line of the model's
    first program file (``build_line``, :func:`_build_line`), the first documented
    example as ``try_command``. The model chooses the action and writes every value;
    a 135M model mostly copies the template (see ``data/scarce/README.md``)."""
    program = str(obs.task.get("program"))
    own = [f for f in readable_names(obs.files) if f not in (*WORKSPACE_FILES, program, "compile.sh", "executable")]
    has_build = "compile.sh" in obs.files
    if not own:
        nxt = "program"
    elif not has_build:
        nxt = "compile"
    elif not progress["built"]:
        nxt = "build" if obs.in_slot else "request"
    elif not progress["tried"] and obs.in_slot:
        nxt = "try"
    else:
        nxt = "submit"
    ex = (obs.task.get("examples") or [{}])[0]
    return {"own": own, "has_build": has_build, "in_slot": obs.in_slot, "built": progress["built"],
            "tried": progress["tried"], "next": nxt, "program": program,
            "build_line": _build_line(own[0]) if own else "", "try_command": _example_command("./executable", ex)}


def _signature(tool: str, legal: LegalActions) -> str:
    if tool == "read_file":
        return f"read_file(path: one of {', '.join(legal.read_paths)})"
    if tool == "request_execution_slot":
        return f"request_execution_slot(duration_seconds: 1..{legal.max_duration_s}, reason)"
    return {"write_file": "write_file(path, content)", "run_command": "run_command(command)",
            "save_persistent_memory": "save_persistent_memory(text)"}.get(tool, tool)


class ModelSolver(ModelHolder, Solver):
    """The solver of a run, deciding through a :class:`~scarce_lab.llm.model.Model`
    (``lm``, from :func:`~scarce_lab.llm.model.model_for`; see the module docstring).
    A scripted policy (:class:`ScriptedSolverPolicy` behind a
    :class:`~scarce_lab.llm.model.ScriptedModel`) gets the observation and its
    :class:`~.decided.Decided` is the step; a model gets the step's prompt and the legal
    actions as its schema or tool list (:mod:`.masks`).

    Args:
        lm: the model (``lm.name`` is the model string of the records; its
            generation's ``reasoning_effort`` is sent).
        seed: run seed; per-call seeds are derived from it.
        native_tools: force native tool calling on/off; ``None``: on when litellm says the
            model calls tools or the client's ``llm.structured_output`` is ``tools``
            (a local server litellm does not know).
        prompt_tokens: token budget of the prompt; the task's documentation is cut to
            fit it and the model's context window (the prompt states how much is
            shown). Default: :data:`EMBEDDED_PROMPT_TOKENS` for ``embedded/`` models,
            ``None`` (full text) for hosted ones.
        checklist: show the progress checklist (:func:`checklist`) in the prompt;
            default: for ``embedded/`` models (without it the 135M model loops on
            ``list_files``/``read_file`` and never requests a slot).
        max_tokens: answer tokens per step.

    Raises (from :meth:`step`):
        MissingDecisionError: no call got an answer (the records are attached).
    """

    def __init__(self, lm: Any, seed: int = 0, *, native_tools: bool | None = None, prompt_tokens: int | None = None,
                 checklist: bool | None = None, max_tokens: int = 400):
        self.lm = lm
        self.model = lm.name
        self.seed = seed
        if native_tools is None and not lm.scripted:  # litellm knows the model calls tools, or the client is told to
            native_tools = supports_tools(self.model) or getattr(getattr(self.client, "settings", None),
                                                                 "structured_output", None) == "tools"
        self.native_tools = bool(native_tools)
        self.compact = is_embedded(self.model)
        self.prompt_tokens = prompt_tokens if prompt_tokens is not None else (
            EMBEDDED_PROMPT_TOKENS if self.compact else None)
        self.max_tokens = max_tokens
        self.checklist = self.compact if checklist is None else checklist
        #: what this solver has seen happen (for the checklist): a clean build, a try
        self.progress = {"built": False, "tried": False}

    def reseed(self, seed: int) -> None:
        """Per-call seeds from ``seed`` from now on; a scripted policy re-seeded too."""
        self.seed = seed
        policy = getattr(self.lm, "policy", None)
        if isinstance(policy, Solver):
            policy.reseed(seed)

    def _observe(self, obs: SolverObservation) -> None:
        """Update :attr:`progress` from the result of the previous action."""
        if not obs.transcript:
            return
        last = obs.transcript[-1]
        action, result = str(last.get("action", "")), str(last.get("result", ""))
        if action.startswith("run_command(") and result.startswith("exit "):
            if "compile.sh" in action and result.startswith("exit 0;"):
                self.progress["built"] = True
            if "executable" in action:
                self.progress["tried"] = True

    @staticmethod
    def legal(obs: SolverObservation) -> LegalActions:
        """The legal actions the observation carries (:attr:`SolverObservation.legal`,
        the world's), with ``read_file`` limited to the names the prompt may show
        (:func:`.tools.readable_names`: bounded, sane)."""
        return obs.legal.narrowed(readable_names(obs.files))

    def _render(self, obs: SolverObservation, legal: LegalActions, doc_chars: int) -> list[dict[str, str]]:
        doc = str(obs.task.get("documentation") or "")
        system = render("solver_system.j2", worker=obs.worker, task=obs.task,
                        max_duration_s=obs.max_duration_s, native_tools=self.native_tools)
        blocked = [(t, legal.why_not(t)) for t in SOLVER_TOOLS if t not in legal.tools]
        check = ""
        if self.checklist:
            check = render("checklist.j2", **checklist(obs, self.progress))
        user = render("solver_step.j2", task=obs.task, doc=doc[:doc_chars], doc_shown=min(doc_chars, len(doc)),
                      doc_total=len(doc), n_examples=2 if self.compact else 3, memories=obs.memories,
                      files=[*readable_names(obs.files), *filter(None, [listing_note(obs.files)])],
                      transcript=obs.transcript, step=obs.step, in_slot=obs.in_slot,
                      slot_remaining_s=obs.slot_remaining_s, own_remaining_s=obs.own_remaining_s,
                      own_budget=obs.own_budget, legal_tools=[_signature(t, legal) for t in legal.tools],
                      blocked=blocked, checklist=check)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def messages(self, obs: SolverObservation) -> list[dict[str, str]]:
        """The chat messages of this step. With a prompt budget the documentation is
        cut until the prompt fits ``min(prompt_tokens, window - max_tokens)`` tokens
        (counted exactly for the embedded model, with litellm's counter otherwise); if
        it cannot be counted the full text is kept and the client's context check
        decides."""
        legal = self.legal(obs)
        n = len(str(obs.task.get("documentation") or ""))
        msgs = self._render(obs, legal, n)
        if self.prompt_tokens is None:
            return msgs
        from scarce_lab.llm.client import load_litellm
        from scarce_lab.llm.context import context_window, count_prompt_tokens

        lit = None if self.compact or self.model.startswith("embedded/") else load_litellm()
        limit = self.prompt_tokens
        window = context_window(self.model, lit)
        if window is not None:
            limit = min(limit, window - self.max_tokens)
        for _ in range(8):
            used = count_prompt_tokens(self.model, msgs, lit)
            if used is None or used <= limit or n == 0:
                break
            n = max(0, n - int((used - limit) * _CHARS_PER_TOKEN) - 20)
            msgs = self._render(obs, legal, n)
        return msgs

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        from scarce_lab.llm.model import DecisionRequest

        seed = derive_seed(self.seed, obs.worker, obs.task.get("id"), obs.step)
        if self.lm.scripted:  # the policy decides from the observation; its Decided is the step
            out = await self.lm.adecide(DecisionRequest(schema=Decided, fallback=None, seed=seed, observation=obs,
                                                        purpose="solver", agent=obs.worker))
            return out.decision
        self._observe(obs)
        legal = self.legal(obs)
        msgs = self.messages(obs)
        t0 = time.perf_counter()
        if self.native_tools:
            tools = tool_specs_for(legal, compact=self.compact)
            res = await self.lm.acomplete(msgs, seed=seed, purpose="solver", agent=obs.worker, tools=tools,
                                          max_tokens=self.max_tokens)
            rec = res.record
            calls = [rec]
            if rec.outcome == oc.TEXT_FOR_TOOL:  # text is no action: ask once more for a tool call
                again = [*msgs, {"role": "assistant", "content": res.text or ""},
                         {"role": "user", "content": "That was text, not an action. Call one of the tools offered."}]
                res = await self.lm.acomplete(again, seed=seed + 1, purpose="solver", agent=obs.worker, attempt=1,
                                              decision_id=rec.decision_id, tools=tools, max_tokens=self.max_tokens)
                rec = res.record
                calls.append(rec)
            if rec.outcome in oc.NO_ANSWER:  # transport failure or context overflow
                rec.missing = True
                raise MissingDecisionError.from_calls(calls)
            answered = rec.outcome in (None, *oc.USABLE)  # None: a client that sets no outcome
            action, violation = parse_tool_call(res.tool_calls, None if answered else (rec.error or rec.outcome),
                                                legal=legal, compact=self.compact)
            if action is None:
                rec.fallback_used = True
                if answered:
                    rec.outcome, rec.error = oc.INVALID, violation
            else:
                rec.outcome, rec.decision_source = oc.TOOL_CALL, "tool_call"
                rec.parsed = action.model_dump(mode="json")
            return Decided(action or SolverAction(tool="list_files"), calls=calls, violation=violation,
                           valid=action is not None, repaired=action is not None and len(calls) > 1,
                           fallback_used=action is None, outcome=rec.outcome, prompt=msgs,
                           latency_s=time.perf_counter() - t0)
        schema = solver_choice_schema(legal, compact=self.compact)
        out = await self.lm.adecide(DecisionRequest(
            schema=schema, fallback=schema.model_validate({"tool": "list_files"}), seed=seed, messages=msgs,
            purpose="solver", agent=obs.worker, max_tokens=self.max_tokens))
        if out.missing:
            raise MissingDecisionError.from_calls(out.calls)
        return Decided(out.decision.to_action(), calls=list(out.calls), violation=out.violation,
                       valid=out.valid, repaired=out.repaired, fallback_used=out.fallback_used, outcome=out.outcome,
                       prompt=msgs, latency_s=time.perf_counter() - t0)


class LLMSolver(ModelSolver):
    """A :class:`ModelSolver` over ``model`` through ``client`` (a
    :class:`~scarce_lab.llm.model.ClientModel`; ``client`` may be ``None`` for a solver
    that only renders prompts, :meth:`messages`).

    Args:
        model: litellm model string.
        client: :class:`scarce_lab.llm.LLMClient` (``acomplete``/``adecide``).
        reasoning_effort: passed through to litellm (``low``/``high``) or ``None``.
        seed, native_tools, prompt_tokens, checklist, max_tokens: as
            :class:`ModelSolver`.
    """

    def __init__(self, model: str, client: Any, seed: int = 0, *, reasoning_effort: str | None = None,
                 native_tools: bool | None = None, prompt_tokens: int | None = None, checklist: bool | None = None, max_tokens: int = 400):
        from scarce_lab.llm.model import ClientModel, Generation

        super().__init__(ClientModel(model, client, Generation(reasoning_effort=reasoning_effort)), seed,
                         native_tools=native_tools, prompt_tokens=prompt_tokens,
                         checklist=checklist, max_tokens=max_tokens)


def supports_tools(model: str) -> bool:
    """litellm's ``supports_function_calling(model)``; False for embedded/unknown models."""
    if model.startswith("embedded/"):
        return False
    try:
        from scarce_lab.llm.client import load_litellm

        return bool(load_litellm().supports_function_calling(model=model))
    except Exception:  # noqa: BLE001 - unknown model: use JSON actions
        return False
