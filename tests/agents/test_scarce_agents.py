"""SCARCE agents: scripted negotiator policies, repairs of model output, tool parsing, file tools."""

import asyncio

import pytest

from scarce_lab.environments.scarce.agents import (
    NegotiationView,
    ScriptedNegotiator,
    make_negotiator,
    make_solver,
)
from scarce_lab.environments.scarce.agents import tools as ft
from scarce_lab.environments.scarce.agents.negotiators import complete_ballot
from scarce_lab.environments.scarce.agents.solvers import parse_tool_call
from scarce_lab.environments.scarce.world import Contention, Declaration, MechanismConfig, Request


def _view(worker="b", budget=500, remaining=900.0, declare=True):
    reqs = [Request(worker="a", time_s=1, duration_s=120), Request(worker="b", time_s=2, duration_s=30),
            Request(worker="c", time_s=3, duration_s=60)]
    c = Contention(0, reqs, MechanismConfig())
    if declare:
        for w, (pos, dur, bid) in {"a": (2, 120, 10), "b": (1, 30, 50), "c": (3, 60, 90)}.items():
            c.declare(w, Declaration(desired_position=pos, desired_duration_seconds=dur, bid_price=bid))
        c.advance()
    return NegotiationView(worker=worker, contention=c.private_view(worker), own_budget=budget,
                           own_remaining_s=remaining)


def run(coro):
    return asyncio.run(coro)


def test_scripted_declarations():
    v = _view(declare=False)
    assert run(ScriptedNegotiator("fifo").declare(v)).value == Declaration(
        desired_position=2, desired_duration_seconds=30, bid_price=0)
    # sjf: b asked for the shortest slot (30 s) -> position 1
    assert run(ScriptedNegotiator("sjf").declare(v)).value.desired_position == 1
    # bid-first: a fifth of the budget
    assert run(ScriptedNegotiator("bid-first").declare(v)).value.bid_price == 100
    # edf: 5 minutes left -> position 1, bid min(500 // 5, 6000 // 5) = 100
    d = run(ScriptedNegotiator("edf").declare(_view(remaining=300.0, declare=False))).value
    assert (d.desired_position, d.bid_price) == (1, 100)
    with pytest.raises(ValueError, match="negotiator policy must be one of"):
        ScriptedNegotiator("greedy")


def test_scripted_ballots():
    v = _view()
    assert run(ScriptedNegotiator("fifo").ballot(v)).value.ranking() == ["a", "b", "c"]
    assert run(ScriptedNegotiator("sjf").ballot(v)).value.ranking() == ["b", "c", "a"]
    assert run(ScriptedNegotiator("edf").ballot(v)).value.ranking() == ["b", "a", "c"]
    hb = run(ScriptedNegotiator("highest-bid").ballot(v)).value
    assert hb.ranking() == ["c", "b", "a"] and [e.price for e in hb.entries] == [90, 50, 10]
    r = run(ScriptedNegotiator("random", seed=3).ballot(v)).value
    assert sorted(r.ranking()) == ["a", "b", "c"]


def test_repairs_of_model_output():
    v = _view()
    d, note = v.legal.clamp_declaration(9, 999, 10**6)
    assert (d.desired_position, d.desired_duration_seconds, d.bid_price) == (3, 300, 500) and "clamped" in note
    assert v.legal.clamp_declaration(1, 30, 5)[1] is None
    b, note = complete_ballot([("c", 40, 3), ("c", 50, 4), ("zed", 1, 1), ("a", 500, 2)], v)
    # duplicates and unknown names dropped, over-cap duration clamped, b appended with its declaration
    assert b.ranking() == ["c", "a", "b"]
    assert [(e.duration_seconds, e.price) for e in b.entries] == [(40, 3), (300, 2), (30, 50)]
    assert "duplicate 'c'" in note and "unknown worker 'zed'" in note and "missing 'b'" in note


def test_parse_tool_call():
    a, err = parse_tool_call([{"name": "request_execution_slot", "arguments": '{"duration_seconds": 90, "reason": "x"}'}])
    assert err is None and a.tool == "request_execution_slot" and a.duration_seconds == 90
    assert parse_tool_call(None)[1] == "no tool call in the answer"
    assert parse_tool_call([{"name": "rm_rf", "arguments": "{}"}])[0] is None
    assert parse_tool_call(None, "Timeout")[1] == "Timeout"


def test_file_tools_confined(tmp_path):
    assert ft.write_file(tmp_path, "src/main.c", "int main(){}") == 12
    assert ft.list_files(tmp_path) == ["src/main.c"]
    assert ft.read_file(tmp_path, "src/main.c") == "int main(){}"
    (tmp_path / "bin").write_bytes(b"\x7fELF\x00\x00")
    assert ft.read_file(tmp_path, "bin") == "<binary file, 6 bytes>"
    for bad in ("../x", "/etc/passwd", ""):
        with pytest.raises(ft.ToolError, match="path"):
            ft.write_file(tmp_path, bad, "x")


def test_factories():
    assert make_negotiator("scripted/sjf").model == "scripted/sjf"
    with pytest.raises(ValueError, match="needs an LLM client"):
        make_negotiator("openai/gpt-4o")
    with pytest.raises(ValueError, match="needs a policy name"):
        make_solver("scripted/", task=None)


def test_one_negotiator_decides_through_its_model_scripted_or_not():
    """The factory resolves the string once: a scripted policy behind a ScriptedModel
    (the client maker is never called) decides as the policy itself does; a model gets
    a client model, whose client is made then, once; an argument no policy takes is refused."""
    from scarce_lab.llm.model import ClientModel, ScriptedModel

    made = []

    def make_client():
        made.append(1)
        return object()

    v = _view(declare=False)
    neg = make_negotiator("scripted/sjf", make_client=make_client)
    assert isinstance(neg.lm, ScriptedModel) and neg.scripted and made == []
    assert run(neg.declare(v)).value == run(ScriptedNegotiator("sjf").declare(v)).value
    llm = make_negotiator("openai/gpt-4o", make_client=make_client, reasoning_effort="low")
    assert isinstance(llm.lm, ClientModel) and not llm.scripted and made == [1]
    assert llm.reasoning_effort == "low" and llm.lm.generation.reasoning_effort == "low"
    with pytest.raises(ValueError, match="no argument"):
        make_negotiator("scripted/fifo:3")
    from scarce_lab.environments.scarce.runner import ScarceConfig

    with pytest.raises(ValueError, match="negotiator policies take no argument"):  # refused before the run too
        ScarceConfig(model="scripted/skilled:0.3", negotiator_model="scripted/fifo:3")
    s = make_solver("scripted/routine", task=None, make_client=make_client)
    assert s.scripted and made == [1]


class _ToolClient:
    """Fake client: native tool calls for acomplete, a JSON action for adecide."""

    def __init__(self):
        self.kw = {}

    async def acomplete(self, model, messages, **kw):
        from scarce_lab.data.schema import LLMCallRecord, messages_hash
        from scarce_lab.llm import CompletionResult

        self.kw = kw
        rec = LLMCallRecord(call_id="x", model=model, messages=messages, messages_hash=messages_hash(messages))
        calls = [{"id": "1", "name": "run_command", "arguments": '{"command": "./rev < docs.txt"}'}]
        return CompletionResult(text=None, tool_calls=calls, record=rec)

    async def adecide(self, *, model, messages, schema, fallback, **kw):
        from scarce_lab.llm import DecisionOutcome

        self.kw = kw
        d = schema(tool="save_persistent_memory", text="rev reverses lines")
        return DecisionOutcome(decision=d, valid=True, repaired=False, fallback_used=False, violation=None)


def _obs():
    from scarce_lab.environments.scarce.agents import SolverObservation

    task = {"id": "rev", "name": "rev", "program": "rev", "documentation": "reverse lines", "examples": []}
    return SolverObservation(worker="w0", task=task, files=["docs.txt"], in_slot=True, slot_remaining_s=40,
                             own_remaining_s=600, own_budget=1000, transcript=[], memories=[], step=3)


@pytest.mark.embedded  # the embedded model's tokenizer sizes the prompt
def test_llm_solver_native_tools_and_json_action():
    from scarce_lab.environments.scarce.agents import LLMSolver

    client = _ToolClient()
    native = LLMSolver("openai/gpt-4o", client, native_tools=True, reasoning_effort="high")
    d = run(native.step(_obs()))
    assert d.value.tool == "run_command" and d.value.command == "./rev < docs.txt" and not d.fallback_used
    assert [t["function"]["name"] for t in client.kw["tools"]][:3] == ["list_files", "read_file", "write_file"]
    assert client.kw["reasoning_effort"] == "high"
    assert "Answer with one JSON object" not in d.prompt[0]["content"]
    js = LLMSolver("embedded/smollm2", client)
    assert js.native_tools is False
    d = run(js.step(_obs()))
    assert d.value.tool == "save_persistent_memory" and d.value.text == "rev reverses lines"
    assert "Answer with one JSON object" in d.prompt[0]["content"]
    assert "40 s left in your slot" in d.prompt[1]["content"]


# -- masks in the solver's calls, the checklist, prompts that fit the model ------
def _obs2(files, in_slot=False, transcript=(), doc="reverse lines", program="rev"):
    from scarce_lab.environments.scarce.agents import SolverObservation

    task = {"id": program, "name": program, "program": program, "documentation": doc,
            "examples": [{"args": [], "stdin": "ab\n", "stdout": "ba\n", "exit_code": 0}]}
    return SolverObservation(worker="w0", task=task, files=list(files), in_slot=in_slot, slot_remaining_s=40,
                             own_remaining_s=600, own_budget=1000, transcript=list(transcript), memories=[], step=0)


@pytest.mark.embedded  # the embedded model's tokenizer sizes the prompt
def test_llm_solver_offers_only_the_legal_tools():
    import json

    from scarce_lab.environments.scarce.agents import LLMSolver

    client = _ToolClient()
    native = LLMSolver("openai/gpt-4o", client, native_tools=True)
    run(native.step(_obs2(["docs.txt", "rev"], in_slot=False)))
    names = [t["function"]["name"] for t in client.kw["tools"]]
    assert names == ["list_files", "read_file", "write_file", "request_execution_slot", "save_persistent_memory"]
    read = client.kw["tools"][1]["function"]["parameters"]["properties"]["path"]
    assert read["enum"] == ["docs.txt", "rev"]
    # the fake answers run_command, which is illegal outside a slot: refused with the reason, fallback applies
    d = run(native.step(_obs2(["docs.txt", "rev"], in_slot=False)))
    assert d.fallback_used and d.value.tool == "list_files" and "illegal tool call 'run_command'" in d.violation

    class _Capture(_ToolClient):
        async def adecide(self, *, model, messages, schema, fallback, **kw):
            self.schema = schema
            return await super().adecide(model=model, messages=messages, schema=schema, fallback=fallback, **kw)

    c2 = _Capture()
    js = LLMSolver("embedded/smollm2", c2, prompt_tokens=10**6)
    run(js.step(_obs2(["docs.txt", "compile.sh", "rev"], in_slot=True)))
    sent = json.dumps(c2.schema.model_json_schema())
    assert '"run_command"' in sent and '"submit"' in sent and '"request_execution_slot"' not in sent


@pytest.mark.embedded  # the embedded model's tokenizer sizes the prompt
def test_checklist_follows_the_state():
    from scarce_lab.environments.scarce.agents.solvers import LLMSolver, checklist

    p = {"built": False, "tried": False}
    ws = ["docs.txt", "examples.json", "rev"]
    assert checklist(_obs2(ws), p)["next"] == "program"
    c = checklist(_obs2([*ws, "main.py"]), p)
    assert c["next"] == "compile" and c["build_line"] == "cp main.py executable; chmod +x executable"
    assert checklist(_obs2([*ws, "main.c"]), p)["build_line"] == "cc -O2 -o executable main.c"
    done = [*ws, "main.py", "compile.sh"]
    assert checklist(_obs2(done), p)["next"] == "request"
    assert checklist(_obs2(done, in_slot=True), p)["next"] == "build"
    s = LLMSolver("embedded/smollm2", None, prompt_tokens=10**6)
    s._observe(_obs2(done, True, [{"action": "run_command('bash compile.sh')", "result": "exit 1; stdout: ''"}]))
    assert not s.progress["built"]
    s._observe(_obs2(done, True, [{"action": "run_command('bash compile.sh')", "result": "exit 0; stdout: ''"}]))
    assert s.progress["built"]
    c = checklist(_obs2(done, in_slot=True), s.progress)
    assert c["next"] == "try" and c["try_command"] == "printf %s 'ab\n' | ./executable"
    assert checklist(_obs2(done, in_slot=False), s.progress)["next"] == "submit"
    text = s.messages(_obs2(done, in_slot=False))[1]["content"]
    assert "[x] run_command: bash compile.sh" in text and 'Next step: submit. Answer like {"tool": "submit"}' in text
    text = s.messages(_obs2([*ws, "main.py"], in_slot=False))[1]["content"]
    assert ('Answer like {"tool": "write_file", "path": "compile.sh", "content": '
            '"cp main.py executable; chmod +x executable"}') in text
    hosted = LLMSolver("openai/gpt-4o", None, native_tools=True)
    assert "Checklist" not in hosted.messages(_obs2(done))[1]["content"]


@pytest.mark.embedded
def test_embedded_prompt_fits_its_budget_and_says_so(embedded_model):
    from scarce_lab.environments.scarce.agents import LLMSolver
    from scarce_lab.llm.context import count_prompt_tokens

    doc = "The tool reads lines and reverses them, one by one. " * 80  # 4,160 characters
    s = LLMSolver(embedded_model, None, prompt_tokens=750)
    msgs = s.messages(_obs2(["docs.txt", "rev"], doc=doc))
    assert count_prompt_tokens(embedded_model, msgs) <= 750
    shown = msgs[1]["content"].split("(the first ")[1].split(" of ")[0]
    assert 0 < int(shown) < len(doc) and f"of {len(doc)} characters; read_file docs.txt shows more" in msgs[1]["content"]
    full = LLMSolver("openai/gpt-4o", None, native_tools=True).messages(_obs2(["docs.txt", "rev"], doc=doc))
    assert doc in full[1]["content"] and "(the first " not in full[1]["content"]


def test_sampling_settings_define_the_condition_when_only_the_negotiator_is_a_model():
    # a scripted solver with a model negotiator: the client's settings shape the negotiator,
    # so runs that differ only in reasoning effort are different conditions (and run ids)
    from scarce_lab.environments.scarce.config import ScarceConfig, ScarceLLM

    base = dict(model="scripted/fifo", negotiator_model="embedded/smollm2", workers=2, subruns=1)
    ids = {e: ScarceConfig(llm=ScarceLLM(reasoning_effort=e), **base) for e in (None, "low", "high")}
    assert len({c.run_id for c in ids.values()}) == 3
    assert "reasoning_effort=high" in ids["high"].condition_label()
    assert "stuck_repeats" not in ids["low"].condition_settings()  # a model-solver setting only
    scripted = ScarceConfig(model="scripted/fifo", workers=2)  # no model anywhere: no client settings
    assert not any(k.startswith("llm.") for k in scripted.condition_settings())
