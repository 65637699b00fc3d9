"""A dataset as Parquet files: :func:`export_parquet` writes a
:class:`~scarce_lab.data.loaders.Dataset` partitioned by environment and model;
:func:`read_parquet_parts` reads the frames back as lazy scans, which
:func:`scarce_lab.data.loaders.load_parquet` wraps into a ``Dataset`` (``scarce-lab
export``, ``sl.export``, and the dataset cache of ``load_dataset``). This module does
not import the loaders (they import it), so the dataset is passed in, not typed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from .jsonl import TrajectoryFileError, iter_lines
from .schema import RunManifest

EXPORT_MARKER = "scarce_lab_dataset.json"

#: Layout of :func:`export_parquet` folders: 1 = one file per frame; 2 = partitioned.
EXPORT_LAYOUT = 2
_ROW = "__row"


def _model_label(models: dict[str, str]) -> str:
    distinct = sorted(set(models.values()))
    return distinct[0] if len(distinct) == 1 else "+".join(distinct)


def _run_keys(ds) -> pl.DataFrame:
    """``run_id -> (environment, model)`` of every run (the partition keys)."""
    return pl.DataFrame(
        [{"run_id": m.run_id, "__environment": m.environment, "__model": _model_label(m.models)} for m in ds.manifests],
        schema={"run_id": pl.String, "__environment": pl.String, "__model": pl.String},
    )


def _write_frame(df: pl.DataFrame | pl.LazyFrame, root: Path, keys: pl.DataFrame) -> None:
    """One frame under ``root``, partitioned by its runs' environment and model, with
    its row order kept in a hidden column (see :func:`_scan_frame`)."""
    from .cache import write_partitioned

    df = df.collect() if isinstance(df, pl.LazyFrame) else df
    tagged = df.with_row_index(_ROW).join(keys, on="run_id", how="left", maintain_order="left")
    write_partitioned(tagged, root, ("__environment", "__model"), drop=("__environment", "__model"))


def _scan_frame(root: Path) -> pl.LazyFrame:
    from .cache import scan_partitioned

    return scan_partitioned(root).sort(_ROW).drop(_ROW)


def export_parquet(ds, out_dir: Path | str) -> Path:
    """Write ``ds`` as Parquet files that :func:`load_dataset` reads back identically.

    Layout (format :data:`EXPORT_LAYOUT`): ``runs.parquet``, ``manifests.jsonl`` (the
    typed manifests), ``events/``, ``llm_calls/`` and ``payloads/<environment>/<kind>/``,
    each partitioned by the runs' environment and model
    (``__environment=<n>-<env>/__model=<n>-<model>/data.parquet``, so a reader of one
    model's runs opens only its files), plus a marker file naming the schema version
    and layout. Folders written with layout 1 (one file per frame) still load.

    Raises:
        FileExistsError: ``out_dir`` exists and is not empty.
    """
    from .jsonl import write_atomic
    from .schema import SCHEMA_VERSION

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    keys = _run_keys(ds)
    ds.runs.collect().write_parquet(out / "runs.parquet")
    _write_frame(ds.events, out / "events", keys)
    _write_frame(ds.llm_calls, out / "llm_calls", keys)
    for (env, kind), df in ds._payloads.items():
        _write_frame(df, out / "payloads" / env / kind, keys)
    write_atomic(out / "manifests.jsonl", "".join(m.model_dump_json() + "\n" for m in ds.manifests))
    write_atomic(out / EXPORT_MARKER, json.dumps({"format": "scarce_lab-parquet", "schema_version": SCHEMA_VERSION,
                                                  "layout": EXPORT_LAYOUT}))
    return out


def read_parquet_parts(path: Path | str) -> dict:
    """The keyword arguments of a ``Dataset`` (``runs``, ``events``, ``llm_calls``,
    ``manifests``, ``_payloads``) read from a folder written by :func:`export_parquet`
    (frames are lazy scans: a query reads only the columns and partitions it needs).

    Raises:
        TrajectoryFileError: the marker or a manifest line is corrupt.
        SchemaVersionError: written by a newer scarce_lab.
    """
    from .events.migrations import check_version
    from .jsonl import read_json_file

    path = Path(path)
    marker = read_json_file(path / EXPORT_MARKER)
    check_version(marker.get("schema_version") if isinstance(marker, dict) else None, str(path / EXPORT_MARKER))
    manifests = []
    for lineno, raw in iter_lines(path / "manifests.jsonl", allow_torn_tail=False):
        try:
            manifests.append(RunManifest.model_validate_json(raw))
        except ValueError as exc:
            raise TrajectoryFileError(path / "manifests.jsonl", lineno, f"invalid manifest: {exc}") from None
    if (path / "events.parquet").exists():  # layout 1: one file per frame
        payloads: dict = {}
        for f in sorted((path / "payloads").glob("*/*.parquet")):
            payloads[(f.parent.name, f.stem)] = pl.read_parquet(f)
        return dict(
            runs=pl.scan_parquet(path / "runs.parquet"),
            events=pl.scan_parquet(path / "events.parquet"),
            llm_calls=pl.scan_parquet(path / "llm_calls.parquet"),
            manifests=tuple(manifests),
            _payloads=payloads,
        )
    payloads = {}
    for env_dir in sorted(p for p in (path / "payloads").glob("*") if p.is_dir()):
        for kind_dir in sorted(p for p in env_dir.iterdir() if p.is_dir()):
            payloads[(env_dir.name, kind_dir.name)] = _scan_frame(kind_dir)
    return dict(
        runs=pl.scan_parquet(path / "runs.parquet"),
        events=_scan_frame(path / "events"),
        llm_calls=_scan_frame(path / "llm_calls"),
        manifests=tuple(manifests),
        _payloads=payloads,
    )
