"""Conformance of an Economy run with mixed seats and a newcomer: the same seed gives the
same trajectory and prompts, and no prompt holds any seat's model or another agent's bid."""

from __future__ import annotations

from scarce_lab.environments.economy.conformance import economy_seats_trace
from scarce_lab.testing.core import check_determinism, check_privacy


def test_mixed_seats_and_newcomer_are_deterministic_and_private():
    trace = economy_seats_trace(0)
    agents = {o.agent for o in trace.observations}
    assert len(agents) >= 2, f"too few agents called a model to test privacy: {agents}"
    kinds = {o[0] for o in trace.outcomes}
    assert "agent_joined" in kinds
    check_privacy(lambda seed: trace)
    check_determinism(economy_seats_trace, seeds=(1,))


def test_the_privacy_check_catches_a_model_string_in_a_prompt(monkeypatch):
    from scarce_lab.environments.economy.agents import llm as L

    real = L.render_act

    def leaky(genome, obs, **kw):
        msgs = real(genome, obs, **kw)
        return [*msgs[:-1], {"role": "user", "content": msgs[-1]["content"] + " (you are openai/gpt-4o-mini)"}]

    monkeypatch.setattr(L, "render_act", leaky)
    trace = economy_seats_trace(0)
    assert any("openai/gpt-4o-mini" in o.leaks for o in trace.observations)
