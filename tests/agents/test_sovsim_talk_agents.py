"""SovSim agents in the discussion: the talk schema, prompts that show only what the
world lets the agent see, a model's recipients turned into agent ids, the fallback to
silence, and the scripted talkers."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from scarce_lab.environments.sovsim.agents.agent import make_agent
from scarce_lab.environments.sovsim.agents.prompts import render_messages, render_talk_messages
from scarce_lab.environments.sovsim.agents.schemas import talk_schema
from scarce_lab.environments.sovsim.agents.scripted import get_policy, talk_policy
from scarce_lab.environments.sovsim.world.commons import CommonsGame, Phase
from scarce_lab.environments.sovsim.world.talk import TalkMode, TalkRules, Utterance
from scarce_lab.llm.decisions import validate_decision


def _game(condition="kcpr_m", mode=TalkMode.public_private, **kw):
    g = CommonsGame(condition, talk=TalkRules(mode, **kw))
    if g.phase == Phase.announce:
        g.act({"a3": 90})
    return g


def test_talk_schema_bounds_length_and_names_recipients():
    s = talk_schema(20, ("peasant B", "king D"))
    ok, err = validate_decision({"message": "hi", "to": ["king D"]}, s)
    assert ok is not None and err is None
    assert validate_decision({"message": "x" * 21, "to": []}, s)[0] is None
    assert validate_decision({"message": "hi", "to": ["peasant A"]}, s)[0] is None  # not a recipient
    assert set(talk_schema(20).model_fields) == {"message"}  # public talk: no recipients


def test_prompts_show_only_visible_talk_and_the_leader_sees_the_others_first():
    g = _game()
    g.speak("a0", Utterance("SECRET-for-king", ("a3",)))
    g.speak("a1", Utterance("hello all"))
    a2 = render_talk_messages(g.observe_talk("a2"))
    text2 = "\n".join(m["content"] for m in a2)
    assert "SECRET" not in text2 and 'peasant B (to everyone, round 1): "hello all"' in text2
    assert "90" in text2 and "120" not in text2.split("Round 1 of")[1]  # a peasant sees the announcement only
    assert "Before the extractions of each round there is a discussion" in a2[0]["content"]
    assert '"to": [<names>]' in a2[1]["content"] and "king D" in a2[1]["content"]
    g.speak("a2", Utterance())
    king = "\n".join(m["content"] for m in render_talk_messages(g.observe_talk("a3")))
    assert 'peasant A (privately to you, round 1): "SECRET-for-king"' in king and "hello all" in king
    g.speak("a3", Utterance("taking 30"))
    ext0 = render_messages(g.observe("a0"))[1]["content"]
    assert "Messages you have seen this round" in ext0 and "you (privately to king D, round 1)" in ext0
    ext1 = render_messages(g.observe("a1"))[1]["content"]
    assert "SECRET" not in ext1 and 'king D (to everyone, round 1): "taking 30' in ext1


def _llm_agent(answer: str):
    from scarce_lab.environments.sovsim.agents.agent import LLMAgent
    from scarce_lab.llm import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(cache=False, max_retries=0))
    return LLMAgent("openai/gpt-4o-mini", client, litellm_kwargs={"mock_response": answer})


def test_a_model_names_recipients_and_gets_agent_ids():
    g = _game()
    d = asyncio.run(_llm_agent(json.dumps({"message": "deal?", "to": ["king D", "peasant C"]})).atalk(
        g.observe_talk("a0"), seed=1))
    assert d.value == Utterance("deal?", ("a3", "a2")) and d.valid and not d.fallback_used
    assert d.calls and d.calls[0].purpose == "talk"


def test_an_unusable_talk_answer_falls_back_to_silence():
    g = _game(max_chars=10)
    d = asyncio.run(_llm_agent(json.dumps({"message": "far too long a message", "to": []})).atalk(
        g.observe_talk("a0"), seed=1))
    assert d.value == Utterance() and d.fallback_used and not d.valid and d.violation


def test_scripted_talkers_and_silent_policies():
    g = _game(condition="bcpr")
    obs = g.observe_talk("a0")
    u = talk_policy(get_policy("promise_defector"))(obs, random.Random(0))
    assert u.text.startswith("[promise extraction=15]") and u.to == ("a1",)  # private under public+private
    q = talk_policy(get_policy("quota_keeper"))(obs, random.Random(0))
    assert q.text.startswith("[quota per_agent=15]") and q.to == ()
    assert talk_policy(get_policy("greedy")) is None
    silent = asyncio.run(make_agent("scripted/greedy").atalk(obs, seed=0))
    assert silent.value == Utterance() and "silent" in silent.reasoning
    pub = _game(condition="cpr", mode=TalkMode.public).observe_talk("a0")
    assert talk_policy(get_policy("promise_defector"))(pub, random.Random(0)).to == ()


@pytest.mark.parametrize("policy", ["promise_defector", "quota_keeper"])
def test_scripted_talkers_extract_as_documented(policy):
    g = _game(condition="cpr", mode=TalkMode.public)
    while g.phase == Phase.talk:
        g.speak(g.acting_agents()[0], Utterance())
    obs = g.observe("a0")
    z = get_policy(policy)(obs, random.Random(0))
    assert z == (30 if policy == "promise_defector" else 15)
