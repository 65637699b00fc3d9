"""Adapter: SovSim's released ``rationales.json`` -> the agent-round table.

Layout (see shared ``sovsim_format_sample/SOURCE.md``): the path is
``agent_rationales/<model>/<condition>/rationales.json``; the file is a flat JSON list
of round records ordered by ``simulation_id`` then ``round`` (1-based), each with
``pool_before``, ``extractions`` (4 ints, index 3 is the leader: boss or king; in cpr
the fourth citizen), ``final_pool`` (floored at 0), ``payoffs``, ``collapsed``,
``reasonings`` (4 strings); kcpr_m adds ``announced_pool``. The remainder the leader
saw is derived as ``max(0, pool_before - sum of extractions 0..2)``.

Reading: polars parses the file with an explicit schema and builds the rows in bulk
(:func:`_read_raw`, :func:`_rows`); a file it cannot take as it is (a number stored as text, a
missing field, lists of unequal length, not a list), and a file whose JSON is not
exactly what polars read (a key written twice: polars would keep the first silently; a
number where a list belongs: polars makes it a list; half a surrogate pair;
:func:`_structure_differs`), goes through the record-by-record reader (:func:`_read_records`,
through the strict JSON reader), which accepts what it always accepted and names the
file, record and field of anything it refuses, a doubled key included. Both give the
same frame.
"""

from __future__ import annotations

import io
import itertools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from scarce_lab.data.jsonl import read_bounded, read_json_file

from ..agent_rounds import (
    AGENT_ROUND_SCHEMA,
    SORT_KEYS,
    SOVSIM_ROLES,
    agent_round_frame,
    in_order,
    integer,
    parsed_scan,
    record_rows,
)

REQUIRED = ("simulation_id", "round", "pool_before", "extractions", "final_pool", "payoffs", "collapsed")


def _names(path: Path, model: str | None, condition: str | None) -> tuple[str, str]:
    condition = condition or path.parent.name
    model = model or path.parent.parent.name
    if condition not in SOVSIM_ROLES:
        raise ValueError(f"{path}: condition folder must be one of {sorted(SOVSIM_ROLES)}, got {condition!r}")
    return model, condition


def read_rationales(
    path: Path | str, *, model: str | None = None, condition: str | None = None, run_prefix: str | None = None
) -> pl.DataFrame:
    """Read one ``rationales.json`` into the agent-round table.

    ``model`` and ``condition`` default to the two parent folder names. Run ids are
    ``sovsim_json:<run_prefix>/<simulation_id>``; ``run_prefix`` defaults to
    ``<model>/<condition>`` (the loader passes the folder relative to the loaded root,
    so that two trees holding the same model never share a run id).

    Raises:
        ValueError: the condition folder is not cpr/bcpr/kcpr/kcpr_m, the file is not a
            JSON list, or a record lacks a field (message names file, record index, field).
    """
    path = Path(path)
    model, condition = _names(path, model, condition)
    return in_order(pl.concat(_batches([(path, model, condition, run_prefix or f"{model}/{condition}")],
                                       list(AGENT_ROUND_SCHEMA))))


def _prefix(path: Path, model: str, condition: str, root: Path | None) -> str:
    if root is not None:
        try:
            return path.parent.relative_to(root).as_posix()
        except ValueError:
            pass
    return f"{model}/{condition}"


def read_rationales_many(paths: Iterable[Path | str], *, root: Path | str | None = None) -> pl.DataFrame:
    """Every ``rationales.json`` of ``paths`` as one agent-round table (model and
    condition from each file's folders): :func:`scan_rationales_many` collected, every
    column in one piece. With ``root``, run ids carry each file's folder relative to it
    (``sovsim_json:<folder>/<simulation_id>``), so two trees holding the same model never
    share a run id; else ``<model>/<condition>``.

    Raises:
        ValueError: as :func:`read_rationales`, naming the file.
    """
    return scan_rationales_many(paths, root=root).collect().rechunk()


def scan_rationales_many(paths: Iterable[Path | str], *, root: Path | str | None = None) -> pl.LazyFrame:
    """Every ``rationales.json`` of ``paths`` as a lazy agent-round table
    (:data:`AGENT_ROUND_SCHEMA`; run ids as :func:`read_rationales_many`): nothing is read
    until the frame is collected, then each file is parsed once per collect and only the
    columns the query uses are built (Table 1 never builds the reasoning texts, which are
    most of the table's memory), a batch of about :data:`BATCH_RECORDS` records at a time
    (a polars IO source: :func:`polars.io.plugins.register_io_source`). Rows come in the
    table's order (:data:`~..agent_rounds.SORT_KEYS`): files by model, condition and
    folder, which are distinct for distinct files, and each batch sorted; where a file's
    folder holds another's, whose run ids interleave, all rows sorted at once.

    Raises:
        ValueError: a file's folder is not a SovSim condition (here); when collected, what
            :func:`read_rationales` raises, naming the file.
    """
    from polars.io.plugins import register_io_source

    base = None if root is None else Path(root)
    named = ((p, *_names(p, None, None)) for p in sorted(Path(x) for x in paths))
    # files in the order of their run ids (``sovsim_json:<prefix>/<simulation>``): by prefix and "/"
    files = sorted(((p, model, cond, _prefix(p, model, cond, base)) for p, model, cond in named),
                   key=lambda f: (f[1], f[2], f[3] + "/"))
    # a tree inside another's folder: their run ids interleave ("a/4" < "a/b/4" < "a/5"): sorted all at once
    nested = any(a[1:3] == b[1:3] and b[3].startswith(a[3] + "/") for a, b in itertools.pairwise(files))

    def pieces(columns: list[str]) -> Iterator[pl.DataFrame]:
        if not nested:
            yield from _batches(files, columns)
            return
        keyed = [c for c in AGENT_ROUND_SCHEMA if c in {*columns, *SORT_KEYS}]
        yield pl.concat(_batches(files, keyed)).sort(*SORT_KEYS, maintain_order=True).select(columns)

    def source(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, _batch: int | None):
        wanted = list(with_columns) if with_columns is not None else list(AGENT_ROUND_SCHEMA)
        used = set(wanted) | (set(predicate.meta.root_names()) if predicate is not None else set())
        left = n_rows  # rows of the table, before the filter: polars passes both for lf.head(n).filter(p)
        for frame in pieces([c for c in AGENT_ROUND_SCHEMA if c in used]):
            if left is not None and left <= 0:
                return
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            if predicate is not None:
                frame = frame.filter(predicate)
            yield frame.select(wanted)

    return parsed_scan(register_io_source(source, schema=AGENT_ROUND_SCHEMA))


def _batches(files: list[tuple[Path, str, str, str]], columns: list[str]) -> Iterator[pl.DataFrame]:
    """The agent-round rows (only ``columns``) of ``(path, model, condition, run prefix)``
    files, in that order: those polars takes (:func:`_read_raw`) a batch of about
    :data:`BATCH_RECORDS` records per query (:func:`_rows`: one query per batch keeps both
    cores busy; a batch's parsed records are let go before the next is read), the others
    through the record-by-record reader (:func:`_read_records`)."""
    batch: list[pl.DataFrame] = []
    for (p, model, condition, prefix), raw in zip(files, _parsed([f[0] for f in files]), strict=True):
        if raw is None:
            if batch:
                yield _rows(pl.concat(batch, how="vertical", rechunk=False).lazy(), columns)
                batch.clear()
            yield _read_records(p, model, condition, prefix).select(columns)
            continue
        batch.append(raw.with_columns(_model=pl.lit(model), _condition=pl.lit(condition), _prefix=pl.lit(prefix)))
        del raw
        if sum(b.height for b in batch) >= BATCH_RECORDS:
            yield _rows(pl.concat(batch, how="vertical", rechunk=False).lazy(), columns)
            batch.clear()
    if batch:
        yield _rows(pl.concat(batch, how="vertical", rechunk=False).lazy(), columns)


#: Files parsed at once (:func:`_parsed`): polars' parse and numpy's passes let go of the GIL.
PARSE_THREADS = 2


def _parsed(paths: list[Path]) -> Iterator[pl.DataFrame | None]:
    """:func:`_read_raw` of each of ``paths``, in order, :data:`PARSE_THREADS` files at a
    time and never more than that ahead of the consumer (the memory of a few files)."""
    with ThreadPoolExecutor(PARSE_THREADS) as pool:
        ahead: deque = deque()
        for p in paths:
            ahead.append(pool.submit(_read_raw, p))
            if len(ahead) > PARSE_THREADS:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


#: Round records turned into rows by one query (:func:`_batches`): ~50k records of the
#: released files' size is ~20 MB of JSON.
BATCH_RECORDS = 50_000


#: The file's record schema as polars reads it (numbers as Float64: the reference reader
#: takes every number with ``agent_rounds.number``; ids and rounds whole, as ``agent_rounds.integer``).
_SCHEMA = {
    "simulation_id": pl.Float64,  # as floats, so that 2.5 is not made 2: checked whole, then cast
    "round": pl.Float64,
    "pool_before": pl.Float64,
    "extractions": pl.List(pl.Float64),
    "final_pool": pl.Float64,
    "payoffs": pl.List(pl.Float64),
    "collapsed": pl.Boolean,
    "reasonings": pl.List(pl.String),
    "announced_pool": pl.Float64,
    "announcement_reasoning": pl.String,  # not used here: read so that every documented key is counted
}


def _read_raw(path: Path) -> pl.DataFrame | None:
    """The file's records as a polars frame, or ``None`` when the file needs the
    record-by-record reader (anything polars would refuse, or the checks below: a
    required field missing or null, lists of unequal length, no agents, no records)."""
    try:
        data = read_bounded(path)  # the read gate: a regular file within its size limit, also while read
        raw = pl.read_json(io.BytesIO(data), schema=_SCHEMA)
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return None
    if raw.height == 0 or _structure_differs(data, raw):
        return None
    ok = raw.select(
        required=pl.all_horizontal(pl.col(f).is_not_null().all() for f in REQUIRED),
        same_length=(pl.col("extractions").list.len() == pl.col("payoffs").list.len()).all(),
        agents=(pl.col("extractions").list.len() > 0).all(),
        no_null_z=pl.col("extractions").list.eval(pl.element().is_null().any()).list.first().any().not_(),
        no_null_payoff=pl.col("payoffs").list.eval(pl.element().is_null().any()).list.first().any().not_(),
        whole=pl.all_horizontal(((pl.col(c) == pl.col(c).floor()) & (pl.col(c).abs() < 2**53)).all()
                                for c in ("simulation_id", "round")),
    ).row(0)
    return raw.with_columns(pl.col("simulation_id", "round").cast(pl.Int64)) if all(ok) else None


#: Bytes counted in the file and in the texts polars read (:func:`_structure_differs`).
_COUNTED = (b":", b"[")

#: An escape that writes a byte of :data:`_COUNTED` (``\\u003a``, ``\\u005b``).
_ESCAPED = re.compile(rb"\\u00(?:3[aA]|5[bB])")
#: An escaped half of a surrogate pair (``\\ud800``-``\\udfff``), not itself after an escaping backslash.
_SURROGATE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD]([89a-fA-F])[0-9a-fA-F]{2}")


def _structure_differs(data: bytes, raw: pl.DataFrame) -> bool:
    """True unless the file's JSON is exactly what polars read: a list at the top, and each
    of :data:`_COUNTED` as often in the file as in the texts polars read plus once per
    field value that writes it: a colon per non-null value of :data:`_SCHEMA`'s fields, a
    ``[`` per list (the top one and the non-null list fields: polars takes a number or a
    text where a list belongs as a list of it); and no half of a surrogate pair
    alone (``"\\ud800"``: no character). So a key written twice (polars keeps the first
    without a word), also with an escape (``"\\u0072ound"``), an unknown key, a null, or
    any of these gives True, and so does a text escaping a counted byte
    (:data:`_ESCAPED`: it could hide one of these): the strict reader then decides.
    Anything else only adds to the file's count. A byte count per pattern and one pass
    over the texts per pattern (polars' parse takes longer)."""
    import numpy as np

    if not re.match(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\[", data):
        return True
    b = np.frombuffer(data, dtype=np.uint8)  # numpy lets go of the GIL: the other file's parse goes on
    slash = np.flatnonzero(b[:-1] == ord("\\"))
    if (b[slash + 1] == ord("u")).any() and (_ESCAPED.search(data) or _lone_surrogate(data)):
        return True
    n = raw.select(pl.col(f).is_not_null().sum() for f in _SCHEMA).row(0, named=True)
    texts = pl.concat([raw["reasonings"].explode(), raw["announcement_reasoning"]]).to_frame("t")
    in_texts = texts.select(pl.col("t").str.count_matches(c.decode(), literal=True).sum().alias(c.decode())
                            for c in _COUNTED).row(0)  # one query: the patterns counted in parallel
    colons, lists = (int(np.count_nonzero(b == c[0])) - int(k or 0) for c, k in zip(_COUNTED, in_texts, strict=True))
    return colons != sum(n.values()) or lists != 1 + n["extractions"] + n["payoffs"] + n["reasonings"]


def _lone_surrogate(data: bytes) -> bool:
    """Whether ``data`` escapes half of a surrogate pair alone: a high half
    (``\\ud800``-``\\udbff``) not right before a low one, or a low one not right after a high one."""
    high_at = None  # where the high half waiting for its low half starts
    for m in _SURROGATE.finditer(data):
        at, high = m.end() - 6, m.group(1) in b"89abAB"
        if (high_at is None) == (not high) or (high_at is not None and at != high_at + 6):
            return True
        high_at = at if high else None
    return high_at is not None


def _rows(raw: pl.LazyFrame, columns: list[str]) -> pl.DataFrame:
    """Agent-round rows, only ``columns`` (of :data:`AGENT_ROUND_SCHEMA`), from record
    frames carrying ``_model``, ``_condition`` and ``_prefix`` (the same rules as
    :func:`_read_records`, as polars expressions)."""
    sub = {c: r[0] for c, r in SOVSIM_ROLES.items()}
    lead = {c: r[1] for c, r in SOVSIM_ROLES.items()}
    cond = pl.col("_condition")
    has_leader = cond != "cpr"
    n = pl.col("extractions").list.len()
    per_agent = ["extractions", "payoffs", "agent_index"]
    extra = {}
    if "reasoning" in columns:
        per_agent.append("reasoning")
        width, aligned = raw.select(n.max(), (pl.col("reasonings").list.len() == n).fill_null(False).all()
                                    ).collect().row(0)
        if aligned:  # one reasoning per agent in every record (the released files)
            extra["reasoning"] = pl.col("reasonings")
        else:  # missing or short lists: None where the reference reader has None
            extra["reasoning"] = pl.concat_list(
                pl.when(pl.col("reasonings").list.len() > 0).then(pl.col("reasonings")).list.get(i, null_on_oob=True)
                for i in range(width or 0)
            ).list.head(n)
    rows = raw.with_columns(  # records in the table's order (model, condition, run id as text, round)
        _run_id=pl.format("sovsim_json:{}/{}", pl.col("_prefix"), pl.col("simulation_id")),
    ).sort("_model", "_condition", "_run_id", "round", maintain_order=True).with_columns(
        n_agents=n,
        agent_index=pl.int_ranges(n),
        remainder_seen=pl.when(has_leader).then(
            (pl.col("pool_before") - pl.col("extractions").list.head(n - 1).list.sum()).clip(lower_bound=0.0)
        ),
        **extra,
    ).drop("reasonings").explode(*per_agent)
    keys = ("_model", "_condition", "_prefix", "simulation_id", "round")
    if raw.select(pl.struct(*keys).is_duplicated().any()).collect().item():  # a round recorded twice
        rows = rows.sort("_model", "_condition", "_run_id", "round", "agent_index", maintain_order=True)  # as SORT_KEYS
    leader = has_leader & (pl.col("agent_index") == pl.col("n_agents") - 1)
    hidden = (cond == "kcpr_m") & ~leader & pl.col("announced_pool").is_not_null()
    built = {
        "source": pl.lit("sovsim_json"),
        "run_id": pl.col("_run_id"),
        "model": pl.col("_model"),
        "condition": cond,
        "base_condition": cond,
        "settings": pl.lit(None, dtype=pl.String),
        "simulation": pl.col("simulation_id"),
        "round": pl.col("round"),
        "agent": pl.format("a{}", pl.col("agent_index")),
        "agent_index": pl.col("agent_index"),
        "role": pl.when(leader).then(cond.replace_strict(lead)).otherwise(cond.replace_strict(sub)),
        "is_leader": leader,
        "n_agents": pl.col("n_agents"),
        "pool_before": pl.col("pool_before"),
        "announced_pool": pl.col("announced_pool"),
        "pool_seen": pl.when(hidden).then(pl.col("announced_pool")).otherwise(pl.col("pool_before")),
        "remainder_seen": pl.when(leader).then(pl.col("remainder_seen")),
        "extraction": pl.col("extractions"),
        "payoff": pl.col("payoffs"),
        "remaining": pl.col("final_pool"),
        "collapsed": pl.col("collapsed"),
        "reasoning": pl.col("reasoning") if "reasoning" in columns else pl.lit(None, dtype=pl.String),
        "valid": pl.lit(None, dtype=pl.Boolean),
        "fallback_used": pl.lit(None, dtype=pl.Boolean),
    }
    # with_columns, not select: a constant column (valid, source) gets a value per row, not one in all
    return rows.with_columns(built[k].cast(AGENT_ROUND_SCHEMA[k]).alias(k) for k in columns).select(columns).collect()


def _read_records(path: Path, model: str, condition: str, prefix: str | None = None) -> pl.DataFrame:
    """The record-by-record reader (reference semantics; names file, record, field)."""
    records = read_json_file(path)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of round records, got {type(records).__name__}")
    rows: list[dict] = []
    for k, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: record {k} is not an object: {rec!r:.80}")
        missing = [f for f in REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"{path}: record {k} lacks field(s) {missing}")
        try:
            sim = integer(rec["simulation_id"], "simulation_id")
            rows += record_rows(rec, source="sovsim_json", model=model, condition=condition, settings=None,
                                run_id=f"sovsim_json:{prefix or f'{model}/{condition}'}/{sim}", simulation=sim)
        except ValueError as exc:
            raise ValueError(f"{path}: record {k}: {exc}") from None
    return agent_round_frame(rows)
