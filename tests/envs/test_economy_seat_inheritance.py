"""The economy's seats: offspring inherit their parent's seat; a joined agent is funded
by the bank with its endowment; money is conserved."""

from __future__ import annotations

import random

import pytest

from scarce_lab.environments.economy.world import Economy, EconomyConfig


def test_children_and_replacements_inherit_the_seat_and_use_its_operations():
    eco = Economy(EconomyConfig(reproduce_threshold=50, child_endowment=10, explore_count=1, explore_interval=1))
    rich, _ = eco.add_agent("g-rich", episode=0, bid=3, seat="a0")
    poor, _ = eco.add_agent("g-poor", episode=0, bid=3, seat="a1")
    eco.ledger.transfer("bank", rich.agent_id, 100, "reward")
    eco.ledger.transfer(poor.agent_id, "bank", 60, "reward")  # wealth below zero: bankrupt
    used = []

    def ops_for(seat):
        return (lambda g, r: used.append(("mutate", seat)) or f"{g}+m{seat}",
                lambda g, r: used.append(("repair", seat)) or f"{g}+r{seat}")

    end = eco.end_episode(0, random.Random(0), lambda g, r: pytest.fail("default mutate used"),
                          lambda r: "fresh", ops_for=ops_for)
    by_origin = {b["origin"]: eco.agents[b["agent"]] for b in end.births}
    assert by_origin["replacement"].seat == "a1" and by_origin["replacement"].genome == "g-poor+ra1"
    assert by_origin["child"].seat == "a0" and by_origin["child"].genome == "g-rich+ma0"
    assert by_origin["newcomer"].seat is None  # exploration: no lineage, the run's '*' seat
    assert ("repair", "a1") in used and ("mutate", "a0") in used
    assert eco.ledger.total() == 0


def test_joined_agent_gets_its_endowment_from_the_bank():
    eco = Economy(EconomyConfig())
    a, tr = eco.add_agent("g", episode=3, origin="joined", bid=2, seat="newcomer", endowment=123)
    assert (tr.src, tr.amount, eco.wealth(a.agent_id), a.novice, a.seat) == ("bank", 123, 123, True, "newcomer")
    with pytest.raises(ValueError, match="endowment"):
        eco.add_agent("g", episode=0, origin="founder", endowment=5)
    assert eco.ledger.total() == 0
