"""SovSim institutions through the runner: off by default (configs and runs as before),
each one changes the events only when on, full scripted games complete and resume,
the loader and the viewer read the new events, and a model's answers go through the
world's legality (its names turned into agents, a hostile answer replaced by the
documented fallback)."""

from __future__ import annotations

import json

import pytest

import scarce_lab as sl
from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import arun_game, run_sweep
from scarce_lab.runtime import run_sync
from scarce_lab.viewer import view

SEATS = {"boss": "scripted/greedy_leader", "*": "scripted/conditional"}
ARMS = {"none": {}, "sanctions": {"sanctions": True}, "quota": {"quota": "leader"}, "elections": {"elections": 1}}
KINDS = {"sanctions": {"sanction", "sanctions"}, "quota": {"quota_proposal", "quota"},
         "elections": {"ballot", "election"}}


def _events(run):
    return [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]


def _cfg(**kw):
    return SovSimConfig(condition="bcpr", model="scripted/conditional", seats=SEATS, game={"rounds": 5}, **kw)


def test_settings_off_dump_hash_and_label_as_before():
    plain = SovSimConfig(condition="kcpr", model="scripted/greedy", simulation=2)
    off = SovSimConfig(condition="kcpr", model="scripted/greedy", simulation=2, sanctions=False, quota="off",
                       elections=0)
    assert plain.model_dump() == off.model_dump() and plain.run_id == off.run_id == "sovsim-kcpr-scripted-greedy-s0-2"
    assert not {"sanctions", "quota", "elections", "sanction_cost"} & set(plain.model_dump())
    assert plain.condition_settings() == off.condition_settings() and plain.condition_label() == "kcpr"
    on = SovSimConfig(condition="kcpr", model="scripted/greedy", simulation=2, quota="all")
    assert on.run_id != plain.run_id and on.condition_settings()["quota"] == "all"
    assert on.condition_label() == "kcpr,quota=all"


@pytest.mark.parametrize("bad,why", [
    ({"condition": "cpr", "elections": 1}, "elections=1 in cpr"),
    ({"condition": "cpr", "quota": "leader"}, "quota='leader' in cpr"),
    ({"sanction_impact": 5}, "sanction_impact=5 needs sanctions=true"),
    ({"elections": 12}, "no election would be held"),
    ({"condition": "kcpr", "quota": "all", "newcomer": {"round": 3}}, "newcomer"),
])
def test_settings_the_game_cannot_play_are_refused_by_name(bad, why):
    with pytest.raises(ValueError, match=why):
        SovSimConfig(**{"condition": "bcpr", "model": "scripted/greedy", **bad})


def test_each_institution_changes_the_events_only_when_on(tmp_path):
    cfgs = {arm: _cfg(**s) for arm, s in ARMS.items()}
    run_sweep(list(cfgs.values()), tmp_path, progress=False)
    kinds = {arm: {e["kind"] for e in _events(tmp_path / c.run_id)} for arm, c in cfgs.items()}
    base = kinds["none"]
    assert not set().union(*KINDS.values()) & base
    for arm, new in KINDS.items():
        assert kinds[arm] - base == new, arm
    for arm, c in cfgs.items():  # every game completes and its totals are the rounds' plus the sanctions'
        evs = _events(tmp_path / c.run_id)
        end = next(e["payload"] for e in evs if e["kind"] == "game_end")
        totals = dict.fromkeys(["a0", "a1", "a2", "a3"], 0.0)
        for e in evs:
            q = e["payload"]
            if e["kind"] in ("round", "sanctions"):
                for a, p in zip(q["agents"], q["payoffs"] if e["kind"] == "round" else q["net"], strict=True):
                    totals[a] += p
        assert end["total_payoffs"] == pytest.approx(list(totals.values())), arm
        decisions = [e for e in evs if e["kind"] in ("ballot", "quota_proposal", "sanction")]
        assert all(e["visibility"] == "private" and e["visible_to"] == [e["agent"]] for e in decisions)
        assert all(e["visibility"] == "public" for e in evs if e["kind"] in ("election", "quota", "sanctions"))
    # the reciprocators punish the boss, who took more than the sustainable share
    first = next(e["payload"] for e in _events(tmp_path / cfgs["sanctions"].run_id) if e["kind"] == "sanctions")
    assert first["received"][3] > 0
    # the quota binds the boss: never above the voted cap
    evs = _events(tmp_path / cfgs["quota"].run_id)
    quota = {e["round"]: e["payload"]["quota"] for e in evs if e["kind"] == "quota"}
    assert all(e["payload"]["extraction"] <= quota[e["round"]] for e in evs
               if e["kind"] == "extraction" and e["agent"] == "a3")
    # the election moves the seat from the greedy boss to the most restrained agent
    el = [e["payload"] for e in _events(tmp_path / cfgs["elections"].run_id) if e["kind"] == "election"]
    assert el[0]["moved"] and el[0]["elected"] != "a3" and el[0]["agents"][-1] == el[0]["elected"]


def test_a_game_with_every_institution_resumes_to_the_same_trajectory(tmp_path):
    cfg = _cfg(sanctions=True, quota="all", elections=1)
    full, broken = tmp_path / "full", tmp_path / "broken"
    run_sync(arun_game(cfg, full))

    def kill(c, r):
        if r == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sync(arun_game(cfg, broken, on_round=kill))
    assert run_sync(arun_game(cfg, broken, resume=True)).status == "complete"
    strip = lambda evs: [{k: v for k, v in e.items() if k != "t"} for e in evs]  # noqa: E731
    assert strip(_events(broken / cfg.run_id)) == strip(_events(full / cfg.run_id))


def test_loader_and_viewer_read_the_institution_events(tmp_path):
    cfg = _cfg(sanctions=True, quota="leader", elections=1)
    run_sweep([cfg], tmp_path, progress=False)
    ds = sl.load(tmp_path)
    sanctions = ds.payloads("sanctions", "sovsim").collect()
    assert sanctions.height >= 1 and sanctions.schema["received"].inner is not None
    assert ds.payloads("election", "sovsim").collect()["elected"].len() >= 1
    assert ds.payloads("quota", "sovsim").collect()["quota"].min() >= 0
    html = view(tmp_path / cfg.run_id)._repr_html_()
    assert "Election:" in html and "Quota vote:" in html and "Sanctions:" in html


class _Hostile:
    """A model-like agent whose institution answers are illegal."""

    model = "test/hostile"

    async def adecide(self, obs, seed, run_id=None):
        from scarce_lab.agents.decided import Decided

        return Decided(value=obs.legal.clamp(6))

    async def ainstitute(self, obs, seed):
        from scarce_lab.agents.decided import Decided

        bad = {"elect": "a7", "quota": 7, "sanction": {"a0": 999}}[obs.phase.value]
        return Decided(value=bad, valid=True)


def test_illegal_choices_are_replaced_by_the_documented_fallback(tmp_path):
    cfg = _cfg(sanctions=True, quota="all", elections=1)
    agents = dict.fromkeys(("a0", "a1", "a2", "a3"), _Hostile())
    run_sync(arun_game(cfg, tmp_path, agents=agents))
    evs = _events(tmp_path / cfg.run_id)
    dec = [e for e in evs if e["kind"] in ("ballot", "quota_proposal", "sanction")]
    assert dec and all(e["payload"]["fallback_used"] and not e["payload"]["valid"] for e in dec)
    assert {e["payload"]["violation"].split(" of ")[0] for e in dec} >= {"ballot", "quota proposal"}
    assert all(e["payload"]["candidate"] == "a3" for e in dec if e["kind"] == "ballot")  # the incumbent
    assert all(e["payload"]["proposal"] == 120 for e in dec if e["kind"] == "quota_proposal")  # no restriction
    assert all(sum(e["payload"]["points"]) == 0 for e in dec if e["kind"] == "sanction")  # nobody punished


def test_a_model_votes_proposes_and_punishes_by_name(tmp_path):
    """An LLM agent on a mocked litellm: the prompt names the phase's choices, the answer's
    names become agent ids."""
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent
    from scarce_lab.llm import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(cache=False, max_retries=0))

    def agent(answer: dict) -> LLMAgent:
        return LLMAgent("openai/gpt-4o-mini", client, litellm_kwargs={"mock_response": json.dumps(answer)})

    from scarce_lab.environments.sovsim.world.commons import CommonsGame
    from scarce_lab.environments.sovsim.world.institutions import InstitutionRules

    game = CommonsGame("bcpr", institutions=InstitutionRules(elections=1, quota="all", sanctions=True))
    obs = game.observe_institution("a1")
    d = run_sync(agent({"reasoning": "r", "quota": 12}).ainstitute(obs, seed=1))
    assert d.value == 12 and d.valid
    game.institute(dict.fromkeys(game.agents, 12))
    game.act(dict.fromkeys(game.subordinates, 12))
    game.act({"a3": 12})
    obs = game.observe_institution("a1")
    d = run_sync(agent({"reasoning": "r", "punish": [{"name": "boss D", "points": 2}]}).ainstitute(obs, seed=1))
    assert d.value == {"a3": 2} and d.valid
    game.institute({"a0": {}, "a1": {"a3": 2}, "a2": {}, "a3": {}})
    obs = game.observe_institution("a0")
    d = run_sync(agent({"reasoning": "r", "vote": "worker B"}).ainstitute(obs, seed=1))
    assert d.value == "a1"
    from scarce_lab.environments.sovsim.agents.prompts import render_institution_messages

    text = "\n".join(m["content"] for m in render_institution_messages(obs))
    assert "vote for who is the boss" in text and "worker B" in text and "received 2" in text
    game.institute({"a0": "a1", "a1": "a1", "a2": "a1", "a3": "a3"})
    names = "\n".join(m["content"] for m in render_institution_messages(game.observe_institution("a3")))
    assert "boss B" in names and "worker D" in names  # the role moved, the letters did not
