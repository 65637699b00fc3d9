"""``solvent_bids``: an agent may not bid more than its wealth.

The rule is stated once (:meth:`Economy.placed_bids`); these property tests drive random
economies (random wealth, bids, novices, configs) through auctions and whole episodes
and check that no bid placed and no bucket-brigade payment ever exceeds the bidder's
wealth, novices' trial bids (max veteran bid + epsilon) included.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.environments.economy.world import (
    BANK,
    Economy,
    EconomyConfig,
    LedgerError,
    StepResult,
    run_episode,
)


class _Recording(Economy):
    """An economy that records (payer wealth before, price) of every payment."""

    def __init__(self, config):
        super().__init__(config)
        self.paid: list[tuple[int, int]] = []

    def pay(self, winner, previous, price):
        self.paid.append((self.wealth(winner), price))
        return super().pay(winner, previous, price)


class _Walk:
    """A task of ``max_steps`` steps that pays ``reward`` now and then (seeded)."""

    def __init__(self, max_steps: int, reward: int, seed: int):
        self.max_steps = max_steps
        self.rng = random.Random(seed)
        self.reward = reward

    def observe(self):
        return None

    def step_kind(self, obs):
        return "any"

    def apply(self, action):
        r = self.reward if self.rng.random() < 0.3 else 0
        return StepResult(r, False, False)


agents_st = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 40), st.booleans()),  # wealth, own bid, novice
    min_size=1, max_size=8,
)


def _economy(cls, agents, epsilon, bid_scheme="fixed"):
    eco = cls(EconomyConfig(solvent_bids=True, epsilon=epsilon, initial_wealth=0, bid_scheme=bid_scheme,
                            tycoon_wealth=20, holland_alpha_pct=50))
    for wealth, bid, novice in agents:
        rec, _ = eco.add_agent(None, episode=0, origin="founder", bid=bid)
        rec.novice = novice
        eco.ledger.transfer(BANK, rec.agent_id, wealth, "test")
    return eco


@settings(max_examples=200, deadline=None)
@given(agents=agents_st, epsilon=st.integers(0, 10), trial=st.booleans(),
       scheme=st.sampled_from(["fixed", "holland"]))
def test_no_placed_bid_exceeds_wealth(agents, epsilon, trial, scheme):
    eco = _economy(Economy, agents, epsilon, scheme)
    ids = [a.agent_id for a in eco.living()]
    bids = eco.placed_bids(ids, trial=trial)
    for a, b in bids.items():
        assert b <= eco.wealth(a), (a, b, eco.wealth(a))
    # novices' trial bid is the max solvent veteran bid + epsilon
    vets = [b for a, b in bids.items() if not (trial and eco.agents[a].novice)]
    for a, b in bids.items():
        if trial and eco.agents[a].novice:
            assert b == max(vets, default=0) + epsilon


@settings(max_examples=150, deadline=None)
@given(agents=agents_st, epsilon=st.integers(0, 10), steps=st.integers(1, 12), reward=st.integers(0, 30),
       seed=st.integers(0, 10_000), episodes=st.integers(1, 4))
def test_no_bucket_brigade_payment_exceeds_the_payers_wealth(agents, epsilon, steps, reward, seed, episodes):
    eco = _economy(_Recording, agents, epsilon)
    rng = random.Random(seed)
    for e in range(episodes):
        run_episode(eco, _Walk(steps, reward, seed + e), trigger=lambda a, o: rng.random() < 0.8,
                    act=lambda a, o: None, training=True, rng=rng)
    for before, price in eco.paid:
        assert price <= before
    assert eco.ledger.total() == 0


def test_a_novice_that_cannot_cover_its_trial_bid_stays_out():
    """The case found in review: a novice with 10 credits facing a veteran bid of 10 would bid
    11 and go to -1; with solvent_bids it does not bid."""
    eco = _economy(Economy, [(50, 10, False), (10, 5, True)], epsilon=1)
    assert eco.placed_bids(["a0", "a1"]) == {"a0": 10}
    eco2 = _economy(Economy, [(50, 10, False), (10, 5, True)], epsilon=1)
    eco2.config = eco2.config.model_copy(update={"solvent_bids": False})
    assert eco2.placed_bids(["a0", "a1"]) == {"a0": 10, "a1": 11}  # the old behaviour, rule off


def test_pay_refuses_more_than_the_wealth_and_auction_refuses_nobody_solvent():
    eco = _economy(Economy, [(3, 5, False)], epsilon=1)
    with pytest.raises(LedgerError, match="solvent_bids"):
        eco.pay("a0", None, 5)
    with pytest.raises(ValueError, match="solvent_bids"):
        eco.auction(["a0"], random.Random(0))
