"""The viewer shows a SovSim game's talk with who could see each message."""

from __future__ import annotations

from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import run_sweep
from scarce_lab.viewer import view


def test_talk_is_shown_with_its_visibility(tmp_path):
    cfg = SovSimConfig(condition="bcpr", model="scripted/promise_defector", talk="public+private", game={"rounds": 1})
    run_sweep([cfg], tmp_path, progress=False)
    html = view(tmp_path / cfg.run_id)._repr_html_()
    assert 'data-phase="talk"' in html and "Discussion" in html
    # a0 whispers its promise to a1: a private row, visible to a0 and a1 only
    assert "<td>1</td><td>a0</td><td>a1</td>" in html
    assert "private, visible to a0, a1" in html and "private, visible to a3, a0" in html
    assert "[promise extraction=15]" in html


def test_a_game_without_talk_shows_no_discussion(tmp_path):
    cfg = SovSimConfig(condition="cpr", model="scripted/sustainable", game={"rounds": 1})
    run_sweep([cfg], tmp_path, progress=False)
    html = view(tmp_path / cfg.run_id)._repr_html_()
    assert "Round 1" in html and 'data-phase="talk"' not in html


def test_public_talk_is_marked_public(tmp_path):
    cfg = SovSimConfig(condition="cpr", model="scripted/quota_keeper", talk="public", game={"rounds": 1})
    run_sweep([cfg], tmp_path, progress=False)
    html = view(tmp_path / cfg.run_id)._repr_html_()
    assert html.count('data-visibility="public"') >= 4 and "<td>everyone</td>" in html


def test_pool_chart_draws_a_point_per_round_even_for_a_one_round_game():
    from scarce_lab.environments.sovsim.viewer import _pool_svg

    one = _pool_svg([(1, 120.0)], threshold=12, top=120)  # collapsed in round 1: a polyline of one point draws nothing
    assert one.count('class="sl-pool-point"') == 1 and "<title>round 1: pool 120</title>" in one
    assert _pool_svg([(1, 120.0), (2, 60.0), (3, 30.0)], threshold=12, top=120).count("sl-pool-point") == 3
