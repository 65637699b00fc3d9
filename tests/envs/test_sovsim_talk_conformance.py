"""Conformance with talk on: determinism, refused illegal messages, and no private
message in any observation of an agent outside its ``visible_to`` (canaries), with the
check shown able to fail."""

from __future__ import annotations

import pytest

from scarce_lab.environments.sovsim.conformance import sovsim_trace
from scarce_lab.environments.sovsim.world.commons import CommonsGame
from scarce_lab.testing import check_environment, check_privacy


@pytest.mark.parametrize("talk", ["public", "public+private"])
@pytest.mark.parametrize("condition", ["cpr", "bcpr", "kcpr", "kcpr_m"])
def test_sovsim_with_talk_conforms(condition, talk):
    check_environment(lambda seed: sovsim_trace(seed, condition=condition, talk=talk))


def test_the_trace_holds_private_messages_and_refusals():
    trace = sovsim_trace(0, condition="bcpr", talk="public+private")
    texts = [o.text for o in trace.observations]
    assert any(">a" in t and "CANARY-" in t for t in texts)  # private canaries were posted and seen
    assert any(o.own for o in trace.observations)
    refusals = [x for x in trace.outcomes if x[0] == "refused" and "InvalidTalkError" in x[3]]
    assert len(refusals) >= 8  # two talk turns x four speakers in round 1 at least


def test_the_privacy_check_catches_a_world_that_shows_every_message(monkeypatch):
    monkeypatch.setattr(CommonsGame, "talk_seen_by", lambda self, agent: tuple(self.transcript))
    with pytest.raises(AssertionError, match="private message"):
        check_privacy(lambda seed: sovsim_trace(seed, condition="kcpr", talk="public+private"))
