"""The trajectory format is a versioned contract: pinned schema, golden runs, typed
loading, migrations of older files, clear errors for newer or unknown ones, Parquet
round trips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scarce_lab.data.events import (
    ENVIRONMENTS,
    SCHEMA_VERSION,
    UnknownEnvironmentError,
    event_model,
    payload_types,
)
from scarce_lab.data.events.migrations import SchemaVersionError
from scarce_lab.data.loaders import export_parquet, load_dataset, payload_schema
from scarce_lab.data.recorder import read_manifest
from scarce_lab.data.schema import contract_json_schema
from tests.golden_runs import GOLDEN, make_golden_runs, normalized

GOLDEN_DIR = Path(__file__).parents[1] / "golden"


def test_format_change_needs_a_version_bump():
    pinned = GOLDEN_DIR / f"schema_v{SCHEMA_VERSION}.json"
    assert pinned.exists(), f"no pinned schema for version {SCHEMA_VERSION}: run scripts/make_golden.py"
    now = json.loads(json.dumps(contract_json_schema(), sort_keys=True))
    if now != json.loads(pinned.read_text()):
        pytest.fail(
            "the trajectory format changed but SCHEMA_VERSION did not: bump it in "
            "scarce_lab/data/events/base.py, add a migration in data/events/migrations.py, "
            "then run scripts/make_golden.py"
        )


@pytest.mark.parametrize("env", sorted(GOLDEN))
def test_golden_runs_reproduce_byte_for_byte(tmp_path, env):
    GOLDEN[env](tmp_path)
    (fresh,) = sorted(p.parent for p in (tmp_path / env).rglob("manifest.json"))
    (pinned,) = sorted(p.parent for p in (GOLDEN_DIR / f"v{SCHEMA_VERSION}" / env).rglob("manifest.json"))
    assert fresh.name == pinned.name
    assert normalized(fresh) == normalized(pinned)


def test_every_payload_field_has_a_fixed_column_type():
    for env in ENVIRONMENTS:
        for kind in payload_types(env):
            schema = payload_schema(env, kind)  # raises TypeError for a dict field
            assert pl.DataFrame(schema=schema).columns == list(schema), (env, kind)


def test_no_payload_field_shadows_an_envelope_field():
    from scarce_lab.data.events.base import EventEnvelope

    envelope = set(EventEnvelope.model_fields) - {"kind"}
    for env in ENVIRONMENTS:
        for kind, model in payload_types(env).items():
            clash = envelope & set(model.model_fields)
            assert not clash, f"{env}.{kind} payload reuses envelope field(s) {sorted(clash)}"


def test_payloads_load_typed_end_to_end():
    ds = load_dataset(GOLDEN_DIR / f"v{SCHEMA_VERSION}")
    rounds = ds.payloads("round", "sovsim").collect()
    assert rounds.schema["extractions"] == pl.List(pl.Int64) and rounds.schema["collapsed"] == pl.Boolean
    pop = ds.payloads("population", "economy").collect()
    assert pop.schema["agents"] == pl.List(pl.Struct({"agent": pl.String, "wealth": pl.Int64, "bid": pl.Int64,
                                                      "novice": pl.Boolean}))
    ev = ds.events.collect()
    private = ev.filter(pl.col("kind") == "extraction")
    assert (private["visibility"] == "private").all()
    assert all(v == [a] for v, a in zip(private["visible_to"].to_list(), private["agent"].to_list(), strict=True))


def test_version_1_runs_are_migrated_on_read_and_by_migrate(tmp_path):
    from scarce_lab.config.migrate import migrate_dataset

    v1 = GOLDEN_DIR / "v1"
    on_the_fly = load_dataset(v1)
    assert set(on_the_fly.environments) == {"sovsim", "economy", "scarce"}
    copy = tmp_path / "v1"
    shutil.copytree(v1, copy)
    assert len(migrate_dataset(copy)) == 4
    rewritten = load_dataset(copy)
    for env in on_the_fly.environments:
        for kind in payload_types(env):
            assert_frame_equal(on_the_fly.payloads(kind, env).collect(), rewritten.payloads(kind, env).collect())
    m = read_manifest(next(copy.glob("sovsim-*")))
    assert m.schema_version == SCHEMA_VERSION
    # settings the old manifest lacked come from the run's own model-call records
    assert m.condition_settings["llm.max_tokens"] == 110 and m.condition_settings["condition"] == "kcpr_m"
    assert migrate_dataset(copy) == []  # already current


def test_version_2_runs_read_as_the_current_version(tmp_path):
    """Version 3 only added a kind: the version-2 golden runs load with the same typed
    payloads as a fresh run of the current version (the manifests differ in the version)."""
    old, new = load_dataset(GOLDEN_DIR / "v2"), load_dataset(GOLDEN_DIR / f"v{SCHEMA_VERSION}")
    assert set(old.environments) == set(new.environments) == {"sovsim", "economy", "scarce"}
    for env in old.environments:
        for kind in payload_types(env):
            assert_frame_equal(old.payloads(kind, env).collect(), new.payloads(kind, env).collect())
    assert {m.schema_version for m in old.manifests} == {SCHEMA_VERSION}  # migrated on read


def test_newer_or_unknown_version_and_environment_are_clear_errors(tmp_path):
    run = tmp_path / "r"
    shutil.copytree(next((GOLDEN_DIR / f"v{SCHEMA_VERSION}" / "sovsim").iterdir()), run)
    m = json.loads((run / "manifest.json").read_text())
    for bad, message in ((SCHEMA_VERSION + 1, "newer than this scarce_lab"), ("2", "unknown schema_version")):
        (run / "manifest.json").write_text(json.dumps({**m, "schema_version": bad}))
        with pytest.raises(SchemaVersionError, match=rf"{run / 'manifest.json'}.*{message}"):
            load_dataset(run)
    (run / "manifest.json").write_text(json.dumps({**m, "environment": "chess"}))
    with pytest.raises(UnknownEnvironmentError, match="chess"):
        load_dataset(run)


def test_private_events_name_who_saw_them():
    model = event_model("scarce")
    base = {"run_id": "r", "seq": 0, "kind": "memory_save", "payload": {"subrun": 0, "text": "x"}}
    with pytest.raises(ValueError, match="visible_to"):
        model.model_validate({**base, "visibility": "private"})
    with pytest.raises(ValueError, match="only for private"):
        model.model_validate({**base, "visibility": "public", "visible_to": ["w0"]})
    with pytest.raises(ValueError, match="extra"):  # a field the kind does not have
        model.model_validate({**base, "payload": {"subrun": 0, "text": "x", "budget": 5}})


def test_parquet_export_loads_back_identically(tmp_path):
    src = GOLDEN_DIR / "v1"
    ds = load_dataset(src)
    export_parquet(ds, tmp_path / "pq")
    back = load_dataset(tmp_path / "pq")
    assert back.manifests == ds.manifests
    for name in ("runs", "events", "llm_calls"):
        assert_frame_equal(getattr(ds, name).collect(), getattr(back, name).collect())
    for env in ds.environments:
        for kind in payload_types(env):
            assert_frame_equal(ds.payloads(kind, env).collect(), back.payloads(kind, env).collect())


def test_golden_runs_can_be_rebuilt(tmp_path):
    make_golden_runs(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == set(GOLDEN)
    assert load_dataset(tmp_path).environments == sorted(GOLDEN)
