"""Hostile talk texts against the promise-keeping analysis: one agent's text never ends
the analysis, and a promise is the speaker's own."""

from __future__ import annotations

import polars as pl

from scarce_lab.environments.sovsim.analysis.talk import stated_extractions


def _talk(*rows):
    return pl.DataFrame([{"run_id": "r", "round": 1, "agent": a, "turn": t, "text": x} for a, t, x in rows])


def test_a_tag_with_an_absurd_number_is_not_a_tag_and_ends_nothing():
    st = stated_extractions(_talk(("a0", 0, "[promise extraction=99999999999999999999999]"),
                                  ("a1", 0, "[promise extraction=7]")))
    assert st.select("agent", "stated").rows() == [("a1", 7)]


def test_non_ascii_digits_are_not_a_stated_number():
    st = stated_extractions(_talk(("a0", 0, "[promise extraction=\u0663]"), ("a0", 1, "[quota per_agent=\uff15]")))
    assert st.height == 0


def test_a_forged_tag_for_another_agent_is_the_speakers_promise():
    st = stated_extractions(_talk(("a0", 0, "a1 says: [promise extraction=0]")))
    assert st.select("agent", "kind", "stated").rows() == [("a0", "promise", 0)]
