"""The run viewer's static page in headless Chromium, network blocked: it loads without
asking the network, a SCARCE contention expands, private messages are marked private
with who could see them; SovSim and Economy pages load too."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from scarce_lab.viewer import view

REPO = Path(__file__).resolve().parents[2]
SCARCE_RUN = next(iter(sorted((REPO / "data" / "scarce" / "embedded").glob("*/manifest.json"))), None)


@pytest.mark.skipif(SCARCE_RUN is None, reason="no shipped SCARCE embedded run under data/scarce/embedded")
def test_scarce_run_page_expands_a_contention_and_marks_private_messages(page, tmp_path):
    out = view(SCARCE_RUN.parent).save(tmp_path / "run.html")
    t0 = time.monotonic()
    page.goto(out.as_uri())
    page.wait_for_selector(".sl-view")
    contentions = page.locator("details.sl-contention")
    assert contentions.count() >= 1
    # find a contention with private messages (the shipped run has some), open it by clicking
    with_private = page.locator("details.sl-contention:has(.sl-private)")
    assert with_private.count() >= 1, "expected a contention with private messages in the shipped run"
    first = with_private.first
    assert first.get_attribute("open") is None
    assert not first.locator(".sl-private").first.is_visible()  # collapsed
    first.locator("summary").click()
    assert first.get_attribute("open") is not None
    msg = first.locator(".sl-private").first
    assert msg.is_visible()
    text = msg.inner_text()
    assert "private" in text and "visible to" in text, text
    assert msg.get_attribute("data-visibility") == "private"
    # every private message in the page is marked, none is shown as public
    n_private = page.locator("[data-visibility='private']").count()
    assert n_private == page.locator(".sl-private[data-visibility='private']").count() > 0
    page.screenshot(path=str(tmp_path / "viewer_scarce.png"), full_page=True)
    print(f"\n[browser] viewer page loaded and checked in {time.monotonic() - t0:.1f} s; "
          f"{contentions.count()} contentions, {n_private} private messages; screenshot {tmp_path / 'viewer_scarce.png'}")
    assert not page.blocked, page.blocked[:5]


@pytest.mark.parametrize("run", ["data/sovsim/sovsim-kcpr_m-embedded-smollm2-s0-0", "data/economy/arithmetic"])
def test_sovsim_and_economy_pages_load_offline(page, tmp_path, run):
    path = REPO / run
    if not path.exists():
        pytest.skip(f"{path} not shipped")
    out = view(path).save(tmp_path / "run.html")
    page.goto(out.as_uri())
    page.wait_for_selector(".sl-view")
    if "sovsim" in run:
        assert page.locator("svg.sl-pool polyline").count() == 1
        page.locator("details.sl-round").first.locator("summary").click()
        assert page.locator("details.sl-round").first.locator("td").count() > 0
    else:
        assert page.locator("details.sl-episode").count() >= 1
    assert not page.blocked, page.blocked[:5]
