"""A fourth environment is one package and one registration.

The counter game of ``tests/toy_env`` is registered from the tests only
(:func:`scarce_lab.registry.register`) and then goes through every shared layer
unchanged: ``sl.run`` and the executor task run it, the recorder writes it,
``sl.load`` and the Parquet export read it back (``sl.load`` also finds its published
layout: tests/data/test_views.py), its view, tidy table and paper table are built, the
viewer renders it, ``scarce-lab migrate`` leaves it alone, and the conformance suite
(privacy canaries, determinism) passes on it and catches a planted leak in it. The registry refuses duplicate names, a config class used twice and a
spec with a missing or wrong field, naming it.
"""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab import registry as environments
from scarce_lab.testing import HARNESSES, Observation, check_environment, check_privacy
from tests.toy_env.spec import SPEC, ToyConfig


@pytest.fixture
def toy():
    environments.register(SPEC)
    yield SPEC
    environments.unregister("toy")


def test_the_toy_runs_records_loads_tables_and_views(toy, tmp_path):
    assert "toy" in environments.names() and environments.get("toy") is toy
    assert environments.for_config(ToyConfig()) is toy
    dirs = sl.run(ToyConfig(rounds=3, seed=1), out=tmp_path / "runs")
    assert [d.name for d in dirs] == ["toy-r3-s1"]
    manifest = json.loads((dirs[0] / "manifest.json").read_text())
    assert manifest["environment"] == "toy" and manifest["status"] == "complete"

    ds = sl.load(tmp_path / "runs")
    assert ds.environments == ["toy"]
    moves = toy.tables["moves"](ds)
    assert ds.toy.moves.equals(moves)  # its view (EnvironmentSpec.view)
    assert moves.height == 6 and sorted(set(moves["agent"])) == ["a0", "a1"]
    assert moves["round"].to_list() == [1, 1, 2, 2, 3, 3]
    # the counter after a round is the sum of the increments so far
    per_round = moves.group_by("round").agg(moves_sum=pl.col("increment").sum()).sort("round")
    assert moves.filter(agent="a0")["counter_after"].to_list() == per_round["moves_sum"].cum_sum().to_list()
    # the events are private to their agent, as the payload model declares
    events = ds.events.collect().filter(kind="move")
    assert set(events["visibility"]) == {"private"}

    table = sl.table(tmp_path / "runs").frame
    assert table["runs"].to_list() == [1] and table["final_mean"].to_list() == [moves["counter_after"].max()]
    with pytest.raises(TypeError, match="unknown option 'bi' for a toy table"):
        sl.table(ds, bi="run_id")
    assert sl.table(ds, by="run_id").frame["run_id"].to_list() == ["toy-r3-s1"]
    # the toy's default is 4 rounds: every run plays 3, and the table says so
    assert sl.table(ds).departures == {"rounds": 3}

    out = sl.export(tmp_path / "runs", tmp_path / "export")
    assert toy.tables["moves"](sl.load(out)).equals(moves)

    page = sl.view(dirs[0])._repr_html_()
    assert 'data-env="toy"' in page and "Round 3:" in page and "a1 +" in page

    from scarce_lab.config.migrate import migrate_dataset

    assert migrate_dataset(tmp_path / "runs") == []  # current version: nothing rewritten


def test_the_toy_runs_through_the_executor_task_and_resumes(toy, tmp_path):
    from scarce_lab.runners.executors import run_task

    cfg = ToyConfig(rounds=2, seed=3)
    task = run_task("toy")
    assert task(cfg, tmp_path, False).status == "complete"
    again = task(cfg, tmp_path, False)  # complete: open_run skips it
    assert again.status == "complete" and (tmp_path / cfg.run_id / "events.jsonl").exists()
    other = ToyConfig(rounds=2, seed=4)
    (tmp_path / other.run_id).mkdir()
    (tmp_path / other.run_id / "manifest.json").write_text(
        (tmp_path / cfg.run_id / "manifest.json").read_text())  # a folder holding another run
    assert task(other, tmp_path, False).status == "error"


def test_the_toy_task_travels_to_a_node_by_reference_and_returns_its_folder(toy, tmp_path):
    """What a Ray node does with the task (:func:`scarce_lab.runners.executors._remote_body`
    in ``return`` mode), without Ray: the task pickles by reference and the finished
    run folder's files come back."""
    import pickle

    from scarce_lab.runners.executors import _path_run, _remote_body, run_task

    assert pickle.loads(pickle.dumps(run_task("sovsim"))) is environments.get("sovsim").run_task
    task = pickle.loads(pickle.dumps(run_task("toy")))  # no run_task of its own: run, read the manifest
    assert task.func is _path_run and task.args == (toy.run,)
    cfg = ToyConfig(rounds=2, seed=5)
    outcome, files = _remote_body(task, cfg, str(tmp_path / "driver"), False, "return", {})
    assert outcome.status == "complete" and {"manifest.json", "events.jsonl"} <= set(files)
    assert not (tmp_path / "driver").exists()  # the node wrote in its own temporary folder
    assert json.loads(files["manifest.json"])["environment"] == "toy"


def test_the_cli_gets_run_and_table_commands_for_the_toy(toy, tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from scarce_lab.cli.environment import add_all, remove_commands

    add_all()
    try:
        cli = CliRunner()
        res = cli.invoke(app, ["run", "toy", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
        assert res.exit_code == 0 and "--rounds" in res.output and "--resume" in res.output
        res = cli.invoke(app, ["run", "toy", "--rounds", "2", "--seed", "7", "-o", str(tmp_path)])
        assert res.exit_code == 0, res.output
        # one line per finished run (the spec has no outcome of its own: its status), then the counts
        assert res.output.splitlines() == [f"{tmp_path / 'toy-r2-s7'}: complete",
                                           f"1 Counter game (test toy) run(s) -> {tmp_path}: complete 1"]
        res = cli.invoke(app, ["run", "toy", "--rounds", "0", "-o", str(tmp_path)])
        assert res.exit_code == 2 and "rounds" in res.output  # the config refuses it, naming the field
        res = cli.invoke(app, ["table", "toy", str(tmp_path), "-f", "csv", "--by", "run_id"])
        assert res.exit_code == 0, res.output
        assert res.output.splitlines()[0] == "run_id,runs,final_mean" and "toy-r2-s7,1," in res.output
        res = cli.invoke(app, ["table", "toy", str(tmp_path), "--bi", "run_id"])
        assert res.exit_code == 2 and "No such option: --bi" in res.output
        res = cli.invoke(app, ["table", "toy", str(tmp_path)])  # Markdown, with what departs from the defaults
        assert res.exit_code == 0 and "Every run departs from the paper's defaults in: rounds=2." in res.output
    finally:
        remove_commands("toy")
    assert "toy" not in cli.invoke(app, ["run", "--help"]).output


def test_a_dry_run_of_the_toy_plans_only_what_its_spec_can_count(toy, tmp_path):
    plan = sl.run(ToyConfig(), out=tmp_path, dry_run=True)
    assert plan.environment == "toy" and plan.runs == ["toy-r4-s0"] and plan.models == {}
    assert not any(tmp_path.iterdir())  # nothing ran
    with pytest.raises(ValueError, match="'toy' gives no estimate of its model calls"):
        sl.run(ToyConfig(model="openai/gpt-4o-mini"), out=tmp_path, dry_run=True)


def test_the_toy_passes_conformance_and_the_suite_catches_a_leak_in_it(toy):
    assert "toy" in HARNESSES and HARNESSES["toy"] is toy.harness
    check_environment(HARNESSES["toy"])

    def leaky(seed):
        t = toy.harness(seed)
        o = t.observations[3]
        t.observations[3] = Observation(o.agent, o.text + " 9001 9002", ("the other's target",), o.own)
        return t

    with pytest.raises(AssertionError, match="sees the other's target"):
        check_privacy(leaky)


def test_after_unregistering_the_toy_is_unknown_everywhere(tmp_path):
    environments.register(SPEC)
    sl.run(ToyConfig(rounds=1), out=tmp_path)
    environments.unregister("toy")
    assert "toy" not in environments.names() and "toy" not in HARNESSES
    with pytest.raises(environments.UnknownEnvironmentError, match="unknown environment 'toy'"):
        sl.load(tmp_path)
    with pytest.raises(TypeError, match="ToyConfig is not the config of a registered environment"):
        sl.run(ToyConfig(rounds=1), out=tmp_path)


def test_the_registry_refuses_duplicates_and_incomplete_specs(toy):
    with pytest.raises(ValueError, match="environment 'toy' is already registered"):
        environments.register(dataclasses.replace(SPEC, title="another toy"))
    class Toy2Config(ToyConfig):
        ENVIRONMENT = "toy2"

    with pytest.raises(ValueError, match="'toy' and 'toy2' use configs ToyConfig and Toy2Config, one an instance"):
        environments.register(dataclasses.replace(SPEC, name="toy2", config=Toy2Config))
    fields = {f.name: getattr(SPEC, f.name) for f in dataclasses.fields(SPEC)}
    with pytest.raises(TypeError, match="render"):
        environments.EnvironmentSpec(**{k: v for k, v in fields.items() if k != "render"})
    with pytest.raises(TypeError, match="field 'harness' must be callable"):
        dataclasses.replace(SPEC, harness=None)
    with pytest.raises(ValueError, match="field 'payloads' must be a non-empty tuple"):
        dataclasses.replace(SPEC, payloads=())
    with pytest.raises(ValueError, match="declares ENVIRONMENT='toy'"):
        dataclasses.replace(SPEC, name="counter")
    with pytest.raises(ValueError, match="must match"):
        dataclasses.replace(SPEC, name="Toy Game")
    with pytest.raises(TypeError, match="register needs an EnvironmentSpec"):
        environments.register({"name": "toy3"})
    assert environments.get("toy") is toy  # the refusals left the registry as it was


def test_a_package_declares_the_toy_by_entry_point(monkeypatch, tmp_path):
    """A third party's package registers through the ``scarce_lab.registry``
    entry-point group: the registry and the trajectory format both find it, the format
    on the first lookup that misses (a loader reading a toy run in a fresh process)."""
    from importlib import metadata

    from scarce_lab.data.events import registry

    class EntryPoint:
        name, value = "toy", "tests.toy_env.spec:SPEC"

        def load(self):
            return SPEC

    def entry_points(group):
        return [EntryPoint()] if group == environments.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(environments, "_loaded", False)  # a fresh process: nothing loaded yet
    try:
        assert registry.registration("toy").payloads == SPEC.payloads  # a reader finds it (through the registry)
        assert environments.get("toy") is SPEC
        sl.run(ToyConfig(rounds=1), out=tmp_path)
        assert sl.load(tmp_path).environments == ["toy"]
    finally:
        environments.unregister("toy")
        registry.unregister_payloads("toy")


def test_an_entry_point_that_is_not_a_spec_is_refused(monkeypatch):
    from importlib import metadata

    class EntryPoint:
        name, value = "bad", "somewhere:THING"

        def load(self):
            return 42

    monkeypatch.setattr(metadata, "entry_points", lambda group: [EntryPoint()])
    monkeypatch.setattr(environments, "_loaded", False)
    for _ in range(2):  # a failed load is not taken for a finished one: the next lookup fails too
        with pytest.raises(TypeError, match="entry point bad = somewhere:THING .* loads int"):
            environments.names()
    monkeypatch.undo()
    assert environments.names() == ["economy", "scarce", "sovsim"]
