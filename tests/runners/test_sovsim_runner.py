"""SovSim runner: recorded events, resume after a killed run, sweep skipping, CLI."""

import asyncio
import json

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.sovsim.runner.play import (
    GameSpec,
    SovSimConfig,
    arun_game,
    plan_sweep,
    run_sweep,
)


def events(run_dir):
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


class Killed(Exception):
    pass


def test_run_records_events_per_decision_and_round(tmp_path):
    spec = GameSpec("kcpr_m", "scripted/greedy_leader", seed=3, simulation=0)
    res = asyncio.run(arun_game(spec, tmp_path))
    # round 1: king announces 60, peasants take 60/8 -> 6 each, king takes 120-18=102 -> collapse
    assert (res.status, res.rounds_played, res.collapsed) == ("complete", 1, True)
    assert spec.run_id == "sovsim-kcpr_m-scripted-greedy_leader-s3-0"
    ev = events(tmp_path / spec.run_id)
    kinds = [e["kind"] for e in ev]
    assert kinds == ["game_start", "round_committed", "announcement", "extraction", "extraction",
                     "extraction", "extraction", "round", "game_end", "round_committed"]
    rnd = next(e for e in ev if e["kind"] == "round")["payload"]
    assert rnd["pool_before"] == 120 and rnd["announced_pool"] == 60
    assert rnd["extractions"] == [6, 6, 6, 102] and rnd["remainder_seen"] == 102
    assert rnd["payoffs_exact"] == ["2", "2", "2", "34"] and rnd["collapsed"]
    peasant = next(e for e in ev if e["kind"] == "extraction" and e["agent"] == "a0")["payload"]
    assert peasant["pool_seen"] == 60  # the announcement, not the truth
    m = read_manifest(tmp_path / spec.run_id)
    assert m.status == "complete" and m.environment == "sovsim" and m.seed == spec.run_seed


@pytest.mark.parametrize("cond", ["kcpr_m", "cpr"])
def test_resume_after_kill_matches_uninterrupted_run(tmp_path, cond):
    spec = GameSpec(cond, "scripted/random", seed=11, simulation=2, rounds=12)
    full, broken = tmp_path / "full", tmp_path / "broken"
    asyncio.run(arun_game(spec, full))
    n_full = len([e for e in events(full / spec.run_id) if e["kind"] == "round"])
    assert n_full >= 2, "need a game of at least two rounds for this test"
    kill_after = 1

    def kill(s, r):
        if r == kill_after:
            raise Killed(f"killed after round {r}")

    with pytest.raises(Killed):
        asyncio.run(arun_game(spec, broken, on_round=kill))
    run_dir = broken / spec.run_id
    assert read_manifest(run_dir).status == "failed"
    with (run_dir / "events.jsonl").open("a") as fh:  # a torn half-written line, as a kill leaves
        fh.write('{"run_id": "x", "seq": 99, "kind": "extr')
    with pytest.raises(FileExistsError, match="--resume"):
        asyncio.run(arun_game(spec, broken))
    res = asyncio.run(arun_game(spec, broken, resume=True))
    assert res.status == "complete"
    assert events(run_dir) == events(full / spec.run_id)
    assert read_manifest(run_dir).status == "complete"


def test_sweep_runs_games_and_skips_complete_ones(tmp_path):
    specs = plan_sweep(["all"], ["scripted/sustainable", "scripted/fixed:15"], 2, seed=5)
    assert len(specs) == 16 and {s.condition for s in specs} == {"cpr", "bcpr", "kcpr", "kcpr_m"}
    res = run_sweep(specs, tmp_path, progress=False)
    assert [r.status for r in res] == ["complete"] * 16
    assert all(r.rounds_played == 12 and not r.collapsed for r in res)
    again = run_sweep(specs, tmp_path, progress=False)
    assert [r.status for r in again] == ["skipped"] * 16


def test_games_run_concurrently(tmp_path):
    """Two games interleave their rounds: game B's round 1 starts before game A ends."""
    order = []

    class SlowAgent:
        model = "test/slow"

        async def adecide(self, obs, seed, run_id=None):
            from scarce_lab.agents.decided import Decided
            from scarce_lab.llm.scope import current_scope

            order.append((current_scope().run_id, obs.round))  # the run context travels in a contextvar
            await asyncio.sleep(0.001)
            return Decided(value=15)

    async def both():
        specs = [GameSpec("cpr", "test/slow", simulation=i, rounds=3) for i in range(2)]
        agents = {a: SlowAgent() for a in ("a0", "a1", "a2", "a3")}
        await asyncio.gather(*(arun_game(s, tmp_path, agents=agents) for s in specs))
        return specs

    specs = asyncio.run(both())
    first_b = next(i for i, (rid, _) in enumerate(order) if rid == specs[1].run_id)
    last_a = max(i for i, (rid, _) in enumerate(order) if rid == specs[0].run_id)
    assert first_b < last_a


def test_llm_game_records_calls_with_mock(tmp_path):
    llm = pytest.importorskip("scarce_lab.llm")
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent

    client = llm.LLMClient(llm.LLMSettings(cache=False, max_retries=0))
    spec = SovSimConfig(condition="cpr", model="openai/gpt-4o-mini", game={"rounds": 2}, llm={"temperature": 0.0})
    agent = LLMAgent("openai/gpt-4o-mini", client, temperature=spec.llm.temperature,
                     litellm_kwargs={"mock_response": '{"reasoning": "r", "extraction": 30}'})
    res = asyncio.run(arun_game(spec, tmp_path, client=client, agents={a: agent for a in ("a0", "a1", "a2", "a3")}))
    assert res.rounds_played == 1 and res.collapsed  # 4 x 30 = 120 -> collapse
    calls = [json.loads(x) for x in (tmp_path / spec.run_id / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) == 4 and {c["agent"] for c in calls} == {"a0", "a1", "a2", "a3"}
    assert all(c["run_id"] == spec.run_id and c["round"] == 1 and c["parsed"]["extraction"] == 30 for c in calls)
    m = read_manifest(tmp_path / spec.run_id)
    assert m.config["llm"]["temperature"] == 0.0 and m.condition_settings["llm.temperature"] == 0.0
    assert all(c["params"]["temperature"] == 0.0 for c in calls)  # the record and the manifest agree


def test_cli_run_and_table(tmp_path):
    runner = CliRunner()
    out = tmp_path / "ds"
    r = runner.invoke(app, ["run", "sovsim", "--condition", "cpr", "--condition", "kcpr", "--model",
                            "scripted/sustainable", "--model", "scripted/greedy", "--simulations", "2",
                            "--seed", "1", "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "8 SovSim run(s)" in r.output and "complete 8" in r.output
    # one line per game: what happened in it
    assert "cpr, simulation 0: played 12 rounds, pool 120 at the end" in r.output
    assert "kcpr, simulation 1: collapsed in round 1 (pool 0)" in r.output
    r = runner.invoke(app, ["table", "sovsim", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert {"convention", "departures", "table", "layout", "sovsim_cross_relative_drop"} <= set(doc)
    rows = {(x["model"], x["condition"]): x for x in doc["table"]}
    assert set(rows) == {(m, c) for m in ("scripted/sustainable", "scripted/greedy") for c in ("cpr", "kcpr")}
    sus = rows[("scripted/sustainable", "cpr")]
    assert sus["n"] == 2 and sus["survival_time_mean"] == 12 and sus["total_payoff_mean"] == 960
    greedy_k = rows[("scripted/greedy", "kcpr")]
    # workers 30 each, king takes the remaining 30: collapse in round 1, payoff 4 x 10
    assert greedy_k["survival_time_mean"] == 1 and greedy_k["total_payoff_mean"] == 40
    assert {"efficiency_mean", "efficiency_ci_low", "efficiency_ci_high"} <= set(sus)
    r = runner.invoke(app, ["table", "sovsim", str(out)])
    assert r.exit_code == 0 and "| scripted/greedy | kcpr | 2 |" in r.output
    r = runner.invoke(app, ["run", "sovsim", "--model", "scripted/nope", "--out", str(out), "--no-progress"])
    assert r.exit_code != 0
    r = runner.invoke(app, ["table", "sovsim", str(tmp_path / "missing")])
    assert r.exit_code != 0


def test_kcpr_m_peasant_prompts_never_hold_the_true_pool(tmp_path):
    """End to end: the messages recorded for peasants' model calls in round 2 do not
    contain that round's true pool (78), while the king's do."""
    llm = pytest.importorskip("scarce_lab.llm")
    from scarce_lab.agents.decided import Decided
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent

    class King:
        model = "test/king"

        async def adecide(self, obs, seed, run_id=None):
            return Decided(value=555 if obs.phase == "announce" else 0)

    client = llm.LLMClient(llm.LLMSettings(cache=False, max_retries=0))
    peasant = LLMAgent("openai/gpt-4o-mini", client, litellm_kwargs={"mock_response": '{"reasoning": "r", "extraction": 27}'})
    spec = GameSpec("kcpr_m", "openai/gpt-4o-mini", rounds=2)
    # round 1: 3 x 27 = 81, king 0 -> remaining 39 -> round 2 pool 78; round 2: 81 > 78 -> collapse
    asyncio.run(arun_game(spec, tmp_path, agents={"a0": peasant, "a1": peasant, "a2": peasant, "a3": King()}))
    rounds = [e["payload"] for e in events(tmp_path / spec.run_id) if e["kind"] == "round"]
    assert [r["pool_before"] for r in rounds] == [120, 78]
    calls = [json.loads(x) for x in (tmp_path / spec.run_id / "llm_calls.jsonl").read_text().splitlines()]
    round2 = [c for c in calls if c["round"] == 2]
    assert len(round2) == 3
    for c in round2:
        text = "\n".join(m["content"] for m in c["messages"])
        assert "78" not in text and "555" in text
