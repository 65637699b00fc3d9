"""``--population/--background/--focal-seats/--seat-part`` (or a ``population:`` block)
on the run commands: the grid is printed before anything runs, then played; the
analysis reads the compositions back from the manifests."""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

import scarce_lab as sl
from scarce_lab.cli import app
from scarce_lab.environments.sovsim.analysis.crossplay import crossplay_runs

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, ["run", *args], terminal_width=200,
                         env={"COLUMNS": "200", "NO_COLOR": "1", "OPENAI_API_KEY": "sk-test-not-a-key"})


def test_scarce_dry_run_prints_the_grid_and_its_runs(tmp_path):
    res = _run("scarce", "-n", "3", "--subruns", "1", "--model", "scripted/skilled:0.5", "--negotiator-model",
               "scripted/fifo", "--seed", "0", "--seed", "1", "--population", "scripted/strategic,openai/gpt-4o-mini",
               "--background", "scripted/fifo", "--seat-part", "negotiator", "--dry-run", "-o", str(tmp_path))
    assert res.exit_code == 0, res.output
    out = res.output
    assert "2 focal x 1 background = 2 composition(s) x 2 base run(s)" in out and "= 4 run(s)" in out
    assert "focal=gpt-4o-mini@w0.negotiator, background=fifo: 2 run(s)" in out
    assert "dry run: 4 scarce run(s), nothing sent" in out
    # the model negotiates only in its composition, for one worker of 3: (declaration, reasoning, 2 private
    # rounds, ballot) per contention of a run; at most 2 runs x 1 subrun x 60 solver steps x 5 x 2 (repairs)
    assert "openai/gpt-4o-mini: 0-0 calls + 5 negotiator calls per contention (at most 1200 in all)" in out
    assert not list(tmp_path.iterdir())  # nothing ran


def test_a_population_block_in_the_config_file(tmp_path):
    cfg = tmp_path / "grid.yaml"
    cfg.write_text("condition: kcpr\npopulation:\n  members: [scripted/greedy, scripted/sustainable]\n"
                   "  background: [scripted/sustainable]\n  focal_seats: king\n")
    res = _run("sovsim", "--config", str(cfg), "-n", "1", "--dry-run", "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert "2 focal x 1 background = 2 composition(s) x 1 base run(s)" in res.output
    assert "focal=greedy@a3, background=sustainable" in res.output
    # the option overrides the block's field
    res = _run("sovsim", "--config", str(cfg), "-n", "1", "--focal-seats", "a0", "--dry-run", "-o", str(tmp_path))
    assert "focal=greedy@a0, background=sustainable" in res.output


def test_options_without_a_population_and_bad_seats_are_refused(tmp_path):
    res = _run("sovsim", "--background", "scripted/greedy", "-o", str(tmp_path))
    assert res.exit_code != 0 and "--background needs --population" in res.output
    res = _run("sovsim", "-c", "cpr", "--population", "scripted/greedy", "--focal-seats", "king", "-o", str(tmp_path))
    assert res.exit_code != 0 and "no seat 'king'" in res.output
    assert not list(tmp_path.iterdir())


def test_a_played_grid_reads_back_as_compositions(tmp_path):
    out = tmp_path / "grid"
    res = _run("sovsim", "-c", "kcpr", "-n", "2", "-S", "game.rounds=3", "--population",
               "scripted/greedy,scripted/sustainable", "--background", "scripted/sustainable",
               "--focal-seats", "king", "--no-progress", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert res.output.index("cross-play grid") < res.output.index("4 SovSim run(s)")  # planned before it ran
    manifests = [json.loads(p.read_text()) for p in sorted(out.glob("*/manifest.json"))]
    assert len(manifests) == 4
    kings = sorted(m["models"]["a3"] for m in manifests)
    assert kings == ["scripted/greedy"] * 2 + ["scripted/sustainable"] * 2
    assert all(m["models"]["a0"] == "scripted/sustainable" for m in manifests)
    runs = crossplay_runs(out, focal="king")
    matrix = sl.sovsim.focal_payoff_matrix(sl.load(out), focal="king").frame
    assert matrix.select("focal_model", "background_model", "n_runs").sort("focal_model").rows() == [
        ("scripted/greedy", "scripted/sustainable", 2), ("scripted/sustainable", "scripted/sustainable", 2)]
    greedy = runs.filter(pl.col("focal_model") == "scripted/greedy")
    assert (greedy["advantage"] > 0).all()  # a greedy king takes the remainder the sustainable peasants leave


def test_sl_crossplay_plans_configs_for_sl_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    base = [sl.config.SovSimConfig(condition="kcpr", simulation=i, game={"rounds": 2}) for i in range(2)]
    plan = sl.crossplay(base, ["scripted/greedy", "openai/gpt-4o-mini"], background="scripted/sustainable",
                        focal_seats="king")
    assert len(plan.configs) == 4 and "2 composition(s) x 2 base run(s)" in str(plan)
    text = plan.describe()
    assert "model calls, openai/gpt-4o-mini: 4-8 calls" in text  # the king's 2 rounds x 2 simulations, x2 high
    sl.run(plan.configs[0], out=tmp_path)
    (m,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/manifest.json")]
    assert m["models"]["a3"] == "scripted/greedy"


def test_the_generic_run_command_of_a_registered_environment_takes_the_grid(tmp_path):
    """A fourth environment's generated ``run`` command has the options; one whose spec
    names no seats, or whose config holds none, is refused before anything runs."""
    import dataclasses

    from scarce_lab import registry as environments
    from scarce_lab.cli.environment import add_all, remove_commands
    from tests.toy_env.spec import SPEC

    for spec, match in ((SPEC, "'toy' names no seats"),
                        (dataclasses.replace(SPEC, seat_keys=lambda c: {"a0": (), "a1": ()}),
                         "ToyConfig has no 'seats' setting")):
        environments.register(spec)
        add_all()
        try:
            assert "--population" in _run("toy", "--help").output
            res = _run("toy", "--population", "scripted/counter", "-o", str(tmp_path))
            assert res.exit_code == 2 and match in " ".join(res.output.split()), res.output
        finally:
            remove_commands("toy")
            environments.unregister("toy")
    assert not list(tmp_path.iterdir())
