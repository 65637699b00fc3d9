"""The SovSim discussion phase (envs/sovsim_talk.py and its hooks in envs/sovsim.py):
order, visibility, the rules of a message, and talk=none being the paper's game."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from scarce_lab.environments.sovsim.world.commons import CommonsGame, Phase
from scarce_lab.environments.sovsim.world.talk import (
    InvalidTalkError,
    TalkMode,
    TalkRules,
    Utterance,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PUBLIC = TalkRules(TalkMode.public)
PRIVATE = TalkRules(TalkMode.public_private, turns=2, max_chars=40)


def _extract_all(game: CommonsGame) -> None:
    while game.phase in (Phase.extract, Phase.leader):
        game.act({a: 3 for a in game.acting_agents()})


def test_talk_none_has_no_talk_phase_and_plays_the_same_game():
    plain, off = CommonsGame("kcpr_m"), CommonsGame("kcpr_m", talk=TalkRules(TalkMode.none))
    rng_a, rng_b = random.Random(3), random.Random(3)
    while not plain.over:
        assert plain.phase == off.phase != Phase.talk
        assert plain.acting_agents() == off.acting_agents()
        acts = {a: rng_a.choice(plain.legal_actions(a).values()) for a in plain.acting_agents()}
        assert acts == {a: rng_b.choice(off.legal_actions(a).values()) for a in off.acting_agents()}
        assert plain.act(acts) == off.act(acts)
    assert plain.history == off.history and off.transcript == ()


def test_golden_events_of_this_version_equal_the_previous_versions_byte_for_byte():
    """The version that added talk, seats, newcomers, institutions and interviews
    changed no event, no call record and no manifest of a run with them off: the
    manifests differ only in the version and the volatile times."""
    for env in ("sovsim", "scarce", "economy"):
        (old,) = (GOLDEN / "v4" / env).iterdir()
        (new,) = (GOLDEN / "v5" / env).iterdir()
        assert old.name == new.name
        for f in ("events.jsonl", "llm_calls.jsonl"):
            assert (old / f).read_bytes() == (new / f).read_bytes(), (env, f)
        mo, mn = (json.loads((d / "manifest.json").read_text()) for d in (old, new))
        assert (mo["schema_version"], mn["schema_version"]) == (4, 5)
        for m in (mo, mn):
            for k in ("schema_version", "started_at", "ended_at"):
                m.pop(k)
        assert mn == mo, env


def test_discussion_comes_after_the_announcement_and_the_leader_speaks_last():
    g = CommonsGame("kcpr_m", talk=PUBLIC)
    assert g.phase == Phase.announce
    g.act({"a3": 60})
    order = []
    while g.phase == Phase.talk:
        (a,) = g.acting_agents()
        obs = g.observe_talk(a)
        order.append(a)
        if a != "a3":
            assert obs.pool is None and obs.announced_pool == 60 and obs.pool_may_be_false
        else:  # the king sees every subordinate's message before speaking
            assert obs.pool == 120 and [m.speaker for m in obs.messages] == ["a0", "a1", "a2"]
        g.speak(a, Utterance(f"hello from {a}"))
    assert order == ["a0", "a1", "a2", "a3"] and g.phase == Phase.extract
    assert [m.text for m in g.observe("a0").talk] == [f"hello from a{i}" for i in range(4)]
    with pytest.raises(ValueError, match="talk phase"):
        CommonsGame("cpr", talk=PUBLIC).legal_actions("a0")


def test_cpr_speakers_take_seat_order_and_each_turn_repeats():
    g = CommonsGame("cpr", talk=TalkRules(TalkMode.public, turns=2))
    order = []
    while g.phase == Phase.talk:
        (a,) = g.acting_agents()
        order.append((g.observe_talk(a).turn, a))
        g.speak(a, Utterance())  # silence posts nothing
    assert order == [(t, f"a{i}") for t in (1, 2) for i in range(4)]
    assert g.transcript == ()
    _extract_all(g)
    assert g.round == 2 and g.phase == Phase.talk  # the next round opens with talk again


def test_a_private_message_is_seen_only_by_its_speaker_and_recipients():
    g = CommonsGame("bcpr", talk=PRIVATE)
    g.speak("a0", Utterance("CANARY-a0-to-a3", ("a3",)))
    assert g.observe_talk("a1").messages == ()  # a0's private message is not for a1
    g.speak("a1", Utterance("public from a1"))
    assert [m.text for m in g.observe_talk("a2").messages] == ["public from a1"]
    g.speak("a2", Utterance("public from a2"))
    boss = g.observe_talk("a3")
    assert [m.text for m in boss.messages] == ["CANARY-a0-to-a3", "public from a1", "public from a2"]
    assert boss.recipients == ("a0", "a1", "a2")
    g.speak("a3", Utterance())
    while g.phase == Phase.talk:
        g.speak(g.acting_agents()[0], Utterance())
    seen = {a: [m.text for m in g.observe(a).talk] for a in g.subordinates}
    assert "CANARY-a0-to-a3" in seen["a0"]
    assert all("CANARY-a0-to-a3" not in seen[a] for a in ("a1", "a2"))
    msg = g.transcript[0]
    assert msg.visible_to == ("a0", "a3") and not msg.public


@pytest.mark.parametrize(("rules", "speaker", "utt", "match"), [
    (PUBLIC, "a0", Utterance("x", ("a1",)), "need talk='public\\+private'"),
    (PRIVATE, "a0", Utterance("x" * 41), "more than talk_max_chars=40"),
    (PRIVATE, "a0", Utterance("x", ("a0",)), "must be other agents"),
    (PRIVATE, "a0", Utterance("x", ("a9",)), "must be other agents"),
    (PRIVATE, "a0", Utterance("x", ("a1", "a1")), "repeat"),
    (PRIVATE, "a1", Utterance("x"), "may not talk now"),
])
def test_the_world_refuses_a_message_that_breaks_the_rules(rules, speaker, utt, match):
    g = CommonsGame("kcpr", talk=rules)
    with pytest.raises(InvalidTalkError, match=match):
        g.speak(speaker, utt)
    assert g.transcript == () and g.acting_agents() == ("a0",)  # nothing posted, nothing moved


def test_talk_rules_name_a_bad_setting():
    with pytest.raises(ValueError, match="talk must be one of"):
        TalkRules("loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="talk_turns must be an int >= 1, got 0"):
        TalkRules(TalkMode.public, turns=0)
    with pytest.raises(RuntimeError, match="not talk"):
        CommonsGame("cpr").speak("a0", Utterance("hi"))
