"""Cross-play analysis on the shipped cross-play set (data/crossplay), checked
against the run files read directly; unfinished runs are left out, not half-counted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.environments.sovsim.analysis.crossplay import crossplay_runs

REPO = Path(__file__).resolve().parents[2]
SOVSIM = REPO / "data" / "crossplay" / "sovsim" / "scripted"
SCARCE = REPO / "data" / "crossplay" / "scarce" / "scripted"


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def test_sovsim_focal_payoffs_match_the_round_events():
    runs = crossplay_runs(SOVSIM, focal="leader")
    assert runs.height == len(list(SOVSIM.glob("*/manifest.json")))
    for r in runs.sample(5, seed=1).iter_rows(named=True):
        rounds = [e["payload"] for e in _events(SOVSIM / r["run_id"]) if e["kind"] == "round"]
        gain = {}
        for p in rounds:
            for a, pay in zip(p["agents"], p["payoffs"], strict=True):
                gain[a] = gain.get(a, 0) + pay
        models = json.loads((SOVSIM / r["run_id"] / "manifest.json").read_text())["models"]
        assert models["a3"] == r["focal_model"] and r["focal_payoff"] == pytest.approx(gain["a3"])
        assert r["resident_payoff"] == pytest.approx(sum(gain[a] for a in ("a0", "a1", "a2")) / 3)


def test_sovsim_matrix_is_one_cell_per_condition_and_composition():
    m = sl.sovsim.focal_payoff_matrix(sl.sovsim.load(SOVSIM), focal="leader").frame
    assert m.height == 2 * 3 * 3 and set(m["n_runs"]) == {5}
    # a deterministic pair of policies gives the same game every simulation: no interval, and it says so
    det = m.filter((pl.col("focal_model") == "scripted/greedy") & (pl.col("background_model") == "scripted/greedy"))
    assert det["ci_low"].is_null().all() and det["ci_note"].str.contains("spread").all()


def test_scarce_ballot_choices_match_the_events():
    ds = sl.load(SCARCE)
    from scarce_lab.environments.scarce.analysis.crossplay import ballot_choices

    got = ballot_choices(ds)
    # recount: ballots in contentions with >= 3 participants whose rivals play two negotiator models
    n = 0
    for d in sorted(p.parent for p in SCARCE.glob("*/manifest.json")):
        models = json.loads((d / "manifest.json").read_text())["models"]
        ev = _events(d)
        parts = {e["round"]: e["payload"]["participants"] for e in ev if e["kind"] == "contention_start"}
        for e in ev:
            if e["kind"] != "ballot":
                continue
            rivals = [w for w in parts[e["round"]] if w != e["agent"]]
            if len(rivals) >= 2 and len({models[f"{w}.negotiator"] for w in rivals}) == 2:
                n += 1
    assert got.height == 2 * n and n > 0  # one row per (ballot, rival model)
    assert got.group_by("run_id").agg(pl.col("picked").sum())["picked"].sum() == n  # each ballot picks once


def test_an_unfinished_run_is_left_out_with_a_warning(tmp_path):
    runs = sorted(p.parent for p in SOVSIM.glob("*/manifest.json"))[:3]
    for d in runs:
        shutil.copytree(d, tmp_path / d.name)
    m = json.loads((tmp_path / runs[0].name / "manifest.json").read_text())
    m["status"] = "running"
    (tmp_path / runs[0].name / "manifest.json").write_text(json.dumps(m))
    with pytest.warns(UserWarning, match="1 of 3 sovsim runs are not complete"):
        out = crossplay_runs(tmp_path, focal="leader")
    assert sorted(out["run_id"]) == sorted(d.name for d in runs[1:])


def test_scarce_crossplay_findings_take_the_dataset_and_state_their_parameters():
    """Notebook 08 passed paths and a hand-made convention; the findings take the loaded
    dataset, and the convention names the protocol and every parameter. The alliance
    shares are the same whatever order the choices come in (one order of the runs)."""
    from scarce_lab.analysis.crossplay import choice_vs_uniform
    from scarce_lab.environments.scarce.analysis.crossplay import ballot_choices
    from scarce_lab.environments.scarce.analysis.crossplay import crossplay_runs as scarce_runs

    ds = sl.scarce.load(SCARCE)
    m = sl.scarce.focal_payoff_matrix(ds, focal="w0")
    runs = scarce_runs(ds, "w0")
    assert m.frame["n_runs"].sum() == runs.height and m.chart and m.method.startswith("Which model does best")
    assert m.convention["protocol"].startswith("focal/background")
    assert m.convention["parameters"] == {"focal": "w0", "part": "negotiator"}
    adv = sl.scarce.invader_advantage(ds, focal="w0")
    assert adv.convention["parameters"] == {"focal": "w0", "part": "negotiator"}
    ballots = sl.scarce.alliances(ds, via="ballots")
    assert ballots.convention["parameters"] == {"part": "negotiator", "via": "ballots"}
    choices = ballot_choices(ds)
    assert ballots.frame.equals(choice_vs_uniform(choices))
    for seed in range(5):
        assert choice_vs_uniform(choices.sample(fraction=1.0, shuffle=True, seed=seed)).equals(ballots.frame)
