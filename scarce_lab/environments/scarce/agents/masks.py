"""Action masks as decision schemas: a solver can only choose (and the runner only
accepts) what is legal now.

The world says what is legal (:class:`scarce_lab.environments.scarce.world.LegalActions`: tools,
readable paths, the slot cap; carried on the solver's observation); this module holds
no rule of its own and only turns that object into schemas:

- :func:`solver_choice_schema`: the JSON action of models without native tool calling
  (the embedded model): a ``oneOf`` over the legal tools only, one object per tool
  with every field it needs required (``{"tool": "read_file", "path": <one of your
  files>}``). The embedded provider turns the JSON schema into a llama.cpp grammar,
  so an illegal tool or path cannot be decoded; pydantic validates every value
  anyway (strict, :mod:`scarce_lab.llm.decisions`).
- :func:`tool_specs_for`: the native tool list of hosted models: the legal tools only,
  with the same argument constraints as JSON schema (``enum`` of paths, ``minimum`` /
  ``maximum`` of durations); :func:`parse_tool_call` validates a call against the same
  per-tool model and refuses an illegal tool with the reason.

Compact form (``compact=True``, the embedded model): bounded integers as an ``enum``
of a small grid (:mod:`.schemas`) and short string limits (:data:`LIMITS`: a 135M
model, a small grammar); the full form (hosted models) keeps every integer of the range
and long strings.

Units: seconds for durations, credits for prices.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, RootModel, create_model

from scarce_lab.llm.decisions import DecisionPart, register_decision_family, validate_decision
from scarce_lab.llm.parsing import loads_answer, repeated_keys

from ..world.actions import WRITE_PATH_PATTERN, LegalActions, legal_actions
from .prompts import tool_descriptions
from .schemas import SolverAction, bounded_int, duration_choices
from .tools import WRITE_LIMIT

#: String limits: (compact, full). Compact limits keep the grammar small and leave
#: room in ``max_tokens``; full limits are the tools' own.
LIMITS = {
    "path": (120, 120),
    "content": (600, WRITE_LIMIT),
    "command": (160, 4000),
    "reason": (80, 300),
    "text": (160, 500),
}


def _text(kind: str, compact: bool, *, min_length: int = 0) -> Any:
    return Annotated[str, Field(min_length=min_length, max_length=LIMITS[kind][0 if compact else 1])]


# -- the solver's masked action ------------------------------------------------------
class SolverChoiceBase(RootModel[Any]):
    """Root of the masked JSON action schemas (:func:`solver_choice_schema`): the
    answer is one tool object, ``{"tool": ..., <its fields>}``."""

    model_config = ConfigDict(strict=True)

    def to_action(self) -> SolverAction:
        """The :class:`SolverAction` of this choice."""
        return SolverAction(**self.root.model_dump())


@lru_cache(maxsize=512)
def _tool_model(tool: str, paths: tuple[str, ...], cap: int, compact: bool) -> type[DecisionPart]:
    fields: dict[str, Any] = {"tool": (Literal[tool], ...)}  # type: ignore[valid-type]
    if tool == "read_file":
        fields["path"] = (Literal[paths], ...)  # type: ignore[valid-type]
    elif tool == "write_file":
        fields["path"] = (Annotated[str, Field(min_length=1, max_length=LIMITS["path"][0],
                                               pattern=WRITE_PATH_PATTERN)], ...)
        fields["content"] = (_text("content", compact), ...)
    elif tool == "request_execution_slot":
        fields["duration_seconds"] = (bounded_int(1, cap, compact=compact, choices=duration_choices(cap)), ...)
        fields["reason"] = (_text("reason", compact), ...)
    elif tool == "run_command":
        fields["command"] = (_text("command", compact, min_length=1), ...)
    elif tool == "save_persistent_memory":
        fields["text"] = (_text("text", compact, min_length=1), ...)
    name = "".join(w.title() for w in tool.split("_"))  # read_file -> ReadFile (the schema's title)
    return create_model(name, __base__=DecisionPart, **fields)


def tool_model(legal: LegalActions, tool: str, *, compact: bool) -> type[DecisionPart]:
    """The argument model of ``tool`` in state ``legal`` (``tool`` field included).

    Raises:
        ValueError: ``tool`` is not legal in ``legal``.
    """
    reason = legal.why_not(tool)
    if reason is not None:
        raise ValueError(f"tool {tool!r} is not legal for {legal.worker!r}: {reason}")
    return _tool_model(tool, legal.read_paths if tool == "read_file" else (), legal.max_duration_s, compact)


@lru_cache(maxsize=256)
def _choice_schema(tools: tuple[str, ...], paths: tuple[str, ...], cap: int, compact: bool) -> type[SolverChoiceBase]:
    members = tuple(_tool_model(t, paths if t == "read_file" else (), cap, compact) for t in tools)
    union = Annotated[Union[members], Field(discriminator="tool")]  # noqa: UP007 - a runtime tuple of members

    class SolverChoice(SolverChoiceBase):
        root: union  # type: ignore[valid-type]

    return SolverChoice


def solver_choice_schema(legal: LegalActions, *, compact: bool = True) -> type[SolverChoiceBase]:
    """The masked JSON action schema of state ``legal`` (module docstring); cached per
    (tools, paths, cap, form)."""
    return _choice_schema(legal.tools, legal.read_paths, legal.max_duration_s, bool(compact))


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def tool_specs_for(legal: LegalActions, *, compact: bool = False) -> list[dict[str, Any]]:
    """OpenAI-style function specs of the tools legal in ``legal`` (only those), with
    their argument constraints (:func:`tool_model` without the ``tool`` field)."""
    specs = []
    for tool in legal.tools:
        schema = _strip_titles(tool_model(legal, tool, compact=compact).model_json_schema())
        schema["properties"].pop("tool", None)
        schema["required"] = [r for r in schema.get("required", []) if r != "tool"]
        specs.append({"type": "function", "function": {"name": tool, "description": tool_descriptions()[tool],
                                                       "parameters": schema}})
    return specs


def parse_tool_call(tool_calls: list[dict[str, Any]] | None, error: str | None = None, *,
                    legal: LegalActions | None = None, compact: bool = False) -> tuple[SolverAction | None, str | None]:
    """First native tool call -> :class:`SolverAction`: its arguments validated
    against :class:`SolverAction` (every known field strictly typed), then, with
    ``legal``, the tool checked against the mask and its arguments against the legal
    tool's model. ``(None, reason)`` when unusable: no call, bad JSON, an unknown or
    illegal tool (the reason and the legal tools), invalid arguments. Never raises."""
    if error:
        return None, error
    if not tool_calls:
        return None, "no tool call in the answer"
    tc = tool_calls[0]
    name = tc.get("name")
    args = tc.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = loads_answer(args or "{}")
        except (ValueError, RecursionError) as exc:
            return None, f"bad tool call {name!r}: arguments are not JSON ({exc})"[:500]
    if not isinstance(args, dict):
        return None, f"bad tool call {name!r}: arguments are not a JSON object"[:500]
    if rep := repeated_keys(args):  # which of two values was meant cannot be known
        key, vals = next(iter(rep.items()))
        return None, f"bad tool call {name!r}: argument {key!r} given {len(vals)} times with different values"[:500]
    # every known field strictly typed (also one the tool does not read), then the mask
    action, err = validate_decision({**args, "tool": name}, SolverAction)
    if legal is None or action is None:
        return (action, None) if action is not None else (None, f"bad tool call {name!r}: {err}"[:500])
    reason = legal.why_not(str(name))
    if reason is not None:
        return None, f"illegal tool call {name!r}: {reason}; {legal.describe()}"[:500]
    part, err = validate_decision({**args, "tool": name}, tool_model(legal, str(name), compact=compact))
    if part is None:
        return None, f"bad tool call {name!r}: {err}"[:500]
    return SolverAction(**part.model_dump()), None


def _sample_legal() -> LegalActions:
    return legal_actions("w0", in_slot=False, files=["compile.sh", "docs.txt", "examples.json"], slot_cap_s=120)


register_decision_family(
    "scarce.solver_choice", SolverChoiceBase,
    {"tool": "request_execution_slot", "duration_seconds": 30, "reason": "build and test"},
    lambda: solver_choice_schema(_sample_legal(), compact=True),
)
