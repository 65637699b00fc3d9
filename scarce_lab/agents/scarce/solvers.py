"""SCARCE solvers: the agent that works on the task and asks for execution slots.

Tools (see ``templates/tools.yaml``): ``list_files``, ``read_file``, ``write_file``
(free), ``request_execution_slot(duration_seconds <= cap, reason)`` (starts a
negotiation; the solver waits for its slot), ``run_command(command)`` (only inside
the granted window), ``save_persistent_memory(text)`` (free), ``submit()``.

- :class:`LLMSolver`: native tool calling through litellm where
  ``litellm.supports_function_calling(model)`` is true, otherwise a schema-constrained
  JSON action (:class:`JsonAction`; the embedded model). Fallback when the model
  answered but the answer is unusable (after the client's second call for JSON
  actions; at once for native tool calls): ``list_files`` (harmless; costs one
  step). A missing decision (transport failure, context overflow) raises
  :class:`~scarce_lab.llm.MissingDecisionError` instead.
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

import json
import shlex
import time
from pathlib import Path
from typing import Any

from ...llm import outcomes as oc
from ...llm.decisions import validate_decision
from ...llm.outcomes import MissingDecisionError
from .decided import Decided, derive_seed
from .prompts import render, tool_specs
from .schemas import TOOLS, JsonAction, SolverAction, Tool  # noqa: F401 - part of this module's API
from .views import SolverObservation


class Solver:
    """Base class: ``await step(obs) -> Decided[SolverAction]``."""

    model: str = ""
    scripted: bool = True

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        raise NotImplementedError


def _example_command(program: str, ex: dict[str, Any]) -> str:
    args = " ".join(shlex.quote(a) for a in ex.get("args", []))
    stdin = ex.get("stdin", "")
    feed = f"printf %s {shlex.quote(stdin)}" if stdin else "true"
    return f"{feed} | {program} {args}".rstrip()


class ScriptedSolver(Solver):
    """The scripted routine in the module docstring.

    Args:
        task: the worker's task (needs ``program``, ``examples``, ``reference_dir``).
        explore_s, build_s: seconds requested for the two slots.
    """

    scripted = True

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
        self._files = self._reference_files()

    def _reference_files(self) -> list[tuple[str, str]]:
        ref = getattr(self.task, "reference_dir", None)
        if ref and Path(ref).is_dir():
            files = []
            for p in sorted(Path(ref).rglob("*")):
                if p.is_file():
                    files.append((str(p.relative_to(ref)), p.read_text(errors="replace")))
            if files:
                return files
        return [("compile.sh", "#!/bin/sh\nprintf '#!/bin/sh\\nexec cat\\n' > executable\nchmod +x executable\n")]

    def _examples(self) -> list[dict[str, Any]]:
        return [e.model_dump() if hasattr(e, "model_dump") else dict(e) for e in self.task.examples]

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        return Decided(self._next(obs))

    def _next(self, obs: SolverObservation) -> SolverAction:  # noqa: C901 - a flat routine
        A = SolverAction
        prog = f"./{self.task.program}"
        if self.stage == "start":
            self.stage = "docs"
            if not obs.memories:
                return A(tool="list_files")
        if self.stage == "docs":
            self.stage = "reading"
            return A(tool="read_file", path="docs.txt")
        if self.stage == "reading":
            if self.extra_reads > 0:
                self.extra_reads -= 1
                return A(tool="read_file", path="examples.json")
            self.stage = "explore_request"
        if self.stage == "explore_request":
            self.stage, self.cursor = "explore", 0
            return A(tool="request_execution_slot", duration_seconds=self.explore_s,
                     reason="run the original program on the documented examples")
        if self.stage == "explore":
            exs = self._examples()[:3]
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
            exs = self._examples()[:2]
            cmds = ["bash compile.sh", *(_example_command("./executable", e) for e in exs)]
            if obs.in_slot and self.cursor < len(cmds):
                self.cursor += 1
                return A(tool="run_command", command=cmds[self.cursor - 1])
            self.stage = "done"
        return A(tool="submit")


class LLMSolver(Solver):
    """A model-driven solver (see module docstring).

    Args:
        model: litellm model string.
        client: :class:`scarce_lab.llm.LLMClient` (``acomplete``/``adecide``).
        seed: run seed; per-call seeds are derived from it.
        native_tools: force native tool calling on/off; ``None`` asks litellm.
        doc_chars: characters of documentation shown per step.
    """

    scripted = False

    def __init__(self, model: str, client: Any, seed: int = 0, *, reasoning_effort: str | None = None,
                 native_tools: bool | None = None, run_id: str | None = None, doc_chars: int = 1200,
                 max_tokens: int = 400):
        self.model = model
        self.client = client
        self.seed = seed
        self.reasoning_effort = reasoning_effort
        self.native_tools = supports_tools(model) if native_tools is None else native_tools
        self.run_id = run_id
        self.doc_chars = doc_chars
        self.max_tokens = max_tokens

    def messages(self, obs: SolverObservation) -> list[dict[str, str]]:
        system = render("solver_system.j2", worker=obs.worker, task=obs.task,
                        max_duration_s=obs.max_duration_s, native_tools=self.native_tools)
        user = render("solver_step.j2", task=obs.task, doc_chars=self.doc_chars, memories=obs.memories,
                      files=obs.files, transcript=obs.transcript, step=obs.step, in_slot=obs.in_slot,
                      slot_remaining_s=obs.slot_remaining_s, own_remaining_s=obs.own_remaining_s,
                      own_budget=obs.own_budget)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    async def step(self, obs: SolverObservation) -> Decided[SolverAction]:
        from scarce_lab.llm import CallContext

        msgs = self.messages(obs)
        ctx = CallContext(agent=obs.worker, purpose="solver", run_id=self.run_id)
        seed = derive_seed(self.seed, obs.worker, obs.task.get("id"), obs.step)
        t0 = time.perf_counter()
        if self.native_tools:
            res = await self.client.acomplete(self.model, msgs, seed=seed, context=ctx, tools=tool_specs(),
                                              max_tokens=self.max_tokens, reasoning_effort=self.reasoning_effort)
            rec = res.record
            if rec.outcome in oc.NO_ANSWER:  # transport failure or context overflow
                rec.missing = True
                raise MissingDecisionError.from_calls([rec])
            answered = rec.outcome in (None, *oc.USABLE)  # None: a client that sets no outcome
            action, violation = parse_tool_call(res.tool_calls, None if answered else (rec.error or rec.outcome))
            if action is None:
                rec.fallback_used = True
                if answered:
                    rec.outcome, rec.error = oc.INVALID, violation
            else:
                rec.outcome, rec.decision_source = oc.TOOL_CALL, "tool_call"
                rec.parsed = action.model_dump(mode="json")
            return Decided(action or SolverAction(tool="list_files"), calls=[rec], violation=violation,
                           valid=action is not None, fallback_used=action is None, outcome=rec.outcome, prompt=msgs,
                           latency_s=time.perf_counter() - t0)
        out = await self.client.adecide(model=self.model, messages=msgs, schema=JsonAction,
                                        fallback=JsonAction(tool="list_files"), seed=seed, context=ctx,
                                        max_tokens=self.max_tokens, reasoning_effort=self.reasoning_effort)
        if out.missing:
            raise MissingDecisionError.from_calls(out.calls)
        return Decided(SolverAction(**out.decision.model_dump()), calls=list(out.calls), violation=out.violation,
                       valid=out.valid, repaired=out.repaired, fallback_used=out.fallback_used, outcome=out.outcome,
                       prompt=msgs, latency_s=time.perf_counter() - t0)


def parse_tool_call(tool_calls: list[dict[str, Any]] | None, error: str | None = None) -> tuple[SolverAction | None, str | None]:
    """First tool call -> :class:`SolverAction` (its name is ``tool``, its arguments
    the other fields, validated under the decision coercion policy); ``(None, reason)``
    when unusable. Never raises."""
    if error:
        return None, error
    if not tool_calls:
        return None, "no tool call in the answer"
    tc = tool_calls[0]
    args = tc.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except (ValueError, RecursionError) as exc:
            return None, f"bad tool call {tc.get('name')!r}: arguments are not JSON ({exc})"[:500]
    if not isinstance(args, dict):
        return None, f"bad tool call {tc.get('name')!r}: arguments are not a JSON object"[:500]
    action, err = validate_decision({**args, "tool": tc.get("name")}, SolverAction)
    if action is None:
        return None, f"bad tool call {tc.get('name')!r}: {err}"[:500]
    return action, None


def supports_tools(model: str) -> bool:
    """litellm's ``supports_function_calling(model)``; False for embedded/unknown models."""
    if model.startswith("embedded/"):
        return False
    try:
        from scarce_lab.llm.client import load_litellm

        return bool(load_litellm().supports_function_calling(model=model))
    except Exception:  # noqa: BLE001 - unknown model: use JSON actions
        return False
