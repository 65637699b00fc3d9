"""SovSim runs with seats (a model and sampling settings per agent) and a newcomer:
what each agent's calls send, what the manifest and events record, mixed scripted and
model seats, and resume across the join."""

from __future__ import annotations

import asyncio
import json

import pytest
from _llm_fakes import FakeLLM, response

from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.sovsim.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import arun_game, run_sweep
from scarce_lab.llm import LLMClient, LLMSettings


class Killed(Exception):
    pass


def events(run_dir):
    out = []
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        e.pop("t", None)
        out.append(e)
    return out


def test_each_seat_sends_its_own_settings(tmp_path, monkeypatch):
    fake = FakeLLM(*[lambda kw: response('{"reasoning": "r", "extraction": 3}')] * 40).install(monkeypatch)
    cfg = SovSimConfig(
        condition="kcpr", model="openai/gpt-4o-mini", game={"rounds": 2},
        seats={"king": {"model": "openai/o3-mini", "reasoning_effort": "high", "max_tokens": 300},
               "a0": {"temperature": 0.2, "max_tokens": 64}},
    )
    client = LLMClient(LLMSettings(cache=False, max_retries=0))
    res = asyncio.run(arun_game(cfg, tmp_path, client=client))
    assert res.status == "complete"
    sent = {}
    for kw in fake.requests:
        sent.setdefault(kw["model"], []).append(kw)
    king = sent["o3-mini"] if "o3-mini" in sent else sent["openai/o3-mini"]
    assert len(king) == 2 and all(k.get("reasoning_effort") == "high" for k in king)
    assert all(k.get("max_completion_tokens", k.get("max_tokens")) == 300 for k in king)
    subs = sent.get("gpt-4o-mini") or sent["openai/gpt-4o-mini"]
    assert len(subs) == 6
    assert sorted((k["temperature"], k["max_tokens"]) for k in subs) == [(0.2, 64)] * 2 + [(0.7, 110)] * 4
    m = read_manifest(tmp_path / cfg.run_id)
    assert m.models == {"a0": "openai/gpt-4o-mini", "a1": "openai/gpt-4o-mini", "a2": "openai/gpt-4o-mini",
                        "a3": "openai/o3-mini"}
    assert m.notes["composition_label"] == cfg.composition()
    assert "o3-mini" in m.notes["composition_label"]
    assert m.notes["seats"]["a3"] == {"model": "openai/o3-mini", "temperature": 0.7, "max_tokens": 300,
                                      "reasoning_effort": "high"}
    assert m.condition_settings["seats"]["a3"]["temperature"] == "not sent"  # o3-mini takes no temperature
    assert m.condition_settings["composition"] == cfg.composition()
    assert "-mixed-" in cfg.run_id


def test_scripted_and_embedded_seats_mix_and_a_scripted_run_builds_no_client(tmp_path, monkeypatch):
    import scarce_lab.environments.sovsim.runner.play as runner

    built = []
    monkeypatch.setattr(runner, "_make_client", lambda cfg: built.append(cfg) or None)
    cfg = SovSimConfig(condition="bcpr", model="scripted/sustainable", seats={"boss": "scripted/greedy"},
                       game={"rounds": 3})
    [res] = run_sweep([cfg], tmp_path, progress=False)
    assert res.status == "complete" and built == []
    rounds = [e["payload"] for e in events(tmp_path / cfg.run_id) if e["kind"] == "round"]
    assert all(r["extractions"][3] == 30 for r in rounds)  # the greedy boss takes its cap
    assert all(r["extractions"][0] == r["pool_before"] // 8 // 3 * 3 for r in rounds)
    m = read_manifest(tmp_path / cfg.run_id)
    assert m.models["a3"] == "scripted/greedy" and m.models["a0"] == "scripted/sustainable"
    start = next(e for e in events(tmp_path / cfg.run_id) if e["kind"] == "game_start")
    assert start["payload"]["model"] == "mixed"


def test_a_model_seat_beside_scripted_ones_gets_a_client_only_then():
    from scarce_lab.environments.sovsim.runner.play import make_agents

    made = []

    class C:  # stands for a model client
        pass

    import scarce_lab.environments.sovsim.runner.play as runner

    orig = runner._make_client
    runner._make_client = lambda cfg: made.append(1) or C()
    try:
        agents = make_agents(SovSimConfig(condition="kcpr", model="scripted/random",
                                          seats={"king": "embedded/smollm2"}))
        assert made == [1]  # one client for the one model seat
        assert agents["a3"].lm.client is not None and agents["a0"].lm.scripted
        assert agents["a0"] is agents["a1"]  # seats with equal settings share an agent
        made.clear()
        make_agents(SovSimConfig(condition="kcpr", model="scripted/random", seats={"king": "scripted/greedy"}))
        assert made == []
    finally:
        runner._make_client = orig


def test_join_and_leave_events_and_manifest(tmp_path):
    cfg = SovSimConfig(condition="kcpr", model="scripted/sustainable", newcomer={"round": 2, "mode": "replace",
                       "replaces": "a1"}, seats={"newcomer": "scripted/fixed:12"}, game={"rounds": 3})
    run_sweep([cfg], tmp_path, progress=False)
    ev = events(tmp_path / cfg.run_id)
    joins = [(e["kind"], e["agent"], e["round"], e["visibility"], e["payload"]) for e in ev
             if e["kind"] in ("agent_joined", "agent_left")]
    assert joins == [("agent_joined", "a4", 2, "public", {"role": "peasant", "replaces": "a1"}),
                     ("agent_left", "a1", 2, "public", {"role": "peasant", "replaced_by": "a4"})]
    assert all("model" not in p for *_, p in joins)
    rounds = [e["payload"] for e in ev if e["kind"] == "round"]
    assert [r["agents"] for r in rounds] == [["a0", "a1", "a2", "a3"]] + [["a0", "a4", "a2", "a3"]] * 2
    assert [r["extractions"][1] for r in rounds[1:]] == [12, 12]
    m = read_manifest(tmp_path / cfg.run_id)
    assert m.models["a4"] == "scripted/fixed:12" and m.notes["newcomer"]["agent"] == "a4"
    assert m.notes["roles"]["a4"] == "peasant"
    end = next(e for e in ev if e["kind"] == "game_end")["payload"]
    assert len(end["total_payoffs"]) == 5  # every agent who played: a0..a3, then a4


@pytest.mark.parametrize("kill", ["after_join_round", "before_join_round", "mid_join_round"])
def test_resume_across_the_join_matches_an_uninterrupted_run(tmp_path, monkeypatch, kill):
    cfg = SovSimConfig(condition="kcpr_m", model="scripted/random", seed=3, newcomer={"round": 3},
                       seats={"newcomer": "scripted/greedy", "king": "scripted/sustainable"},
                       game={"rounds": 5, "collapse_threshold": 0})
    full, broken = tmp_path / "full", tmp_path / "broken"
    asyncio.run(arun_game(cfg, full))
    import scarce_lab.environments.sovsim.runner.play as runner

    if kill == "mid_join_round":  # the join's events are written, the round is not committed
        real = runner._decide_all

        async def dying(agents, obs, cfg_, r, phase, rec):
            if r == 3 and phase.value == "extract":
                raise Killed("killed in the join round")
            return await real(agents, obs, cfg_, r, phase, rec)

        monkeypatch.setattr(runner, "_decide_all", dying)
        with pytest.raises(Killed):
            asyncio.run(arun_game(cfg, broken))
        monkeypatch.setattr(runner, "_decide_all", real)
    else:
        at = 3 if kill == "after_join_round" else 2

        def on_round(c, r):
            if r == at:
                raise Killed(f"killed after round {r}")

        with pytest.raises(Killed):
            asyncio.run(arun_game(cfg, broken, on_round=on_round))
    res = asyncio.run(arun_game(cfg, broken, resume=True))
    assert res.status == "complete"
    a, b = events(broken / cfg.run_id), events(full / cfg.run_id)
    assert a == b
    assert sum(e["kind"] == "agent_joined" for e in a) == 1


def test_sl_run_takes_seats_and_a_newcomer_and_preflight_checks_every_seat(tmp_path):
    import scarce_lab as sl

    cfg = SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/fixed:9"},
                       newcomer={"round": 2}, game={"rounds": 2})
    dirs = sl.run(cfg, out=tmp_path)
    m = read_manifest(dirs[0] if isinstance(dirs, list) else dirs)
    assert m.models["a3"] == "scripted/fixed:9" and m.models["a4"] == "scripted/sustainable"
    with pytest.raises(ValueError, match="seats.a3"):  # refused when the config is built
        sl.run(SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"king": "scripted/nosuch"}),
               out=tmp_path / "bad")
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_no_agent_can_see_another_seats_model_in_the_events(tmp_path):
    """What an agent may see of a run (public events and its own private ones) never
    names another seat's model; the manifest and call records are the researcher's."""
    cfg = SovSimConfig(condition="kcpr_m", model="scripted/sustainable", seats={"king": "scripted/greedy_leader",
                       "newcomer": "scripted/fixed:6"}, newcomer={"round": 2}, game={"rounds": 3})
    run_sweep([cfg], tmp_path, progress=False)
    ev = events(tmp_path / cfg.run_id)
    models = cfg.seat_models()
    checked = 0
    for agent, own in models.items():
        seen = [e for e in ev if e["visibility"] == "public" or agent in (e.get("visible_to") or [])]
        text = json.dumps(seen)
        for other, m in models.items():
            if m != own:
                assert m not in text, f"{agent} can see {other}'s model {m}"
                checked += 1
    assert checked >= 8
    # the positive control: the king's own private decision does name its policy
    assert any("scripted/greedy_leader" in json.dumps(e) for e in ev if e.get("visible_to") == ["a3"])


def test_a_sweeps_client_lends_no_reasoning_effort_to_another_config(tmp_path, monkeypatch):
    """The sweep's client is built from its first model-driven config: a later config
    without a reasoning effort must send none (not the first config's)."""
    fake = FakeLLM(*[lambda kw: response('{"reasoning": "r", "extraction": 3}')] * 20).install(monkeypatch)
    first = SovSimConfig(condition="kcpr", model="openai/o3-mini", llm={"reasoning_effort": "high", "cache": False},
                         game={"rounds": 1})
    second = SovSimConfig(condition="kcpr", model="openai/o3-mini", llm={"cache": False}, game={"rounds": 1},
                          simulation=1)
    res = run_sweep([first, second], tmp_path, progress=False, concurrency=1)
    assert [r.status for r in res] == ["complete", "complete"]
    efforts = sorted(str(kw.get("reasoning_effort")) for kw in fake.requests)
    assert efforts == ["None"] * 4 + ["high"] * 4
