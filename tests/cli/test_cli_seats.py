"""``--seat KEY=MODEL`` (every run command) and ``-S seats.KEY=...`` build the same
SovSim configs; a bad seat is refused by name before anything runs."""

from __future__ import annotations

from typer.testing import CliRunner

from scarce_lab.cli import app

runner = CliRunner()


def _record(monkeypatch):
    import scarce_lab.environments.sovsim.runner.play as rv

    seen: list = []

    def sweep(configs, out, **kw):
        seen.extend(configs)
        return [rv.GameResult(c.run_id, "complete") for c in configs]

    monkeypatch.setattr(rv, "run_sweep", sweep)
    return seen


def test_seat_option_equals_dash_s(monkeypatch, tmp_path):
    seen = _record(monkeypatch)
    base = ["run", "sovsim", "--out", str(tmp_path), "--no-progress", "--condition", "kcpr", "--simulations", "1"]
    a = runner.invoke(app, [*base, "--seat", "king=scripted/greedy", "--seat", "*=scripted/sustainable"])
    assert a.exit_code == 0, a.output
    b = runner.invoke(app, [*base, "-S", "seats.king=scripted/greedy", "-S", "seats.*=scripted/sustainable"])
    assert b.exit_code == 0, b.output
    assert len(seen) == 2 and seen[0] == seen[1]
    assert seen[0].seat_models() == {"a0": "scripted/sustainable", "a1": "scripted/sustainable",
                                     "a2": "scripted/sustainable", "a3": "scripted/greedy"}
    # -S wins over --seat for the same key
    c = runner.invoke(app, [*base, "--seat", "king=scripted/greedy", "-S", "seats.king=scripted/random"])
    assert c.exit_code == 0 and seen[-1].seat_models()["a3"] == "scripted/random"


def test_a_misspelt_seat_is_refused_before_anything_runs(monkeypatch, tmp_path):
    seen = _record(monkeypatch)
    base = ["run", "sovsim", "--out", str(tmp_path), "--no-progress", "--condition", "kcpr"]
    res = runner.invoke(app, [*base, "--seat", "kign=scripted/greedy"])
    assert res.exit_code != 0 and "kign" in res.output and not seen
    res = runner.invoke(app, [*base, "--seat", "king"])
    assert res.exit_code != 0 and "KEY=MODEL" in res.output and not seen


def test_dry_run_names_each_seat_model(tmp_path):
    res = runner.invoke(app, ["run", "sovsim", "--out", str(tmp_path), "--condition", "kcpr", "--simulations", "2",
                              "--seat", "king=openai/gpt-4o", "--seat", "*=openai/gpt-4o-mini", "-S", "game.rounds=2",
                              "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "openai/gpt-4o: 4-8 calls" in res.output  # the king's 2 decisions per game x 2 games
    assert "openai/gpt-4o-mini: 12-24 calls" in res.output
    assert "seats king=gpt-4o, others=gpt-4o-mini: 2 runs" in res.output


def test_every_run_command_lists_seat():
    for env in ("sovsim", "scarce", "economy"):
        res = runner.invoke(app, ["run", env, "--help"], terminal_width=400, env={"COLUMNS": "400"})
        assert res.exit_code == 0 and "--seat" in res.output, env
