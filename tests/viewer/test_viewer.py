"""Run viewer without a browser: which run it shows, escaping, errors that name the problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scarce_lab.viewer import view
from scarce_lab.viewer.render import render_run

REPO = Path(__file__).resolve().parents[2]


def test_a_dataset_folder_needs_a_run_id_and_names_the_runs():
    with pytest.raises(ValueError, match="pass run_id="):
        view(REPO / "data" / "sovsim")
    v = view(REPO / "data" / "sovsim", run_id="sovsim-kcpr-embedded-smollm2-s0-0")
    assert v.run_dir.name == "sovsim-kcpr-embedded-smollm2-s0-0"
    html = v._repr_html_()
    assert 'data-env="sovsim"' in html and "Round 1" in html and "(leader)" in html


def test_missing_run_and_unknown_run_id(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nope")):
        view(tmp_path / "nope")
    with pytest.raises(ValueError, match="'zzz' not found"):
        view(REPO / "data" / "sovsim", run_id="zzz")


def test_model_text_is_escaped_and_private_messages_are_marked():
    manifest = {"run_id": "r", "environment": "scarce", "condition": "c", "models": {}, "seed": 0}
    ev = [
        {"seq": 0, "kind": "contention_start", "agent": None, "t": 1.0, "visibility": "public",
         "payload": {"subrun": 0, "participants": ["w0", "w1"], "queue": []}},
        {"seq": 1, "kind": "reasoning", "agent": "w0", "t": 1.0, "visibility": "public",
         "payload": {"subrun": 0, "text": "<script>alert(1)</script>"}},
        {"seq": 2, "kind": "private_message", "agent": "w0", "t": 2.0, "visibility": "private",
         "visible_to": ["w0", "w1"],
         "payload": {"subrun": 0, "sender": "w0", "recipient": "w1", "text": "deal?", "private_round": 1}},
    ]
    html = render_run(manifest, ev)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'class="sl-private" data-visibility="private"' in html and "private, visible to w0, w1" in html
    assert 'data-phase="private"' in html and "<td>1</td><td>w0 → w1</td>" in html
    assert "<script" not in html and "http" not in html  # self-contained: no script, no URL


def test_unknown_environment_is_refused():
    with pytest.raises(ValueError, match="environment 'chess'"):
        render_run({"run_id": "r", "environment": "chess"}, [])


def test_cli_writes_a_page(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    run = REPO / "data" / "sovsim" / "sovsim-cpr-embedded-smollm2-s0-0"
    res = CliRunner().invoke(app, ["view", str(run), "--html", str(tmp_path / "v.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "v.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "sovsim-cpr-embedded-smollm2-s0-0" in page
    res = CliRunner().invoke(app, ["view", str(REPO / "data" / "sovsim")])
    assert res.exit_code == 2 and "pass run_id=" in res.output


def _scarce_runs():
    runs = sorted((REPO / "data" / "scarce").glob("*/*/events.jsonl")) + sorted(
        (REPO / "data" / "scarce").glob("*/*/*/events.jsonl"))
    # one run of every shipped SCARCE folder (embedded, embedded negotiators, each scripted experiment)
    by_folder: dict[Path, Path] = {}
    for ev in runs:
        by_folder.setdefault(ev.parent.parent, ev.parent)
    return sorted(by_folder.values())


@pytest.mark.parametrize("run", _scarce_runs(), ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_a_real_scarce_run_shows_each_contention_as_its_phases_in_time_order(run):
    """Every contention of a shipped run is one block holding its phases in the protocol's
    order (declarations, public reasoning, private messages, ballots, then the schedule and
    the payments); no event of a known kind falls back to raw JSON; private messages carry
    who could see them and ballots say the scheduler alone saw them; the events between
    contentions are in time order within each subrun."""
    import json
    import re

    raw = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    n_contentions = sum(1 for e in raw if e["kind"] == "contention_start")
    html = view(run)._repr_html_()
    blocks = re.findall(r'<details class="sl-contention".*?</details>', html, flags=re.S)
    assert len(blocks) == n_contentions > 0
    assert "<code>{" not in html  # the raw-JSON fallback is for unknown kinds only
    order = ["declaration", "reasoning", "private", "revision", "ballots", "intent", "schedule", "payment"]
    kinds = {e["kind"] for e in raw}
    for block in blocks:
        phases = re.findall(r'data-phase="([a-z]+)"', block)
        assert phases == sorted(phases, key=order.index), phases
        assert phases[0] == "declaration" and "schedule" in phases  # baselines (fifo, edf) skip talk
        if "ballot" in kinds and "ballots" in phases:
            ballots = block.split('data-phase="ballots"')[1].split('data-phase=')[0]
            assert "seen by the scheduler only" in ballots
        if "private" in phases:
            private = block.split('data-phase="private"')[1].split('data-phase=')[0]
            assert "private, visible to" in private
    # outside the contention blocks, times never go backwards within a subrun
    for sub in html.split('<h3 class="sl-subrun"')[1:]:
        outside = re.sub(r'<details class="sl-contention".*?</details>', lambda m: _first_time(m.group(0)), sub,
                         flags=re.S)
        outside = re.sub(r"<pre>.*?</pre>", "", outside, flags=re.S)
        times = [float(t) for t in re.findall(r'<span class="sl-t">t=([0-9.e+-]+) s</span>', outside)]
        assert times == sorted(times), times


def _first_time(block: str) -> str:
    m = re.search(r'<span class="sl-t">t=[0-9.e+-]+ s</span>', block)
    return m.group(0) if m else ""
