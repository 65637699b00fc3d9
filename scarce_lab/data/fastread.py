"""Fast path for reading ``events.jsonl``: polars parses and checks every line of an
environment at once; pydantic reads only what polars cannot vouch for.

Why it is exact. Our recorder writes each event as its typed model's own compact JSON
(``EventEnvelope.dump_line``). For every line the fast path

1. parses the envelope with polars (explicit schema), then the whole line with the
   schema of its kind's payload model (:func:`scarce_lab.data.dtypes.model_schema`);
2. writes the parsed values back as JSON (``struct.json_encode``) and keeps the line
   only if that is **byte for byte the line on disk**. The line therefore holds exactly
   the model's fields, in order, each of the JSON type the model declares (an integer
   where a float is declared, a number where a string is declared, a missing, extra
   or renamed field, an escape written differently: each makes the bytes differ);
3. checks, vectorised, what the models check beyond types: the kind is one of the
   environment's, ``seq >= 0``, visibility is a known value and ``visible_to`` is set
   exactly for private events, ``run_id`` is the manifest's, and each numeric field
   constraint (``ge``, ``gt``, ``le``, ``lt``) of the payload models.

A kind whose models hold anything else (a custom validator, a nested constraint, a
Literal or Enum field, a non-strict or open model) is never taken by the fast path.
A run with any line that fails a check, or that is unfinished, or written in an older
format version, or whose file has blank lines, carriage returns or no final newline,
is read by the per-line pydantic path (:func:`scarce_lab.data.loaders._read_run`),
which raises the usual ``path:line`` error if the line is indeed invalid, or reads
it if it is merely not canonical. Any polars error drops the whole environment to the
per-line path.
"""

from __future__ import annotations

import io
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel

from .events import payload_types
from .events.base import SCHEMA_VERSION, Visibility
from .jsonl import read_lines_bounded

_BOUNDS = {"Ge": ">=", "Gt": ">", "Le": "<=", "Lt": "<"}


def _plain(model: type[BaseModel]) -> bool:
    """No validator, constraint, Literal/Enum field (but ``kind``), strict and closed,
    also in nested records: the types alone say what is valid."""
    cfg = model.model_config
    dec = model.__pydantic_decorators__
    if cfg.get("extra") != "forbid" or not cfg.get("strict") or dec.field_validators or dec.model_validators:
        return False
    for name, f in model.model_fields.items():
        if name == "kind":
            continue
        if f.metadata and not _is_top_payload_bound(model, f):
            return False
        if not _plain_type(f.annotation):
            return False
    return True


def _is_top_payload_bound(model: type[BaseModel], f) -> bool:
    return "kind" in model.model_fields and all(type(m).__name__ in _BOUNDS for m in f.metadata)


def _plain_type(ann) -> bool:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType) or origin is list:
        return all(_plain_type(a) for a in typing.get_args(ann) if a is not type(None))
    if origin is typing.Literal:
        return False
    if isinstance(ann, type):
        if issubclass(ann, Enum):
            return False
        if issubclass(ann, BaseModel):
            return _plain(ann)
        return ann in (bool, int, float, str)
    return False


def _nulls_ok(expr: pl.Expr, ann, only: Any = None) -> pl.Expr:
    """True where ``expr`` has no null that ``ann`` forbids (a null non-optional field,
    list element or nested record field; pydantic refuses each); ``only``: the names of
    a record's fields to check (those the file's version has), default all."""
    origin = typing.get_origin(ann)
    optional = False
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        optional = len(args) < len(typing.get_args(ann))
        ann = args[0]
        origin = typing.get_origin(ann)
    inner = pl.lit(True)
    if origin is list:
        (item,) = typing.get_args(ann)
        inner = expr.list.eval(_nulls_ok(pl.element(), item)).list.all().fill_null(True)
    elif isinstance(ann, type) and issubclass(ann, BaseModel):
        for name, f in ann.model_fields.items():
            if name != "kind" and (only is None or name in only):
                inner = inner & _nulls_ok(expr.struct.field(name), f.annotation)
        inner = expr.is_null() | inner
    return inner if optional else expr.is_not_null() & inner


def _bounds(model: type[BaseModel]) -> pl.Expr:
    """True where every numeric constraint of the payload's top-level fields holds
    (null values pass here; nullability is :func:`_nulls_ok`'s)."""
    ok = pl.lit(True)
    for name, f in model.model_fields.items():
        for m in f.metadata:
            kind = type(m).__name__
            bound = getattr(m, kind.lower())
            col = pl.col("x").struct.field("payload").struct.field(name)
            cond = {"Ge": col >= bound, "Gt": col > bound, "Le": col <= bound, "Lt": col < bound}[kind]
            ok = ok & (cond | col.is_null())
    return ok


def fast_kinds(environment: str) -> dict[str, type[BaseModel]]:
    """The kinds of ``environment`` the fast path may take (see the module docstring)."""
    return {k: m for k, m in payload_types(environment).items() if _plain(m)}


#: Bytes of events.jsonl parsed in one polars pass (bounds the memory of a pass).
CHUNK_BYTES = 24 * 1024 * 1024


def read_environment(
    environment: str,
    runs: list[tuple[int, Path, str]],
    envelope_schema: dict[str, pl.DataType],
    payload_schemas: dict[str, dict[str, pl.DataType]],
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame], set[int]] | None:
    """Read the ``events.jsonl`` of ``runs`` (``(run position, run dir, run_id)``,
    complete runs in the current format) of one environment, in passes of about
    :data:`CHUNK_BYTES`.

    Returns ``(events, payloads by kind, run positions left for the per-line path)``:
    ``events`` has the envelope columns plus ``__run`` (run position) and ``__pos``
    (order within the run), each payload frame the envelope keys, its payload fields and
    the same two order columns. ``None`` when polars cannot read the lines at all (the
    caller then reads every run line by line).
    """
    slow: set[int] = set()
    chunk: list[tuple[int, str, bytes]] = []
    size = 0
    events: list[pl.DataFrame] = []
    payloads: dict[str, list[pl.DataFrame]] = {}

    def flush() -> bool:
        nonlocal chunk, size
        if not chunk:
            return True
        res = _read_chunk(environment, chunk, envelope_schema, payload_schemas)
        chunk, size = [], 0
        if res is None:
            return False
        ev, pays, left = res
        events.append(ev)
        for kind, df in pays.items():
            payloads.setdefault(kind, []).append(df)
        slow.update(left)
        return True

    for pos, run_dir, run_id in runs:
        path = (run_dir if isinstance(run_dir, Path) else Path(run_dir)) / "events.jsonl"
        data = read_lines_bounded(path)  # the read gate: a regular file, lines within LIMITS
        if not data:
            continue
        if data.startswith(b"\xef\xbb\xbf") or not data.endswith(b"\n") or b"\r" in data or b"\n\n" in data \
                or data.startswith(b"\n") or b"\x1f" in data:
            slow.add(pos)
            continue
        chunk.append((pos, run_id, data))
        size += len(data)
        if size >= CHUNK_BYTES and not flush():
            return None
    if not flush():
        return None
    empty = pl.DataFrame(schema={**envelope_schema, "__run": pl.Int64, "__pos": pl.Int64})
    return (
        drop_runs(pl.concat(events, rechunk=False), slow) if events else empty,
        {kind: drop_runs(pl.concat(parts, rechunk=False), slow) for kind, parts in payloads.items()},
        slow,
    )


def drop_runs(df: pl.DataFrame, left: set[int]) -> pl.DataFrame:
    """``df`` without the rows of the runs ``left`` (a copy only when some are left: the
    frames are most of a load's memory)."""
    return df.filter(~pl.col("__run").is_in(sorted(left))) if left else df


def _read_chunk(
    environment: str,
    chunk: list[tuple[int, str, bytes]],
    envelope_schema: dict[str, pl.DataType],
    payload_schemas: dict[str, dict[str, pl.DataType]],
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame], set[int]] | None:
    """One polars pass over the files of ``chunk`` (see :func:`read_environment`)."""
    from .events.base import EventEnvelope as envelope

    kinds = fast_kinds(environment)
    counts = [data.count(b"\n") for _, _, data in chunk]
    slow: set[int] = set()
    try:
        lines = pl.read_csv(io.BytesIO(b"".join(data for _, _, data in chunk)), has_header=False, separator="\x1f",
                            quote_char=None, schema={"line": pl.String}, comment_prefix=None)
        if lines.height != sum(counts):
            return None
        lines = lines.with_columns(
            __run=pl.Series(np.repeat(np.asarray([p for p, _, _ in chunk], dtype=np.int64), counts)),
            __pos=pl.int_range(pl.len(), dtype=pl.Int64),
            __expected=pl.Series([r for _, r, _ in chunk], dtype=pl.String).gather(
                np.repeat(np.arange(len(chunk)), counts)),
        )
        # the envelope's kind, to pick the payload schema; a wrong pick cannot pass the
        # checks below (the decoded kind must be the one picked, the bytes must match)
        lines = lines.with_columns(kind=pl.col("line").str.extract(r'"kind":"([^"\\]*)"', 1))
        slow |= set(lines.filter(~pl.col("kind").is_in(list(kinds)) | pl.col("kind").is_null())["__run"].to_list())
        visibility = [v.value for v in Visibility]
        present = set(lines["kind"].unique().to_list())
        queries = []
        for kind, model in kinds.items():
            if kind not in present:
                continue
            struct = pl.Struct({**envelope_schema, "payload": pl.Struct(payload_schemas[kind])})
            queries.append(lines.lazy().filter(pl.col("kind") == kind).with_columns(
                x=pl.col("line").str.json_decode(struct)
            ).with_columns(
                ok=(pl.col("x").struct.json_encode() == pl.col("line"))
                & (pl.col("x").struct.field("kind") == kind)
                & (pl.col("x").struct.field("seq") >= 0)
                & pl.col("x").struct.field("visibility").is_in(visibility)
                & ((pl.col("x").struct.field("visibility") == "private")
                   == (pl.col("x").struct.field("visible_to").list.len() > 0))
                & (pl.col("x").struct.field("run_id") == pl.col("__expected"))
                & _nulls_ok(pl.col("x"), envelope)
                & _nulls_ok(pl.col("x").struct.field("payload"), model, only=payload_schemas[kind])
                & _bounds(model)
            ).select("__run", "__pos", "ok", "x"))
        # the kinds decoded in parallel (one query each), each line once
        parts = []
        for kind, checked in zip([k for k in kinds if k in present], pl.collect_all(queries), strict=True):
            slow |= set(checked.filter(~pl.col("ok").fill_null(False))["__run"].unique().to_list())
            parts.append((kind, checked.drop("ok").unnest("x")))
        del lines
        events = [drop_runs(part, slow).select(*envelope_schema, "__run", "__pos") for _, part in parts]
        payloads = {kind: drop_runs(part, slow).select(*envelope_schema, "__run", "__pos", "payload").unnest("payload")
                    for kind, part in parts}
        empty = pl.DataFrame(schema={**envelope_schema, "__run": pl.Int64, "__pos": pl.Int64})
        return (pl.concat(events, rechunk=False) if events else empty), payloads, slow
    except pl.exceptions.PolarsError:
        return None


def version_schemas(environment: str, version: int, model_schema: Any) -> dict[str, dict[str, pl.DataType]]:
    """The polars payload schema of each fast kind as a ``version`` file writes it: without
    the fields added since (:func:`~.events.migrations.added_fields`), so that such a file
    is still read byte for byte; ``model_schema`` is :func:`scarce_lab.data.dtypes.model_schema`."""
    from .events.migrations import added_fields

    return {k: model_schema(m, exclude=("kind", *added_fields(environment, k, version)))
            for k, m in fast_kinds(environment).items()}


def fill_added(df: pl.DataFrame, environment: str, kind: str, version: int, model_schema: Any) -> pl.DataFrame:
    """``df`` (payload rows of ``kind`` read from a ``version`` file) with each field added
    since that version set to its fixed default (e.g. decision ``call_ids``: ``[]``)."""
    from .events.migrations import added_fields

    added = added_fields(environment, kind, version)
    if not added:
        return df
    full = model_schema(fast_kinds(environment)[kind], exclude=("kind",))
    return df.with_columns(pl.lit(v, dtype=full[f]).alias(f) for f, v in added.items())


def fast_versions() -> range:
    """The format versions the fast path reads: those whose events need no migration
    beyond payload fields added later with a fixed default
    (:data:`~.events.migrations.EVENTS_FILLABLE_SINCE` to :data:`SCHEMA_VERSION`;
    :func:`~.events.migrations.added_fields`); older files go line by line, migrated."""
    from .events.migrations import EVENTS_FILLABLE_SINCE

    return range(EVENTS_FILLABLE_SINCE, SCHEMA_VERSION + 1)
