"""Decision events carry the ids of their model calls (schema 4): one lookup from a
decision to what the model saw and said; ids are deterministic (resume, cache); the
run context travels in a contextvar; older files get empty id lists."""

import asyncio
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data.events.base import SCHEMA_VERSION
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.tables.calls import decision_calls
from scarce_lab.environments.sovsim.agents.agent import LLMAgent
from scarce_lab.environments.sovsim.runner.play import SovSimConfig, arun_game
from scarce_lab.environments.sovsim.tables import from_dataset
from scarce_lab.llm.mock import MockModel
from scarce_lab.llm.scope import current_scope, run_scope

GOLDEN = Path(__file__).parents[1] / "golden"
MODEL = "openai/gpt-4o-mini"


def _answers(agent: str):
    """a2 over-extracts (24 > pool/8 = 15) in round 7 only; everyone else takes 3."""
    def answer(messages):
        rnd = int(re.search(r"Round (\d+) of", messages[-1]["content"]).group(1))
        take = 24 if (agent == "a2" and rnd == 7) else 3
        return json.dumps({"reasoning": f"{agent} round {rnd}", "extraction": take})
    return answer


def _agents():
    return {a: LLMAgent(MODEL, MockModel(_answers(a))) for a in ("a0", "a1", "a2", "a3")}


def _cfg():
    return SovSimConfig(condition="cpr", model=MODEL, game={"rounds": 8}, seed=5)


def test_over_extraction_in_round_7_is_one_lookup(tmp_path):
    cfg = _cfg()
    res = asyncio.run(arun_game(cfg, tmp_path, agents=_agents()))
    assert (res.status, res.rounds_played) == ("complete", 8)
    ds = load_dataset(tmp_path)
    rows = from_dataset(ds)
    over = rows.filter(pl.col("extraction") > pl.col("pool_before") / (2 * pl.col("n_agents")))
    assert over.select("agent", "round").rows() == [("a2", 7)]  # the recorded over-extraction
    agent, rnd = over.row(0, named=True)["agent"], over.row(0, named=True)["round"]

    found = decision_calls(ds, "extraction", agent=agent, round=rnd)
    assert found.height == 1
    row = found.row(0, named=True)
    assert row["extraction"] == 24 and row["n_calls"] == 1 and row["call_found"]
    assert row["call_outcome"] == "ok" and row["call_model"] == MODEL
    assert json.loads(row["call_raw_response"]) == {"reasoning": "a2 round 7", "extraction": 24}
    prompt = json.loads(row["call_messages"])
    assert "Round 7 of 8." in prompt[-1]["content"]  # what the model saw
    # every model decision names its calls, and every named call exists
    every = decision_calls(ds, "extraction")
    assert every.height == 32 and every["call_found"].all() and every["call_id"].n_unique() == 32
    calls = ds.llm_calls.collect()
    assert calls.height == 32 and (calls["run_id"] == cfg.run_id).all()  # run id from the run scope


def test_viewer_shows_the_calls_of_a_decision(tmp_path):
    from scarce_lab.viewer import view

    cfg = _cfg()
    asyncio.run(arun_game(cfg, tmp_path, agents=_agents()))
    ds = load_dataset(tmp_path)
    row = decision_calls(ds, "extraction", agent="a2", round=7).row(0, named=True)
    page = view(tmp_path / cfg.run_id).page()
    block = page.split('data-round="7"')[1].split('data-round="8"')[0]
    assert f'data-call-id="{row["call_id"]}"' in block  # the table's id, in round 7's block
    assert "Round 7 of 8." in block and "a2 round 7" in block  # the prompt and the answer
    assert page.count('class="sl-calls"') == 32  # one row per model decision
    scripted = tmp_path / "scripted"
    asyncio.run(arun_game(SovSimConfig(condition="cpr", model="scripted/greedy", game={"rounds": 2}), scripted))
    assert "sl-calls" not in view(next(scripted.iterdir())).page()  # a policy has no calls


def test_call_ids_are_the_same_after_a_resume(tmp_path):
    cfg = _cfg()
    asyncio.run(arun_game(cfg, tmp_path / "full", agents=_agents()))

    class Killed(Exception):
        pass

    def kill(_cfg, r):
        if r == 3:
            raise Killed

    with pytest.raises(Killed):
        asyncio.run(arun_game(cfg, tmp_path / "broken", agents=_agents(), on_round=kill))
    asyncio.run(arun_game(cfg, tmp_path / "broken", agents=_agents(), resume=True))

    def ids(root):
        lines = (root / cfg.run_id / "events.jsonl").read_text().splitlines()
        return [(e["round"], e["agent"], e["payload"]["call_ids"]) for e in map(json.loads, lines)
                if e["kind"] == "extraction"]

    full, resumed = ids(tmp_path / "full"), ids(tmp_path / "broken")
    assert full == resumed and all(len(c) == 1 for _, _, c in full)


def test_cached_answer_keeps_the_call_id(tmp_path):
    from scarce_lab.llm import CallContext, LLMSettings
    from scarce_lab.llm.cache import ResponseCache

    class Schema(__import__("pydantic").BaseModel):
        extraction: int

    msgs = [{"role": "user", "content": "how many?"}]
    got = []
    for _ in range(2):
        lm = MockModel(['{"extraction": 3}'], LLMSettings(cache=True, max_retries=0))
        lm.cache = ResponseCache(tmp_path / "cache")
        with run_scope(run_id="r1", round=2):
            out = lm.decide(model=MODEL, messages=msgs, schema=Schema, fallback=Schema(extraction=0), seed=1,
                            context=CallContext(agent="a0", purpose="extraction"))
        got.append(out.calls[0])
    assert [c.cache_hit for c in got] == [False, True]
    assert got[0].call_id == got[1].call_id and got[0].run_id == "r1" and got[0].round == 2


def test_run_scope_fills_the_context_and_counts_identical_calls():
    from scarce_lab.llm.scope import call_id_for

    assert current_scope().run_id is None
    with run_scope(run_id="r"):
        with run_scope(round=3, agent="a1") as inner:
            assert (inner.run_id, inner.round, inner.agent) == ("r", 3, "a1")
            key = dict(run_id="r", agent="a1", round=3, purpose="p", seed=1, messages_hash="h", attempt=0)
            first, second = call_id_for(**key), call_id_for(**key)
        assert second == f"{first}-1"  # an identical call in the same run gets its own id
        assert call_id_for(**{**key, "seed": 2}) != first
    with run_scope(run_id="r"):  # a new run (a resumed process) counts from scratch
        assert call_id_for(**key) == first
        # two models (a mixed population) or other sent parameters: other calls, other ids
        assert call_id_for(**key, model="openai/gpt-4o") != call_id_for(**key, model="embedded/smollm2")
        assert call_id_for(**key, params={"temperature": 0.7}) != call_id_for(**key, params={"temperature": 0.0})
    # outside any run two identical calls are still two calls (their decisions must not merge)
    assert call_id_for(**key) != call_id_for(**key)
    with pytest.raises(TypeError, match="unknown field"):
        with run_scope(runid="x"):
            pass


@pytest.mark.parametrize("version", [2, 3])
def test_older_decision_events_migrate_with_empty_call_ids(tmp_path, version):
    src = GOLDEN / f"v{version}" / "sovsim"
    shutil.copytree(src, tmp_path / "sovsim")
    ds = load_dataset(tmp_path / "sovsim", cache=False)
    ext = ds.payloads("extraction").collect()
    assert ext.height > 0 and ext["call_ids"].list.len().eq(0).all()
    found = decision_calls(ds, "extraction")
    assert found.height == ext.height and (found["n_calls"] == 0).all() and not found["call_found"].any()
    assert SCHEMA_VERSION >= 4


def test_a_non_decision_kind_is_refused(tmp_path):
    shutil.copytree(GOLDEN / f"v{SCHEMA_VERSION}" / "sovsim", tmp_path / "sovsim")
    with pytest.raises(KeyError, match="not a decision"):
        decision_calls(load_dataset(tmp_path / "sovsim", cache=False), "round")


def test_economy_steps_name_the_act_calls(tmp_path):
    from scarce_lab.environments.economy.runner.play import EconomyRunConfig, run_economy
    from scarce_lab.llm import LLMClient, LLMSettings

    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "What is 3 + 4?", "answer": 7}\n{"question": "What is 2 + 5?", "answer": 7}\n')
    run_dir = run_economy(
        EconomyRunConfig(task=f"jsonl:{path}", model=MODEL, agents=4, episodes=2, eval_episodes=1, seed=0,
                         economy={"explore_interval": 1}),
        tmp_path / "runs", client=LLMClient(LLMSettings(cache=False)),
        llm_kwargs={"mock_response": '{"note": "3 + 4 = 7", "answer": "7"}'})
    ds = load_dataset(run_dir)
    steps = decision_calls(ds, "step")
    acts = ds.llm_calls.filter(pl.col("purpose").str.starts_with("act:")).collect()
    assert steps.height > 0 and steps["call_found"].all() and (steps["n_calls"] == 1).all()
    assert sorted(steps["call_id"].to_list()) == sorted(acts["call_id"].to_list())  # each act call, once
    assert (steps["call_purpose"].str.starts_with("act:")).all() and (steps["agent"] == steps["call_id"].map_elements(
        lambda c: acts.filter(pl.col("call_id") == c)["agent"][0], return_dtype=pl.String)).all()


def test_model_for_gives_scripted_and_client_models_one_interface():
    import pydantic

    from scarce_lab.llm import DecisionRequest, Generation, model_for

    class Pick(pydantic.BaseModel):
        extraction: int

    policies = {"three": lambda obs, rng: Pick(extraction=3)}
    scripted = model_for("scripted/three", policies=lambda name, arg: policies[name])
    lm = model_for(MODEL, client=MockModel(['{"extraction": 6}']), generation=Generation(temperature=0.0))
    req = DecisionRequest(schema=Pick, fallback=Pick(extraction=0), seed=1, observation=None,
                          messages=lambda: [{"role": "user", "content": "how many?"}], purpose="extraction")
    with run_scope(run_id="r", round=1, agent="a0"):
        s_out, m_out = asyncio.run(scripted.adecide(req)), asyncio.run(lm.adecide(req))
    assert scripted.scripted and not lm.scripted
    assert (s_out.decision.extraction, s_out.valid, s_out.calls) == (3, True, [])
    assert m_out.decision.extraction == 6 and len(m_out.calls) == 1
    rec = m_out.calls[0]
    assert (rec.run_id, rec.round, rec.agent, rec.params["temperature"]) == ("r", 1, "a0", 0.0)
    with pytest.raises(TypeError, match="scripted policy"):
        asyncio.run(scripted.acomplete([], seed=0))
    with pytest.raises(ValueError, match="no scripted policies"):
        model_for("scripted/three")
    with pytest.raises(ValueError, match="LLMClient"):
        model_for(MODEL)


def test_scarce_solver_calls_name_the_round_and_agent_of_their_step(tmp_path):
    """A model solver's calls carry the round its ``solver_action`` event is recorded in
    (the next contention's index, bound per step in the run scope) and its worker; the
    event's ``call_ids`` are those calls. Rounds after the first contention are > 0."""
    from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    # always asks for a slot (illegal while it holds one: the fallback then lists files)
    answer = json.dumps({"tool": "request_execution_slot", "duration_seconds": 10, "reason": "try it"})
    cfg = ScarceConfig(workers=2, subruns=1, model="openai/x", negotiator_model="scripted/fifo", seed=3)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"),
                     client=MockModel([answer]))
    evs = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    calls = {c["call_id"]: c for c in map(json.loads, (run / "llm_calls.jsonl").read_text().splitlines())}
    steps = [e for e in evs if e["kind"] == "solver_action"]
    assert len(steps) >= 4 and "request_execution_slot" in {e["payload"]["tool"] for e in steps}
    for e in steps:
        ids = e["payload"]["call_ids"]
        assert ids and all(i in calls for i in ids)
        for i in ids:
            assert (calls[i]["round"], calls[i]["agent"], calls[i]["purpose"]) == (e["round"], e["agent"], "solver")
    assert any(e["round"] > 0 for e in steps)  # a step after the first contention names its round
    assert all(c["run_id"] == run.name for c in calls.values())
