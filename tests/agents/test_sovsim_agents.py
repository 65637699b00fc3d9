"""SovSim agents: scripted policies, decision schemas, prompts, LLM agent via mock_response."""

import asyncio
import random

import pytest
from pydantic import ValidationError

from scarce_lab.environments.sovsim.agents.agent import LLMAgent, make_agent
from scarce_lab.environments.sovsim.agents.prompts import agent_names, render_messages
from scarce_lab.environments.sovsim.agents.schemas import AnnouncementDecision, extraction_schema
from scarce_lab.environments.sovsim.agents.scripted import get_policy, sustainable_share
from scarce_lab.environments.sovsim.world.commons import CommonsGame


def obs_for(cond="cpr", agent="a0", before=None):
    g = CommonsGame(cond)
    if before:
        before(g)
    return g.observe(agent)


def test_sustainable_share_is_p_over_8_floored_to_3():
    assert [sustainable_share(p) for p in (120, 96, 78, 60, 24, 11)] == [15, 12, 9, 6, 3, 0]


def test_scripted_policies_values():
    rng = random.Random(0)
    o = obs_for()
    assert get_policy("sustainable")(o, rng) == 15
    assert get_policy("greedy")(o, rng) == 30
    assert get_policy("fixed", "14")(o, rng) == 12  # floored to a multiple of 3
    assert get_policy("fixed", "99")(o, rng) == 30  # capped
    assert get_policy("fixed")(o, rng) == 15
    r = get_policy("random")(o, rng)
    assert 0 <= r <= 30 and r % 3 == 0


def test_greedy_leader_and_announcements():
    rng = random.Random(0)
    ann = obs_for("kcpr_m", "a3")
    assert get_policy("greedy_leader")(ann, rng) == 60  # understates by half
    assert get_policy("sustainable")(ann, rng) == 120  # honest

    def subs(g):
        g.act({"a0": 15, "a1": 15, "a2": 15})

    lead = obs_for("kcpr", "a3", subs)
    assert get_policy("greedy_leader")(lead, rng) == 75
    assert get_policy("greedy_leader")(obs_for("kcpr", "a0"), rng) == 15


def test_conditional_cooperator_matches_defectors():
    g = CommonsGame("cpr")
    g.act({"a0": 15, "a1": 15, "a2": 15, "a3": 15})  # everyone cooperated
    pol = get_policy("conditional")
    assert pol(g.observe("a0"), random.Random(0)) == 15
    g.act({"a0": 15, "a1": 30, "a2": 30, "a3": 30})  # others took 30 (> 15)
    assert pol(g.observe("a0"), random.Random(0)) == 30


def test_unknown_policy_and_bad_argument():
    with pytest.raises(ValueError, match="unknown scripted policy 'nope'"):
        make_agent("scripted/nope")
    with pytest.raises(ValueError, match="integer"):
        make_agent("scripted/fixed:abc")
    with pytest.raises(ValueError, match="LLMClient"):
        make_agent("openai/gpt-4o-mini")


def test_extraction_schema_is_enum_of_multiples_of_3():
    s = extraction_schema(75)
    js = s.model_json_schema()
    assert js["properties"]["extraction"]["enum"] == list(range(0, 76, 3))
    assert list(js["properties"])[0] == "reasoning"
    assert s.model_validate({"reasoning": "x", "extraction": 75}).extraction == 75
    with pytest.raises(ValidationError):
        s.model_validate({"reasoning": "x", "extraction": 76})
    with pytest.raises(ValueError):
        extraction_schema(31)


def test_announcement_schema_bounds():
    assert AnnouncementDecision(reasoning="", announced_pool=999).announced_pool == 999
    with pytest.raises(ValidationError):
        AnnouncementDecision(reasoning="", announced_pool=1000)


def test_role_labels():
    names, sub, lead = agent_names("kcpr", 4)
    assert names == ["peasant A", "peasant B", "peasant C", "king D"]
    names, _, _ = agent_names("bcpr", 4, "neutral")
    assert names == ["agent A", "agent B", "agent C", "agent D"]
    text = render_messages(obs_for("bcpr"), "neutral")[0]["content"]
    assert "boss" not in text and "worker" not in text and "agent D" in text
    with pytest.raises(ValueError, match="role_labels"):
        agent_names("cpr", 4, "royal")


def test_prompt_shows_last_three_rounds_and_summary():
    g = CommonsGame("cpr")
    for _ in range(5):
        g.act({a: 15 for a in g.agents})
    user = render_messages(g.observe("a0"))[1]["content"]
    assert "Summary of rounds 1-2" in user
    assert "Round 3:" in user and "Round 5:" in user and "Round 2:" not in user
    assert "Your points so far: 100" in user


@pytest.fixture(scope="module")
def client():
    llm = pytest.importorskip("scarce_lab.llm")
    return llm.LLMClient(llm.LLMSettings(cache=False, max_retries=0))


def _decide(client, mock, obs):
    agent = LLMAgent("openai/gpt-4o-mini", client, litellm_kwargs={"mock_response": mock})
    return asyncio.run(agent.adecide(obs, seed=7))


def test_llm_agent_valid_answer(client):
    d = _decide(client, '{"reasoning": "keep it", "extraction": 12}', obs_for())
    assert (d.value, d.valid, d.fallback_used, d.reasoning) == (12, True, False, "keep it")
    assert len(d.calls) == 1 and d.calls[0].purpose == "extraction"


def test_llm_agent_out_of_range_falls_back_to_sustainable_share(client):
    d = _decide(client, '{"reasoning": "all", "extraction": 33}', obs_for())
    assert d.value == 15 and d.fallback_used and not d.valid
    assert "extraction" in d.violation and len(d.calls) == 2  # first try + one repair


def test_llm_agent_malformed_announcement_falls_back_to_truth(client):
    d = _decide(client, "the pool is big", obs_for("kcpr_m", "a3"))
    assert d.value == 120 and d.fallback_used and d.violation
    d = _decide(client, '{"reasoning": "lie", "announced_pool": 5000}', obs_for("kcpr_m", "a3"))
    assert d.value == 120 and d.fallback_used and "announced_pool" in d.violation
