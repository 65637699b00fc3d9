"""Economy of Minds core: ledger, auction, bucket brigade, rent, bankruptcy,
reproduction, newcomers, ablations, frozen evaluation. Hand-computed cases."""

from __future__ import annotations

import random

import pytest

from scarce_lab.environments.economy.world import (
    BANK,
    RENT_SINK,
    Economy,
    EconomyConfig,
    Ledger,
    LedgerError,
    StepResult,
    run_episode,
)


class ScriptTask:
    """A task that accepts any action and pays ``rewards[i]`` at step i; done after the last."""

    def __init__(self, rewards):
        self.rewards = list(rewards)
        self.max_steps = len(rewards)
        self.i = 0

    def observe(self):
        return self.i

    def step_kind(self, obs):
        return f"k{obs}"

    def apply(self, action):
        r = self.rewards[self.i]
        self.i += 1
        done = self.i == len(self.rewards)
        return StepResult(r, done, done and r > 0)


def eco_with(bids, **cfg) -> Economy:
    eco = Economy(EconomyConfig(**cfg))
    for b in bids:
        eco.add_agent(None, episode=0, bid=b)
    return eco


def test_ledger_refuses_bad_amounts_and_accounts():
    led = Ledger()
    led.open("a0")
    with pytest.raises(LedgerError, match="int"):
        led.transfer(BANK, "a0", 1.5, "x")
    with pytest.raises(LedgerError, match=">= 0"):
        led.transfer(BANK, "a0", -1, "x")
    with pytest.raises(LedgerError, match="unknown account"):
        led.transfer(BANK, "zz", 1, "x")
    with pytest.raises(LedgerError, match="already open"):
        led.open("a0")


def test_ledger_close_settles_debt_with_bank():
    led = Ledger()
    led.open("a0")
    led.transfer("a0", RENT_SINK, 7, "rent")  # a0 = -7
    tr = led.close("a0")
    assert (tr.src, tr.dst, tr.amount, tr.reason) == (BANK, "a0", 7, "debt_write_off")
    assert led.balances() == {BANK: -7, RENT_SINK: 7}
    assert led.total() == 0


def test_auction_highest_bid_wins_and_ties_are_seeded():
    eco = eco_with([5, 7, 7])
    res = eco.auction(["a0", "a1"], random.Random(0))
    assert (res.winner, res.price, res.tie) == ("a1", 7, False)
    assert res.bids == {"a0": 5, "a1": 7}
    winners = {eco.auction(["a0", "a1", "a2"], random.Random(s)).winner for s in range(20)}
    assert winners == {"a1", "a2"}  # both tied agents win for some seed, a0 never
    r1 = eco.auction(["a0", "a1", "a2"], random.Random(3)).winner
    assert r1 == eco.auction(["a0", "a1", "a2"], random.Random(3)).winner


def test_auction_rejects_empty_or_dead():
    eco = eco_with([1])
    with pytest.raises(ValueError, match="at least one"):
        eco.auction([], random.Random(0))
    with pytest.raises(ValueError, match="not alive"):
        eco.auction(["a9"], random.Random(0))


def test_bucket_brigade_payments_hand_case():
    # a0 bids 3, a1 bids 5; both start with 40 from the bank (bank = -80).
    eco = eco_with([3, 5], initial_wealth=40)
    order = iter(["a0", "a1"])
    res = run_episode(
        eco, ScriptTask([0, 20]),
        trigger=lambda a, o: a.agent_id == ("a0" if o == 0 else "a1"),
        act=lambda a, o: next(order), training=True, rng=random.Random(0),
    )
    # step 0: a0 pays 3 to the bank; step 1: a1 pays 5 to a0, then gets the reward 20.
    assert res.solved and res.winners == ["a0", "a1"]
    assert eco.wealth("a0") == 40 - 3 + 5 == 42
    assert eco.wealth("a1") == 40 - 5 + 20 == 55
    assert eco.ledger.balance(BANK) == -80 + 3 - 20 == -97
    assert eco.ledger.total() == 0


def test_winner_following_itself_pays_itself():
    eco = eco_with([4])
    run_episode(eco, ScriptTask([0, 0, 0]), trigger=lambda a, o: True, act=lambda a, o: None,
                training=True, rng=random.Random(0))
    assert eco.wealth("a0") == 40 - 4  # only the first purchase (from the bank) costs


def test_events_emitted_for_auction_payment_step_reward():
    eco = eco_with([2])
    seen = []
    run_episode(eco, ScriptTask([10]), trigger=lambda a, o: True, act=lambda a, o: "x", training=True,
                rng=random.Random(0), emit=lambda k, s, a, p: seen.append((k, s, a, p)))
    kinds = [k for k, *_ in seen]
    assert kinds == ["auction", "payment", "step", "reward"]
    assert seen[1][3] == {"payer": "a0", "payee": BANK, "amount": 2, "reason": "bucket_brigade"}
    assert seen[3][3] == {"amount": 10}


def test_rent_bankruptcy_and_removal():
    eco = eco_with([1, 1], initial_wealth=2, rent=3, rent_interval=1, explore_count=0, replace_bankrupt=False)
    eco.ledger.transfer(BANK, "a1", 5, "reward")  # a1 = 7
    end = eco.end_episode(0, random.Random(0), mutate=lambda g, r: g, newcomer=lambda r: None)
    assert [t.amount for t in end.rent] == [3, 3]
    assert eco.ledger.balance(RENT_SINK) == 6
    assert [d["agent"] for d in end.deaths] == ["a0"]  # 2 - 3 = -1 < 0
    assert end.deaths[0]["wealth"] == -1 and end.deaths[0]["cause"] == "bankruptcy"
    assert list(eco.agents) == ["a1"] and eco.wealth("a1") == 4
    assert eco.ledger.total() == 0


def test_rent_only_every_k_episodes():
    eco = eco_with([1], rent=1, rent_interval=3, explore_count=0)
    charged = [bool(eco.end_episode(e, random.Random(e), lambda g, r: g, lambda r: None).rent) for e in range(6)]
    assert charged == [False, False, True, False, False, True]


def test_rich_agent_reproduces_with_endowment_and_child_gets_a_trial():
    eco = eco_with([6, 9], reproduce_threshold=100, child_endowment=30, rent=0, explore_count=0,
                   bid_scheme="fixed")
    eco.ledger.transfer(BANK, "a0", 70, "reward")  # a0 = 110 >= 100
    end = eco.end_episode(0, random.Random(1), mutate=lambda g, r: "mutant", newcomer=lambda r: None)
    assert len(end.births) == 1
    b = end.births[0]
    assert (b["agent"], b["origin"], b["parent"], b["endowment"], b["funder"]) == ("a2", "child", "a0", 30, "a0")
    assert eco.wealth("a0") == 80 and eco.wealth("a2") == 30
    child = eco.agents["a2"]
    assert child.genome == "mutant" and child.novice
    assert 5 <= child.bid <= 7  # parent's 6 moved by at most max(1, 20% of 6) = 1
    # trial: the novice bids the highest eligible veteran bid + epsilon, then its own bid.
    res = eco.auction(["a0", "a1", "a2"], random.Random(0))
    assert (res.winner, res.price) == ("a2", 9 + 1)
    eco.pay("a2", None, res.price)
    assert not eco.agents["a2"].novice
    assert eco.auction(["a1", "a2"], random.Random(0)).winner == "a1"
    assert eco.ledger.total() == 0


def test_newcomers_funded_by_bank_every_interval():
    eco = eco_with([5], explore_interval=2, explore_count=1, rent=0)
    e0 = eco.end_episode(0, random.Random(0), lambda g, r: g, lambda r: "fresh")
    e1 = eco.end_episode(1, random.Random(0), lambda g, r: g, lambda r: "fresh")
    assert e0.births == [] and len(e1.births) == 1
    b = e1.births[0]
    assert (b["origin"], b["funder"], b["endowment"]) == ("newcomer", BANK, 40)
    assert 1 <= b["bid"] <= 5 and eco.agents[b["agent"]].novice


def test_max_agents_caps_births():
    eco = eco_with([1, 1], max_agents=2, explore_interval=1, rent=0)
    assert eco.end_episode(0, random.Random(0), lambda g, r: g, lambda r: None).births == []


@pytest.mark.parametrize(
    "ablation, children, newcomers",
    [("none", 1, 1), ("no-exploitation", 0, 1), ("no-exploration", 1, 0)],
)
def test_ablation_switches_births(ablation, children, newcomers):
    eco = eco_with([3], reproduce_threshold=50, child_endowment=10, explore_interval=1, rent=0,
                   ablation=ablation)
    eco.ledger.transfer(BANK, "a0", 20, "reward")  # 60 >= 50
    end = eco.end_episode(0, random.Random(0), lambda g, r: g, lambda r: None)
    origins = [b["origin"] for b in end.births]
    assert origins.count("child") == children and origins.count("newcomer") == newcomers


def test_no_auction_picks_random_eligible_agent():
    eco = eco_with([1, 100], ablation="no-auction")
    winners = [eco.auction(["a0", "a1"], random.Random(s)) for s in range(40)]
    assert {w.winner for w in winners} == {"a0", "a1"}
    assert all(w.random_winner for w in winners)


def test_holland_bid_scheme_tycoon_bids_share_of_wealth():
    eco = eco_with([2, 5], bid_scheme="holland", tycoon_wealth=50, holland_alpha_pct=20)
    eco.ledger.transfer(BANK, "a0", 60, "reward")  # a0 = 100 >= 50 -> bids 20
    res = eco.auction(["a0", "a1"], random.Random(0))
    assert (res.winner, res.price) == ("a0", 20)


def test_frozen_evaluation_moves_no_money():
    eco = eco_with([3, 5])
    eco.add_agent(None, episode=0, origin="newcomer", bid=2)  # a novice
    before = eco.ledger.balances()
    res = run_episode(eco, ScriptTask([0, 0, 30]), trigger=lambda a, o: True, act=lambda a, o: None,
                      training=False, rng=random.Random(0))
    assert res.solved and res.reward == 30
    assert eco.ledger.balances() == before
    assert eco.agents["a2"].novice  # no trial in evaluation: own bid 2 loses to 5
    assert set(res.winners) == {"a1"}


def test_money_is_conserved_over_a_long_random_economy():
    from scarce_lab.environments.economy.agents.rules import RulePolicy
    from scarce_lab.environments.economy.world.blocksworld import BlocksWorld, make_instance

    pol = RulePolicy("random-rules")
    eco = Economy(EconomyConfig(rent=2, reproduce_threshold=60, child_endowment=20, explore_interval=1))
    rng = random.Random(7)
    for g in pol.founders(10, rng):
        eco.add_agent(g, episode=0, bid=rng.randint(1, 10))
    rent_paid = 0
    for e in range(150):
        t, s = make_instance(rng.randint(2, 4), 3, rng)
        run_episode(eco, BlocksWorld(t, s), trigger=lambda a, o: a.genome.fires(o),
                    act=lambda a, o: a.genome.act(o), training=True, rng=random.Random(e))
        end = eco.end_episode(e, random.Random(1000 + e), pol.mutate, pol.newcomer)
        rent_paid += sum(t.amount for t in end.rent)
        bal = eco.ledger.balances()
        assert sum(bal.values()) == 0
        assert sum(eco.wealth(a.agent_id) for a in eco.living()) + bal[BANK] + bal[RENT_SINK] == 0
        assert bal[RENT_SINK] == rent_paid


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="rent"):
        EconomyConfig(rent=-1)
    with pytest.raises(ValueError, match="ablation"):
        EconomyConfig(ablation="no-money")
    with pytest.raises(ValueError, match="child_endowment"):
        EconomyConfig(child_endowment=200, reproduce_threshold=100)
