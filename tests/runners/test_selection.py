"""Selection chains over models (scarce_lab.runners.selection): the rules on synthetic
payoffs, reproducibility, resume after an interruption, the chain state's gate, and
generations that are never pooled."""

from __future__ import annotations

import json
import random

import polars as pl
import pytest

from scarce_lab.environments.sovsim.config import SovSimConfig
from scarce_lab.runners import selection as sel
from scarce_lab.runners.selection import SelectionError, eom_step, replicator_step, select

POP = "scripted/sustainable,scripted/greedy"


def _base(**kw):
    return SovSimConfig(condition="cpr", model="scripted/random", game={"rounds": 3}, seed=kw.pop("seed", 11), **kw)


# -- the rules on synthetic payoffs ------------------------------------------------------------
def test_replicator_a_dominant_model_takes_over():
    seats = [f"s{i}" for i in range(6)]
    assignment = {s: ("m/low" if i < 5 else "m/high") for i, s in enumerate(seats)}
    rng = random.Random(3)
    for _ in range(40):
        payoffs = {s: (9.0 if m == "m/high" else 1.0) for s, m in assignment.items()}
        assignment, note = replicator_step(assignment, payoffs, rng)
        assert note == ""
    assert set(assignment.values()) == {"m/high"}


def test_replicator_a_model_without_payoff_dies_out_in_one_step():
    assignment = {"x": "m/a", "y": "m/b", "z": "m/b"}
    nxt, _ = replicator_step(assignment, {"x": 2.5, "y": 0.0, "z": 0.0}, random.Random(0))
    assert nxt == dict.fromkeys(assignment, "m/a")


def test_replicator_refuses_negative_payoffs_and_says_when_the_draw_is_neutral():
    with pytest.raises(SelectionError, match="seat 'y' has payoff -1.0"):
        replicator_step({"x": "m/a", "y": "m/b"}, {"x": 1.0, "y": -1.0}, random.Random(0))
    _, note = replicator_step({"x": "m/a", "y": "m/b"}, {"x": 0.0, "y": 0.0}, random.Random(0))
    assert "neutral" in note


def test_eom_kills_the_bankrupt_and_copies_the_richest():
    assignment = {"p": "m/a", "q": "m/b", "r": "m/c"}
    step = eom_step(assignment, {"p": 1.0, "q": 7.0, "r": 4.0}, {"p": 0.5, "q": 0.0, "r": 0.0}, random.Random(0),
                    initial_wealth=0.5)
    # rent = mean payoff 4.0: p 0.5+1-4 = -2.5 (bankrupt), q +3, r 0 (alive: not below zero)
    assert step.deaths == {"p": -2.5}
    assert step.births == {"p": "q"}
    assert step.assignment == {"p": "m/b", "q": "m/b", "r": "m/c"}
    assert step.wealth == {"p": 0.5, "q": 3.0, "r": 0.0}


def test_eom_wealth_carries_over_and_a_fixed_rent_applies():
    assignment = {"p": "m/a", "q": "m/b"}
    step = eom_step(assignment, {"p": 2.0, "q": 2.0}, {"p": 1.0, "q": 5.0}, random.Random(0), rent=2.5)
    assert step.deaths == {} and step.wealth == {"p": 0.5, "q": 4.5}
    ruin = eom_step(assignment, {"p": 0.0, "q": 0.0}, {"p": 1.0, "q": 1.0}, random.Random(0), rent=3.0,
                    initial_wealth=2.0)
    assert set(ruin.deaths) == {"p", "q"} and ruin.assignment == assignment and "every seat" in ruin.note
    assert ruin.wealth == {"p": 2.0, "q": 2.0}


# -- chains of runs ---------------------------------------------------------------------------
def test_same_seed_same_chain_and_generations_are_never_pooled(tmp_path):
    a = select(_base(), POP, generations=2, rule="replicator", chains=2, out=tmp_path / "a")
    b = select(_base(), POP, generations=2, rule="replicator", chains=2, out=tmp_path / "b")
    assert a.state.chains == b.state.chains
    run_ids = [r for c in a.state.chains for g in c.generations for r in g.run_ids]
    assert len(run_ids) == 4 == len(set(run_ids))
    conditions = set()
    for rid in run_ids:
        m = json.loads((tmp_path / "a" / rid / "manifest.json").read_text())
        tag = {k: v for k, v in m["condition_settings"].items() if k.startswith("chain.")}
        assert set(tag) == {"chain.chain", "chain.generation", "chain.rule"}
        conditions.add(m["condition"])
    assert len(conditions) == 4  # every generation of every chain its own condition
    other = select(_base(seed=12), POP, generations=2, rule="replicator", chains=2, out=tmp_path / "c")
    assert {r for c in other.state.chains for g in c.generations for r in g.run_ids}.isdisjoint(run_ids)


def test_interrupted_chain_resumes_where_it_stopped_and_a_finished_one_runs_nothing(tmp_path, monkeypatch):
    whole = select(_base(), POP, generations=4, rule="eom", chains=2, out=tmp_path / "whole", initial_wealth=3.0)
    from scarce_lab.runners import sweep

    real, calls = sweep.play, []

    def stop_at_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # a kill while generation 2 plays
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "play", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        select(_base(), POP, generations=4, rule="eom", chains=2, out=tmp_path / "cut", initial_wealth=3.0)
    monkeypatch.setattr(sweep, "play", real)
    half = sel.read_state(tmp_path / "cut")
    assert [len(c.generations) for c in half.chains] == [3, 3] and half.chains[0].generations[2].payoffs is None
    resumed = select(_base(), POP, generations=4, rule="eom", chains=2, out=tmp_path / "cut", initial_wealth=3.0)
    assert len(resumed.played) == 4  # generations 2 and 3 of both chains, nothing before
    assert resumed.state.chains == whole.state.chains
    again = select(_base(), POP, generations=4, rule="eom", chains=2, out=tmp_path / "cut", initial_wealth=3.0)
    assert again.played == []


def test_other_settings_in_the_folder_are_refused_by_name(tmp_path):
    select(_base(), POP, generations=1, rule="replicator", out=tmp_path)
    with pytest.raises(SelectionError, match="rule: 'replicator' there, 'eom' asked"):
        select(_base(), POP, generations=1, rule="eom", out=tmp_path)
    with pytest.raises(SelectionError, match=r"base config differs in \['seed'\]"):
        select(_base(seed=5), POP, generations=1, rule="replicator", out=tmp_path)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda s: s["chains"][0]["generations"][0]["assignment"].update(a1="evil/model"),
     "chains.0.generations.0.assignment.a1"),
    (lambda s: s["chains"][0]["generations"][0].update(payoffs={"a0": "lots"}), "payoffs.a0"),
    (lambda s: s["chains"][0]["generations"][0].update(generation=4), "chains.0.generations.0.generation"),
    (lambda s: s["settings"].update(generations=-2), "settings.generations"),
    (lambda s: s["chains"].append({"chain": 7, "generations": []}), "chains: expected chains"),
])
def test_a_hostile_chain_state_is_refused_naming_the_field(tmp_path, edit, field):
    select(_base(), POP, generations=2, rule="replicator", out=tmp_path)
    path = tmp_path / sel.STATE_FILE
    state = json.loads(path.read_text())
    edit(state)
    path.write_text(json.dumps(state))
    with pytest.raises(SelectionError, match="wrong kind or value") as err:
        sel.read_state(tmp_path)
    assert field in str(err.value)
    with pytest.raises(SelectionError):
        select(_base(), POP, generations=2, rule="replicator", out=tmp_path)


def test_a_state_file_with_nan_or_a_repeated_key_is_refused_by_the_read_gate(tmp_path):
    select(_base(), POP, generations=1, rule="replicator", out=tmp_path)
    path = tmp_path / sel.STATE_FILE
    text = path.read_text()
    path.write_text(text.replace('"version": 1', '"version": 1, "version": 1', 1))
    with pytest.raises(SelectionError, match="not readable as a chain state file"):
        sel.read_state(tmp_path)


def test_bad_settings_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(SelectionError, match="population"):
        select(_base(), "scripted/greedy", generations=2, rule="replicator", out=tmp_path / "x")
    with pytest.raises(SelectionError, match="rule"):
        select(_base(), POP, generations=2, rule="tournament", out=tmp_path / "x")
    with pytest.raises(SelectionError, match="settings of rule eom"):
        select(_base(), POP, generations=2, rule="replicator", rent=1.0, out=tmp_path / "x")
    with pytest.raises(SelectionError, match="no seat 'queen'"):
        select(_base(), POP, generations=2, rule="replicator", seats="queen", out=tmp_path / "x")
    with pytest.raises(SelectionError, match=r"seats\.a2: the base config gives a model"):
        select(_base(seats={"a2": "scripted/greedy"}), POP, generations=2, rule="replicator", out=tmp_path / "x")
    assert not (tmp_path / "x" / sel.STATE_FILE).exists()


def test_share_summary_gives_intervals_only_from_the_checked_chain_count(tmp_path):
    few = select(_base(), POP, generations=1, rule="replicator", chains=sel.MIN_CHAINS - 1, out=tmp_path / "few")
    summary = few.summary()
    assert summary["ci_low"].is_null().all() and summary["why"].str.contains("chain").all()
    shares = few.shares()
    assert shares.height == 2 * (sel.MIN_CHAINS - 1)  # one row per chain and model
    assert (shares.group_by("chain").agg(total=pl.col("share").sum())["total"] == 1.0).all()
    many = select(_base(), POP, generations=1, rule="replicator", chains=sel.MIN_CHAINS, out=tmp_path / "many")
    s = many.summary()
    assert s["ci_low"].is_not_null().all()
    assert ((s["ci_low"] <= s["share"]) & (s["share"] <= s["ci_high"])).all()
    seats = sel.seat_rows(tmp_path / "many")
    assert seats.height == sel.MIN_CHAINS * 4 and seats["payoff"].min() >= 0


def test_the_command_runs_a_selection_and_refuses_a_sweep(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["select", "sovsim", "--population", POP, "--generations", "2", "--rule", "eom",
                              "--chains", "2", "-S", "game.rounds=3", "--out", str(tmp_path)])
    assert "a selection starts from one base config" in res.output and res.exit_code != 0
    res = runner.invoke(app, ["select", "sovsim", "--population", POP, "--generations", "2", "--rule", "eom",
                              "--chains", "2", "-c", "cpr", "-S", "game.rounds=3", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "4 run(s) played now" in res.output and "generation 1: scripted/greedy share" in res.output
    assert sel.read_state(tmp_path).settings["rule"] == "eom"


def test_an_environment_without_payoffs_per_seat_is_refused_by_name(tmp_path):
    from dataclasses import replace

    from scarce_lab.environments.economy.config import EconomyRunConfig
    from scarce_lab.registry import get

    with pytest.raises(SelectionError, match="'economy' gives no payoff per seat"):
        select(EconomyRunConfig(), POP, generations=2, rule="eom", out=tmp_path)
    with pytest.raises(ValueError, match="'seat_payoffs' and 'payoff_meaning' go together"):
        replace(get("sovsim"), payoff_meaning="")


def test_a_second_process_selecting_into_the_same_folder_is_refused(tmp_path):
    import fcntl

    out = tmp_path / "o"
    out.mkdir()
    with open(out / ".selection.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another chain holds the folder
        with pytest.raises(SelectionError, match=r"another selection is writing this folder now .*\.selection\.lock"):
            select(_base(), POP, generations=2, rule="replicator", chains=2, out=out)
    assert not any(p.name.startswith("sovsim") for p in out.iterdir())  # nothing ran
    select(_base(), POP, generations=1, rule="replicator", chains=1, out=out)  # released: it runs
