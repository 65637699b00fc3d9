"""Run viewer without a browser: which run it shows, escaping, errors that name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from scarce_lab.viewer import view
from scarce_lab.viewer.render import render_run

REPO = Path(__file__).resolve().parents[1]


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
    assert 'class="sl-msg sl-private" data-visibility="private"' in html and "visible to w0, w1" in html
    assert "(message round 1)" in html
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
