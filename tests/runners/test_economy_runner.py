"""Economy runner end to end: recording, the learning result, replayed conservation,
frozen evaluation, baselines, JSONL tasks, LLM plumbing (mocked), CLI."""

from __future__ import annotations

import importlib.util
import json
from collections import defaultdict
from pathlib import Path

import pytest

from scarce_lab.data.loaders import load_dataset
from scarce_lab.environments.economy import tables as T
from scarce_lab.environments.economy.analysis.metrics import ablation_table, per_run_rates
from scarce_lab.environments.economy.runner.play import EconomyRunConfig, load_qa_jsonl, run_economy


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_training_improves_on_first_episodes_with_rule_agents(tmp_path):
    """The classic Hayek result: a random rule population learns Blocks World."""
    for seed in range(4):
        run_economy(EconomyRunConfig(episodes=300, eval_episodes=40, seed=seed, detail="episodes",
                                     snapshot_every=25), tmp_path)
    rates = per_run_rates(T.episodes(load_dataset(tmp_path)))
    first, last, ev = (rates[c].to_list() for c in ("first_fifth", "last_fifth", "eval"))
    assert sum(b > a for a, b in zip(first, last, strict=True)) >= 3
    assert sum(last) / 4 - sum(first) / 4 >= 0.25
    assert sum(ev) / 4 - sum(first) / 4 >= 0.2


def _replay(events: list[dict]) -> None:
    """Rebuild every balance from money events and compare with each snapshot."""
    bal: dict[str, int] = defaultdict(int)
    checked = 0
    for ev in events:
        p, k = ev["payload"], ev["kind"]
        if k == "birth":
            bal[p["funder"]] -= p["endowment"]
            bal[ev["agent"]] += p["endowment"]
        elif k == "payment":
            bal[p["payer"]] -= p["amount"]
            bal[p["payee"]] += p["amount"]
        elif k == "reward":
            bal["bank"] -= p["amount"]
            bal[ev["agent"]] += p["amount"]
        elif k == "rent":
            for a in p["agents"]:
                bal[a] -= p["amount"]
                bal["rent_sink"] += p["amount"]
        elif k == "death":
            assert bal[ev["agent"]] == p["wealth"]
            bal["bank"] += bal.pop(ev["agent"])
        elif k == "population":
            assert p["total"] == 0
            wealth = {a["agent"]: a["wealth"] for a in p["agents"]}
            assert {a: bal[a] for a in wealth} == wealth
            assert (bal["bank"], bal["rent_sink"]) == (p["bank"], p["rent_sink"])
            assert sum(bal.values()) == 0
            checked += 1
    assert checked > 0


def test_recorded_money_replays_exactly_and_eval_is_frozen(tmp_path):
    run_dir = run_economy(EconomyRunConfig(episodes=60, eval_episodes=10, seed=5,
                                           economy={"explore_interval": 1, "reproduce_threshold": 60}),
                          tmp_path)
    events = _events(run_dir)
    _replay(events)
    kinds = {e["kind"] for e in events}
    assert {"auction", "payment", "step", "rent", "birth", "death", "population", "episode_agents"} <= kinds
    ev = [e for e in events if e["phase"] == "eval"]
    assert ev and not any(e["kind"] in ("payment", "reward", "rent", "birth", "death") for e in ev)
    snaps = [e["payload"]["agents"] for e in events if e["kind"] == "population"]
    last_train = [e["payload"]["agents"] for e in events if e["kind"] == "population" and e["phase"] == "train"][-1]
    assert snaps[-1] == last_train
    commits = [e["round"] for e in events if e["kind"] == "round_committed"]
    assert commits == list(range(70))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["environment"] == "economy"


@pytest.mark.slow
def test_same_seed_same_trajectory(tmp_path):
    cfg = EconomyRunConfig(episodes=40, eval_episodes=5, seed=9)
    a = run_economy(cfg, tmp_path / "a")
    b = run_economy(cfg, tmp_path / "b")
    assert (a / "events.jsonl").read_text() == (b / "events.jsonl").read_text()


def test_tables_from_a_steps_run(tmp_path):
    run_economy(EconomyRunConfig(episodes=20, eval_episodes=4, seed=1), tmp_path)
    ds = load_dataset(tmp_path)
    ep = T.episodes(ds)
    assert ep.height == 24 and set(ep["phase"]) == {"train", "eval"}
    st = T.steps(ds)
    assert st.height == ep["steps"].sum()
    ag = T.agent_episodes(ds)
    # every step is won by exactly one agent: wins add up to steps per episode
    assert ag["n_wins"].sum() == ep["steps"].sum()
    assert T.births(ds).filter(T.births(ds)["origin"] == "founder").height == 12


def test_scripted_arithmetic_economy_and_baselines(tmp_path):
    common = dict(task="arithmetic", model="scripted/partial", episodes=30, eval_episodes=10, seed=2)
    run_economy(EconomyRunConfig(agents=8, **common), tmp_path)
    rr = run_economy(EconomyRunConfig(agents=4, baseline="round-robin", **common), tmp_path)
    full = run_economy(EconomyRunConfig(agents=1, baseline="full", **common), tmp_path)
    assert not any(e["kind"] == "payment" for e in _events(rr))
    order = [e["agent"] for e in _events(rr) if e["kind"] == "step" and e["round"] == 0]
    assert order == ["a0", "a1", "a2", "a3"]  # plan, compute, check, answer in fixed order
    ep = T.episodes(load_dataset(tmp_path))
    full_rate = ep.filter((ep["base_condition"] == "baseline-full") & (ep["phase"] == "eval"))["solved"].mean()
    assert full_rate == 1.0  # the scripted full agent computes and answers in one step
    # the runs differ in population size too, and the labels say so
    assert set(ep["condition"]) == {"none,agents=8", "baseline-round-robin,agents=4", "baseline-full,agents=1"}
    assert full.name.startswith("eco-arithmetic-baseline-full")


def test_jsonl_task_reads_pairs_and_reports_bad_lines(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps({"question": f"Ana has {i} apples. How many apples does Ana have now?",
                                          "answer": i}) for i in range(6)) + "\n")
    items = load_qa_jsonl(path)
    assert len(items) == 6 and items[2].answer == "2"
    run_dir = run_economy(EconomyRunConfig(task=f"jsonl:{path}", model="scripted/partial", agents=4,
                                           episodes=6, eval_episodes=2, seed=0), tmp_path / "runs")
    assert json.loads((run_dir / "manifest.json").read_text())["config"]["task"] == f"jsonl:{path}"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "x", "answer": 1}\n{"q": "y"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        load_qa_jsonl(bad)


def test_blocksworld_refuses_llm_model():
    from scarce_lab.environments.economy.runner.play import make_policy

    with pytest.raises(ValueError, match="rule agents"):
        make_policy(EconomyRunConfig(model="embedded/smollm2"))
    with pytest.raises(ValueError, match="task"):
        EconomyRunConfig(task="chess")
    with pytest.raises(ValueError, match="min_blocks"):
        EconomyRunConfig(min_blocks=6, max_blocks=3)
    with pytest.raises(ValueError, match="rent"):
        EconomyRunConfig(economy={"rent": -2})
    with pytest.raises(ValueError, match="rnet"):  # an unknown field is named
        EconomyRunConfig(economy={"rnet": 2})


def test_llm_partial_agents_plumbing_with_mock(tmp_path):
    from scarce_lab.llm import LLMClient, LLMSettings

    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "What is 3 + 4?", "answer": 7}\n{"question": "What is 2 + 5?", "answer": 7}\n')
    client = LLMClient(LLMSettings(cache=False))
    run_dir = run_economy(
        EconomyRunConfig(task=f"jsonl:{path}", model="openai/gpt-4o-mini", agents=4, episodes=2,
                         eval_episodes=1, seed=0, economy={"explore_interval": 1}),
        tmp_path / "runs", client=client,
        llm_kwargs={"mock_response": '{"note": "3 + 4 = 7", "answer": "7"}'},
    )
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and all(c["model"] == "openai/gpt-4o-mini" for c in calls)
    ep = T.episodes(load_dataset(run_dir))
    assert ep["solved"].any()


@pytest.mark.embedded
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_embedded_model_runs_one_arithmetic_episode(tmp_path):
    run_dir = run_economy(
        EconomyRunConfig(task="arithmetic", model="embedded/smollm2", agents=4, episodes=1,
                         eval_episodes=0, seed=0, qa_max_steps=2, economy={"explore_count": 0}),
        tmp_path,
    )
    calls = (run_dir / "llm_calls.jsonl").read_text().splitlines()
    assert 1 <= len(calls) <= 4  # two steps, each at most one repair
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"


def test_cli_run_and_table(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["run", "economy", "--episodes", "10", "--eval-episodes", "2", "-a", "none",
                                   "-a", "no-auction", "--seed", "0", "--seed", "1", "--out", str(out),
                                   "--detail", "episodes"])
    assert res.exit_code == 0, res.output
    assert len(list(out.iterdir())) == 4
    res = CliRunner().invoke(app, ["table", "economy", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["table"]
    assert [(r["task"], r["condition"], r["n_runs"]) for r in rows] == [
        ("blocksworld", "none", 2), ("blocksworld", "no-auction", 2)]
    res = CliRunner().invoke(app, ["table", "economy", str(out)])
    assert res.exit_code == 0 and "| task | condition | seeds |" in res.output
    direct = ablation_table(T.episodes(load_dataset(out)))
    assert direct["first_fifth"].to_list() == [r["first_fifth"] for r in rows]


def test_llm_prompt_rewrite_mutation_with_mock():
    import random

    from scarce_lab.environments.economy.agents.llm import LLMPartialPolicy, render_act
    from scarce_lab.environments.economy.agents.partial import PartialGenome, default_instruction
    from scarce_lab.environments.economy.world.qa import QAObs
    from scarce_lab.llm import LLMClient, LLMSettings

    recorded = []
    parent = PartialGenome("compute", default_instruction("compute"), ("after_plan",))
    pol = LLMPartialPolicy("openai/gpt-4o-mini", LLMClient(LLMSettings(cache=False)), seed=1,
                           record_calls=recorded.extend, mock_response="Add and subtract step by step.")
    child = pol.mutate(parent, random.Random(0))
    assert child.instruction == "Add and subtract step by step." and child.capability == "compute"
    assert child.wake_on != parent.wake_on  # one step kind toggled
    assert len(recorded) == 1 and recorded[0].purpose == "mutation"
    msgs = render_act(parent, QAObs("What is 2 + 2?", (("plan", "add"),), 1))
    assert msgs[0] == {"role": "system", "content": parent.instruction}
    assert '- [plan] "add"' in msgs[1]["content"] and '"answer"' not in msgs[1]["content"]
