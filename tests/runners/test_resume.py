"""One resume rule for every environment: a run killed mid-way continues from its last
durable round (SovSim round, SCARCE contention, Economy episode) and ends with exactly
the trajectory of an uninterrupted run; without ``resume`` an unfinished run is an
error; a complete run is skipped; a run with other settings is never resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.data.recorder import CHECKPOINT, read_manifest
from scarce_lab.runtime import RunMismatchError
from tests.golden_runs import normalized


class Killed(Exception):
    """Stands for a kill -9 between two durable rounds."""


def _events(run_dir: Path) -> list[dict]:
    return normalized(run_dir)["events.jsonl"]


def _committed_rounds(run_dir: Path) -> list:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [json.loads(x)["round"] for x in lines if '"kind":"round_committed"' in x]


# -- Economy of Minds ------------------------------------------------------------------
def test_economy_killed_mid_run_resumes_from_its_last_episode(tmp_path, monkeypatch):
    from scarce_lab.environments.economy.runner import play as R

    cfg = R.EconomyRunConfig(agents=4, episodes=12, eval_episodes=3, seed=3)
    full = R.run_economy(cfg, tmp_path / "full")

    real_make = R.make_policy
    calls = {"n": 0}

    def make_policy(*a, **k):
        policy = real_make(*a, **k)
        act = policy.act

        def dying_act(*args, **kw):
            calls["n"] += 1
            if calls["n"] == 40:  # somewhere in the middle of training
                raise Killed("killed")
            return act(*args, **kw)

        policy.act = dying_act
        return policy

    monkeypatch.setattr(R, "make_policy", make_policy)
    with pytest.raises(Killed):
        R.run_economy(cfg, tmp_path / "broken")
    run_dir = tmp_path / "broken" / full.name
    m = read_manifest(run_dir)
    done = _committed_rounds(run_dir)
    assert m.status == "failed" and 0 < len(done) < 15 and (run_dir / CHECKPOINT).exists()
    monkeypatch.setattr(R, "make_policy", real_make)
    with pytest.raises(FileExistsError, match="--resume"):
        R.run_economy(cfg, tmp_path / "broken")
    R.run_economy(cfg, tmp_path / "broken", resume=True)
    assert read_manifest(run_dir).status == "complete" and not (run_dir / CHECKPOINT).exists()
    assert _events(run_dir) == _events(full)  # continued, not restarted: the same trajectory


# -- SCARCE ----------------------------------------------------------------------------
def test_scarce_killed_mid_subrun_resumes_from_its_last_contention(tmp_path):
    from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner
    from scarce_lab.llm.client import run_sync
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    cfg = ScarceConfig(workers=3, subruns=2, model="scripted/random", mechanism="revisable", private_rounds=2,
                       seed=5)

    def runner(out: Path, sbx: Path, die_at: int | None = None) -> ScarceRunner:
        r = ScarceRunner(cfg, out, tasks=[toy_task(i) for i in range(2)], grade_fn=fake_grade,
                         sandbox=FakeSandbox(sbx))
        if die_at is not None:
            orig = r._contention

            async def contention(participants, tc):
                if r.world.k == die_at:
                    raise Killed(f"killed before contention {die_at}")
                return await orig(participants, tc)

            r._contention = contention
        return r

    full = run_sync(runner(tmp_path / "full", tmp_path / "sbx_full").arun())
    n_contentions = max(e["round"] for e in _events(full) if e["kind"] == "contention_start") + 1
    assert n_contentions >= 4
    die_at = n_contentions // 2 + 1
    with pytest.raises(Killed):
        run_sync(runner(tmp_path / "broken", tmp_path / "sbx_a", die_at=die_at).arun())
    run_dir = tmp_path / "broken" / full.name
    assert read_manifest(run_dir).status == "failed"
    assert max(_committed_rounds(run_dir)) in (die_at - 1, die_at)  # a subrun end commits under the next index
    # a new process, a new sandbox: the workers' folders come back from the checkpoint
    run_sync(runner(tmp_path / "broken", tmp_path / "sbx_b").arun(resume=True))
    assert read_manifest(run_dir).status == "complete"
    assert _events(run_dir) == _events(full)


# -- the rule itself -------------------------------------------------------------------
def test_a_run_with_other_settings_is_never_resumed_or_skipped(tmp_path):
    from scarce_lab.environments.sovsim.runner.play import GameSpec, arun_game
    from scarce_lab.runtime import run_sync

    cfg = GameSpec("cpr", "scripted/sustainable", rounds=2)
    run_sync(arun_game(cfg, tmp_path))
    assert run_sync(arun_game(cfg, tmp_path)).status == "skipped"
    m = json.loads((tmp_path / cfg.run_id / "manifest.json").read_text())
    m["condition_settings"]["game.initial_pool"] = 90  # the folder holds another condition
    (tmp_path / cfg.run_id / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RunMismatchError, match=r"game.initial_pool: 90 there, 120 asked"):
        run_sync(arun_game(cfg, tmp_path, resume=True))
