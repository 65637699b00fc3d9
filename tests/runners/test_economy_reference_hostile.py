"""The eom-reference preset under extreme settings.

Before: ``reference.path_reward_scale=nan`` (or ``inf``) ended the run mid-episode with
``ValueError: cannot convert float NaN to integer``; ``initial_wealth=10**30`` (either
economy) or a scale of ``1e300`` completed, and then its dataset could not be loaded
(polars ``Int64``); ``min_num_agents`` above ``max_num_agents`` ran without a word, the
floor never reached. All are refused by the config now, naming the field.

And the money: the reference pays every new agent ``initial_wealth`` of *new* money
(``population.py``: a child is not endowed by its parent); our ledger books it as a
transfer from the bank, so replaying the recorded events (births, payments, rent,
deaths' settlements) must give every population snapshot's balances exactly, bank and
rent sink included.
"""

from __future__ import annotations

import collections
import json

import pytest
from pydantic import ValidationError

from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.play import run_economy
from scarce_lab.environments.economy.world.core import MAX_CREDITS

BASE = dict(task="arithmetic", model="scripted/partial", preset="eom-reference:research", episodes=4, eval_episodes=0)


@pytest.mark.parametrize(("kw", "match"), [
    ({"reference": {"path_reward_scale": float("nan")}}, "path_reward_scale"),
    ({"reference": {"env_reward_scale": float("inf")}}, "env_reward_scale"),
    ({"reference": {"terminal_output_bonus_scale": 1e300}}, "terminal_output_bonus_scale"),
    ({"reference": {"initial_wealth": 10**30}}, "initial_wealth"),
    ({"reference": {"base_bid": MAX_CREDITS + 1}}, "base_bid"),
    ({"reference": {"min_num_agents": 10, "max_num_agents": 3}}, "min_num_agents .10. must not exceed"),
    ({"verifier_timeout": float("nan")}, "verifier_timeout"),
    ({"preset": "default", "economy": {"initial_wealth": 10**30}}, "initial_wealth"),
    ({"preset": "default", "qa_reward": 10**30}, "qa_reward"),
])
def test_extreme_settings_are_refused_naming_the_field(kw, match):
    with pytest.raises(ValidationError, match=match):
        EconomyRunConfig(**{**BASE, **kw})


def test_settings_at_the_bounds_are_accepted():
    cfg = EconomyRunConfig(**{**BASE, "reference": {"initial_wealth": MAX_CREDITS, "path_reward_scale": -1e6,
                                                    "min_num_agents": 0, "max_num_agents": 0}})
    assert cfg.reference.initial_wealth == MAX_CREDITS


def _replay_ledger(events: list[dict]) -> list[tuple]:
    """Balances from the events alone, compared with every population snapshot."""
    acc: collections.Counter = collections.Counter()
    wrong = []
    for e in events:
        p, k = e["payload"], e["kind"]
        if k == "birth":
            acc[p["funder"]] -= p["endowment"]
            acc[e["agent"]] += p["endowment"]
        elif k == "payment":
            acc[p["payer"]] -= p["amount"]
            acc[p["payee"]] += p["amount"]
        elif k == "rent":
            for a in p["agents"]:
                acc[a] -= p["amount"]
                acc["rent_sink"] += p["amount"]
        elif k == "death":
            acc["bank"] -= p["settlement"]
            acc[e["agent"]] += p["settlement"]
            if acc[e["agent"]] != 0:
                wrong.append((e["round"], "dead agent keeps money", e["agent"], acc[e["agent"]]))
        elif k == "population":
            want = {a["agent"]: a["wealth"] for a in p["agents"]} | {"bank": p["bank"], "rent_sink": p["rent_sink"]}
            wrong += [(e["round"], a, acc[a], w) for a, w in want.items() if acc[a] != w]
            assert p["total"] == 0
    return wrong


@pytest.mark.parametrize(("preset", "seed", "ref"), [
    ("eom-reference:research", 1, {}),
    # bankruptcies, replays (survivors restored) and repairs
    ("eom-reference:research", 3, {"initial_wealth": 150, "base_bid": 300, "max_trials_per_episode": 3,
                                   "path_reward_scale": 0.0, "terminal_output_bonus_scale": 0.0}),
    ("eom-reference:cloudcast", 2, {}),
])
def test_new_money_for_children_is_booked_and_the_events_account_for_every_credit(tmp_path, preset, seed, ref):
    cfg = EconomyRunConfig(**{**BASE, "preset": preset, "seed": seed, "episodes": 8, "reference": ref})
    run = run_economy(cfg, tmp_path)
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    births = [e for e in events if e["kind"] == "birth"]
    assert births and all(b["payload"]["funder"] == "bank" for b in births)  # new money, not the parent's
    assert all(b["payload"]["endowment"] == cfg.reference.initial_wealth for b in births)
    assert any(e["kind"] == "population" for e in events)
    assert _replay_ledger(events) == []
