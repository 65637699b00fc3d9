"""Phase-1 code tried with inputs the issues do not name (adversarial review): each
test here failed before its fix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scarce_lab.envs.sovsim import CommonsConfig, LegalActions, Phase


# -- SovSim legal actions: a cap that is not a multiple of the step -----------------
def test_subordinate_cap_off_the_step_is_refused_at_the_config():
    """A cap of 31 with step 3 made LegalActions(high=31) whose own why_not(31) refused
    31 ("in 0..31, got 31") and the model agent's schema builder raise mid-run."""
    with pytest.raises(ValidationError, match="subordinate_cap.*31.*step.*3"):
        CommonsConfig(subordinate_cap=31, step=3)
    assert CommonsConfig(subordinate_cap=30, step=3).subordinate_cap == 30


def test_legal_actions_high_must_be_a_legal_value():
    with pytest.raises(ValueError, match="high 31 .*step 3"):
        LegalActions("a0", Phase.extract, high=31, step=3)
    with pytest.raises(ValueError, match="step"):
        LegalActions("a0", Phase.extract, high=30, step=0)
    legal = LegalActions("a0", Phase.extract, high=30, step=3)
    assert legal.why_not(legal.high) is None and legal.why_not(legal.low) is None
