"""A sweep's seal: its tables as Parquet, written when the sweep finishes, read instead
of its run folders while they are as sealed.

Reading a folder of 34k runs means opening 68k files and checking 2.5M events (15 s);
its tables as Parquet read in a fraction of a second. When a sweep ends
(:func:`scarce_lab.runners.sweep.play`, :func:`scarce_lab.runners.sweep.seal`) :func:`write_seal` writes one file,
``<sweep>/.scarce_lab_seal``: a header line signed under this user's key
(:func:`.sealed.sign`, the checkpoints' key: the MAC covers every byte after it), a JSON
line (where each part lies and its rows), then Parquet parts:

- each table an environment builds in its ``sealed_tables`` (registry) from the sweep's
  dataset as :func:`~.loaders.load_dataset` reads it (every per-run rule of the loader
  applied), as its reader serves it for the whole folder;
- the runs: every run folder (a direct child of the sweep folder) with the size, mtime
  and ctime (ns) and inode of its folder, ``manifest.json`` and ``events.jsonl``, and the
  SHA-256 of both files.

:func:`read_sealed` serves a table only when all of these hold, else it says why
(:class:`SealIgnoredWarning`) and the caller reads the folders:

1. the file passes the read gate (``LIMITS.parquet_file_bytes``) and its MAC verifies (a
   seal written by another user or machine, or edited, is data of unknown origin:
   ignored); its JSON line validates (pydantic, strict), each part lies within the file,
   has its sealed rows and the dtypes the reader reads;
2. the sweep folder holds exactly the sealed run folders (its folders holding a
   ``manifest.json``: one ``scandir``), and its other folders (a study's ``labels``) hold
   no run at any depth (they are walked): a run added or removed is seen;
3. each run folder, ``manifest.json`` and ``events.jsonl`` has its sealed size, mtime,
   ctime and inode (100k ``stat`` calls; a file replaced, appended or edited, or a file
   added to a run folder, changes one of them: the ctime also when a tool sets the old
   mtime back); where one differs, both files are hashed and must equal the sealed
   SHA-256, and the run folder must hold no folder (a copy or ``touch`` keeps the seal;
   an edit does not); the names of its files join those the reader checks for another
   layout's files.

What a seal does not cover: files of a run other than its manifest and events (model call
records are not in the sealed tables), and a file rewritten at the same size within the
file system's timestamp tick (a few milliseconds) of the sealing.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from .events.base import SCHEMA_VERSION
from .jsonl import read_bounded, write_atomic
from .recorder import EVENTS, MANIFEST
from .sealed import sign, signed_payload

SEAL_FILE = ".scarce_lab_seal"
FORMAT = 1
_MAGIC = b"scarce_lab-sweep-seal v1 hmac-sha256 "
_CONTEXT = "sweep-seal"
RUN_COLUMNS: dict[str, pl.DataType] = {"name": pl.String, **{
    f"{k}_{f}": pl.Int64 for k in ("dir", "manifest", "events") for f in ("size", "mtime_ns", "ctime_ns", "ino")},
    "manifest_sha256": pl.String, "events_sha256": pl.String}


class SealIgnoredWarning(UserWarning):
    """A sweep's seal exists but is not used (the message says why); its tables are read
    from the run folders."""


class SealError(ValueError):
    """A folder that cannot be sealed (the message says why)."""


class _Part(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    offset: int = Field(ge=0)
    length: int = Field(gt=0)
    rows: int = Field(ge=0)


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    format: int
    schema_version: int
    runs: _Part
    tables: dict[str, _Part]


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stats(folder: str, names: list[str]) -> list[tuple[int, ...]]:
    """``(size, mtime_ns, ctime_ns, ino)`` of each run folder, its manifest and its events
    (one tuple of twelve per run; a missing file gives -1s)."""
    out = []
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for n in names:
            row: list[int] = []
            for rel in (n, f"{n}/{MANIFEST}", f"{n}/{EVENTS}"):
                try:
                    st = os.stat(rel, dir_fd=fd)
                    row += (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                except OSError:
                    row += (-1, -1, -1, -1)
            out.append(tuple(row))
    finally:
        os.close(fd)
    return out


def _listing(folder: str, known: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """``(the run folders in folder, the names of every other file at or below it)``: the
    run folders are its folders holding a ``manifest.json``; its other folders are walked
    (a study's ``labels``: small) and must hold no run or export at any depth. ``known``:
    folders taken as runs unasked (the sealed ones: their manifests are stat-ed after).

    Raises:
        SealError: a run or export below a folder that is not a run folder, or a run
            folder holding a folder (runs below it would not be seen by the seal's checks).
        OSError: the folder cannot be listed.
    """
    from .parquet import EXPORT_MARKER

    runs, files = [], []
    with os.scandir(folder) as it:
        for e in it:
            if e.name == SEAL_FILE:
                continue
            if not e.is_dir(follow_symlinks=False):
                files.append(e.name)
            elif e.name in known or os.path.lexists(os.path.join(e.path, MANIFEST)):
                runs.append(e.name)
            else:
                for root, _dirs, names in os.walk(e.path):
                    if MANIFEST in names or EXPORT_MARKER in names:
                        raise SealError(f"{root} holds a run or an export below the sweep folder's own runs")
                    files += names
    return sorted(runs), sorted(files)


def _nested(folder: str, runs: list[str]) -> str | None:
    """The first run folder of ``runs`` that holds a folder (``run/sub``), else ``None``."""
    for r in runs:
        with os.scandir(os.path.join(folder, r)) as inner:
            sub = next((x.name for x in inner if x.is_dir(follow_symlinks=False)), None)
        if sub is not None:
            return f"{r}/{sub}"
    return None


def write_seal(folder: Path | str, build: Callable[[], Mapping[str, pl.DataFrame]]) -> Path | None:
    """Seal ``folder`` (a sweep: run folders as its direct children) with the tables
    ``build()`` returns (name -> frame, built from the folder's runs). The runs' files are
    stat-ed and hashed before ``build`` and stat-ed again after: a run that changed
    meanwhile refuses the seal. Written to a temporary folder and renamed into place.

    Returns the seal file (``None``, and nothing written, when the folder does not exist or
    holds no run, or ``build`` returns no table).

    Raises:
        SealError: not a sweep folder (:func:`_runs`), or a run changed while sealing.
        whatever ``build`` raises (no seal is written then).
    """
    folder = str(Path(folder))
    if not os.path.isdir(folder):  # a sweep that wrote no run (every run refused before its folder)
        return None
    runs, files = _listing(folder)
    if not runs:  # nothing to seal
        return None
    if (sub := _nested(folder, runs)) is not None:
        raise SealError(f"run folder {sub} is a folder in a run folder")
    before = _stats(folder, runs)
    digests = [(_sha256(os.path.join(folder, r, MANIFEST)), _sha256(os.path.join(folder, r, EVENTS)))
               for r in runs]
    tables = dict(build())
    if not tables:
        return None
    if _listing(folder)[0] != runs or _stats(folder, runs) != before:
        raise SealError(f"{folder}: runs changed while the seal was written; seal again when the sweep is done")
    stat_cols = list(RUN_COLUMNS)[1:-2]
    runs_df = pl.DataFrame({"name": runs, **{c: [st[i] for st in before] for i, c in enumerate(stat_cols)},
                            "manifest_sha256": [d[0] for d in digests], "events_sha256": [d[1] for d in digests]},
                           schema=RUN_COLUMNS)
    blobs, parts, offset = [], {}, 0
    for key, df in {"": runs_df, **tables}.items():
        buf = io.BytesIO()
        df.write_parquet(buf)
        blobs.append(buf.getvalue())
        parts[key] = _Part(offset=offset, length=len(blobs[-1]), rows=df.height)
        offset += len(blobs[-1])
    body = _Body(format=FORMAT, schema_version=SCHEMA_VERSION, runs=parts.pop(""), tables=parts)
    dest = Path(folder) / SEAL_FILE
    write_atomic(dest, sign(b"".join([body.model_dump_json().encode(), b"\n", *blobs]), _CONTEXT, _MAGIC))
    return dest


def _ignored(folder: str, why: str) -> None:
    warnings.warn(SealIgnoredWarning(
        f"{folder}: its seal ({SEAL_FILE}) is not used: {why}; its runs are read from their folders (slower). "
        f"To seal it again: scarce_lab.runners.sweep.seal({folder!r})"), stacklevel=4)


def read_sealed(folder: Path | str, table: str, columns: Mapping[str, pl.DataType]
                ) -> tuple[pl.LazyFrame, list[str], str] | None:
    """The sealed ``table`` of the sweep ``folder`` as a lazy scan, with the names of the
    files at or below it outside its run folders and in run folders changed since the
    seal (a reader checks them for another layout's files) and the SHA-256 of the seal, when its seal holds (see the module docstring);
    ``None`` when the folder has no seal (silently) or its seal does not hold (a
    :class:`SealIgnoredWarning` says why). ``columns``: the dtype of each column the
    reader reads (checked in the table's footer)."""
    folder = str(Path(folder))
    path = os.path.join(folder, SEAL_FILE)
    if not os.path.lexists(path):
        return None
    try:
        blob = read_bounded(path)
        payload = signed_payload(blob, _CONTEXT, _MAGIC)
        if payload is None:
            return _ignored(folder, "its signature does not verify (written by another user or machine, or altered)")
        head, _, data = payload.partition(b"\n")
        body = _Body.model_validate_json(head)
    except (OSError, ValueError) as exc:
        return _ignored(folder, f"it is not readable ({str(exc)[:300]})")
    if body.format != FORMAT or body.schema_version != SCHEMA_VERSION:
        return _ignored(folder, f"written in format {body.format}, schema {body.schema_version} (this scarce_lab "
                        f"reads format {FORMAT}, schema {SCHEMA_VERSION})")
    if table not in body.tables:
        return _ignored(folder, f"it holds no table {table!r}")
    try:
        runs = _part(data, body.runs, RUN_COLUMNS).collect()
        scan = _part(data, body.tables[table], columns)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        return _ignored(folder, f"a part of it is not readable ({str(exc)[:300]})")
    names_run = runs["name"].to_list()
    try:
        now, files = _listing(folder, frozenset(names_run))
    except (OSError, SealError) as exc:
        return _ignored(folder, str(exc)[:300])
    if now != names_run:
        added, gone = sorted(set(now) - set(names_run)), sorted(set(names_run) - set(now))
        return _ignored(folder, f"{len(added)} run(s) added since it was sealed {added[:3]}, {len(gone)} removed "
                        f"{gone[:3]}")
    sealed = runs.select(list(RUN_COLUMNS)[1:-2]).rows()
    for i in (i for i, (a, b) in enumerate(zip(_stats(folder, names_run), sealed, strict=True)) if a != b):
        d = os.path.join(folder, names_run[i])
        try:
            with os.scandir(d) as it:  # a folder made in a run folder may hold runs the seal has not
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            nested = any(is_dir for _, is_dir in entries)
            files += [name for name, _ in entries]  # a file added there goes to the reader's layout check
            same = not nested and (_sha256(os.path.join(d, MANIFEST)), _sha256(os.path.join(d, EVENTS))) == (
                runs["manifest_sha256"][i], runs["events_sha256"][i])
        except OSError:
            same = False
        if not same:
            return _ignored(folder, f"run {names_run[i]} changed since it was sealed")
    return scan, files, hashlib.sha256(blob).hexdigest()


def _part(data: bytes, part: _Part, columns: Mapping[str, pl.DataType]) -> pl.LazyFrame:
    """A lazy scan of the seal's Parquet ``part`` of ``data`` once it lies within the
    file and has the sealed rows and the ``columns`` dtypes.

    Raises:
        ValueError, PolarsError: a check fails (the message says which).
    """
    if part.offset + part.length > len(data):
        raise ValueError(f"a part at bytes {part.offset}..{part.offset + part.length} lies past its end")
    raw = data[part.offset:part.offset + part.length]
    got = pl.read_parquet_schema(io.BytesIO(raw))
    for col, dtype in columns.items():
        if got.get(col) != dtype:
            raise ValueError(f"column {col!r} is {got.get(col)}, the reader reads it as {dtype}")
    scan = pl.scan_parquet(raw)
    if (rows := scan.select(pl.len()).collect().item()) != part.rows:
        raise ValueError(f"a part holds {rows} rows, {part.rows} were sealed")
    return scan
