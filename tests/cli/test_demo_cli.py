"""`scarce-lab demo` (the README's main job) says how each game ended and how the model
calls went before Table 1, and its table keeps "n/a" apart from "none (0/N)"."""

from __future__ import annotations

from typer.testing import CliRunner

from scarce_lab.cli import app


def test_demo_reports_each_game_and_the_table(tmp_path):
    res = CliRunner().invoke(app, ["demo", "-m", "scripted/greedy", "--no-notebook",
                                   "--out", str(tmp_path / "runs"), "--figures", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("[demo]   ")]
    assert [ln.split()[1] for ln in lines] == ["cpr", "bcpr", "kcpr", "kcpr_m"]  # the paper's order
    assert all("ran all 12 rounds" in ln or "collapsed in round" in ln for ln in lines)
    assert "model calls" not in res.output  # scripted agents make none
    cpr_row = next(ln for ln in res.output.splitlines() if ln.startswith("| scripted/greedy | cpr |"))
    assert cpr_row.rstrip(" |").endswith("n/a")  # no leader in CPR: not applicable


def test_demo_reports_only_its_own_games(tmp_path):
    """Another model's runs in the same folder were listed and tabulated as the demo's."""
    runs = str(tmp_path / "runs")
    first = CliRunner().invoke(app, ["demo", "-m", "scripted/greedy", "--no-notebook", "--out", runs])
    assert first.exit_code == 0, first.output
    res = CliRunner().invoke(app, ["demo", "-m", "scripted/sustainable", "--no-notebook", "--out", runs])
    assert res.exit_code == 0, res.output
    assert "4 other run(s)" in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("[demo]   ")]
    assert len(lines) == 4 and all("ran all 12 rounds" in ln for ln in lines)  # sustainable survives
    assert "| scripted/greedy |" not in res.output


def test_demo_is_the_one_declared_by_a_spec(monkeypatch, tmp_path):
    """The command names no environment: it plays the spec that declares a demo, with the
    options as given, and exits with its code; none or several declared is refused."""
    import dataclasses

    from scarce_lab import registry

    sovsim = registry.get("sovsim")
    assert sovsim.demo is not None and [s.name for s in registry.specs() if s.demo] == ["sovsim"]
    seen = []

    def fake(**options):
        seen.append(options)
        return 3

    other = dataclasses.replace(sovsim, name="other", config=type("OtherConfig", (), {"run_id": "x"}), demo=fake)
    monkeypatch.setattr(registry, "specs", lambda: [other])
    res = CliRunner().invoke(app, ["demo", "-m", "scripted/greedy", "-n", "2", "--seed", "5", "--no-notebook",
                                   "--out", str(tmp_path / "r"), "--figures", str(tmp_path / "f")])
    assert res.exit_code == 3
    assert seen == [{"model": "scripted/greedy", "simulations": 2, "seed": 5, "out": tmp_path / "r",
                     "figures": tmp_path / "f", "notebook": False}]
    monkeypatch.setattr(registry, "specs", lambda: [sovsim, other])
    res = CliRunner().invoke(app, ["demo", "--no-notebook"])
    assert res.exit_code == 2 and "environments with one: sovsim, other" in res.output
    monkeypatch.setattr(registry, "specs", lambda: [dataclasses.replace(sovsim, demo=None)])
    res = CliRunner().invoke(app, ["demo", "--no-notebook"])
    assert res.exit_code == 2 and "environments with one: none" in res.output and len(seen) == 1
