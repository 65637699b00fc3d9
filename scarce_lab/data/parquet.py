"""A dataset as Parquet files: the export and the cache.

Export: :func:`export_parquet` writes a :class:`~scarce_lab.data.loaders.Dataset`
partitioned by environment and model; :func:`read_parquet_parts` reads the frames back
as lazy scans, which :func:`scarce_lab.data.loaders.load_parquet` wraps into a
``Dataset`` (``scarce-lab export``, ``sl.export``, and the dataset cache of
``load_dataset``). This module does not import the loaders (they import it), so the
dataset is passed in, not typed here.

Cache: reading a large trajectory dataset from its JSON files costs seconds; reading
the same frames from Parquet costs a fraction of that. :func:`cached` keeps what a
reader built from files (a whole dataset: ``load_dataset(..., cache=True)``; a table:
:func:`cached_frame`, e.g. the SovSim agent-round table of a published layout) as
Parquet, used only while it is up to date: the same list of source files, each with
the same size and modification time (nanoseconds), the same reading options, the same
trajectory schema version and the same cache format. Anything else rebuilds the cache
from the JSON (a stale cache is never read). A cache is written to a temporary folder
and renamed into place, so a killed writer leaves no half cache behind.

Where: ``$SCARCE_LAB_CACHE_DIR`` or ``~/.cache/scarce_lab/datasets``, one folder per
(kind of table, absolute source path). Whether: the ``cache`` argument of the readers;
when it is ``None`` the environment variable ``SCARCE_LAB_CACHE`` (``1`` = on) decides,
default off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from .events.base import SCHEMA_VERSION
from .jsonl import TrajectoryFileError, check_regular, iter_lines
from .schema import RunManifest

EXPORT_MARKER = "scarce_lab_dataset.json"

#: Layout of :func:`export_parquet` folders: 1 = one file per frame; 2 = partitioned;
#: 3 = partitioned, with every file and its row count in the marker.
EXPORT_LAYOUT = 3
_ROW = "__row"

#: Bump when the cache layout or a cached table's derivation changes.
CACHE_FORMAT = 3
STAMP = "cache_stamp.json"
#: Partition value for a null key (Parquet hive folders need a name).
NULL_PART = "__null__"


# -- partitioned frames ------------------------------------------------------------------
def _part_name(index: int, value) -> str:
    if value is None:
        return f"{index:06d}-{NULL_PART}"
    text = str(value)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return f"{index:06d}-{safe[:60]}"


def write_partitioned(df: pl.DataFrame, root: Path, by: tuple[str, ...], drop: tuple[str, ...] = ()
                      ) -> dict[str, int]:
    """Write ``df`` under ``root`` as ``<col>=<n>-<value>/.../data.parquet`` per
    distinct value of the ``by`` columns (``n`` numbers the partitions in the order of
    first appearance, so a scan of the sorted paths gives the rows back in their
    order; folder names are made file-safe, the values themselves stay in the rows). An
    empty frame is written as one empty file, so its schema survives. ``drop``: columns
    left out of the files (keys that exist only to partition).

    Returns every file written (path relative to ``root``, POSIX) -> its rows, for a
    reader that must read exactly these files (:func:`scan_partitioned`)."""
    root.mkdir(parents=True, exist_ok=True)
    by = tuple(c for c in by if c in df.columns)
    if df.height == 0 or not by:
        df.drop([c for c in drop if c in df.columns]).write_parquet(root / "data.parquet")
        return {"data.parquet": df.height}
    keys = df.select(by).unique(maintain_order=True).with_row_index("__part")
    tagged = df.join(keys, on=list(by), how="left", nulls_equal=True, maintain_order="left")
    written: dict[str, int] = {}
    for (index,), part in tagged.group_by("__part", maintain_order=True):
        row = keys.row(int(index), named=True)
        folder = root.joinpath(*(f"{c}={_part_name(int(index), row[c])}" for c in by))
        folder.mkdir(parents=True, exist_ok=True)
        part.drop("__part", *[c for c in drop if c in part.columns]).write_parquet(folder / "data.parquet")
        written[(folder / "data.parquet").relative_to(root).as_posix()] = part.height
    return written


def check_columns(path: Path, want: dict[str, pl.DataType] | None) -> None:
    """Check the Parquet file ``path`` before a reader scans it: a regular file within
    ``LIMITS.parquet_file_bytes`` (:func:`~.jsonl.check_regular`) whose footer gives
    every column of ``want`` (the reader's ``column -> dtype``; ``None``: no column
    check) exactly that dtype: a ``seq`` stored as text, a ``round`` as a float, is
    refused, never cast or read as it is. Only the footer is read.

    Raises:
        FileNotFoundError: no such file.
        FileLimitError: not a regular file, or over its size limit.
        TrajectoryFileError: a column of ``want`` missing or of another dtype (file,
            column, both dtypes named).
    """
    check_regular(path)
    if want is None:
        return
    try:
        got = pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise TrajectoryFileError(path, None, f"not a readable Parquet file ({exc})") from None
    for col, dtype in want.items():
        if col not in got:
            raise TrajectoryFileError(path, None, f"column {col!r} is missing (the loader reads it as {dtype})")
        if got[col] != dtype:
            raise TrajectoryFileError(path, None, f"column {col!r} is {got[col]}, the loader reads it as {dtype} "
                                      "(written by another program, or edited?)")


def _check_rows(path: Path, rows: int) -> None:
    """Raise :class:`TrajectoryFileError` when the Parquet file ``path`` is missing or
    its footer counts other than ``rows`` rows (the data is not read)."""
    if not path.exists():
        raise TrajectoryFileError(path, None, "missing: the export wrote this file")
    check_regular(path)
    got = pl.scan_parquet(path).select(pl.len()).collect().item()
    if got != rows:
        raise TrajectoryFileError(path, None, f"holds {got} rows; the export wrote {rows}")


def scan_partitioned(root: Path, files: dict[str, int] | None = None,
                     columns: dict[str, pl.DataType] | None = None) -> pl.LazyFrame:
    """A lazy scan of a folder written by :func:`write_partitioned` (columns as written;
    folder names are not turned into columns).

    ``files``: what :func:`write_partitioned` returned. With it, exactly those files
    are read, after checking that the folder holds no other Parquet file (a copy left
    by a sync client, a partial re-export) and that each file has the rows written
    (from the file's footer, without reading the data).

    ``columns``: the dtype of each column the reader reads; every file is checked
    against it (:func:`check_columns`).

    Raises:
        TrajectoryFileError: a Parquet file that was not written, a missing one, or one
            whose row count differs (path and counts in the message), or a column of
            another dtype (:func:`check_columns`).
        FileLimitError: a file that is not a regular file, or over its size limit.
    """
    root = Path(root)
    present = {p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}
    if files is None:
        for rel in sorted(present):
            check_columns(root / rel, columns)
        return pl.scan_parquet(root / "**" / "*.parquet", hive_partitioning=False)
    for extra in sorted(present - set(files)):
        raise TrajectoryFileError(root / extra, None, "this Parquet file was not written by the export "
                                  "(a copy or a leftover?); its rows would be counted twice. Remove it.")
    for rel, rows in sorted(files.items()):
        _check_rows(root / rel, rows)
        check_columns(root / rel, columns)
    return pl.scan_parquet([root / rel for rel in sorted(files)], hive_partitioning=False)


# -- the export --------------------------------------------------------------------------
def _model_label(models: dict[str, str]) -> str:
    distinct = sorted(set(models.values()))
    return distinct[0] if len(distinct) == 1 else "+".join(distinct)


def _write_frame(df: pl.DataFrame | pl.LazyFrame, root: Path, keys: pl.DataFrame) -> dict[str, int]:
    """One frame under ``root``, partitioned by its runs' environment and model
    (``keys``: ``run_id -> (environment, model)``), with its row order kept in a hidden
    column (undone by :func:`read_parquet_parts`); returns the files written (relative
    to ``root``) and their rows."""
    df = df.collect() if isinstance(df, pl.LazyFrame) else df
    tagged = df.with_row_index(_ROW).join(keys, on="run_id", how="left", maintain_order="left")
    return write_partitioned(tagged, root, ("__environment", "__model"), drop=("__environment", "__model"))


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

    if ds.published_environment is not None:
        raise ValueError(f"export: a published layout ({ds.layout}) holds no run records to export; "
                         f"write its tables ({', '.join(ds.published_tables)}) with polars instead")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    keys = pl.DataFrame(
        [{"run_id": m.run_id, "__environment": m.environment, "__model": _model_label(m.models)} for m in ds.manifests],
        schema={"run_id": pl.String, "__environment": pl.String, "__model": pl.String},
    )
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


def read_parquet_parts(path: Path | str, columns: dict[str, dict[str, pl.DataType]] | None = None,
                       payload_columns: Callable[[str, str], dict[str, pl.DataType]] | None = None) -> dict:
    """The keyword arguments of a ``Dataset`` (``runs``, ``events``, ``llm_calls``,
    ``manifests``, ``_payloads``) read from a folder written by :func:`export_parquet`
    (frames are lazy scans: a query reads only the columns and partitions it needs).

    ``columns``: frame name (``runs``, ``events``, ``llm_calls``) -> the dtype of each
    column the loader reads; ``payload_columns(environment, kind)``: the same for a
    payload frame. Every Parquet file is checked against them (:func:`check_columns`),
    each manifest line's ``schema_version`` against the marker's, and the runs frame's
    ``run_id`` against the manifests'.

    Raises:
        TrajectoryFileError: the marker or a manifest line is corrupt, or (layout 3) a
            Parquet file or payload folder the marker does not list, a missing one, or
            one whose row count differs; a column of another dtype; a manifest of
            another schema version; runs and manifests that name different runs.
        FileLimitError: a file that is not a regular file, or over its size limit.
        SchemaVersionError: written by a newer scarce_lab.
    """
    from .events.migrations import check_version
    from .jsonl import read_json_file

    path = Path(path)
    marker = read_json_file(path / EXPORT_MARKER)
    version = check_version(marker.get("schema_version") if isinstance(marker, dict) else None,
                            str(path / EXPORT_MARKER))
    manifests = []
    for lineno, raw in iter_lines(path / "manifests.jsonl", allow_torn_tail=False):
        try:
            manifests.append(RunManifest.model_validate_json(raw))
        except ValueError as exc:
            raise TrajectoryFileError(path / "manifests.jsonl", lineno, f"invalid manifest: {exc}") from None
        if manifests[-1].schema_version != version:
            raise TrajectoryFileError(path / "manifests.jsonl", lineno, f"schema_version "
                                      f"{manifests[-1].schema_version}, the export's marker says {version}")
    columns = columns or {}

    def want(rel: str) -> dict[str, pl.DataType] | None:
        if not rel.startswith("payloads/"):
            return columns.get(rel)
        if payload_columns is None:
            return None
        try:
            return payload_columns(*rel.split("/")[1:3])
        except KeyError as exc:
            raise TrajectoryFileError(path / rel, None, f"not a payload kind this scarce_lab knows ({exc})") from None

    def one(file: Path, rel: str) -> Path:
        check_columns(file, want(rel))
        return file

    runs = pl.scan_parquet(one(path / "runs.parquet", "runs"))
    ids = runs.select("run_id").collect()["run_id"].to_list() if columns.get("runs") else None
    if ids is not None and ids != [m.run_id for m in manifests]:
        raise TrajectoryFileError(path / "runs.parquet", None, f"holds runs {ids[:5]}..., manifests.jsonl "
                                  f"{[m.run_id for m in manifests][:5]}...: not the same runs in the same order")
    if (path / "events.parquet").exists():  # layout 1: one file per frame
        return dict(
            runs=runs,
            events=pl.scan_parquet(one(path / "events.parquet", "events")),
            llm_calls=pl.scan_parquet(one(path / "llm_calls.parquet", "llm_calls")),
            manifests=tuple(manifests),
            _payloads={(f.parent.name, f.stem): pl.read_parquet(one(f, f"payloads/{f.parent.name}/{f.stem}"))
                       for f in sorted((path / "payloads").glob("*/*.parquet"))},
        )
    files = marker.get("files") if marker.get("layout", 2) >= 3 else None
    if marker.get("layout", 2) >= 3 and not isinstance(files, dict):
        raise TrajectoryFileError(path / EXPORT_MARKER, None, f"layout {marker.get('layout')} needs its 'files' list")

    def frame(rel: str) -> pl.LazyFrame:
        if files is not None and rel not in files:
            raise TrajectoryFileError(path / rel, None, "not a frame of this export (not in its marker)")
        return scan_partitioned(path / rel, files[rel] if files is not None else None,
                                want(rel)).sort(_ROW).drop(_ROW)

    if files is not None:
        on_disk = {p.relative_to(path).as_posix() for p in path.glob("payloads/*/*") if p.is_dir()}
        for extra in sorted(on_disk - set(files)):
            raise TrajectoryFileError(path / extra, None, "a payload folder the export did not write")
        kinds = sorted(tuple(k.split("/")[1:]) for k in files if k.startswith("payloads/"))
        _check_rows(path / "runs.parquet", files["runs.parquet"][""])
    else:
        kinds = sorted((e.name, k.name) for e in (path / "payloads").glob("*") if e.is_dir()
                       for k in e.iterdir() if k.is_dir())
    return dict(
        runs=runs,
        events=frame("events"),
        llm_calls=frame("llm_calls"),
        manifests=tuple(manifests),
        _payloads={(env, kind): frame(f"payloads/{env}/{kind}") for env, kind in kinds},
    )


# -- the cache ---------------------------------------------------------------------------
def cache_enabled(cache: bool | None) -> bool:
    """``cache`` if given, else ``SCARCE_LAB_CACHE`` in the environment (``1``/``true`` = on)."""
    if cache is not None:
        return bool(cache)
    return os.environ.get("SCARCE_LAB_CACHE", "").strip().lower() in ("1", "true", "yes", "on")


def cache_root() -> Path:
    """``$SCARCE_LAB_CACHE_DIR`` or ``~/.cache/scarce_lab/datasets``."""
    env = os.environ.get("SCARCE_LAB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "scarce_lab" / "datasets"


def cache_dir(kind: str, source: Path | str) -> Path:
    """The cache folder of table ``kind`` built from ``source`` (one per absolute path)."""
    key = hashlib.sha256(str(Path(source).resolve()).encode()).hexdigest()[:24]
    return cache_root() / f"{kind}-{key}"


def fingerprint(files: Iterable[Path | str], options: dict | None = None) -> str:
    """SHA-256 over every file's path, size, modification time (ns) and inode, the reading
    ``options``, the schema version and the cache format.

    Why stat and not a hash of the bytes: hashing reads every byte (a second read would
    cost as much as the first); a write to a file changes its mtime (ns) and a file
    replaced by rename (the recorder's atomic writes, ``git checkout``, a copy) has a
    new inode, so a changed file is seen. What it misses: a file rewritten in place
    within the same nanosecond tick at the same size, or a tool that writes in place and
    then sets the old mtime back (``touch -d``, ``rsync --inplace -t``).

    Raises:
        FileNotFoundError: a listed file does not exist.
    """
    h = hashlib.sha256()
    h.update(json.dumps({"format": CACHE_FORMAT, "schema": SCHEMA_VERSION, "options": options or {}},
                        sort_keys=True, default=str).encode())
    for f in sorted(p if os.path.isabs(p) else os.path.abspath(p) for p in map(str, files)):
        st = os.stat(f)
        h.update(f"\n{f}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_ino}".encode())
    return h.hexdigest()


def is_fresh(folder: Path, stamp: str) -> bool:
    """The cache in ``folder`` was written for ``stamp`` (see :func:`fingerprint`)."""
    try:
        return json.loads((Path(folder) / STAMP).read_text()).get("fingerprint") == stamp
    except (OSError, ValueError, AttributeError):
        return False


def _store(folder: Path, stamp: str, write: Callable[[Path], None]) -> None:
    """Write a cache: ``write(tmp)`` fills a temporary folder, then it replaces
    ``folder`` (the stamp is written last, so a partial cache is never fresh)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    try:
        write(tmp)
        (tmp / STAMP).write_text(json.dumps({"fingerprint": stamp, "format": CACHE_FORMAT}))
        old = folder.with_name(folder.name + ".old")
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def cached(kind: str, source: Path | str, files: Iterable[Path | str], write: Callable[[Path], None],
           options: dict | None = None) -> Path:
    """The cache folder of table ``kind`` built from ``source`` (:func:`cache_dir`),
    rebuilt first by ``write(tmp)`` (which fills a new folder) unless it was written for
    the same ``files`` and ``options`` (:func:`fingerprint`).

    Raises:
        whatever ``write`` raises (nothing is cached then).
    """
    folder = cache_dir(kind, source)
    stamp = fingerprint(files, options)
    if not is_fresh(folder, stamp):
        _store(folder, stamp, write)
    return folder


def layout_files(found: dict[str, list[Path]], tree=None) -> list[str]:
    """Every file a table read from the layouts ``found`` (as from
    :func:`scarce_lab.environments.sovsim.tables.detect_layouts`) may depend on: all files of
    each run directory, each ``rationales.json`` (its model and condition come from its
    path), and all files of each ``log_env.json`` run folder (its configuration).
    ``tree``: the :class:`~scarce_lab.data.loaders.Tree` those were found in (its listing
    is used instead of walking each folder again). Sorted paths, as text (what
    :func:`fingerprint` takes; 100k ``Path`` objects would cost seconds)."""
    out: set[str] = set()
    folders = {str(rd) for rd in found.get("runs", [])} | {str(Path(log).parent) for log in found.get("govsim_log", [])}
    if tree is not None:
        for d, names, _ in tree.dirs:  # a folder's files belong to the nearest listed folder above it
            up = d
            while up not in folders and os.path.dirname(up) != up and up != tree.root:
                up = os.path.dirname(up)
            if up in folders:
                out.update(os.path.join(d, n) for n in names)
    else:
        for f in folders:
            out.update(_walk(f))
    out.update(str(p) for p in found.get("sovsim_json", []))
    return sorted(out)


def _walk(folder: Path | str) -> list[str]:
    return [os.path.join(root, f) for root, _, files in os.walk(folder) for f in files]


def cached_frame(
    kind: str,
    source: Path | str,
    files: Iterable[Path | str],
    build: Callable[[], pl.DataFrame],
    *,
    partition_by: tuple[str, ...] = ("environment", "model"),
    options: dict | None = None,
) -> pl.LazyFrame:
    """A table built from ``files`` by ``build()``, kept as partitioned Parquet
    (:func:`cached`): a lazy scan of the cache, rebuilt first when it is not up to date.

    Raises:
        whatever ``build`` raises (nothing is cached then).
    """
    folder = cached(kind, source, files, lambda tmp: write_partitioned(build(), tmp / "table", partition_by), options)
    return scan_partitioned(folder / "table")
