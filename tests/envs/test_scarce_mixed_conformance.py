"""Conformance (determinism, privacy) of the SCARCE world with per-worker memory
horizons, a newcomer and a leaver (scarce_lab.environments.scarce.conformance)."""

from __future__ import annotations

import pytest

from scarce_lab.environments.scarce.conformance import (
    scarce_mixed_trace,
    scarce_newcomer_cross_trace,
    scarce_trace,
)
from scarce_lab.testing.core import check_determinism, check_privacy


@pytest.mark.parametrize("play", [scarce_mixed_trace, scarce_newcomer_cross_trace])
def test_mixed_and_newcomer_plays_conform(play):
    check_determinism(play, seeds=(0,))
    check_privacy(play, seed=1)
    trace = play(0)
    assert {o.agent for o in trace.observations} == {"w0", "w1", "w2"}  # the newcomer played


def test_the_newcomer_check_can_fail(monkeypatch):
    """The newcomer leak check is live: a world that shows a newcomer the whole public
    history (the join forgotten) is caught."""
    from scarce_lab.environments.scarce.world.auction import ScarceWorld

    assert not any(o.leaks for o in scarce_trace(0, "cross", joins={"w2": 1}).observations)
    orig = ScarceWorld.negotiation_view

    def leaky(self, c, name, t):
        v = orig(self, c, name, t)
        v.history = list(self.history.rows)
        return v

    monkeypatch.setattr(ScarceWorld, "negotiation_view", leaky)
    bad = scarce_trace(0, "cross", joins={"w2": 1})
    assert any("before w2 joined" in leak for o in bad.observations for leak in o.leaks)
