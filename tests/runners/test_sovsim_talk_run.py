"""SovSim with talk on, end to end: CLI ``-S talk=...``, ``sl.run``, the hosted-model
path on the local fake server, and private messages that never reach a prompt of an
agent outside ``visible_to``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import scarce_lab as sl
from scarce_lab.agents.decided import Decided
from scarce_lab.cli import app
from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.world.talk import Utterance


def _events(run):
    return [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]


def test_cli_runs_a_public_talk_game_with_a_promise_defector(tmp_path):
    out = tmp_path / "ds"
    r = CliRunner().invoke(app, ["run", "sovsim", "--condition", "bcpr", "--model", "scripted/promise_defector",
                                 "-S", "talk=public", "-S", "game.rounds=2", "--simulations", "1", "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["talk"] == "public" and manifest["condition_settings"]["talk"] == "public"
    assert "talk=public" in manifest["condition"]
    evs = _events(run)
    talk = [e for e in evs if e["kind"] == "talk"]
    assert [e["agent"] for e in talk] == ["a0", "a1", "a2", "a3"]  # round 1 only: 4 x 30 collapses it
    assert all(e["visibility"] == "public" and e["visible_to"] == [] for e in talk)
    assert all(e["payload"]["text"].startswith("[promise extraction=15]") for e in talk)
    ext = [e["payload"]["extraction"] for e in evs if e["kind"] == "extraction"]
    assert ext == [30, 30, 30, 30]  # every promise of 15 broken
    # the discussion sits between set-up and the extractions of its round
    kinds = [e["kind"] for e in evs if e["round"] == 1]
    assert kinds.index("extraction") > max(i for i, k in enumerate(kinds) if k == "talk")


def test_sl_run_public_private_quota_keepers_survive_and_keep_their_quota(tmp_path):
    cfg = SovSimConfig(condition="kcpr", model="scripted/quota_keeper", talk="public+private", talk_turns=2,
                       game={"rounds": 3})
    sl.run(cfg, out=tmp_path)
    evs = _events(tmp_path / cfg.run_id)
    talk = [e for e in evs if e["kind"] == "talk"]
    assert len(talk) == 3 * 2 * 4  # rounds x turns x agents
    assert [e["payload"]["turn"] for e in talk[:8]] == [1] * 4 + [2] * 4
    rounds = [e["payload"] for e in evs if e["kind"] == "round"]
    assert len(rounds) == 3 and not rounds[-1]["collapsed"]
    for rd in rounds:
        q = (rd["pool_before"] // 8) // 3 * 3
        assert rd["extractions"] == [q] * 4
    assert all(f"[quota per_agent={(r['pool_before'] // 8) // 3 * 3}]" in e["payload"]["text"]
               for r in rounds for e in talk if e["round"] == rounds.index(r) + 1)


def test_talk_settings_without_talk_are_refused():
    with pytest.raises(ValueError, match="talk_turns=2 needs talk=public"):
        SovSimConfig(talk_turns=2)
    with pytest.raises(ValueError, match="talk"):
        SovSimConfig(talk="shout")


def test_hosted_model_path_talks_on_the_fake_server(tmp_path, monkeypatch):
    from scarce_lab.environments.sovsim.runner.play import run_sweep
    from scarce_lab.llm import LLMClient, LLMSettings
    from tests.fake_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-local-server")
    cfg = SovSimConfig(condition="bcpr", model="openai/fake", talk="public+private", game={"rounds": 1})
    with FakeOpenAIServer() as server:
        client = LLMClient(LLMSettings(api_base=server.url, cache=False, max_retries=0))
        (res,) = run_sweep([cfg], tmp_path, client=client, progress=False)
    assert res.status == "complete"
    run = tmp_path / cfg.run_id
    talk = [e for e in _events(run) if e["kind"] == "talk"]
    assert [e["agent"] for e in talk] == ["a0", "a1", "a2", "a3"]
    assert all(e["payload"]["valid"] and not e["payload"]["fallback_used"] for e in talk)
    assert all(len(e["payload"]["call_ids"]) == 1 for e in talk)
    calls = {c["call_id"]: c for c in map(json.loads, (run / "llm_calls.jsonl").read_text().splitlines())}
    talk_calls = [calls[e["payload"]["call_ids"][0]] for e in talk]
    assert all(c["purpose"] == "talk" and c["error"] is None for c in talk_calls)
    assert [e["payload"]["text"] for e in talk] == [c["parsed"]["message"] for c in talk_calls]
    # the boss (last) saw the three workers' messages in its talk prompt
    boss_prompt = "\n".join(m["content"] for m in talk_calls[-1]["messages"])
    assert boss_prompt.count("(to everyone, round 1)") == 3
    extraction_calls = [c for c in calls.values() if c["purpose"] == "extraction"]
    assert len(extraction_calls) == 4
    assert all("Messages you have seen this round" in c["messages"][-1]["content"] for c in extraction_calls)


class _Whisperer:
    """a0: whispers a canary to a1 only, then extracts 3."""

    model = "test/whisperer"

    async def atalk(self, obs, seed):
        return Decided(value=Utterance(f"CANARY-{obs.round}-7781 psst", ("a1",)))

    async def adecide(self, obs, seed, run_id=None):
        return Decided(value=3)


def test_a_private_message_reaches_no_prompt_outside_visible_to(tmp_path):
    """Model agents a1..a3 on a mocked litellm: the canary a0 whispers to a1 is in a1's
    prompts (positive control) and in no prompt of a2 or a3, talk or extraction."""
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent
    from scarce_lab.environments.sovsim.runner.play import arun_game
    from scarce_lab.llm import LLMClient, LLMSettings
    from scarce_lab.runtime import run_sync

    client = LLMClient(LLMSettings(cache=False, max_retries=0))
    model = LLMAgent("openai/gpt-4o-mini", client, litellm_kwargs={"mock_response": '{"message": "fine", "to": []}'})
    cfg = SovSimConfig(condition="kcpr", model="openai/gpt-4o-mini", talk="public+private", game={"rounds": 2})
    run_sync(arun_game(cfg, tmp_path, client=client, agents={"a0": _Whisperer(), "a1": model, "a2": model,
                                                                  "a3": model}))
    run = tmp_path / cfg.run_id
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    seen = {a: "\n".join(m["content"] for c in calls if c["agent"] == a for m in c["messages"])
            for a in ("a1", "a2", "a3")}
    assert "CANARY-1-7781" in seen["a1"]
    assert "CANARY" not in seen["a2"] and "CANARY" not in seen["a3"]
    whisper = [e for e in _events(run) if e["kind"] == "talk" and e["agent"] == "a0"]
    assert whisper and all(e["visibility"] == "private" and e["visible_to"] == ["a0", "a1"] for e in whisper)


def test_a_talk_game_resumes_to_the_same_trajectory_and_is_deterministic(tmp_path):
    from scarce_lab.environments.sovsim.runner.play import arun_game
    from scarce_lab.runtime import run_sync

    cfg = SovSimConfig(condition="kcpr_m", model="scripted/quota_keeper", talk="public+private", talk_turns=2,
                       game={"rounds": 4})
    full, again, broken = tmp_path / "full", tmp_path / "again", tmp_path / "broken"
    run_sync(arun_game(cfg, full))
    run_sync(arun_game(cfg, again))

    def kill(s, r):
        if r == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sync(arun_game(cfg, broken, on_round=kill))
    assert run_sync(arun_game(cfg, broken, resume=True)).status == "complete"
    strip = lambda evs: [{k: v for k, v in e.items() if k != "t"} for e in evs]  # noqa: E731
    ref = strip(_events(full / cfg.run_id))
    assert sum(e["kind"] == "talk" for e in ref) == 4 * 2 * 4
    assert strip(_events(again / cfg.run_id)) == ref and strip(_events(broken / cfg.run_id)) == ref


def test_an_agent_that_cannot_talk_fails_the_run_by_name(tmp_path):
    from scarce_lab.environments.sovsim.runner.play import arun_game
    from scarce_lab.runtime import run_sync

    class Mute:
        model = "test/mute"

        async def adecide(self, obs, seed, run_id=None):
            return Decided(value=0)

    cfg = SovSimConfig(condition="cpr", model="scripted/greedy", talk="public", game={"rounds": 1})
    with pytest.raises(TypeError, match="a0 \\(test/mute\\) has no atalk"):
        run_sync(arun_game(cfg, tmp_path, agents=dict.fromkeys(("a0", "a1", "a2", "a3"), Mute())))
