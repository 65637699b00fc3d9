"""SovSim institutions (world/institutions.py and their hooks in world/commons.py): peer
sanctions' accounting, the quota binding the legal actions, elections moving the leader
role and its powers, hostile values refused, and all-off being the paper's game."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.environments.sovsim.world.commons import (
    INSTITUTION_PHASES,
    CommonsGame,
    InvalidActionError,
    Phase,
)
from scarce_lab.environments.sovsim.world.institutions import (
    InstitutionRules,
    InvalidInstitutionError,
    lower_median,
)

AGENTS = ("a0", "a1", "a2", "a3")


def _play_to(game: CommonsGame, phase: Phase, value: int = 6) -> None:
    """Act with ``value`` everywhere (no punishment, ballots for the incumbent) until ``phase``."""
    while game.phase != phase and not game.over:
        if game.phase in INSTITUTION_PHASES:
            game.institute({a: game.institution_legal(a).fallback for a in game.acting_agents()})
        else:
            game.act({a: game.legal_actions(a).clamp(value) for a in game.acting_agents()})


def test_all_off_is_the_paper_game_move_for_move():
    for cond in ("cpr", "bcpr", "kcpr", "kcpr_m"):
        plain, off = CommonsGame(cond), CommonsGame(cond, institutions=InstitutionRules())
        rng = random.Random(11)
        while not plain.over:
            assert plain.phase == off.phase and plain.phase not in INSTITUTION_PHASES
            acts = {a: rng.choice(plain.legal_actions(a).values()) for a in plain.acting_agents()}
            assert plain.observe(plain.acting_agents()[0]) == off.observe(off.acting_agents()[0])
            assert plain.act(acts) == off.act(acts)
        assert plain.history == off.history and plain.total_payoffs() == off.total_payoffs()
        assert off.sanctions == off.quotas == off.elections == ()


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(1, 5), st.integers(1, 10))
def test_sanctions_conserve_the_stated_accounting(data, cost, impact, max_points):
    rules = InstitutionRules(sanctions=True, sanction_cost=cost, sanction_impact=impact, sanction_max_points=max_points)
    game = CommonsGame("bcpr", institutions=rules)
    game.act({a: data.draw(st.sampled_from(game.legal_actions(a).values())) for a in game.acting_agents()})
    game.act({"a3": data.draw(st.sampled_from(game.legal_actions("a3").values()))})
    assert game.phase == Phase.sanction
    points = {}
    for a in AGENTS:
        legal = game.institution_legal(a)
        left = legal.max_total
        mine = {}
        for t in legal.targets:
            p = data.draw(st.integers(0, min(max_points, left)))
            left -= p
            mine[t] = p
        assert legal.why_not(mine) is None
        points[a] = mine
    gross = dict(zip(game.history[-1].agents, game.history[-1].payoffs, strict=True))
    rec = game.institute(points)
    total = sum(sum(m.values()) for m in points.values())
    assert sum(rec.net) == -(cost + impact) * total
    for i, a in enumerate(rec.agents):
        sent, got = sum(points[a].values()), sum(points[b].get(a, 0) for b in AGENTS)
        assert rec.net[i] == -(cost * sent + impact * got)
        assert rec.spent[i] == cost * sent <= gross[a]  # never more than the round's payoff
        assert game.total_payoffs()[a] == gross[a] + rec.net[i]


def test_sanction_budget_is_the_round_payoff_and_hostile_points_are_refused():
    game = CommonsGame("cpr", institutions=InstitutionRules(sanctions=True, sanction_cost=2))
    game.act({"a0": 0, "a1": 0, "a2": 0, "a3": 30})
    legal = game.institution_legal("a0")  # a0 earned (120 - 30) / 4 = 22.5 points: 11 points at cost 2
    assert legal.budget == Fraction(45, 2) and legal.max_total == 11
    hostile = [({"a0": 1}, "other agents"), ({"a1": 11}, "0..10"), ({"a1": True}, "0..10"),
               ({"a1": -1}, "0..10"), ({"a1": 2.0}, "0..10"), ({"a1": 6, "a2": 6}, "round payoff"),
               ([("a1", 1)], "dict"), ({"a9": 1}, "other agents")]
    for value, why in hostile:
        msg = legal.why_not(value)
        assert msg is not None and why in msg and "a0" in msg, (value, msg)
        with pytest.raises(InvalidInstitutionError, match="a0"):
            game.institute({"a0": value, "a1": {}, "a2": {}, "a3": {}})
    assert game.phase == Phase.sanction and game.sanctions == ()  # nothing applied


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=4, max_size=4), st.sampled_from(["all", "leader"]),
       st.sampled_from(["bcpr", "kcpr"]))
def test_the_voted_quota_binds_the_legal_actions(props, scope, cond):
    game = CommonsGame(cond, institutions=InstitutionRules(quota=scope))
    assert game.phase == Phase.quota
    proposals = dict(zip(AGENTS, (3 * p for p in props), strict=True))
    rec = game.institute(proposals)
    q = sorted(proposals.values())[1]  # the lower median of four
    assert rec.quota == q == lower_median(list(proposals.values()))
    for a in game.subordinates:
        high = game.legal_actions(a).high
        assert high == (min(30, q) if scope == "all" else 30)
        if high < 30:
            with pytest.raises(InvalidActionError, match=a):
                game.act({b: (high + 3 if b == a else 0) for b in game.subordinates})
    game.act(dict.fromkeys(game.subordinates, 0))
    leader_cap = 30 if cond == "bcpr" else 120
    assert game.legal_actions("a3").high == min(leader_cap, q)


def test_quota_lasts_one_round_and_talk_comes_before_the_vote():
    from scarce_lab.environments.sovsim.world.talk import TalkMode, TalkRules, Utterance

    game = CommonsGame("kcpr_m", talk=TalkRules(TalkMode.public), institutions=InstitutionRules(quota="all"))
    assert game.phase == Phase.announce
    game.act({"a3": 100})
    for a in AGENTS:
        assert game.phase == Phase.talk
        game.speak(a, Utterance("cap 9"))
    assert game.phase == Phase.quota
    obs = game.observe_institution("a0")
    assert obs.pool is None and obs.announced_pool == 100 and len(obs.talk) == 4  # the truth stays hidden
    game.institute(dict.fromkeys(AGENTS, 9))
    assert game.observe("a1").legal.high == 9 and game.observe("a1").quota == 9
    game.act(dict.fromkeys(game.subordinates, 9))
    game.act({"a3": 9})
    assert game.phase == Phase.announce and game._quota is None


def test_an_election_moves_the_leader_role_and_its_powers():
    game = CommonsGame("kcpr_m", institutions=InstitutionRules(elections=1))
    _play_to(game, Phase.elect)
    assert game.round == 2 and game.acting_agents() == AGENTS
    rec = game.institute({"a0": "a1", "a1": "a1", "a2": "a3", "a3": "a3"})  # a tie: the incumbent stays
    assert rec.elected == "a3" and not rec.moved and game.leader == "a3"
    _play_to(game, Phase.elect)
    rec = game.institute({"a0": "a1", "a1": "a1", "a2": "a1", "a3": "a3"})
    assert rec.moved and game.leader == "a1" and game.agents == ("a0", "a3", "a2", "a1")
    assert game.roles["a1"] == "king" and game.roles["a3"] == "peasant"
    assert game.acting_agents() == ("a1",) and game.phase == Phase.announce  # the new king announces
    game.act({"a1": 50})
    assert game.observe("a3").pool is None and game.observe("a3").announced_pool == 50  # the old king is blind
    assert game.legal_actions("a3").high == 30
    game.act({"a0": 0, "a3": 0, "a2": 0})
    assert game.observe("a1").is_leader and game.legal_actions("a1").high == game.pool  # the whole remainder
    rec = game.act({"a1": 3})
    assert rec.agents[-1] == "a1"


def test_an_election_tie_without_the_incumbent_goes_to_the_lowest_id():
    game = CommonsGame("bcpr", institutions=InstitutionRules(elections=2))
    _play_to(game, Phase.elect)
    assert game.round == 3  # rounds 1 + 2k
    rec = game.institute({"a0": "a2", "a1": "a2", "a2": "a1", "a3": "a1"})
    assert rec.tally == (("a1", 2), ("a2", 2)) and rec.elected == "a1"


def test_hostile_ballots_and_proposals_are_refused_with_the_agent_named():
    game = CommonsGame("bcpr", institutions=InstitutionRules(elections=1, quota="leader"))
    _play_to(game, Phase.elect)
    for bad in ("a9", "", 3, None, True, ["a1"]):
        with pytest.raises(InvalidInstitutionError, match="ballot of a2"):
            game.institute({"a0": "a0", "a1": "a1", "a2": bad, "a3": "a3"})
    with pytest.raises(InvalidInstitutionError, match="needs decisions"):
        game.institute({"a0": "a0"})
    with pytest.raises(RuntimeError, match="institute"):
        game.act({"a0": 3})
    game.institute(dict.fromkeys(AGENTS, "a3"))
    for bad in (4, -3, 123, "9", 9.0, True):
        with pytest.raises(InvalidInstitutionError, match="quota proposal of a1"):
            game.institute({"a0": 9, "a1": bad, "a2": 9, "a3": 9})
    with pytest.raises(ValueError, match="observe_institution"):
        game.legal_actions("a0")


def test_rules_refuse_what_the_condition_cannot_play():
    with pytest.raises(ValueError, match="elections=2 in cpr"):
        CommonsGame("cpr", institutions=InstitutionRules(elections=2))
    with pytest.raises(ValueError, match="quota='leader' in cpr"):
        CommonsGame("cpr", institutions=InstitutionRules(quota="leader"))
    for bad in ({"sanction_cost": 0}, {"sanction_impact": True}, {"quota": "most"}, {"elections": -1},
                {"sanctions": "yes"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            InstitutionRules(**bad)


def test_sanctions_follow_the_last_round_and_a_collapse():
    game = CommonsGame("cpr", institutions=InstitutionRules(sanctions=True))
    game.act(dict.fromkeys(AGENTS, 30))  # 120 taken: collapse
    assert not game.over and game.phase == Phase.sanction
    game.institute({"a0": {"a1": 1}, "a1": {}, "a2": {}, "a3": {}})
    assert game.over and game.total_payoffs()["a1"] == 10 - 3 and game.total_payoffs()["a0"] == 10 - 1


@pytest.mark.parametrize("condition", ["cpr", "bcpr", "kcpr", "kcpr_m"])
def test_sovsim_with_every_institution_conforms(condition):
    from scarce_lab.environments.sovsim.conformance import sovsim_trace
    from scarce_lab.testing import check_environment

    check_environment(lambda seed: sovsim_trace(seed, condition=condition, institutions=True))
    trace = sovsim_trace(1, condition=condition, institutions=True)
    refusals = [x for x in trace.outcomes if x[0] == "refused" and "InvalidInstitutionError" in x[3]]
    assert len(refusals) >= 8  # the quota vote and the sanctions of round 1 at least, four agents each


def test_the_extraction_prompt_says_whom_the_quota_binds_and_counts_punishment():
    from scarce_lab.environments.sovsim.agents.prompts import render_messages

    game = CommonsGame("kcpr", institutions=InstitutionRules(quota="leader", sanctions=True))
    game.institute(dict.fromkeys(AGENTS, 21))
    text = render_messages(game.observe("a0"))[1]["content"]
    assert "cap of 21 units on king D's extraction" in text and "each participant" not in text
    game.act(dict.fromkeys(game.subordinates, 30))
    game.act({"a3": 0})  # 120 - 90 = 30 remain: a0 earns 10 + 7.5
    game.institute({"a0": {}, "a1": {"a0": 2}, "a2": {}, "a3": {}})
    game.institute(dict.fromkeys(AGENTS, 120))
    text = render_messages(game.observe("a0"))[1]["content"]
    assert "Your points so far: 11.5." in text  # 17.5 - 3 x 2 points received
    assert "peasant A received 2 and spent 0" in text and "peasant B received 0 and spent 2" in text
