"""Table 1's per-simulation table kept beside a cached agent-round table.

Table 1 is :func:`~.analysis.metrics.summarize` over
:func:`~.analysis.metrics.simulation_metrics` (one row per simulation: 35k rows for 1M
agent-rounds) under :func:`~.analysis.conventions.resolve_convention`;
the last two read the 1M rows and are nearly all of its time. When the agent-round table
is a cache scan (``load_agent_rounds(..., cache=True, lazy=True)``: :func:`remember`
records which cache folder it scans and the identity of its content), the convention and the per-simulation table are
kept in that folder (``sims/<key>.parquet`` and ``.json``) and read back by the next
Table 1 of the same data, so a warm Table 1 is only its summary.

The key (SHA-256) covers: the data's identity (:func:`cache_identity`: the agent-round
cache's stamp, i.e. its sources' paths, sizes, mtimes and inodes,
:func:`scarce_lab.data.parquet.fingerprint`, and the SHA-256 of every Parquet file of the
cached table, what the per-simulation table is computed from), the
source of every module of this package (a change of a metric's code is a new key), and
the arguments (preset, strict, force). The ``.json`` (written last) holds the convention,
the warnings the computation gave (given again on every read of it) and the SHA-256 of
the ``.parquet``; a file that fails a check is ignored and recomputed. A frame derived
from the scan (filtered, joined) has no record and is never served from here. A sweep's
seal (:mod:`scarce_lab.data.sweep_seal`) read with the cache on is remembered the same
way, its identity the seal's signed bytes, its tables kept in the cache folder.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path

import polars as pl

from scarce_lab.data.jsonl import read_bounded, read_json_file, write_atomic

#: id(LazyFrame) -> (the folder its per-simulation tables are kept in, what it reads).
_KEPT: dict[int, tuple[Path, str]] = {}


def remember(scan: pl.LazyFrame, folder: Path, identity: str) -> pl.LazyFrame:
    """Record that ``scan`` reads exactly the data ``identity`` names (a digest of its
    files' content) and that its per-simulation tables are kept in ``folder``; returns
    ``scan``."""
    key = id(scan)
    _KEPT[key] = (Path(folder), identity)
    weakref.finalize(scan, _KEPT.pop, key, None)
    return scan


def cache_identity(folder: Path) -> str | None:
    """The identity of an agent-round cache ``folder`` (:func:`scarce_lab.data.parquet.cached`):
    its stamp and the SHA-256 of each Parquet file of its table; ``None`` when a file
    cannot be read."""
    h = hashlib.sha256()
    try:
        h.update(read_bounded(folder / "cache_stamp.json"))
        for p in sorted((folder / "table").rglob("*.parquet")):
            h.update(f"\n{p.relative_to(folder)}\t".encode() + hashlib.sha256(read_bounded(p)).digest())
    except OSError:
        return None
    return h.hexdigest()


def _digest(identity: str, options: dict) -> str:
    h = hashlib.sha256(json.dumps({"data": identity, **options}, sort_keys=True, default=repr).encode())
    import scarce_lab.analysis

    code = [*(Path(__file__).parent / "analysis").glob("*.py"), *Path(scarce_lab.analysis.__file__).parent.glob("*.py")]
    for p in sorted(code):
        h.update(f"{p.parent.name}/{p.name}".encode() + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:32]


def _warning_class(name: str) -> type[Warning]:
    """The warning class ``module:qualname`` when it is one of scarce_lab's or a built-in
    one (a hostile file names no module to import), else ``UserWarning``."""
    module, _, qual = name.partition(":")
    if module == "builtins" or module.startswith("scarce_lab."):
        try:
            obj = importlib.import_module(module)
            for part in qual.split("."):
                obj = getattr(obj, part)
            if isinstance(obj, type) and issubclass(obj, Warning):
                return obj
        except (ImportError, AttributeError):
            pass
    return UserWarning


def _read(base: Path) -> tuple[pl.DataFrame, list] | None:
    try:
        meta = read_json_file(base.with_suffix(".json"))
        raw = read_bounded(base.with_suffix(".parquet"))
        if hashlib.sha256(raw).hexdigest() != meta["parquet_sha256"]:
            return None
        said = [(str(c), str(m)) for c, m in meta["warnings"]]
        return pl.read_parquet(raw), said
    except (OSError, ValueError, TypeError, KeyError, pl.exceptions.PolarsError):
        return None


def kept_table(df: pl.DataFrame | pl.LazyFrame, options: dict, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """``compute()`` (Table 1 of ``df`` under ``options``), kept beside ``df``'s cache
    when ``df`` is a remembered scan and read from there when kept for the same key (see
    the module docstring). The warnings of the computation are given on every call,
    kept or not.

    Raises:
        whatever ``compute`` raises (nothing is kept then).
    """
    kept = _KEPT.get(id(df)) if isinstance(df, pl.LazyFrame) else None
    key = _digest(kept[1], options) if kept is not None else None
    base = kept[0] / "tables" / key if kept is not None else None
    got = _read(base) if base is not None and base.with_suffix(".json").exists() else None
    if got is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = compute()
        said = [(f"{w.category.__module__}:{w.category.__qualname__}", str(w.message)) for w in caught]
        if base is not None:
            base.parent.mkdir(parents=True, exist_ok=True)
            tmp = base.with_name(f".{key}.{os.getpid()}.parquet")
            table.write_parquet(tmp)
            os.replace(tmp, base.with_suffix(".parquet"))
            write_atomic(base.with_suffix(".json"), json.dumps({
                "warnings": said,
                "parquet_sha256": hashlib.sha256(base.with_suffix(".parquet").read_bytes()).hexdigest()}))
    else:
        table, said = got
    for category, message in said:
        warnings.warn(message, _warning_class(category), stacklevel=3)
    return table
