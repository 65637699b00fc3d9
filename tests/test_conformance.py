"""Every environment passes the conformance suite shipped in ``scarce_lab.testing``
(same seed, same trajectory; no observation holds another agent's private fields), and
the suite catches a planted leak (so its checks can fail)."""

from __future__ import annotations

import json

import pytest

from scarce_lab.environments.economy.conformance import economy_fork_trace
from scarce_lab.environments.scarce.conformance import scarce_fork_trace, scarce_trace
from scarce_lab.environments.sovsim.conformance import sovsim_fork_trace, sovsim_trace
from scarce_lab.testing import (
    HARNESSES,
    Observation,
    Trace,
    check_environment,
    check_privacy,
)


@pytest.mark.parametrize("env", sorted(HARNESSES))
def test_environment_conforms(env):
    check_environment(HARNESSES[env])


@pytest.mark.parametrize("condition", ["cpr", "bcpr", "kcpr", "kcpr_m"])
def test_sovsim_conforms_under_every_power_condition(condition):
    check_environment(lambda seed: sovsim_trace(seed, condition=condition))


@pytest.mark.parametrize("condition", ["cpr", "kcpr_m"])
def test_a_sovsim_fork_replays_its_parents_prefix_and_keeps_privacy(condition):
    check_environment(lambda seed: sovsim_fork_trace(seed, condition=condition, at=2))


def test_the_fork_trace_catches_a_prefix_that_is_not_the_parents(monkeypatch):
    from scarce_lab.environments.sovsim import conformance

    real = conformance.SovSimLegalPolicy.action
    plays = []

    def second_game_differs(self, legal, *key):  # the fork's prefix plays another move in round 1
        plays.append(key)
        v = real(self, legal, *key)
        return legal.low if len(plays) > 20 and key[0] == 1 and v != legal.low else v

    monkeypatch.setattr(conformance.SovSimLegalPolicy, "action", second_game_differs)
    with pytest.raises(AssertionError, match="not the parent's"):
        check_privacy(lambda seed: sovsim_fork_trace(seed, condition="cpr", at=3), seed=1)


@pytest.mark.parametrize("at", [1, 4])
def test_a_scarce_fork_with_institutions_switched_on_keeps_its_prefix_and_privacy(at):
    check_environment(lambda seed: scarce_fork_trace(seed, at=at))
    outcomes = scarce_fork_trace(0, at=at).outcomes
    after = outcomes[outcomes.index(("fork", at)):]
    assert any(o[0] == "contracts" for o in after) and not any(o[0] == "contracts" for o in outcomes[:outcomes.index(
        ("fork", at))])  # the institutions play only from the fork on


def test_an_economy_fork_keeps_its_prefix_and_privacy():
    check_environment(lambda seed: economy_fork_trace(seed, at=6))


def test_the_scarce_and_economy_fork_traces_catch_a_prefix_that_is_not_the_parents(monkeypatch):
    from scarce_lab.environments.economy import conformance as eco
    from scarce_lab.environments.scarce import conformance as sc

    plays = {"scarce": 0, "economy": 0}
    real_bid, real_move = sc.ScarceLegalPolicy.declaration, eco.EconomyLegalPolicy.move

    def drifting_bid(self, legal, requested_s, *key):  # the fork's prefix bids otherwise (the parent made 39 declarations)
        d = real_bid(self, legal, requested_s, *key)
        plays["scarce"] += 1
        return d.model_copy(update={"bid_price": 0 if d.bid_price else 1}) if plays["scarce"] > 41 else d

    def drifting_move(self, legal, *key):  # the fork's prefix moves otherwise (the parent made 295 moves)
        plays["economy"] += 1
        return legal.moves[-1] if plays["economy"] > 300 else real_move(self, legal, *key)

    monkeypatch.setattr(sc.ScarceLegalPolicy, "declaration", drifting_bid)
    monkeypatch.setattr(eco.EconomyLegalPolicy, "move", drifting_move)
    with pytest.raises(AssertionError, match="not the parent's"):
        check_privacy(lambda seed: sc.scarce_fork_trace(seed, at=6), seed=1)
    with pytest.raises(AssertionError, match="not the parent's"):
        check_privacy(lambda seed: eco.economy_fork_trace(seed, at=10), seed=1)


@pytest.mark.parametrize("memory", ["none", "subrun", "cross"])
def test_scarce_privacy_under_every_memory_horizon(memory):
    check_privacy(lambda seed: scarce_trace(seed, memory=memory))


def test_the_suite_catches_a_leak_and_an_untested_canary():
    def leaky(seed):
        t = HARNESSES["scarce"](seed)
        o = t.observations[5]
        t.observations[5] = Observation(o.agent, o.text, ("w9's budget",), o.own)
        return t

    with pytest.raises(AssertionError, match="sees w9's budget"):
        check_privacy(leaky)

    def blind(seed):
        return Trace(observations=[Observation("a0", json.dumps({}), own=False)])

    with pytest.raises(AssertionError, match="never saw their own private state"):
        check_privacy(blind)


def test_a_kcpr_m_peasant_shown_the_true_pool_is_a_leak(monkeypatch):
    from scarce_lab.environments.sovsim.world import commons

    real = commons.CommonsGame.observe

    def careless(self, agent):  # a world that forgets to hide the pool
        obs = real(self, agent)
        return obs if obs.pool is not None else commons.Observation(
            **{**{f: getattr(obs, f) for f in obs.__dataclass_fields__}, "pool": self.pool})

    monkeypatch.setattr(commons.CommonsGame, "observe", careless)
    with pytest.raises(AssertionError, match="true pool"):
        check_privacy(HARNESSES["sovsim"])


def test_the_illegal_action_probe_catches_a_world_that_accepts_one(monkeypatch):
    """The traces try an action just outside the legal set at every decision: a world
    that forgets a rule fails the suite (so the legality check can fail)."""
    from scarce_lab.environments.economy.world import blocksworld
    from scarce_lab.environments.economy.world.engine import StepResult
    from scarce_lab.environments.scarce.world import Contention
    from scarce_lab.environments.sovsim.world import commons

    with monkeypatch.context() as m:  # SovSim: no cap on extractions
        m.setattr(commons.CommonsGame, "_check", lambda self, agent, value: value)
        with pytest.raises(AssertionError, match="accepted an illegal action"):
            HARNESSES["sovsim"](0)
    with monkeypatch.context() as m:  # SCARCE: any declared position
        m.setattr(Contention, "declare", lambda self, w, d: self.declarations.__setitem__(w, d))
        with pytest.raises(AssertionError, match="accepted an illegal action: a position past the queue"):
            HARNESSES["scarce"](0)
    with monkeypatch.context() as m:  # Blocks World: anything as a move
        m.setattr(blocksworld.BlocksWorld, "apply", lambda self, a: StepResult(0, False, False))
        with pytest.raises(AssertionError, match="accepted an illegal action"):
            HARNESSES["economy"](0)
    for env in sorted(HARNESSES):  # and the real worlds refuse every probe they are shown
        refusals = [o for o in HARNESSES[env](0).outcomes if o and o[0] == "refused"]
        assert len(refusals) > 10, env
