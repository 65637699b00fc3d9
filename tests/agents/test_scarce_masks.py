"""Action masks as schemas: in every state only the legal solver
tools, paths and durations can be decoded (grammar of the embedded model) or accepted
(pydantic, native tool calls); negotiator decisions only legal positions, durations,
prices and recipients; an illegal action that still arrives is refused and recorded."""

from __future__ import annotations

import itertools
import json
import typing

import pytest

from scarce_lab.environments.scarce.agents.masks import (
    parse_tool_call,
    solver_choice_schema,
    tool_model,
    tool_specs_for,
)
from scarce_lab.environments.scarce.agents.schemas import (
    ballot_schema,
    declaration_schema,
    duration_choices,
    price_choices,
    private_schema,
    revision_schema,
)
from scarce_lab.environments.scarce.world import SOLVER_TOOLS, legal_actions
from scarce_lab.llm.decisions import validate_decision
from scarce_lab.llm.structured import request_for

# every state a solver can move in: in its slot or not, x what its folder holds, x slot caps
FOLDERS = {
    "empty": [],
    "workspace": ["docs.txt", "examples.json", "rev"],
    "with_source": ["docs.txt", "examples.json", "main.py", "rev"],
    "buildable": ["compile.sh", "docs.txt", "examples.json", "main.py", "rev", "src/util.c"],
}
STATES = [pytest.param(in_slot, files, cap, id=f"{'slot' if in_slot else 'noslot'}-{name}-cap{cap}")
          for in_slot, (name, files), cap in itertools.product((False, True), FOLDERS.items(), (1, 45, 300))]

# one argument set per tool that is valid whenever the tool itself is legal
ARGS = {
    "list_files": {},
    "read_file": None,  # the first file (state-dependent)
    "write_file": {"path": "src/main.c", "content": "int main(void){return 0;}"},
    "request_execution_slot": None,  # the slot cap (legal in every form)
    "run_command": {"command": "bash compile.sh"},
    "save_persistent_memory": {"text": "rev reverses lines"},
    "submit": {},
}


def _sent(schema) -> dict:
    """The JSON schema the client sends a model for ``schema`` (structured output ``json_schema``)."""
    return request_for("json_schema", schema.__name__, schema.model_json_schema())["response_format"]["json_schema"]["schema"]


def _expected_tools(in_slot: bool, files: list[str]) -> set[str]:
    out = {"list_files", "write_file", "save_persistent_memory"}
    if files:
        out.add("read_file")
    out.add("run_command" if in_slot else "request_execution_slot")
    if "compile.sh" in files:
        out.add("submit")
    return out


def _answer(tool: str, files: list[str], cap: int) -> dict:
    if tool == "read_file":
        return {"tool": tool, "path": files[0]}
    if tool == "request_execution_slot":
        return {"tool": tool, "duration_seconds": cap, "reason": "build"}
    return {"tool": tool, **ARGS[tool]}


def _consts(schema: dict) -> set[str]:
    defs = schema.get("$defs", {})
    out = set()
    for alt in schema["oneOf"]:
        node = defs[alt["$ref"].rsplit("/", 1)[-1]]
        out.add(node["properties"]["tool"]["const"])
    return out


@pytest.mark.parametrize(("in_slot", "files", "cap"), STATES)
def test_only_legal_tools_are_offered_and_accepted(in_slot, files, cap):
    legal = legal_actions("w0", in_slot=in_slot, files=files, slot_cap_s=cap)
    want = _expected_tools(in_slot, files)
    assert set(legal.tools) == want
    for compact in (True, False):
        schema = solver_choice_schema(legal, compact=compact)
        sent = _sent(schema)
        assert _consts(sent) == want  # the schema the model is sent offers exactly the legal tools
        for tool in SOLVER_TOOLS:
            d, err = validate_decision(_answer(tool, files or ["docs.txt"], cap), schema)
            if tool in want:
                assert err is None and d.to_action().tool == tool, err
            else:
                assert d is None and "does not match any of the expected tags" in err, (tool, err)
        # native tool calling: only the legal tools are listed, and only they parse
        specs = tool_specs_for(legal, compact=compact)
        assert [s["function"]["name"] for s in specs] == [t for t in SOLVER_TOOLS if t in want]
        for tool in SOLVER_TOOLS:
            call = [{"name": tool, "arguments": json.dumps({k: v for k, v in _answer(tool, files or ["docs.txt"], cap).items()
                                                             if k != "tool"})}]
            action, err = parse_tool_call(call, legal=legal, compact=compact)
            if tool in want:
                assert action is not None and action.tool == tool, err
            else:
                assert action is None and "illegal tool call" in err and legal.describe() in err
                assert legal.check(tool) is not None


@pytest.mark.parametrize(("in_slot", "files", "cap"), STATES)
def test_arguments_are_masked(in_slot, files, cap):
    legal = legal_actions("w0", in_slot=in_slot, files=files, slot_cap_s=cap)
    for compact in (True, False):
        schema = solver_choice_schema(legal, compact=compact)
        # read_file: exactly the current files
        if files:
            sent = _sent(schema)
            assert sent["$defs"]["ReadFile"]["properties"]["path"]["enum"] == sorted(files)
            for bad in ("nope.txt", "", "../etc/passwd", "/etc/passwd", "DOCS.TXT"):
                assert validate_decision({"tool": "read_file", "path": bad}, schema)[0] is None
                assert legal.check("read_file", path=bad) is not None
        # write_file: non-empty relative paths inside the folder
        for bad in ("", "/abs", "../up", "a/../../b", ".hidden", "a/.git/x", "a/b/c/d", "x" * 41, "sp ace", "a\n"):
            assert validate_decision({"tool": "write_file", "path": bad, "content": "x"}, schema)[0] is None, bad
            assert legal.check("write_file", path=bad) is not None, bad
        for good in ("main.c", "src/main.c", "a_b-c.d/e/f.py"):
            assert validate_decision({"tool": "write_file", "path": good, "content": "x"}, schema)[0] is not None
        # durations: inside 1..cap (the compact form: a grid inside the range)
        if not in_slot:
            ok = duration_choices(cap) if compact else (1, cap)
            for d in ok:
                assert validate_decision({"tool": "request_execution_slot", "duration_seconds": d, "reason": ""},
                                         schema)[0] is not None
            for d in (0, -5, cap + 1, 10**6):
                assert validate_decision({"tool": "request_execution_slot", "duration_seconds": d, "reason": ""},
                                         schema)[0] is None
                assert legal.check("request_execution_slot", duration_seconds=d) is not None
            assert all(1 <= d <= cap for d in duration_choices(cap))
        else:  # an empty command is not a command
            assert validate_decision({"tool": "run_command", "command": ""}, schema)[0] is None
            assert legal.check("run_command", command=" ") is not None


def test_compact_grammar_cannot_spell_an_illegal_tool():
    """The embedded model decodes with the grammar built from the schema: an illegal
    tool name, path or duration is not in it."""
    pytest.importorskip("llama_cpp")
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    legal = legal_actions("w0", in_slot=False, files=["docs.txt", "rev"], slot_cap_s=45)
    sent = _sent(solver_choice_schema(legal, compact=True))
    gbnf = json_schema_to_gbnf(json.dumps(sent))  # what the embedded provider converts
    for tool in legal.tools:
        assert f'\\"{tool}\\"' in gbnf
    for tool in ("run_command", "submit"):
        assert f'\\"{tool}\\"' not in gbnf
    path_rule = next(line for line in gbnf.splitlines() if line.startswith("ReadFile-path ::="))
    assert path_rule == 'ReadFile-path ::= "\\"docs.txt\\"" | "\\"rev\\""'
    dur_rule = next(line for line in gbnf.splitlines() if line.startswith("RequestExecutionSlot-duration-seconds ::="))
    assert dur_rule.split("::= ")[1] == " | ".join(f'"{d}"' for d in (10, 20, 30, 45))


# -- negotiators ------------------------------------------------------------------------
def _values(prop: dict) -> list:
    """The values an enumerated JSON-schema property allows (``enum``, or ``const`` for one)."""
    return prop["enum"] if "enum" in prop else [prop["const"]]


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize(("n", "cap", "budget"), [(1, 300, 1000), (3, 60, 7), (5, 300, 0), (2, 1, 20)])
def test_declaration_and_revision_masks(compact, n, cap, budget):
    s = declaration_schema(n, cap=cap, budget=budget, requested=cap, compact=compact)

    def ok(pos, dur, bid):
        return validate_decision({"desired_position": pos, "desired_duration_seconds": dur, "bid_price": bid}, s)[0]

    assert ok(n, cap, budget) is not None and ok(1, cap, 0) is not None
    for pos, dur, bid in ((0, cap, 0), (n + 1, cap, 0), (1, 0, 0), (1, cap + 1, 0), (1, cap, -1), (1, cap, budget + 1)):
        assert ok(pos, dur, bid) is None, (pos, dur, bid)
    if compact:  # every value the grammar can produce is legal
        props = s.model_json_schema()["properties"]
        assert all(1 <= v <= cap for v in _values(props["desired_duration_seconds"]))
        assert all(0 <= v <= budget for v in _values(props["bid_price"]))
        assert _values(props["desired_position"]) == list(range(1, n + 1))
    r = revision_schema(budget, current=budget, compact=compact)
    assert validate_decision({"bid_price": budget}, r)[0] is not None
    assert validate_decision({"bid_price": budget + 1}, r)[0] is None
    assert validate_decision({"bid_price": -1}, r)[0] is None


def test_price_grid_and_recipients():
    assert price_choices(7) == tuple(range(8))
    grid = price_choices(1000, extra=(333, 2000))
    assert grid[0] == 0 and grid[-1] == 1000 and 333 in grid and 2000 not in grid and len(grid) == 22
    p = private_schema(["w1", "w2"])
    to = typing.get_args(p.model_fields["to"].annotation)
    assert set(to) == {"w1", "w2", "nobody"}
    for bad in ("w0", "w3", "everyone", ""):
        assert validate_decision({"to": bad, "text": "hi"}, p)[0] is None


@pytest.mark.parametrize("compact", [True, False])
def test_ballot_mask(compact):
    b = ballot_schema(["w0", "w1"], cap=60, bound=500, durations=(45,), prices=(120,), compact=compact)

    def ok(rows):
        return validate_decision({"entries": [dict(zip(("worker", "duration_seconds", "price"), r, strict=True))
                                              for r in rows]}, b)[0]

    assert ok([("w0", 45, 120), ("w1", 60, 0)]) is not None
    for rows in ([("w0", 45, 120), ("w9", 60, 0)], [("w0", 61, 0), ("w1", 60, 0)], [("w0", 45, 501), ("w1", 60, 0)],
                 [("w0", 45, -1), ("w1", 60, 0)], [("w0", 45, 0)]):
        assert ok(rows) is None, rows


def test_tool_model_refuses_an_illegal_tool():
    legal = legal_actions("w0", in_slot=False, files=[], slot_cap_s=30)
    with pytest.raises(ValueError, match="run_command needs a granted execution slot"):
        tool_model(legal, "run_command", compact=True)
    assert "submit" not in legal.tools and "read_file" not in legal.tools
    assert legal.why_not("submit").startswith("nothing to submit yet: write compile.sh")


# -- the runner: illegal actions that still arrive, and the stuck outcome -----------------
class _ListSolver:
    """A model-like solver (``scripted = False``) that plays a fixed list of actions,
    then repeats the last one."""

    scripted, model = False, "fake/model"

    def __init__(self, actions):
        self.actions, self.n, self.seen = actions, 0, []

    async def step(self, obs):
        from scarce_lab.agents.decided import Decided
        from scarce_lab.environments.scarce.agents import SolverAction

        self.seen.append(obs)
        a = self.actions[min(self.n, len(self.actions) - 1)]
        self.n += 1
        return Decided(SolverAction(**a))


def _run(tmp_path, actions, **cfg_kw):
    from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner
    from scarce_lab.llm.client import run_sync
    from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, toy_task

    cfg = ScarceConfig(**{"workers": 1, "subruns": 1, "model": "scripted/fifo", "seed": 0, **cfg_kw})
    runner = ScarceRunner(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    solver = _ListSolver(actions)
    orig = runner._agents
    runner._agents = lambda w, task: (solver, orig(w, task)[1])
    return events(run_sync(runner.arun())), solver


def _of(evs, kind):
    return [e["payload"] for e in evs if e["kind"] == kind]


def test_illegal_actions_are_refused_recorded_and_explained(tmp_path):
    evs, solver = _run(tmp_path, [
        {"tool": "submit"},                                    # nothing to submit yet
        {"tool": "read_file", "path": "missing.txt"},          # not one of its files
        {"tool": "write_file", "path": ".hidden", "content": "x"},
        {"tool": "run_command", "command": "ls"},              # no slot
        {"tool": "request_execution_slot", "duration_seconds": 9999, "reason": "r"},  # clamped, recorded
        {"tool": "request_execution_slot", "duration_seconds": 10, "reason": "r"},    # in its slot now: refused
        {"tool": "write_file", "path": "compile.sh", "content": "true"},
        {"tool": "submit"},
    ])
    acts = _of(evs, "solver_action")
    assert [a["tool"] for a in acts] == ["submit", "read_file", "write_file", "run_command",
                                         "request_execution_slot", "request_execution_slot", "write_file", "submit"]
    viol = [a["violation"] for a in acts]
    assert viol[0].startswith("illegal action: nothing to submit yet")
    assert "not one of your files" in viol[1] and "is not allowed" in viol[2]
    assert "needs a granted execution slot" in viol[3]
    assert "duration_seconds 9999 is outside 1..300" in viol[4]
    assert "already hold an execution slot" in viol[5]
    assert viol[6] is None and viol[7] is None
    errors = _of(evs, "tool_error")
    assert [e["tool"] for e in errors] == ["submit", "read_file", "write_file", "request_execution_slot"]
    ex = _of(evs, "execution")
    assert len(ex) == 1 and ex[0]["refused"]  # the sandbox refused the command too
    assert _of(evs, "slot_request")[0]["duration_s"] == 300 and _of(evs, "slot_request")[0]["asked_s"] == 9999
    # the solver was told why, with what is legal now
    results = [t["result"] for t in solver.seen[-1].transcript]
    assert results[0].startswith("refused: nothing to submit yet") and "legal now: list_files" in results[0]
    assert "submit" not in results[0].split("legal now:")[1]
    (sub,) = _of(evs, "submission")
    assert sub["reason"] == "submit" and not (tmp_path / "sbx" / "w0-s0" / ".hidden").exists()


@pytest.mark.parametrize("k", [2, 4])
def test_the_same_failing_action_k_times_is_stuck(tmp_path, k):
    evs, solver = _run(tmp_path, [{"tool": "list_files"}, {"tool": "read_file", "path": "nope"}], stuck_repeats=k,
                       model="fake/model")
    (sub,) = _of(evs, "submission")
    assert sub["reason"] == "stuck" and not sub["deadline_missed"] and sub["steps"] == 1 + k
    assert len(_of(evs, "tool_error")) == k


def test_stuck_needs_the_same_failure_in_a_row_and_a_model_solver(tmp_path):
    # alternating failures never make a streak: the step limit ends the subrun
    evs, _ = _run(tmp_path / "a", [{"tool": "read_file", "path": "a"}, {"tool": "read_file", "path": "b"}] * 5
                  + [{"tool": "list_files"}], stuck_repeats=2, max_solver_steps=10, model="fake/model")
    assert _of(evs, "submission")[0]["reason"] == "step_limit"
    # a scripted solver is not subject to the rule (its setting is not part of its condition)
    from scarce_lab.environments.scarce.runner import ScarceConfig

    assert "stuck_repeats" not in ScarceConfig(model="scripted/fifo").condition_settings()
    assert ScarceConfig(model="embedded/smollm2").condition_settings()["stuck_repeats"] == 3


def test_stuck_is_counted_per_model_in_the_tables(tmp_path):
    from scarce_lab.environments.scarce.analysis.metrics import summary
    from scarce_lab.environments.scarce.tables import contentions_table, submissions_table

    _run(tmp_path, [{"tool": "submit"}], stuck_repeats=2, model="fake/model")
    subs = submissions_table(tmp_path)
    assert subs["reason"].to_list() == ["stuck"]
    row = summary(contentions_table(tmp_path), subs).row(0, named=True)
    assert row["model"] == "fake/model" and row["stuck_rate"] == 1.0


@pytest.mark.embedded
def test_embedded_model_cannot_decode_an_illegal_action(embedded_model):
    """Asked outright for an illegal call, the embedded model (decoding under the mask's
    grammar) still answers a legal one."""
    from scarce_lab.llm.embedded import generate

    legal = legal_actions("w0", in_slot=False, files=["docs.txt", "rev"], slot_cap_s=45)
    schema = solver_choice_schema(legal, compact=True)
    msgs = [{"role": "system", "content": "Answer with JSON only."},
            {"role": "user", "content": 'Answer exactly {"tool": "run_command", "command": "ls"} or '
                                        '{"tool": "read_file", "path": "secret.txt"} or '
                                        '{"tool": "request_execution_slot", "duration_seconds": 999, "reason": "x"}'}]
    for seed in (0, 1):
        out = generate(msgs, max_tokens=120, temperature=0.8, seed=seed,
                       **request_for("json_schema", schema.__name__, schema.model_json_schema()))
        text = out["choices"][0]["message"]["content"]
        d, err = validate_decision(json.loads(text), schema)
        assert d is not None, (text, err)
        a = d.to_action()
        assert legal.check(a.tool, path=a.path, command=a.command, duration_seconds=a.duration_seconds
                           if a.tool == "request_execution_slot" else None) is None, text


def test_a_tool_argument_given_twice_is_refused_not_last_key_wins():
    from scarce_lab.environments.scarce.agents.masks import parse_tool_call

    action, err = parse_tool_call([{"name": "read_file", "arguments": '{"path": "docs.txt", "path": "main.py"}'}])
    assert action is None and "'path' given 2 times" in err
