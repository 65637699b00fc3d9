"""What a failed transport becomes: every call has an
outcome and the provider's finish_reason; empty choices, refusals, tool calls, blank
and truncated answers each get their own handling; a transport failure is a missing
decision that agents raise, never a fallback."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from _llm_fakes import FakeLLM, response, tool_call

from scarce_lab.environments.scarce.agents.schemas import declaration_schema
from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
from scarce_lab.llm import CallContext, LLMClient, LLMSettings, MissingDecisionError
from scarce_lab.llm.client import TRUNCATION_RETRY_CAP, TRUNCATION_RETRY_FACTOR, load_litellm
from scarce_lab.llm.outcomes import OUTCOMES

S = extraction_schema(30)
FB = S(reasoning="fallback", extraction=9)
D = declaration_schema(3)
DFB = D(desired_position=3, desired_duration_seconds=30, bid_price=0)
MSGS = [{"role": "user", "content": "how much?"}]
VALID = '{"reasoning": "r", "extraction": 12}'


def client(**kw) -> LLMClient:
    return LLMClient(LLMSettings(cache=False, max_retries=0, backoff_base_s=0.0, **kw))


def decide(fake, schema=S, fallback=FB, max_tokens=None, c=None, **kw):
    return (c or client()).decide(
        model="openai/x", messages=MSGS, schema=schema, fallback=fallback, seed=5,
        context=CallContext(agent="a1", round=3, purpose="extraction"), max_tokens=max_tokens, **kw,
    )


def rate_limited():
    lit = load_litellm()
    return lit.RateLimitError("slow down", llm_provider="openai", model="x")


def test_every_record_is_writeable_and_shares_the_decision_id(monkeypatch):
    FakeLLM(response("garbage"), response(VALID)).install(monkeypatch)
    out = decide(None)
    assert [c.outcome for c in out.calls] == ["invalid", "ok"] and out.repaired and out.valid
    assert len({c.decision_id for c in out.calls}) == 1 and out.calls[0].decision_id
    for rec in out.calls:
        assert rec.outcome in OUTCOMES and rec.finish_reason == "stop"
        json.loads(rec.model_dump_json().encode("utf-8"))
    assert out.calls[1].decision_source == "text" and out.source == "text"


def test_empty_choices_is_an_outcome_and_the_prompt_is_resent(monkeypatch):
    fake = FakeLLM(response(choices=[]), response(choices=[])).install(monkeypatch)
    out = decide(fake)
    assert out.outcome == "empty" and out.fallback_used and out.decision == FB and not out.missing
    assert [c.outcome for c in out.calls] == ["empty", "empty"]
    assert out.calls[0].finish_reason is None and "no choices" in out.violation
    assert fake.requests[1]["messages"] == MSGS  # the original prompt, not a repair


def test_empty_choices_through_a_custom_provider(monkeypatch):
    lit = load_litellm()
    from litellm import CustomLLM, ModelResponse
    from litellm.utils import custom_llm_setup

    class Empty(CustomLLM):  # HTTP 200 with "choices": [] (e.g. a content filter)
        async def acompletion(self, *a, **k):
            return ModelResponse(choices=[], model="m")

    monkeypatch.setattr(lit, "custom_provider_map",
                        [*lit.custom_provider_map, {"provider": "emptyprov", "custom_handler": Empty()}])
    custom_llm_setup()
    out = client().decide(model="emptyprov/m", messages=MSGS, schema=S, fallback=FB, seed=1)
    assert out.outcome == "empty" and out.fallback_used and len(out.calls) == 2


def test_blank_answer_is_empty_and_a_resend_can_succeed(monkeypatch):
    fake = FakeLLM(response(""), response(VALID)).install(monkeypatch)
    out = decide(fake)
    assert [c.outcome for c in out.calls] == ["empty", "ok"] and out.repaired
    assert out.decision.extraction == 12 and fake.requests[1]["messages"] == MSGS


@pytest.mark.parametrize(
    "reply",
    [
        response("I'm sorry, but I can't help with that.", refusal="I'm sorry, but I can't help with that."),
        response(None, refusal="I can't."),
        response(VALID, finish_reason="content_filter"),
    ],
)
def test_refusal_is_recorded_and_not_repaired(monkeypatch, reply):
    fake = FakeLLM(reply).install(monkeypatch)
    out = decide(fake)
    assert len(fake.requests) == 1 and len(out.calls) == 1  # no repair call
    assert out.outcome == "refusal" and out.calls[0].outcome == "refusal"
    assert out.fallback_used and out.decision == FB and out.violation.startswith("refusal")
    assert out.calls[0].parsed is None and out.calls[0].raw_response  # the refusal text is kept


def test_tool_call_carrying_the_decision_is_used(monkeypatch):
    args = '{"desired_position": 1, "desired_duration_seconds": 60, "bid_price": 20}'
    fake = FakeLLM(response(None, tool_calls=[tool_call("submit_declaration", args)],
                            finish_reason="tool_calls")).install(monkeypatch)
    out = decide(fake, schema=D, fallback=DFB)
    assert len(fake.requests) == 1 and out.valid and not out.fallback_used
    assert out.decision.model_dump() == {"desired_position": 1, "desired_duration_seconds": 60, "bid_price": 20}
    rec = out.calls[0]
    assert rec.outcome == "tool_call" and rec.decision_source == "tool_call" and out.source == "tool_call"
    assert rec.finish_reason == "tool_calls" and rec.tool_calls[0]["name"] == "submit_declaration"


def test_invalid_tool_call_is_repaired_like_invalid_text(monkeypatch):
    bad = '{"desired_position": true, "desired_duration_seconds": 60, "bid_price": 20}'
    FakeLLM(response(None, tool_calls=[tool_call("f", bad)]), response('{"desired_position": 2, '
            '"desired_duration_seconds": 60, "bid_price": 0}')).install(monkeypatch)
    out = decide(None, schema=D, fallback=DFB)
    assert [c.outcome for c in out.calls] == ["invalid", "ok"] and "boolean" in out.violation


def test_truncated_answer_is_never_repaired_into_a_value(monkeypatch):
    # the cut text even holds a complete valid object: it must not be used
    cut = VALID + "\nand furthermore I think that"
    fake = FakeLLM(response(cut, finish_reason="length"), response(cut, finish_reason="length")).install(monkeypatch)
    out = decide(fake, max_tokens=60)
    assert [c.outcome for c in out.calls] == ["truncated", "truncated"]
    assert all(c.parsed is None for c in out.calls) and out.fallback_used and out.outcome == "truncated"
    second = fake.requests[1]
    assert second["messages"] == MSGS  # the original prompt, not the partial text
    assert second["max_tokens"] == 60 * TRUNCATION_RETRY_FACTOR
    assert out.calls[1].attempt == 1 and out.calls[1].params["max_tokens"] == 120


def test_truncated_then_complete_answer_is_used(monkeypatch):
    FakeLLM(response('{"reasoning": "r", "extrac', finish_reason="length"), response(VALID)).install(monkeypatch)
    out = decide(None, max_tokens=40)
    assert out.valid and out.repaired and out.decision.extraction == 12


def test_truncation_resend_is_capped(monkeypatch):
    fake = FakeLLM(response("{", finish_reason="length"), response(VALID)).install(monkeypatch)
    decide(fake, max_tokens=3000)
    assert fake.requests[1]["max_tokens"] == TRUNCATION_RETRY_CAP
    fake = FakeLLM(response("{", finish_reason="length")).install(monkeypatch)
    out = decide(fake, max_tokens=TRUNCATION_RETRY_CAP)  # no more room to give: no resend
    assert len(fake.requests) == 1 and out.outcome == "truncated" and out.fallback_used


def test_content_list_is_read_as_text(monkeypatch):
    lit = load_litellm()
    r = lit.ModelResponse(choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x"}}])
    r.choices[0].message.content = [{"type": "text", "text": '{"reasoning": "r", '}, {"type": "text", "text": '"extraction": 3}'}]
    FakeLLM(r).install(monkeypatch)
    assert decide(None).decision.extraction == 3


# -- missing decisions ---------------------------------------------------------------------
def test_transport_failure_is_a_missing_decision_not_a_fallback(monkeypatch):
    FakeLLM(rate_limited()).install(monkeypatch)
    out = decide(None)
    assert out.missing and out.decision is None and not out.fallback_used and not out.valid
    assert out.outcome == "transport_error" and out.calls[0].missing and not out.calls[0].fallback_used
    with pytest.raises(MissingDecisionError, match="agent 'a1', round 3") as exc:
        raise MissingDecisionError.from_calls(out.calls)  # what an agent raises for a missing decision
    assert exc.value.calls == out.calls and exc.value.outcome == "transport_error"


def test_invalid_answer_then_failed_repair_transport_falls_back(monkeypatch):
    FakeLLM(response("no json here"), rate_limited()).install(monkeypatch)
    out = decide(None)
    assert [c.outcome for c in out.calls] == ["invalid", "transport_error"]
    assert out.fallback_used and not out.missing and out.outcome == "invalid" and out.source == "fallback"


def _obs():
    from scarce_lab.environments.sovsim.world.commons import CommonsGame

    return CommonsGame("cpr").observe("a0")


def test_sovsim_agent_raises_missing_decision(monkeypatch):
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent

    FakeLLM(rate_limited()).install(monkeypatch)
    with pytest.raises(MissingDecisionError) as exc:
        asyncio.run(LLMAgent("openai/x", client()).adecide(_obs(), seed=1))
    assert len(exc.value.calls) == 1 and exc.value.agent == "a0"


def _view():
    from scarce_lab.environments.scarce.agents import NegotiationView
    from scarce_lab.environments.scarce.world import Contention, MechanismConfig, Request

    reqs = [Request(worker="a", time_s=1, duration_s=120), Request(worker="b", time_s=2, duration_s=30)]
    c = Contention(0, reqs, MechanismConfig())
    return NegotiationView(worker="b", contention=c.private_view("b"), own_budget=500, own_remaining_s=900.0)


def test_scarce_negotiator_raises_missing_decision(monkeypatch):
    from scarce_lab.environments.scarce.agents import LLMNegotiator

    FakeLLM(rate_limited()).install(monkeypatch)
    with pytest.raises(MissingDecisionError):
        asyncio.run(LLMNegotiator("openai/x", client()).declare(_view()))


def _solver_obs():
    from scarce_lab.environments.scarce.agents import SolverObservation

    task = {"id": "rev", "name": "rev", "program": "rev", "documentation": "reverse lines", "examples": []}
    return SolverObservation(worker="w0", task=task, files=["docs.txt"], in_slot=True, slot_remaining_s=40,
                             own_remaining_s=600, own_budget=1000, transcript=[], memories=[], step=3)


@pytest.mark.parametrize("native", [True, False])
def test_scarce_solver_raises_missing_decision(monkeypatch, native):
    from scarce_lab.environments.scarce.agents import LLMSolver

    FakeLLM(rate_limited()).install(monkeypatch)
    with pytest.raises(MissingDecisionError):
        asyncio.run(LLMSolver("openai/x", client(), native_tools=native).step(_solver_obs()))


def test_scarce_solver_native_tool_call_outcomes(monkeypatch):
    from scarce_lab.environments.scarce.agents import LLMSolver

    solver = LLMSolver("openai/x", client(), native_tools=True)
    FakeLLM(response(None, tool_calls=[tool_call("run_command", {"command": "ls"})])).install(monkeypatch)
    d = asyncio.run(solver.step(_solver_obs()))
    assert d.value.command == "ls" and d.calls[0].outcome == "tool_call" and not d.fallback_used
    FakeLLM(response(None, tool_calls=[tool_call("run_command", '{"command": "ls", "duration_seconds": "9"}')])).install(monkeypatch)
    d = asyncio.run(solver.step(_solver_obs()))
    assert d.fallback_used and d.calls[0].outcome == "invalid" and "duration_seconds" in d.violation
    FakeLLM(response("ls please", refusal="no")).install(monkeypatch)
    d = asyncio.run(solver.step(_solver_obs()))
    assert d.fallback_used and d.calls[0].outcome == "refusal"


def test_economy_agent_raises_missing_decision(monkeypatch):
    from scarce_lab.environments.economy.agents.llm import LLMPartialPolicy
    from scarce_lab.environments.economy.agents.partial import PartialGenome, default_instruction
    from scarce_lab.environments.economy.world.qa import QAObs

    recorded = []
    pol = LLMPartialPolicy("openai/x", client(), seed=1, record_calls=recorded.extend)
    g = PartialGenome("compute", default_instruction("compute"), ("after_plan",))
    FakeLLM(rate_limited()).install(monkeypatch)
    with pytest.raises(MissingDecisionError):
        pol.act(g, QAObs("What is 2 + 2?", (), 1), agent="x1", episode=0, step=1)
    FakeLLM(rate_limited()).install(monkeypatch)
    with pytest.raises(MissingDecisionError):
        pol.mutate(g, random.Random(0))
    assert len(recorded) == 2 and all(r.outcome == "transport_error" and r.missing for r in recorded)
    FakeLLM(response("Rewritten instruct", finish_reason="length")).install(monkeypatch)
    child = pol.mutate(g, random.Random(0))  # a truncated rewrite keeps the parent's instruction
    assert child.instruction == g.instruction and recorded[-1].fallback_used


def test_judge_transport_failure_is_an_error_judgement(monkeypatch):
    from scarce_lab.judge.judges import JudgeSpec
    from scarce_lab.judge.judging import judge_unit
    from scarce_lab.judge.taxonomy import load_taxonomy
    from scarce_lab.judge.units import Unit

    tax = load_taxonomy("scarce")
    unit = Unit(unit_id="u1", run_id="r", round=1, agent="a", public_reasoning="I bid high.")
    FakeLLM(rate_limited()).install(monkeypatch)
    j, calls = asyncio.run(judge_unit(client(), tax, unit, JudgeSpec(name="j1", model="openai/x")))
    assert not j.votes and j.labels == [] and calls[0].missing and calls[0].outcome == "transport_error"


def test_a_text_answer_to_a_tool_request_is_its_own_outcome_and_asked_again(monkeypatch):
    # 6/6 plain-text answers silently became list_files. A text answer is
    # ``text_for_tool``; the solver asks once more, and uses the tool call that comes.
    from scarce_lab.environments.scarce.agents import LLMSolver

    solver = LLMSolver("openai/x", client(), native_tools=True)
    fake = FakeLLM(response("I will list the files."),
                   response(None, tool_calls=[tool_call("run_command", {"command": "ls"})])).install(monkeypatch)
    d = asyncio.run(solver.step(_solver_obs()))
    assert [c.outcome for c in d.calls] == ["text_for_tool", "tool_call"]
    assert d.value.command == "ls" and d.repaired and not d.fallback_used
    assert all(r["tool_choice"] == "required" for r in fake.requests)  # no api_base: "required" is sent
    FakeLLM(response("still text"), response("more text")).install(monkeypatch)
    d = asyncio.run(solver.step(_solver_obs()))
    assert [c.outcome for c in d.calls] == ["text_for_tool", "text_for_tool"]
    assert d.fallback_used and not d.valid and "text answer" in d.violation
