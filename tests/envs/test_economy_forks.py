"""Economy of Minds forks (scarce_lab/environments/economy/runner/fork.py): at an episode,
``none`` seed 0 is the parent, re-seeding changes only the episodes from the fork on, a
rule changes the economy from its episode, and what the Economy cannot fork is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.fork import fork_check, fork_steps
from scarce_lab.environments.economy.runner.play import run_economy
from scarce_lab.forks import ForkError, ForkSpec, as_intervention
from scarce_lab.forks.replay import Replay, parent_digest


@pytest.fixture(scope="module")
def parent(tmp_path_factory) -> Path:
    cfg = EconomyRunConfig(episodes=14, eval_episodes=3, seed=5, agents=5, economy={"rent_interval": 2})
    return run_economy(cfg, tmp_path_factory.mktemp("eco"))


def _fork(parent: Path, out: Path, at: int, intervention="none", seed: int = 0) -> Path:
    m = read_manifest(parent)
    spec = ForkSpec(parent=m.run_id, parent_digest=parent_digest(parent), at=at, seed=seed,
                    intervention=as_intervention(intervention))
    cfg = EconomyRunConfig.model_validate({**m.config, "fork": spec.model_dump()})
    return run_economy(cfg, out, replay=Replay.from_run(parent, at=at, digest=spec.parent_digest))


def _events(run: Path) -> list[dict]:
    out = []
    for line in (run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        e.pop("run_id")
        out.append(e)
    return out


def _before(events: list[dict], at: int) -> list[dict]:
    return [e for e in events if e["round"] is None or e["round"] < at]


def test_none_seed_0_is_the_parent(parent, tmp_path):
    run = _fork(parent, tmp_path, 6)
    assert _events(run) == _events(parent)
    m = read_manifest(run)
    assert m.condition.endswith("fork@6:none") and m.notes["fork"]["at"] == 6 and m.run_id.endswith("-fork0")


def test_reseeding_changes_only_the_episodes_from_the_fork(parent, tmp_path):
    theirs = _events(parent)
    runs = [_events(_fork(parent, tmp_path / str(j), 6, seed=j)) for j in (1, 2)]
    for mine in runs:
        assert _before(mine, 6) == _before(theirs, 6)
    assert any(mine != theirs for mine in runs)


def test_a_rule_changes_the_economy_from_its_episode(parent, tmp_path):
    events = _events(_fork(parent, tmp_path, 6, "rule:setting=economy.rent,value=30"))
    rents = [e for e in events if e["kind"] == "rent"]
    assert {e["payload"]["amount"] for e in rents if e["round"] < 6} <= {5}  # the parent's rent before the fork
    assert {e["payload"]["amount"] for e in rents if e["round"] >= 6} - {5}  # the new rent after it
    assert _before(events, 6) == _before(_events(parent), 6)


@pytest.mark.parametrize(("intervention", "at", "match"), [
    ("none", 40, r"episode 40: run .* has episodes"),
    ("rule:setting=episodes,value=3", 2, r"rule episodes: the Economy of Minds changes"),
    ("rule:setting=economy.rent,value=-1", 2, r"rule economy.rent=-1"),
    ("seat_model:seat=a3,model=scripted/expert", 2, r"seat a3: run .* has seats \['\*'\]"),
    ("replace_message:agent=a1,text=hi", 2, r"replace_message: Economy of Minds agents send no messages"),
    ("replace_decision:agent=a1,decision={bid: 3}", 2, r"replace_decision: an Economy of Minds decision"),
    ("remove_agent:agent=a1", 2, r"remove_agent: the Economy's population changes only by its own rules"),
    ("add_agent:model=scripted/expert", 2, r"add_agent: a newcomer joins through the config"),
])
def test_each_impossible_fork_is_refused_by_name(parent, intervention, at, match):
    m = read_manifest(parent)
    with pytest.raises(ForkError, match=match):
        fork_check(EconomyRunConfig.model_validate(m.config), m, as_intervention(intervention), at, run_dir=parent)


def test_fork_steps_are_the_episodes(parent):
    assert fork_steps(parent) == list(range(17))


def test_a_fork_resumed_past_its_episode_plays_on_as_the_fork(parent, tmp_path, monkeypatch):
    import scarce_lab.environments.economy.runner.play as play

    whole = _events(_fork(parent, tmp_path / "whole", 4, "rule:setting=economy.rent,value=30", seed=1))
    real = play.close_episode

    def stop_at_9(cfg, economy, rec, tasks, state, ep):
        if ep.round == 9:
            raise KeyboardInterrupt("stopped")
        real(cfg, economy, rec, tasks, state, ep)

    monkeypatch.setattr(play, "close_episode", stop_at_9)
    with pytest.raises(KeyboardInterrupt):
        _fork(parent, tmp_path / "cut", 4, "rule:setting=economy.rent,value=30", seed=1)
    monkeypatch.setattr(play, "close_episode", real)
    m = read_manifest(parent)
    spec = ForkSpec(parent=m.run_id, parent_digest=parent_digest(parent), at=4, seed=1,
                    intervention=as_intervention("rule:setting=economy.rent,value=30"))
    cfg = EconomyRunConfig.model_validate({**m.config, "fork": spec.model_dump()})
    run = run_economy(cfg, tmp_path / "cut", replay=Replay.from_run(parent, at=4), resume=True)
    assert _events(run) == whole
