"""A Parquet cache of datasets read from JSON, used only while it is up to date.

Reading a large trajectory dataset from its JSON files costs seconds; reading the same
frames from Parquet costs a fraction of that. :func:`cached_frame` keeps a table built
from files (e.g. the SovSim agent-round table of a published layout) as Parquet
partitioned by environment and model, and :func:`scarce_lab.data.loaders.load_dataset`
keeps a whole :class:`~scarce_lab.data.loaders.Dataset` the same way
(``cache=True``).

Up to date means: the same list of source files, each with the same size and
modification time (nanoseconds), the same reading options, the same trajectory schema
version and the same cache format. Anything else rebuilds the cache from the JSON
(a stale cache is never read). A cache is written to a temporary folder and renamed
into place, so a killed writer leaves no half cache behind.

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

#: Bump when the cache layout or a cached table's derivation changes.
CACHE_FORMAT = 2
STAMP = "cache_stamp.json"
#: Partition value for a null key (Parquet hive folders need a name).
NULL_PART = "__null__"


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
    """SHA-256 over every file's path, size and modification time (ns), the reading
    ``options``, the schema version and the cache format.

    Raises:
        FileNotFoundError: a listed file does not exist.
    """
    h = hashlib.sha256()
    h.update(json.dumps({"format": CACHE_FORMAT, "schema": SCHEMA_VERSION, "options": options or {}},
                        sort_keys=True, default=str).encode())
    for f in sorted(os.path.abspath(p) for p in files):
        st = os.stat(f)
        h.update(f"\n{f}\t{st.st_size}\t{st.st_mtime_ns}".encode())
    return h.hexdigest()


def is_fresh(folder: Path, stamp: str) -> bool:
    """The cache in ``folder`` was written for ``stamp`` (see :func:`fingerprint`)."""
    try:
        return json.loads((Path(folder) / STAMP).read_text()).get("fingerprint") == stamp
    except (OSError, ValueError, AttributeError):
        return False


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


def scan_partitioned(root: Path, files: dict[str, int] | None = None) -> pl.LazyFrame:
    """A lazy scan of a folder written by :func:`write_partitioned` (columns as written;
    folder names are not turned into columns).

    ``files``: what :func:`write_partitioned` returned. With it, exactly those files
    are read, after checking that the folder holds no other Parquet file (a copy left
    by a sync client, a partial re-export) and that each file has the rows written
    (from the file's footer, without reading the data).

    Raises:
        TrajectoryFileError: a Parquet file that was not written, a missing one, or one
            whose row count differs (path and counts in the message).
    """
    root = Path(root)
    if files is None:
        return pl.scan_parquet(root / "**" / "*.parquet", hive_partitioning=False)
    from .jsonl import TrajectoryFileError

    present = {p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}
    for extra in sorted(present - set(files)):
        raise TrajectoryFileError(root / extra, None, "this Parquet file was not written by the export "
                                  "(a copy or a leftover?); its rows would be counted twice. Remove it.")
    for rel, rows in sorted(files.items()):
        path = root / rel
        if rel not in present:
            raise TrajectoryFileError(path, None, "missing: the export wrote this file")
        got = pl.scan_parquet(path).select(pl.len()).collect().item()
        if got != rows:
            raise TrajectoryFileError(path, None, f"holds {got} rows; the export wrote {rows}")
    return pl.scan_parquet([root / rel for rel in sorted(files)], hive_partitioning=False)


def store(folder: Path, stamp: str, write: Callable[[Path], None]) -> None:
    """Write a cache: ``write(tmp)`` fills a temporary folder, then it replaces
    ``folder`` (the stamp is written last, so a partial cache is never fresh)."""
    folder = Path(folder)
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


def layout_files(found: dict[str, list[Path]]) -> list[Path]:
    """Every file a table read from the layouts ``found`` (as from
    :func:`scarce_lab.environments.sovsim.tables.detect_layouts`) may depend on: all files of
    each run directory, each ``rationales.json`` (its model and condition come from its
    path), and all files of each ``log_env.json`` run folder (its configuration)."""
    out: set[str] = set()
    for rd in found.get("runs", []):
        out.update(_walk(rd))
    out.update(str(p) for p in found.get("sovsim_json", []))
    for log in found.get("govsim_log", []):
        out.update(_walk(Path(log).parent))
    return sorted(Path(p) for p in out)


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
    """A table built from ``files`` by ``build()``, kept as partitioned Parquet.

    Returns a lazy scan of the cache: read from Parquet when it is up to date, else
    ``build()`` runs, its frame is written to the cache and then scanned.

    Raises:
        whatever ``build`` raises (nothing is cached then).
    """
    folder = cache_dir(kind, source)
    stamp = fingerprint(files, options)
    if not is_fresh(folder, stamp):
        df = build()
        store(folder, stamp, lambda tmp: write_partitioned(df, tmp / "table", partition_by))
    return scan_partitioned(folder / "table")
