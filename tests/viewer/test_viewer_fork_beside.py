"""A fork beside its parent in the viewer (scarce_lab.viewer.beside)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import scarce_lab as sl

ROOT = Path(__file__).resolve().parents[2]
PARENT = ROOT / "data/sovsim/sovsim-kcpr-scripted-greedy_leader-s0-2"


@pytest.fixture(scope="module")
def forks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("forks")
    shutil.copytree(PARENT, out / PARENT.name)  # the parent beside its forks: beside="parent" finds it
    sl.fork(out / PARENT.name, at=1, intervene="seat_model:seat=king,model=scripted/conditional", seeds="0", out=out)
    sl.fork(out / PARENT.name, at=1, intervene="none", seeds="0", out=out)
    return out


def _fork(out: Path, kind: str) -> Path:
    import json
    hits = [d for d in out.iterdir() if "fork" in d.name
            and json.loads((d / "manifest.json").read_text())["config"]["fork"]["intervention"]["kind"] == kind]
    assert len(hits) == 1, hits
    return hits[0]


def test_fork_beside_parent_aligned_by_step_and_marks_what_differs(forks):
    body = sl.view(_fork(forks, "seat_model"), beside="parent")._repr_html_()
    assert 'class="sl-view sl-fork-view"' in body and 'data-at="1"' in body
    # the parent collapsed in round 1; the fork with a conditional king plays on: rows for its rounds
    assert body.count('data-step="1"') == 1 and 'data-step="2"' in body
    assert '<tr data-step="1" data-differs="true"' in body
    assert "no events (the run had ended)" in body  # the parent's side of round 2
    assert "scripted/conditional" in body  # the intervention is named


def test_none_fork_of_seed_0_differs_nowhere(forks):
    body = sl.view(_fork(forks, "none"), beside=forks / PARENT.name)._repr_html_()
    assert 'data-differs="true"' not in body and 'data-differs="false"' in body


def test_beside_escapes_and_refuses_a_changed_parent_or_a_non_fork(forks, tmp_path):
    from scarce_lab.viewer.beside import render_beside

    fork_dir = _fork(forks, "seat_model")
    from scarce_lab.viewer import _events

    pm, pev = _events(forks / PARENT.name)
    fm, fev = _events(fork_dir)
    fev = [dict(e, agent="<script>x</script>") if e.get("round") == 1 else e for e in fev]
    fm = dict(fm, run_id="<b>f</b>")
    body = render_beside((pm, pev), (fm, fev))
    assert "<script>" not in body and "&lt;script&gt;" in body and "<b>f</b>" not in body
    with pytest.raises(ValueError, match="is no fork"):
        sl.view(forks / PARENT.name, beside="parent")
    moved = tmp_path / PARENT.name
    shutil.copytree(forks / PARENT.name, moved)
    with (moved / "events.jsonl").open("a") as f:
        f.write("\n")
    with pytest.raises(ValueError, match="changed since fork"):
        sl.view(fork_dir, beside=moved)
    (tmp_path / "empty").mkdir()
    shutil.copytree(ROOT / "data/sovsim/sovsim-kcpr-scripted-greedy-s0-0", tmp_path / "empty" / "other")
    with pytest.raises(FileNotFoundError, match="is not under"):
        sl.view(fork_dir, beside=tmp_path / "empty")


def test_measured_wall_seconds_do_not_make_a_step_differ():
    """The shipped SCARCE `none` fork of seed 0 is its parent again, but its commands'
    wall seconds (``EnvironmentSpec.measured``) differ: no step is marked."""
    import json

    forks = sorted((ROOT / "data/forks/scarce/sanctions").glob("*_s2_*-fork0"))
    (none,) = [d for d in forks if json.loads((d / "manifest.json").read_text())["config"]["fork"]["intervention"]
               == {"kind": "none"}]
    body = sl.view(none, beside=ROOT / "data/talk_institutions/scarce/scripted")._repr_html_()
    assert 'data-differs="false"' in body and 'data-differs="true"' not in body
    assert "&quot;duration_s&quot;" in body  # shown (escaped), only not compared
