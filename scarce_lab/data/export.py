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

#: Layout of :func:`export_parquet` folders: 1 = one file per frame; 2 = partitioned;
#: 3 = partitioned, with every file and its row count in the marker.
EXPORT_LAYOUT = 3
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


def _write_frame(df: pl.DataFrame | pl.LazyFrame, root: Path, keys: pl.DataFrame) -> dict[str, int]:
    """One frame under ``root``, partitioned by its runs' environment and model, with
    its row order kept in a hidden column (see :func:`_scan_frame`); returns the files
    written (relative to ``root``) and their rows."""
    from .cache import write_partitioned

    df = df.collect() if isinstance(df, pl.LazyFrame) else df
    tagged = df.with_row_index(_ROW).join(keys, on="run_id", how="left", maintain_order="left")
    return write_partitioned(tagged, root, ("__environment", "__model"), drop=("__environment", "__model"))


def _scan_frame(root: Path, files: dict[str, int] | None) -> pl.LazyFrame:
    from .cache import scan_partitioned

    return scan_partitioned(root, files).sort(_ROW).drop(_ROW)


def export_parquet(ds, out_dir: Path | str) -> Path:
    """Write ``ds`` as Parquet files that :func:`load_dataset` reads back identically.

    Layout (format :data:`EXPORT_LAYOUT`): ``runs.parquet``, ``manifests.jsonl`` (the
    typed manifests), ``events/``, ``llm_calls/`` and ``payloads/<environment>/<kind>/``,
    each partitioned by the runs' environment and model
    (``__environment=<n>-<env>/__model=<n>-<model>/data.parquet``, so a reader of one
    model's runs opens only its files), plus a marker file naming the schema version,
    the layout, and every Parquet file with its rows: the reader reads exactly those
    and refuses a folder holding another (a copy would count its rows twice). Folders
    written with layouts 1 (one file per frame) and 2 still load.

    Raises:
        FileExistsError: ``out_dir`` exists and is not empty.
        ValueError: ``ds`` is a published layout (its tables have no run records to
            export; an export of it would be empty).
    """
    from .jsonl import write_atomic, write_jsonl_atomic
    from .schema import SCHEMA_VERSION

    if ds.published_environment is not None:
        raise ValueError(f"export: a published layout ({ds.layout}) holds no run records to export; "
                         f"write its tables ({', '.join(ds.published_tables)}) with polars instead")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    keys = _run_keys(ds)
    runs = ds.runs.collect()
    runs.write_parquet(out / "runs.parquet")
    files: dict[str, dict[str, int]] = {"runs.parquet": {"": runs.height}}
    files["events"] = _write_frame(ds.events, out / "events", keys)
    files["llm_calls"] = _write_frame(ds.llm_calls, out / "llm_calls", keys)
    for (env, kind), df in ds._payloads.items():
        files[f"payloads/{env}/{kind}"] = _write_frame(df, out / "payloads" / env / kind, keys)
    write_jsonl_atomic(out / "manifests.jsonl", [m.model_dump_json() for m in ds.manifests])
    write_atomic(out / EXPORT_MARKER, json.dumps({"format": "scarce_lab-parquet", "schema_version": SCHEMA_VERSION,
                                                  "layout": EXPORT_LAYOUT, "files": files}))
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
    files = marker.get("files") if marker.get("layout", 2) >= 3 else None
    if marker.get("layout", 2) >= 3 and not isinstance(files, dict):
        raise TrajectoryFileError(path / EXPORT_MARKER, None, f"layout {marker.get('layout')} needs its 'files' list")

    def frame(rel: str) -> pl.LazyFrame:
        if files is not None and rel not in files:
            raise TrajectoryFileError(path / rel, None, "not a frame of this export (not in its marker)")
        return _scan_frame(path / rel, files[rel] if files is not None else None)

    if files is not None:
        on_disk = {p.relative_to(path).as_posix() for p in path.glob("payloads/*/*") if p.is_dir()}
        for extra in sorted(on_disk - set(files)):
            raise TrajectoryFileError(path / extra, None, "a payload folder the export did not write")
        kinds = sorted(tuple(k.split("/")[1:]) for k in files if k.startswith("payloads/"))
        runs = frame_file(path, "runs.parquet", files["runs.parquet"][""])
    else:
        kinds = sorted((e.name, k.name) for e in (path / "payloads").glob("*") if e.is_dir()
                       for k in e.iterdir() if k.is_dir())
        runs = pl.scan_parquet(path / "runs.parquet")
    return dict(
        runs=runs,
        events=frame("events"),
        llm_calls=frame("llm_calls"),
        manifests=tuple(manifests),
        _payloads={(env, kind): frame(f"payloads/{env}/{kind}") for env, kind in kinds},
    )


def frame_file(root: Path, name: str, rows: int) -> pl.LazyFrame:
    """A lazy scan of the single file ``root / name`` after checking its row count.

    Raises:
        TrajectoryFileError: the file is missing or holds another number of rows.
    """
    path = root / name
    if not path.is_file():
        raise TrajectoryFileError(path, None, "missing: the export wrote this file")
    got = pl.scan_parquet(path).select(pl.len()).collect().item()
    if got != rows:
        raise TrajectoryFileError(path, None, f"holds {got} rows; the export wrote {rows}")
    return pl.scan_parquet(path)
