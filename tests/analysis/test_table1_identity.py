"""Table 1 is the same number after the bulk readers (one walk, manifests in one batch,
settings parsed once per distinct value) as before them: against frames saved by the
code before the change (``tests/golden_tables/``, written by ``main`` at 0cf441b), and
computed both ways (one folder read in bulk vs each run read alone and combined; the
per-run settings loop vs the per-distinct-settings join).

If the scripted runner's games change on purpose, regenerate ``table1_scripted_sweep.jsonl``
with :func:`_sweep` and ``sovsim_table(load_agent_rounds(folder)).write_ndjson(...)``."""

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scarce_lab.data.loaders import combine, find_run_dirs, load_dataset
from scarce_lab.environments.sovsim.analysis import conventions
from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table
from scarce_lab.environments.sovsim.tables import from_dataset, load_agent_rounds

GOLDEN = Path(__file__).parents[1] / "golden_tables"
SAMPLE = Path(__file__).parents[3] / "shared" / "data" / "sovsim_format_sample"
if not SAMPLE.exists():
    SAMPLE = Path("/work/shared/data/sovsim_format_sample")


def _saved(name: str, like: pl.DataFrame) -> pl.DataFrame:
    return pl.read_ndjson(GOLDEN / name, schema=like.schema)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    from scarce_lab.environments.sovsim.config import SovSimConfig
    from scarce_lab.environments.sovsim.runner.play import run_sweep

    out = tmp_path_factory.mktemp("sweep")
    cfgs = [SovSimConfig(condition=c, model=m, simulation=s, seed=s, game={"rounds": 4})
            for c in ("cpr", "bcpr", "kcpr", "kcpr_m") for m in ("scripted/greedy", "scripted/conditional")
            for s in (0, 1)]
    run_sweep(cfgs, out, progress=False)
    return out


def test_published_sample_table1_equals_the_saved_frame():
    if not SAMPLE.exists():
        pytest.skip("shared SovSim format sample not present")
    table = sovsim_table(load_agent_rounds(SAMPLE))
    assert table.height == 2
    assert_frame_equal(table, _saved("table1_sovsim_format_sample.jsonl", table))


def test_run_folders_table1_equals_the_saved_frame_cold_and_cached(sweep, tmp_path, monkeypatch):
    cold = sovsim_table(load_agent_rounds(sweep))
    assert cold.height == 8
    assert_frame_equal(cold, _saved("table1_scripted_sweep.jsonl", cold))
    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # the first read writes the cache, the second reads it
        assert_frame_equal(sovsim_table(load_agent_rounds(sweep, cache=True, lazy=True)), cold)


def test_bulk_read_equals_each_run_read_alone(sweep, tmp_path):
    """One folder read in one pass (batched manifests) gives the table that reading every
    run folder by itself (a one-manifest batch each) and combining them gives."""
    bulk = load_dataset(sweep)
    alone = combine([load_dataset(rd) for rd in find_run_dirs(sweep)])
    assert len(bulk.manifests) == 16
    assert bulk.manifests == alone.manifests
    assert_frame_equal(from_dataset(bulk), from_dataset(alone))
    assert_frame_equal(bulk.runs.collect(), alone.runs.collect())


def test_an_old_manifest_in_the_batch_is_read_file_by_file(sweep, tmp_path):
    """A manifest whose head is not the current version's (here: keys reordered, as a
    hand edit would) leaves the batch and is read alone: same manifests."""
    folder = tmp_path / "mixed"
    shutil.copytree(sweep, folder)
    rd = find_run_dirs(folder)[3]
    obj = json.loads((rd / "manifest.json").read_text())
    (rd / "manifest.json").write_text(json.dumps(dict(reversed(list(obj.items())))))
    assert load_dataset(folder).manifests == load_dataset(sweep).manifests


def _game_parameters_per_run(df: pl.DataFrame) -> pl.DataFrame:
    """The per-run loop :func:`conventions.game_parameters` used before (the reference)."""
    runs = (df.with_columns(_settings=pl.col("settings")).group_by("run_id").agg(
        pl.col("source").first(), pl.col("_settings").first(),
        pl.col("agent").n_unique().alias("observed_n_agents"),
        pl.col("pool_before").filter(pl.col("round") == 1).first().alias("observed_initial_pool"),
        pl.col("round").max().alias("observed_last_round")).sort("run_id"))
    rows = []
    for r in runs.iter_rows(named=True):
        parsed = json.loads(r["_settings"]) if r["_settings"] else {}
        row = {"run_id": r["run_id"], "source": r["source"], "family": conventions.LAYOUT_FAMILY.get(r["source"])}
        row |= dict.fromkeys(conventions.GAME_FIELDS) | conventions._stated_game(parsed, r["source"])
        row["scenario"] = parsed.get(conventions.SCENARIO_KEY) if r["source"] == "govsim_log" else None
        row |= {k: r[k] for k in ("observed_n_agents", "observed_initial_pool", "observed_last_round")}
        rows.append(row)
    schema = {"run_id": pl.String, "source": pl.String, "family": pl.String,
              **dict.fromkeys(conventions.GAME_FIELDS, pl.Float64), "scenario": pl.String,
              "observed_n_agents": pl.Int64, "observed_initial_pool": pl.Float64, "observed_last_round": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_game_parameters_equal_the_per_run_loop(sweep):
    ours = load_agent_rounds(sweep)
    frames = [ours]
    if SAMPLE.exists():
        frames.append(load_agent_rounds(SAMPLE))
    for df in frames:
        got = conventions.game_parameters(df)
        assert got.height == df["run_id"].n_unique() > 0
        assert_frame_equal(got, _game_parameters_per_run(df))


def test_cache_file_list_from_the_walk_equals_walking_each_run(sweep, tmp_path):
    """The cache's file list taken from the one walk is the list walking each run folder
    gives, a run's subfolder and a file beside the runs included (the latter in neither)."""
    from scarce_lab.data.loaders import one_walk, walk_tree
    from scarce_lab.data.parquet import layout_files
    from scarce_lab.environments.sovsim.tables import detect_layouts

    folder = tmp_path / "runs"
    shutil.copytree(sweep, folder)
    rd = find_run_dirs(folder)[2]
    (rd / "notes" / "deep").mkdir(parents=True)
    (rd / "notes" / "deep" / "x.txt").write_text("x")
    (folder / "README.txt").write_text("not a run file")
    with one_walk():
        found = detect_layouts(folder)
        from_walk = layout_files(found, walk_tree(folder))
    assert from_walk == layout_files(found)
    assert str(rd / "notes" / "deep" / "x.txt") in from_walk and str(folder / "README.txt") not in from_walk
    assert len(from_walk) == 16 * 3 + 1


def test_bulk_readers_read_files_through_the_read_gate(sweep, tmp_path):
    """Every file the bulk path opens passes the read gate (data/jsonl.py): a run file
    linked to a regular copy (a git-annex or DataLad data set) reads the same; one linked
    to a device is refused, naming the file."""
    from scarce_lab.data.jsonl import FileLimitError

    expected = load_dataset(sweep).events.collect().height
    for name in ("manifest.json", "events.jsonl"):
        folder = tmp_path / name
        shutil.copytree(sweep, folder)
        rd = find_run_dirs(folder)[5]
        (tmp_path / f"elsewhere-{name}").write_bytes((rd / name).read_bytes())
        (rd / name).unlink()
        (rd / name).symlink_to(tmp_path / f"elsewhere-{name}")
        assert load_dataset(folder, cache=False).events.collect().height == expected
        (rd / name).unlink()
        (rd / name).symlink_to("/dev/zero")
        with pytest.raises(FileLimitError, match=f"{rd.name}/{name}"):
            load_dataset(folder, cache=False)
