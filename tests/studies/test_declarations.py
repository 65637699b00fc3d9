"""The declared studies: each validates and prints, every notebook has one, and every
profile that names an ``out`` folder rebuilds exactly the runs shipped there (run ids and
configs read from the runs' manifests), so each shipped dataset is one command."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from scarce_lab import studies as st

ROOT = Path(__file__).resolve().parents[2]
STUDIES = st.studies()
PROFILES = [(s.name, p) for s in STUDIES for p, prof in s.profiles.items() if prof.out]

# Shipped runs the current code cannot rebuild, with the runs it plans instead. The SCARCE
# cross-play self-play composition fifo-vs-fifo was recorded with its seats; since then a
# composition that changes no worker's play is the run without seats (one condition, one run
# id: ScarceConfig's seat check), so the same command now plans the plain fifo runs.
STALE = {
    ("scarce-crossplay", "shipped-scripted"): (
        {f"scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s{s}_288cf370" for s in range(5)},
        {f"scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s{s}_a2cc88e0" for s in range(5)},
    ),
}


@cache
def shipped(out: str) -> dict[str, dict]:
    """Run id -> manifest of the runs directly under ``out``."""
    found = [json.loads(m.read_text()) for m in (ROOT / out).glob("*/manifest.json")]
    return {m["run_id"]: m for m in found}


@cache
def planned(name: str, profile: str) -> list[tuple[str, object]]:
    return st.get(name).configs(profile=profile)


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v and k != "seats":
            out |= _flat(v, f"{prefix}{k}.")
        elif k == "seats" and isinstance(v, dict):  # unset seat fields are left out of older manifests
            out[prefix + k] = {s: {f: x for f, x in (p or {}).items() if x is not None} for s, p in v.items()}
        else:
            out[prefix + k] = v
    return out


def test_enough_studies_and_every_notebook_has_one():
    assert len(STUDIES) >= 9
    notebooks = {p.name for p in (ROOT / "notebooks").glob("0[1-9]_*.ipynb")}
    assert len(notebooks) == 9
    assert notebooks - {s.notebook for s in STUDIES} == set()
    assert {s.notebook for s in STUDIES} <= notebooks


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.name)
def test_study_shows_its_design_and_departures(study):
    assert all(why.strip() for why in study.departures.values())
    text = study.show()
    assert text.startswith(f"{study.name}: ")
    for arm in study.arms:
        assert arm.name in text
    for dep in study.departures_of():
        assert f"    {dep['setting']}: " in text and dep["why"] in text
    for name in study.profiles:
        assert f"profile {name}: " in text


@pytest.mark.parametrize(("name", "profile"), PROFILES, ids=[f"{n}:{p}" for n, p in PROFILES])
def test_profile_rebuilds_its_shipped_runs(name, profile):
    runs = planned(name, profile)
    ids = [cfg.run_id for _, cfg in runs]
    assert len(ids) == len(set(ids)), f"{name}:{profile} plans one run id twice"
    out = st.get(name).profiles[profile].out
    have = shipped(out)
    assert set(ids) - set(have) == STALE.get((name, profile), (set(), set()))[1], f"{name}:{profile} in {out}"
    for arm, cfg in runs:
        if cfg.run_id not in have:
            continue
        mine, theirs = _flat(cfg.model_dump(mode="json")), _flat(have[cfg.run_id]["config"])
        if theirs.get("negotiator_model", "") is None:  # unset: the solvers' model (a study sets it)
            theirs["negotiator_model"] = theirs["model"]
        play = {k for k in mine.keys() & theirs.keys()  # the client's transport (timeouts, concurrency) is not play
                if not k.startswith("llm.") or k in cfg.condition_settings()}
        differ = {k: (mine[k], theirs[k]) for k in play if mine[k] != theirs[k]}
        assert not differ, f"{name}:{profile} arm {arm} run {cfg.run_id}: config differs {differ}"


def test_every_shipped_run_is_claimed_by_a_profile():
    claimed: dict[str, set[str]] = defaultdict(set)
    stale: dict[str, set[str]] = defaultdict(set)
    for name, profile in PROFILES:
        out = st.get(name).profiles[profile].out
        claimed[out] |= {cfg.run_id for _, cfg in planned(name, profile)}
        stale[out] |= STALE.get((name, profile), (set(), set()))[0]
    assert len(claimed) >= 15
    for out, ids in claimed.items():
        assert set(shipped(out)) - ids == stale[out], out


def test_a_profile_extends_a_study_without_changing_it():
    # several model sets, an extra arm and an arm's pinned setting, on the study's own terms
    study = st.get("reasoning-effort")
    runs = study.configs(profile="shipped-embedded")
    assert [(a, c.llm.reasoning_effort, c.seed) for a, c in runs] == [("low", "low", 0), ("high", "high", 0)]
    with pytest.raises(st.StudyError, match="has no arm 'low'"):
        study.configs({"model": "scripted/fifo"}, arms=["low"])
    mem = st.get("memory-horizon").configs(profile="shipped-embedded")
    assert [(a, c.subruns) for a, c in mem] == [("none", 1), ("cross", 2)]
    budget = st.get("budget-asymmetry").configs(profile="shipped-scripted", seeds=[7])
    assert [c.negotiator_model for _, c in budget] == ["scripted/spend-down", "scripted/strategic", "scripted/bid-first"]
    assert {c.rich_worker_budget for _, c in budget} == {1500}
    # the shipped embedded labels are made over the whole folder by their own command: no panel here
    assert st.get("revisable-bids").profiles["shipped-embedded"].judges == []
    assert "judges none" in st.get("revisable-bids").show()
    deps = {d["setting"]: d for d in study.departures_of("shipped-embedded")}
    assert deps["arm low"]["why"].startswith("added by profile shipped-embedded")
    pinned = {d["setting"]: d["here"] for d in st.get("memory-horizon").departures_of("shipped-embedded")}
    assert pinned["subruns (arm cross)"] == 2 and pinned["subruns"] == 1


def test_departures_without_a_config_key_are_listed():
    deps = {d["setting"]: d for d in st.get("revisable-bids").departures_of()}
    assert deps["task_suite"]["here"] == "(not a config setting)" and "ProgramBench" in deps["task_suite"]["why"]


def test_a_crossplay_study_crosses_the_given_models():
    study = st.get("sovsim-crossplay")
    runs = study.configs([{"model": "scripted/greedy"}, {"model": "scripted/random"}], seeds=[3], arms=["bcpr"])
    assert len(runs) == 4 and {c.simulation for _, c in runs} == {3}
    assert {c.composition() for _, c in runs} >= {"boss=greedy, others=random", "boss=random, others=greedy"}


def test_profile_declarations_are_checked():
    text = st.get("memory-horizon").model_dump(mode="json")
    text["profiles"] = {"bad": {"arms": ["cross"], "extra_arms": [{"name": "cross"}]}}
    with pytest.raises(ValueError, match="extra_arms"):
        st.Study.model_validate(text)
    text["profiles"] = {"bad": {"arm_settings": {"weekly": {"subruns": 1}}}}
    with pytest.raises(ValueError, match="weekly"):
        st.Study.model_validate(text)
