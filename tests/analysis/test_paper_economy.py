"""The Economy of Minds paper's definitions where this toolkit departed from them:
the fixed bid b_a, and exploration that replaces bankrupt agents
by modified copies of the failed agent's policy.

Paper: Qi et al. 2026, "Economy of Minds: Emerging Multi-Agent Intelligence with
Economic Interactions", arXiv:2606.02859; reference code zhentingqi/EoM (package
``hayekmas``), read to understand it, nothing copied. Quotes are from the paper's
project page and the reference repository's README (which carries the abstract).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from scarce_lab.environments.economy.agents.llm import LLMPartialPolicy
from scarce_lab.environments.economy.agents.partial import PartialGenome, default_instruction
from scarce_lab.environments.economy.agents.rules import RulePolicy, random_rule
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.play import run_economy
from scarce_lab.environments.economy.world import BANK, Economy, EconomyConfig


def test_the_bid_is_the_fixed_bid_b_a_by_default():
    """Paper (project page): "Each agent has a wake-up condition, fixed bid, and wealth
    balance." Sec. 3.1: an agent is a tuple (trigger, policy, b_a, W_a) with b_a its bid.
    Holland's wealth-proportional bid stays an option, not the default."""
    assert EconomyConfig().bid_scheme == "fixed"
    assert EconomyRunConfig().economy.bid_scheme == "fixed"
    eco = Economy(EconomyConfig(tycoon_wealth=50, holland_alpha_pct=20))
    a, _ = eco.add_agent(None, episode=0, bid=3)
    eco.ledger.transfer(BANK, a.agent_id, 500, "reward")  # a rich veteran still bids b_a
    assert eco.veteran_bid(a.agent_id) == 3
    holland = Economy(EconomyConfig(bid_scheme="holland", tycoon_wealth=50, holland_alpha_pct=20))
    h, _ = holland.add_agent(None, episode=0, bid=3)
    holland.ledger.transfer(BANK, h.agent_id, 500, "reward")
    assert holland.veteran_bid(h.agent_id) == (540 * 20) // 100  # the option: 20 % of its wealth


def test_bankrupt_agents_are_replaced_by_modified_copies_of_their_policy():
    """Paper (abstract, in the reference README): "agents that consistently contribute to
    successful trajectories accumulate wealth and are mutated via exploitation, while
    ineffective agents go bankrupt and are replaced via exploration." Project page:
    "Effective agents persist and mutate; ineffective ones go bankrupt and are replaced."
    """
    eco = Economy(EconomyConfig(initial_wealth=2, rent=3, rent_interval=1, explore_count=0))
    for b in (4, 6):
        eco.add_agent(f"policy-{b}", episode=0, bid=b)
    eco.ledger.transfer(BANK, "a1", 5, "reward")  # a1 = 7 survives the rent, a0 = -1 does not
    end = eco.end_episode(0, random.Random(0), mutate=lambda g, r: g + "+child",
                          newcomer=lambda r: "fresh", repair=lambda g, r: g + "+repaired")
    assert [d["agent"] for d in end.deaths] == ["a0"]
    (b,) = end.births
    assert (b["origin"], b["parent"], b["funder"], b["endowment"]) == ("replacement", "a0", BANK, 2)
    new = eco.agents[b["agent"]]
    assert new.genome == "policy-4+repaired" and new.novice  # the failed agent's policy, modified
    assert 1 <= new.bid <= 5  # its bid mutated by up to 20 % (at least one credit) from 4
    assert eco.ledger.total() == 0
    # the no-exploration ablation turns replacement off, as it does newcomers
    off = Economy(EconomyConfig(initial_wealth=2, rent=3, rent_interval=1, ablation="no-exploration"))
    off.add_agent("p", episode=0, bid=1)
    assert off.end_episode(0, random.Random(0), lambda g, r: g, lambda r: "x", repair=lambda g, r: g).births == []
    # periodic newcomers come in addition (explore_count > 0) or not at all (explore_count = 0)
    both = Economy(EconomyConfig(initial_wealth=2, rent=3, rent_interval=1, explore_interval=1, explore_count=1))
    both.add_agent("p", episode=0, bid=1)
    origins = [x["origin"] for x in both.end_episode(0, random.Random(0), lambda g, r: g, lambda r: "x",
                                                     repair=lambda g, r: g).births]
    assert origins == ["replacement", "newcomer"]


def test_an_llm_replacement_gets_the_failed_agents_prompt_rewritten():
    """The specification: "Exploration replaces bankrupt agents with new ones made by
    modifying the failed agent's policy (for LLM agents: rewriting its prompt)"."""
    from scarce_lab.llm import LLMClient, LLMSettings

    seen: list = []
    pol = LLMPartialPolicy("openai/mock", LLMClient(LLMSettings(cache=False)), seed=0,
                           record_calls=seen.extend, mock_response="Compute each step and write only the number.")
    g = PartialGenome("compute", default_instruction("compute"), ("start",))
    new = pol.repair(g, random.Random(0))
    assert new.instruction == "Compute each step and write only the number." and new.capability == "compute"
    assert new.wake_on == g.wake_on  # the prompt is what changes
    assert len(seen) == 1 and seen[0].purpose == "repair"
    assert "went bankrupt" in seen[0].messages[0]["content"] and g.instruction in seen[0].messages[0]["content"]
    rule = random_rule(random.Random(3))
    assert RulePolicy().repair(rule, random.Random(1)) != rule  # a rule agent: the rule is modified


def test_a_run_records_replacements_with_their_failed_parent(tmp_path: Path):
    """The trajectory names each replacement's failed parent (birth origin
    ``replacement``), so the exploration ablation can be read from the data."""
    run = run_economy(EconomyRunConfig(agents=8, episodes=40, eval_episodes=2, seed=1, detail="episodes",
                                       economy={"rent": 10, "rent_interval": 2}), tmp_path)
    evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    deaths = {e["agent"] for e in evs if e["kind"] == "death"}
    reps = [e for e in evs if e["kind"] == "birth" and e["payload"]["origin"] == "replacement"]
    assert deaths and reps
    assert {e["payload"]["parent"] for e in reps} <= deaths
    assert all(e["payload"]["funder"] == "bank" for e in reps)


@pytest.mark.parametrize("ablation", ["no-exploration"])
def test_no_exploration_run_has_no_replacement(tmp_path: Path, ablation):
    run = run_economy(EconomyRunConfig(agents=8, episodes=40, eval_episodes=2, seed=1, detail="episodes",
                                       ablation=ablation, economy={"rent": 10, "rent_interval": 2}), tmp_path)
    evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert not [e for e in evs if e["kind"] == "birth" and e["payload"]["origin"] in ("replacement", "newcomer")]
