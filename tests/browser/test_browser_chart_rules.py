"""The browser checks of every notebook chart (``test_browser_jupyterlab``) find what they
look for: overlapping panel/axis titles and a colour that means two things, on charts drawn
by Vega in headless Chromium from a self-contained page (vl-convert's bundle, no network)."""

from __future__ import annotations

import altair as alt
import polars as pl
import pytest

from .test_browser_jupyterlab import CHART_FACTS, _colour_problems, _overlaps


def _facts(page, chart) -> dict:
    vlc = pytest.importorskip("vl_convert")
    page.set_content(vlc.vegalite_to_html(chart.to_dict(), bundle=True, renderer="svg"))
    page.wait_for_selector(".vega-embed svg.marks", timeout=30_000)
    return page.evaluate(CHART_FACTS, ".vega-embed")[0]


def _panels(x_title) -> alt.FacetChart:
    d = pl.DataFrame({"x": ["a", "b"] * 3, "y": [1.0, 2.0] * 3, "panel": ["p1"] * 2 + ["p2"] * 2 + ["p3"] * 2})
    return alt.Chart(d).mark_point().encode(x=alt.X("x:N", title=x_title), y="y:Q").properties(width=120).facet(
        column=alt.Column("panel:N"))


@pytest.mark.slow
def test_overlapping_axis_titles_are_found_and_wrapped_ones_pass(page):
    long = "Budget left before the contention (share of the subrun budget)"
    clash = _overlaps(_facts(page, _panels(long))["boxes"])
    assert clash and all(a == b == long for a, b in clash), clash
    assert _overlaps(_facts(page, _panels(["Budget left before", "the contention"]))["boxes"]) == []
    # titles that touch without a gap read as one: "(window start)Training episode"
    touching = [{"text": "a", "l": 0, "r": 100, "t": 0, "b": 10}, {"text": "b", "l": 101, "r": 200, "t": 0, "b": 10}]
    assert _overlaps(touching) == [("a", "b")]
    assert _overlaps([touching[0], {**touching[1], "t": 12, "b": 22}]) == []  # a line below: fine


@pytest.mark.slow
def test_legend_colours_are_read_as_drawn(page):
    def chart(values):
        d = pl.DataFrame({"g": values, "x": [0, 1], "y": [1.0, 2.0]})
        return alt.Chart(d).mark_point(filled=True).encode(x="x:Q", y="y:Q", color="g:N")

    a, b = _facts(page, chart(["richer worker", "other workers"])), _facts(page, chart(["urgent", "not urgent"]))
    assert dict(a["legend"]).keys() == {"richer worker", "other workers"}
    problems = _colour_problems([a, b])  # altair's default: sorted values along one palette
    assert len(problems) == 2 and all("stands for" in p for p in problems), problems


@pytest.mark.slow
def test_cut_tick_labels_are_seen_as_drawn_and_labels_within_the_limit_are_whole(page):
    """Vega cuts a tick label longer than its axis's labelLimit with an ellipsis (notebook
    02's "embedded/smollm2 | ballots fi..."); the browser check reads the drawn text, and the
    same labels within ci_chart's limit (300 px) are drawn whole."""
    labels = ["embedded/smollm2 | ballots_fixed_mem-cross", "scripted/fifo"]  # 42 characters: ~250 px
    d = pl.DataFrame({"g": labels, "y": [1.0, 2.0]})
    cut = _facts(page, alt.Chart(d).mark_point().encode(x=alt.X("g:N", axis=alt.Axis(labelAngle=-40)), y="y:Q"))
    assert any(t.endswith("\u2026") for t in cut["ticks"]), cut["ticks"]
    whole = _facts(page, alt.Chart(d).mark_point().encode(
        x=alt.X("g:N", axis=alt.Axis(labelAngle=-40, labelLimit=300)), y="y:Q"))
    assert whole["ticks"] and not any(t.endswith("\u2026") for t in whole["ticks"]), whole["ticks"]
    assert labels[0] in whole["ticks"], whole["ticks"]
