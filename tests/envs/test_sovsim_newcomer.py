"""The SovSim world with a newcomer: who plays each round, which n the payoff divides
by, the leader's position, what the newcomer sees, and conformance with mixed seats."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scarce_lab.environments.sovsim.conformance import sovsim_mixed_trace
from scarce_lab.environments.sovsim.world.commons import CommonsConfig, CommonsGame, NewcomerRule
from scarce_lab.testing import check_environment


def _play(game: CommonsGame, value: int = 6):
    while not game.over:
        game.act(dict.fromkeys(game.acting_agents(), value))


def test_extra_newcomer_plays_from_its_round_and_the_share_divides_by_the_agents_present():
    game = CommonsGame("kcpr", CommonsConfig(rounds=4), newcomer=NewcomerRule(round=3))
    _play(game)
    assert [r.agents for r in game.history] == [("a0", "a1", "a2", "a3")] * 2 + [("a0", "a1", "a2", "a4", "a3")] * 2
    r3 = game.history[2]
    assert r3.remaining == r3.pool_before - 5 * 6
    assert r3.payoffs[0] == Fraction(6, 3) + Fraction(r3.remaining, 5)  # n = 5 from the join
    r2 = game.history[1]
    assert r2.payoffs[0] == Fraction(6, 3) + Fraction(r2.remaining, 4)
    assert game.leader == "a3" and game.roles["a4"] == "peasant"
    totals = game.total_payoffs()
    assert set(totals) == {"a0", "a1", "a2", "a3", "a4"}
    assert totals["a4"] == r3.payoffs[3] + game.history[3].payoffs[3]


def test_replace_takes_the_seat_and_the_replaced_agent_plays_no_more():
    game = CommonsGame("bcpr", CommonsConfig(rounds=3), newcomer=NewcomerRule(round=2, mode="replace", replaces="a1"))
    _play(game)
    assert game.history[0].agents == ("a0", "a1", "a2", "a3")
    assert game.history[1].agents == ("a0", "a4", "a2", "a3")
    assert [(c.kind, c.agent, c.round, c.other) for c in game.changes] == [
        ("joined", "a4", 2, "a1"), ("left", "a1", 2, "a4")]


def test_replacing_the_leader_makes_the_newcomer_leader():
    game = CommonsGame("kcpr", CommonsConfig(rounds=3), newcomer=NewcomerRule(round=2, mode="replace", replaces="a3"))
    _play(game)
    assert game.leader == "a4" and game.history[-1].agents[-1] == "a4" and game.roles["a4"] == "king"


def test_leader_newcomer_setting_demotes_the_incumbent():
    game = CommonsGame("kcpr_m", CommonsConfig(rounds=3), newcomer=NewcomerRule(round=2, leader="newcomer"))
    _play(game, 0)
    assert game.leader == "a4" and game.roles["a3"] == "peasant"
    assert game.history[-1].agents == ("a0", "a1", "a2", "a3", "a4")


def test_the_newcomer_sees_no_round_before_its_join_and_incumbents_see_all():
    game = CommonsGame("cpr", CommonsConfig(rounds=4), newcomer=NewcomerRule(round=3))
    while game.round < 4:
        game.act(dict.fromkeys(game.acting_agents(), 3))
    assert [r.round for r in game.observe("a4").history] == [3]
    assert [r.round for r in game.observe("a0").history] == [1, 2, 3]
    assert [c.agent for c in game.observe("a0").changes] == ["a4"]


@pytest.mark.parametrize("bad, match", [
    ({"round": 13}, "after the game's last round"),
    ({"round": 2, "mode": "replace", "replaces": "a9"}, "no agent 'a9'"),
])
def test_a_rule_the_game_cannot_play_is_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        CommonsGame("kcpr", newcomer=NewcomerRule(**bad))


def test_leader_newcomer_refused_in_cpr_and_replaces_needs_replace_mode():
    with pytest.raises(ValueError, match="cpr"):
        CommonsGame("cpr", newcomer=NewcomerRule(round=2, leader="newcomer"))
    with pytest.raises(ValueError, match="replace mode"):
        NewcomerRule(round=2, mode="replace")
    with pytest.raises(ValueError, match="extra mode"):
        NewcomerRule(round=2, replaces="a0")


@pytest.mark.parametrize("condition", ["cpr", "bcpr", "kcpr", "kcpr_m"])
@pytest.mark.parametrize("mode", ["extra", "replace"])
def test_mixed_seats_with_a_newcomer_conform(condition, mode):
    check_environment(lambda seed: sovsim_mixed_trace(seed, condition=condition, mode=mode))


def test_the_mixed_privacy_check_can_fail(monkeypatch):
    """A prompt that named another seat's model would be caught (the canary is found)."""
    from scarce_lab.environments.sovsim.agents import prompts

    real = prompts.render_messages

    def leaky(obs, role_labels="default"):
        msgs = real(obs, role_labels)
        msgs[0]["content"] += " The king is openai/canary-seat-3."
        return msgs

    monkeypatch.setattr(prompts, "render_messages", leaky)  # the conformance play renders through prompts
    trace = sovsim_mixed_trace(0, condition="kcpr")
    assert any("the model of a3" in o.leaks for o in trace.observations if o.agent != "a3")
