"""Economy of Minds runs with seats and a newcomer: each seat's model decides for its
agents (and their offspring), the settings sent are the ones recorded, the newcomer joins
at its episode, a run resumes across the join, and prompts name no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.economy import tables as T
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner import play as R
from scarce_lab.llm.mock import MockModel
from tests.golden_runs import normalized


def _events(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines()]


def _payloads(d: Path) -> list:
    return [(e["kind"], e.get("agent"), e["round"], json.dumps(e["payload"], sort_keys=True)) for e in _events(d)]


def test_seats_that_all_name_the_default_play_the_run_without_seats(tmp_path):
    kw = {"agents": 4, "episodes": 6, "eval_episodes": 1, "seed": 3, "economy": {"explore_interval": 1}}
    plain = R.run_economy(EconomyRunConfig(**kw), tmp_path / "a")
    seated = R.run_economy(EconomyRunConfig(**kw, seats={"*": "scripted/random-rules"}), tmp_path / "b")
    assert plain.name == seated.name  # seats that change no seat are the run without seats (as in SovSim)
    assert _payloads(plain) == _payloads(seated)


def test_mixed_scripted_seats_and_newcomer_on_blocksworld(tmp_path):
    cfg = EconomyRunConfig(agents=4, episodes=8, eval_episodes=1, seed=3, seats={"a0": "scripted/expert"},
                           newcomer={"episode": 3, "wealth": 100, "bid": 4})
    d = R.run_economy(cfg, tmp_path)
    m = read_manifest(d)
    assert m.status == "complete"
    assert m.models["a0"] == "scripted/expert" and m.models["a1"] == "scripted/random-rules"
    assert m.notes["seats"]["composition"] == "a0=expert, others=random-rules"
    ev = _events(d)
    founders = {e["agent"]: e["payload"]["genome"]["text"] for e in ev
                if e["kind"] == "birth" and e["payload"]["origin"] == "founder"}
    assert founders["a0"] == "if not prefix_ok: move 1->2"  # the expert set's first rule
    joined = [e for e in ev if e["kind"] == "agent_joined"]
    assert len(joined) == 1 and joined[0]["round"] == 3 and joined[0]["payload"] == {"episode": 3, "seat": "newcomer"}
    birth = next(e for e in ev if e["kind"] == "birth" and e["agent"] == joined[0]["agent"])
    assert (birth["payload"]["origin"], birth["payload"]["endowment"], birth["payload"]["bid"]) == ("joined", 100, 4)
    pops = [e["payload"] for e in ev if e["kind"] == "population"]
    assert all(p["total"] == 0 for p in pops)  # money conserved with the join
    assert joined[0]["agent"] in {a["agent"] for a in pops[3]["agents"]}
    assert joined[0]["agent"] not in {a["agent"] for a in pops[2]["agents"]}
    j = T.joins(load_dataset(d))
    assert j.select("agent", "episode", "seat", "episodes").row(0) == (joined[0]["agent"], 3, "newcomer", 8)


def test_mixed_llm_and_scripted_seats_send_each_seats_settings_and_keep_models_out_of_prompts(tmp_path):
    client = MockModel(['{"note": "result = 7", "answer": "7"}'])
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=4, eval_episodes=1,
                           seed=0, economy={"explore_interval": 1, "reproduce_threshold": 45},
                           seats={"compute": {"model": "openai/gpt-4o-mini", "temperature": 0.7, "max_tokens": 50},
                                  "newcomer": "openai/gpt-4o"},
                           newcomer={"episode": 1})
    d = R.run_economy(cfg, tmp_path, client=client)
    calls = [json.loads(x) for x in (d / "llm_calls.jsonl").read_text().splitlines()]
    assert calls, "no model call: the LLM seat never acted"
    lineage = {"a1"}  # the compute founder and its offspring
    joined = next(e["agent"] for e in _events(d) if e["kind"] == "agent_joined")
    for e in _events(d):
        if e["kind"] == "birth" and e["payload"]["parent"] in lineage:
            lineage.add(e["agent"])
    for c in calls:
        if c["model"] == "openai/gpt-4o-mini":
            assert c["params"]["temperature"] == 0.7 and c["params"]["max_tokens"] == 50
            assert c["agent"] in lineage or c["agent"] is None  # a rewrite (mutation) names no agent
        else:
            assert c["model"] == "openai/gpt-4o" and c["agent"] in (joined, None)
    m = read_manifest(d)
    assert m.notes["seats"]["agents"]["a1"] == {"model": "openai/gpt-4o-mini", "temperature": 0.7, "max_tokens": 50}
    assert m.condition_settings["seats.a1.temperature"] == 0.7
    for msgs in client.seen:  # privacy: no prompt names any seat's model
        text = json.dumps(msgs)
        assert "gpt-4o" not in text and "scripted/" not in text and "newcomer" not in text


def test_resume_across_the_join(tmp_path, monkeypatch):
    cfg = EconomyRunConfig(agents=4, episodes=10, eval_episodes=2, seed=5, seats={"a0": "scripted/expert"},
                           newcomer={"episode": 4})
    full = R.run_economy(cfg, tmp_path / "full")
    real = R.join_newcomer
    state = {"joined": False}

    def join_then_die(*a, **k):
        real(*a, **k)
        state["joined"] = True
        raise KeyboardInterrupt  # killed right after the join, before the episode commits

    monkeypatch.setattr(R, "join_newcomer", join_then_die)
    with pytest.raises(KeyboardInterrupt):
        R.run_economy(cfg, tmp_path / "broken")
    assert state["joined"]
    monkeypatch.setattr(R, "join_newcomer", real)
    d = R.run_economy(cfg, tmp_path / "broken", resume=True)
    assert read_manifest(d).status == "complete"
    assert normalized(d)["events.jsonl"] == normalized(full)["events.jsonl"]
    assert sum(e["kind"] == "agent_joined" for e in _events(d)) == 1


def test_llm_kwargs_max_tokens_with_seats_is_refused(tmp_path):
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=2, eval_episodes=0,
                           seats={"a0": "openai/gpt-4o-mini"})
    with pytest.raises(ValueError, match="per seat"):
        R.run_economy(cfg, tmp_path, client=MockModel(["{}"]), llm_kwargs={"max_tokens": 20})


def test_cli_runs_seats_and_a_newcomer_and_names_a_typo(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["run", "economy", "-n", "4", "--episodes", "6", "--eval-episodes", "1",
                                   "-S", "seats.a0=scripted/expert", "-S", "newcomer.episode=2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run_dir,) = list(out.iterdir())
    m = read_manifest(run_dir)
    assert m.models["a0"] == "scripted/expert" and m.condition_settings["newcomer.episode"] == 2
    res = CliRunner().invoke(app, ["run", "economy", "-n", "4", "--episodes", "6", "-S", "seats.a4=scripted/expert",
                                   "--out", str(out)])
    assert res.exit_code != 0 and "'a4'" in res.output


def test_sl_run_checks_every_seat_and_the_dry_run_plans_each_seat_model(tmp_path):
    import scarce_lab as sl
    from scarce_lab.runners.preflight import ModelUnavailableError

    with pytest.raises(ValueError, match="seats.a0"):  # refused when the config is built
        sl.run(EconomyRunConfig(agents=4, episodes=4, seats={"a0": "scripted/partial"}), out=tmp_path)
    with pytest.raises(ModelUnavailableError, match="seats.a1 'embedded/nosuch'"):
        sl.run(EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=4,
                                seats={"a1": "embedded/nosuch"}), out=tmp_path)
    assert not list(tmp_path.iterdir())  # refused before anything was written
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=6, eval_episodes=2,
                           qa_max_steps=3, seats={"a0": "openai/gpt-4o-mini"})
    plan = sl.run(cfg, out=tmp_path, dry_run=True)
    assert set(plan.models) == {"openai/gpt-4o-mini"}
    assert plan.models["openai/gpt-4o-mini"].calls_high == (6 + 2) * 3 + 6 * cfg.economy.max_agents
    assert not list(tmp_path.iterdir())


def test_newcomer_with_a_role_gets_that_capabilitys_founder_genome(tmp_path):
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=4, eval_episodes=0,
                           newcomer={"episode": 2, "role": "answer"})
    d = R.run_economy(cfg, tmp_path)
    joined = next(e["agent"] for e in _events(d) if e["kind"] == "agent_joined")
    birth = next(e for e in _events(d) if e["kind"] == "birth" and e["agent"] == joined)
    founder = next(e for e in _events(d) if e["kind"] == "birth" and e["agent"] == "a3")  # the answer founder
    assert birth["payload"]["genome"] == founder["payload"]["genome"]
    with pytest.raises(ValueError, match="newcomer.role"):
        EconomyRunConfig(episodes=4, newcomer={"episode": 2, "role": "answer"})  # Blocks World: no roles
