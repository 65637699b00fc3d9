"""`scarce-lab run scarce` with seats and joins: -S spelling, dry-run plan per seat."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.environments.scarce import plan_calls
from scarce_lab.environments.scarce.config import ScarceConfig


def test_plan_counts_each_seat_and_the_subruns_it_plays():
    cfg = ScarceConfig(workers=4, subruns=3, model="scripted/fifo", max_solver_steps=10, private_rounds=2,
                       joins={"w3": 1}, leaves={"w0": 0},
                       seats={"w0": "fake/a", "w3": "fake/a", "w1.negotiator": "fake/b"})
    # fake/a solves for w0 (subrun 0 only) and w3 (subruns 1, 2): 3 worker-subruns x 10 steps x 2
    # fake/a negotiates for w0 and w3, never present together: at most 1 per contention x (3 + 2)
    assert plan_calls(cfg, "fake/a") == (3, 60, 5)
    assert plan_calls(cfg, "fake/b") == (0, 0, 5)
    assert plan_calls(cfg, "scripted/fifo")[1] == 2 * 10 * (2 * 3)  # solvers of w1, w2 x 3 subruns each


def test_cli_dry_run_with_seats_and_a_newcomer(tmp_path):
    r = CliRunner().invoke(app, [
        "run", "scarce", "--workers", "6", "--subruns", "3", "-m", "scripted/routine",
        "-S", "seats.w0=openai/gpt-4o-mini", "-S", "seats.*.negotiator=scripted/strategic", "-S", "joins.w5=2",
        "--dry-run", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "dry run: 1 scarce run(s), nothing sent" in r.output
    # w0 (seat: solver and negotiator) plays 3 subruns: 2 x 60 steps x 3; 1 negotiator x (3 + 2 private rounds)
    # at most 60 contentions a subrun for w0 x 5 calls x 2 (a second call each) x 3 subruns
    assert "openai/gpt-4o-mini: 3-360 calls + 5 negotiator calls per contention (at most 1800 in all);" in r.output
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_seat_with_no_worker(tmp_path):
    r = CliRunner().invoke(app, ["run", "scarce", "--workers", "2", "-S", "seats.w4=scripted/fifo",
                                 "--dry-run", "-o", str(tmp_path / "out")])
    assert r.exit_code != 0 and "w4" in r.output


def test_preflight_checks_every_seat_model(monkeypatch):
    from scarce_lab.runners.preflight import ModelUnavailableError, check_configs

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = ScarceConfig(workers=2, model="scripted/fifo", seats={"w1.negotiator": "openai/gpt-4o-mini"})
    with pytest.raises(ModelUnavailableError, match=r"seats.w1.negotiator"):
        check_configs([cfg])
    check_configs([ScarceConfig(workers=2, model="scripted/fifo", seats={"w1": "embedded/smollm2"})])
    with pytest.raises(ModelUnavailableError, match=r"seats.w1"):
        check_configs([ScarceConfig(workers=2, model="scripted/fifo", seats={"w1": "embedded/nope"})])
