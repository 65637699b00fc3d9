"""SovSim rules on hand-computed games; turn order and information per condition."""

from fractions import Fraction

import pytest

from scarce_lab.environments.sovsim.agents.prompts import render_messages
from scarce_lab.environments.sovsim.world.commons import (
    CommonsConfig,
    CommonsGame,
    InvalidActionError,
    Phase,
)


def play_round(game: CommonsGame, subs: list[int], leader: int | None = None, announce: int | None = None):
    if game.phase == Phase.announce:
        game.act({game.leader: announce})
    rec = game.act(dict(zip(game.subordinates, subs, strict=True)))
    if rec is None:
        rec = game.act({game.leader: leader})
    return rec


def test_everyone_takes_15_survives_12_rounds():
    g = CommonsGame("cpr")
    for _ in range(12):
        rec = play_round(g, [15, 15, 15, 15])
        # 120 - 60 = 60 remain; payoff 15/3 + 60/4 = 20; next pool min(120, 120) = 120
        assert (rec.pool_before, rec.remaining, rec.next_pool, rec.collapsed) == (120, 60, 120, False)
        assert rec.payoffs == (Fraction(20),) * 4
    assert g.over and len(g.history) == 12
    assert g.total_payoffs() == {a: Fraction(240) for a in g.agents}


def test_everyone_takes_30_collapses_in_round_1():
    g = CommonsGame("cpr")
    rec = play_round(g, [30, 30, 30, 30])
    # 120 - 120 = 0 < 12: collapse; payoff 30/3 + 0 = 10 each, paid
    assert (rec.remaining, rec.collapsed, rec.next_pool) == (0, True, 0)
    assert rec.payoffs == (Fraction(10),) * 4
    assert g.over and g.phase == Phase.done
    with pytest.raises(RuntimeError):
        g.act({"a0": 0})


def test_three_rounds_of_18_then_collapse():
    g = CommonsGame("cpr")
    r1 = play_round(g, [18] * 4)  # 120-72=48 -> payoff 6+12=18, next 96
    r2 = play_round(g, [18] * 4)  # 96-72=24 -> payoff 6+6=12, next 48
    r3 = play_round(g, [18] * 4)  # 48-72 -> 0, collapse, payoff 6
    assert [r.pool_before for r in (r1, r2, r3)] == [120, 96, 48]
    assert [r.payoffs[0] for r in (r1, r2, r3)] == [18, 12, 6]
    assert r3.collapsed and g.over


def test_payoffs_are_exact_fractions():
    g = CommonsGame("cpr")
    rec = play_round(g, [3, 0, 0, 0])  # remaining 117: 1 + 117/4 = 121/4
    assert rec.payoffs[0] == Fraction(121, 4) and rec.payoffs[1] == Fraction(117, 4)


def test_king_takes_whole_remainder():
    g = CommonsGame("kcpr")
    assert g.acting_agents() == ("a0", "a1", "a2")
    g.act({"a0": 15, "a1": 15, "a2": 15})
    obs = g.observe("a3")
    assert (obs.phase, obs.remainder, obs.max_extraction, obs.subordinate_extractions) == (
        Phase.leader, 75, 75, (15, 15, 15))
    rec = g.act({"a3": 75})
    # remaining 0 -> collapse; peasants 5, king 25
    assert rec.collapsed and rec.payoffs == (5, 5, 5, 25) and rec.remainder_seen == 75


def test_boss_cap_is_min_30_and_remainder():
    g = CommonsGame("bcpr")
    play_round(g, [21, 21, 21], leader=0)  # 120-63=57 -> next 114
    assert g.pool == 114
    g.act({"a0": 30, "a1": 30, "a2": 30})
    obs = g.observe("a3")
    assert obs.remainder == 24 and obs.max_extraction == 24
    with pytest.raises(InvalidActionError, match="a3"):
        g.act({"a3": 27})
    g2 = CommonsGame("bcpr")
    g2.act({"a0": 0, "a1": 0, "a2": 0})
    assert g2.observe("a3").max_extraction == 30  # never above 30 for a boss


@pytest.mark.parametrize("bad", [31, 16, -3, 15.0, True])
def test_invalid_extraction_names_agent_and_value(bad):
    g = CommonsGame("cpr")
    with pytest.raises(InvalidActionError, match=r"a1.*" + str(bad).replace(".", r"\.")):
        g.act({"a0": 0, "a1": bad, "a2": 0, "a3": 0})


def test_missing_agent_rejected_and_bad_condition():
    g = CommonsGame("bcpr")
    with pytest.raises(InvalidActionError, match="a2"):
        g.act({"a0": 0, "a1": 0})
    with pytest.raises(ValueError, match="condition"):
        CommonsGame("anarchy")


def test_turn_order_per_condition():
    assert CommonsGame("cpr").acting_agents() == ("a0", "a1", "a2", "a3")
    for cond in ("bcpr", "kcpr"):
        g = CommonsGame(cond)
        assert g.phase == Phase.extract and g.acting_agents() == ("a0", "a1", "a2")
        g.act({"a0": 3, "a1": 3, "a2": 3})
        assert g.phase == Phase.leader and g.acting_agents() == ("a3",)
        with pytest.raises(ValueError):
            g.observe("a0")
    g = CommonsGame("kcpr_m")
    assert g.phase == Phase.announce and g.acting_agents() == ("a3",)
    g.act({"a3": 500})
    assert g.acting_agents() == ("a0", "a1", "a2")


def test_cpr_citizens_see_pool_and_not_each_other():
    g = CommonsGame("cpr")
    obs = g.observe("a2")
    assert obs.pool == 120 and obs.subordinate_extractions is None and obs.max_extraction == 30
    assert obs.role == "citizen" and not obs.is_leader


def test_kcpr_m_peasants_never_see_true_pool_before_reveal():
    g = CommonsGame("kcpr_m")
    rec = play_round(g, [27, 27, 27], leader=0, announce=120)  # remaining 39 -> next 78
    assert rec.next_pool == 78 and g.pool == 78
    g.act({"a3": 555})  # false announcement
    for a in ("a0", "a1", "a2"):
        obs = g.observe(a)
        assert obs.pool is None and obs.announced_pool == 555 and obs.pool_may_be_false
        text = "\n".join(m["content"] for m in render_messages(obs))
        assert "78" not in text  # the true pool of round 2
        assert "555" in text and "may be false" in text
        assert "pool 120 (announced: 120)" in text  # round 1 is revealed in the history
    g.act({"a0": 3, "a1": 3, "a2": 3})
    king = g.observe("a3")
    assert king.pool == 78 and king.remainder == 69
    assert "78" in "\n".join(m["content"] for m in render_messages(king))
    rec2 = g.act({"a3": 0})
    assert rec2.pool_before == 78 and rec2.announced_pool == 555


def test_king_knows_pool_when_announcing():
    g = CommonsGame("kcpr_m")
    obs = g.observe("a3")
    assert obs.phase == Phase.announce and obs.pool == 120 and obs.max_extraction == 999


def test_config_validation_names_field():
    with pytest.raises(ValueError, match="initial_pool"):
        CommonsConfig(initial_pool=200)
    with pytest.raises(ValueError, match="n_agents"):
        CommonsConfig(n_agents=1)
