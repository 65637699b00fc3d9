"""A fast fake of ``litellm.acompletion`` for the LLM client tests (no network).

``FakeLLM.install(monkeypatch)`` replaces ``litellm.acompletion`` (and sends calls at an
``api_base`` through litellm too: ``transport.SDK_PATH``); each call pops the
next scripted reply (a response, an exception, or a callable of the request kwargs)
and keeps the request kwargs in ``requests``.
"""

from __future__ import annotations

from typing import Any

from scarce_lab.llm import transport
from scarce_lab.llm.client import load_litellm


def response(
    content: str | None = None,
    *,
    finish_reason: str | None = "stop",
    tool_calls: list[dict[str, Any]] | None = None,
    refusal: str | None = None,
    choices: list | None = None,
    usage: tuple[int, int] = (10, 5),
):
    """A ``litellm.ModelResponse`` with one choice (or ``choices`` as given)."""
    lit = load_litellm()
    if choices is None:
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls is not None:
            msg["tool_calls"] = tool_calls
        if refusal is not None:
            msg["refusal"] = refusal
        choice: dict[str, Any] = {"index": 0, "message": msg}
        if finish_reason is not None:
            choice["finish_reason"] = finish_reason
        choices = [choice]
    r = lit.ModelResponse(
        choices=choices,
        usage={"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    )
    r._hidden_params = {"response_cost": 0.0}  # skip litellm's price lookup (~1.5 ms)
    return r


def tool_call(name: str, arguments: str | dict, call_id: str = "c1") -> dict[str, Any]:
    """One OpenAI-style tool call."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class FakeLLM:
    """Scripted replies for ``litellm.acompletion``."""

    def __init__(self, *replies: Any):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def script(self, *replies: Any) -> FakeLLM:
        self.replies = list(replies)
        self.requests.clear()
        return self

    async def __call__(self, **kwargs: Any):
        self.requests.append(kwargs)
        if not self.replies:
            raise AssertionError("FakeLLM: no scripted reply left")
        reply = self.replies.pop(0)
        if callable(reply) and not isinstance(reply, type):
            reply = reply(kwargs)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def install(self, monkeypatch) -> FakeLLM:
        monkeypatch.setattr(load_litellm(), "acompletion", self)
        monkeypatch.setattr(transport, "SDK_PATH", False)  # calls at an api_base too
        return self


def import_agent_modules() -> None:
    """Import every agent module (the shared scarce_lab.agents and each environment's
    agents package), so that every decision family is registered whatever ran before."""
    import importlib
    import pkgutil

    import scarce_lab.agents
    import scarce_lab.environments

    for m in pkgutil.walk_packages(scarce_lab.agents.__path__, "scarce_lab.agents."):
        importlib.import_module(m.name)
    for env in pkgutil.iter_modules(scarce_lab.environments.__path__, "scarce_lab.environments."):
        agents = importlib.import_module(f"{env.name}.agents")
        for m in pkgutil.walk_packages(agents.__path__, f"{env.name}.agents."):
            importlib.import_module(m.name)


def decision_schemas() -> list[tuple[str, type, dict[str, Any]]]:
    """Every registered decision schema family (its sample schema and a valid example),
    plus the judge's answer schema: ``(name, schema, example)``, sorted by name."""
    from scarce_lab.judge.answer import answer_schema
    from scarce_lab.judge.taxonomy import load_taxonomy
    from scarce_lab.llm.decisions import decision_families

    import_agent_modules()
    out = [(name, fam.sample(), fam.example) for name, fam in sorted(decision_families().items())]
    tax = load_taxonomy("scarce")
    out.append(("judge.answer", answer_schema(tax), {"labels": [{"label": tax.ids[0], "evidence": "quote"}]}))
    return out
