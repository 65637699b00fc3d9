"""Load a folder of run directories into typed polars frames.

(``export_parquet`` is defined in :mod:`scarce_lab.data.parquet`, importable from here.)

``load_dataset(path)`` finds every ``manifest.json`` below ``path`` (a single run
directory works too), validates every event against its environment's typed model
(:mod:`scarce_lab.data.events`; older schema versions are migrated on the fly) and
returns a :class:`Dataset`:

- ``runs``: one row per run (manifest fields; ``models``, ``config``,
  ``condition_settings`` and ``notes`` as JSON text for display; the typed manifests
  are in ``Dataset.manifests``).
- ``events``: one row per event, the envelope only (run id, environment, seq, round,
  phase, agent, kind, visibility, visible_to, t).
- ``payloads(kind)``: one row per event of that kind, the envelope's keys plus one
  typed column per payload field (nested records are structs, lists are lists).
- ``llm_calls``: one row per model call.

:func:`combine` makes one dataset of several (a notebook's list of folders). Each
environment's tidy tables are built from these frames by its view, ``ds.<environment>``
(:class:`Dataset`).

Many runs: a folder tree is walked once (:func:`walk_tree`, shared by layout detection,
the run listing and the cache's file list inside :func:`one_walk`), manifests are
validated in one batch (:func:`read_manifests`) and every file the bulk readers open
passes the read gate of :mod:`.jsonl` (regular files within the limits of :mod:`.limits`).

Size: ~800 lines, the one Dataset type and every way of building one (run folders, read
in one pass or line by line; a Parquet export; several datasets combined), so the rules
a run is read by (one directory per run id, committed rounds only) stay in one place.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl
from pydantic import TypeAdapter

from .dtypes import model_schema
from .events import payload_types, registered, registration
from .events.base import EventEnvelope
from .jsonl import TrajectoryFileError, iter_json_objects, iter_lines
from .parquet import EXPORT_MARKER, export_parquet, read_parquet_parts
from .recorder import EVENTS, LLM_CALLS, MANIFEST, _file_version, read_manifest, validate_event_line
from .schema import RunManifest, RunStatus, check_run_id
from .streams import check_complete_run, incomplete_streams

RUN_COLUMNS = {
    "run_id": pl.String,
    "environment": pl.String,
    "condition": pl.String,
    "seed": pl.Int64,
    "status": pl.String,
    "schema_version": pl.Int64,
    "package_version": pl.String,
    "started_at": pl.String,
    "ended_at": pl.String,
    "models": pl.String,
    "condition_settings": pl.String,
    "config": pl.String,
    "notes": pl.String,
    "n_events": pl.Int64,
    "run_dir": pl.String,
}
EVENT_COLUMNS = {
    "run_id": pl.String,
    "environment": pl.String,
    "seq": pl.Int64,
    "round": pl.Int64,
    "phase": pl.String,
    "agent": pl.String,
    "kind": pl.String,
    "visibility": pl.String,
    "visible_to": pl.List(pl.String),
    "t": pl.Float64,
}
#: Envelope columns repeated in every payload frame (to join back to events and runs).
KEY_COLUMNS = ("run_id", "seq", "round", "phase", "agent", "t")
CALL_COLUMNS = {
    "run_id": pl.String,
    "call_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
    "purpose": pl.String,
    "model": pl.String,
    "messages_hash": pl.String,
    "messages": pl.String,
    "raw_response": pl.String,
    "parsed": pl.String,
    "error": pl.String,
    "outcome": pl.String,
    "finish_reason": pl.String,
    "attempt": pl.Int64,
    "fallback_used": pl.Boolean,
    "decision_id": pl.String,
    "decision_source": pl.String,
    "missing": pl.Boolean,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,
    "cost_usd": pl.Float64,
    "served_model": pl.String,  # schema version 6 (null before)
    "usage_problem": pl.String,
    "cache_hit": pl.Boolean,
}


def payload_schema(environment: str, kind: str) -> dict[str, pl.DataType]:
    """The columns of ``Dataset.payloads(kind)`` for ``environment``: the envelope keys
    then one per payload field."""
    model = payload_types(environment)[kind]
    return {**{k: EVENT_COLUMNS[k] for k in KEY_COLUMNS}, **model_schema(model, exclude=("kind",))}


# -- the dataset -------------------------------------------------------------------------
@dataclass(frozen=True)
class Dataset:
    """A trajectory dataset (generic frames plus typed payload frames, all lazy): the one
    type ``sl.load`` returns for every layout.

    ``ds.<environment>`` is that environment's typed view (its tidy tables, each
    computed when first read; e.g. ``ds.sovsim.agent_rounds``), as its spec declares it
    (:attr:`scarce_lab.registry.EnvironmentSpec.view`); built once per dataset.

    Attributes:
        runs, events, llm_calls: see the module docstring (empty for a published layout).
        manifests: the typed manifest of every run, in ``runs`` order.
        layout: ``runs``, ``parquet`` (an export) or a published layout's name
            (:class:`scarce_lab.registry.PublishedLayout`).
        published_environment: the environment whose published layout this is
            (``None`` for our runs).
        published_tables: a published layout's tables, by name, as its reader returned
            them (empty for our runs).
    """

    runs: pl.LazyFrame
    events: pl.LazyFrame
    llm_calls: pl.LazyFrame
    manifests: tuple[RunManifest, ...] = ()
    _payloads: dict[tuple[str, str], pl.DataFrame | pl.LazyFrame] = field(default_factory=dict, repr=False)
    layout: str = "runs"
    published_environment: str | None = None
    published_tables: Mapping[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _views: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def published(cls, environment: str, layout: str, tables: Mapping[str, pl.DataFrame]) -> Dataset:
        """A published layout of ``environment`` (its tables, no run records).

        Raises:
            ValueError: ``layout`` is ``runs`` or ``parquet`` (ours), or ``tables`` is not
                a non-empty mapping of names to polars DataFrames.
        """
        if layout in ("runs", "parquet") or not layout:
            raise ValueError(f"Dataset.published: layout {layout!r} is not a published layout's name")
        if not tables or not all(isinstance(k, str) and isinstance(v, pl.DataFrame) for k, v in dict(tables).items()):
            raise ValueError(f"Dataset.published: the {layout} reader must return named polars DataFrames, "
                             f"got {tables!r:.200}")
        return cls(*(_frame([], c).lazy() for c in (RUN_COLUMNS, EVENT_COLUMNS, CALL_COLUMNS)), layout=layout,
                   published_environment=environment, published_tables=MappingProxyType(dict(tables)))

    def __repr__(self) -> str:
        """One line: the layout, the environments and the runs by status (or the published
        tables' rows); the manifests stay in ``manifests``."""
        if self.published_environment is not None:
            what = ", ".join(f"{k} {v.height} rows" for k, v in self.published_tables.items())
        else:
            status = Counter(m.status.value for m in self.manifests)
            what = f"{len(self.manifests)} runs" + (f" ({', '.join(f'{k} {v}' for k, v in sorted(status.items()))})"
                                                    if status else "")
        return f"Dataset({self.layout}: {', '.join(self.environments) or 'no environment'}; {what})"

    @property
    def environments(self) -> list[str]:
        """The environments present, sorted (a published layout: its environment)."""
        if self.published_environment is not None:
            return [self.published_environment]
        return sorted({m.environment for m in self.manifests})

    def __getattr__(self, name: str) -> Any:
        """``ds.<environment>``: the environment's view (see the class docstring).

        Raises:
            ValueError: a registered environment's view that this dataset does not hold
                (the environments it holds are named).
            AttributeError: no environment of that name has a view.
        """
        if name.startswith("_"):  # dunder probes (copy, pickle, IPython) and fields not yet set
            raise AttributeError(name)
        views = {env: reg.view for env in registered() if (reg := registration(env)).view is not None}
        if name not in views:
            raise AttributeError(f"'Dataset' object has no attribute {name!r} (environment views: {sorted(views)})")
        if name not in self.environments:
            raise ValueError(f"ds.{name}: this dataset holds environments {self.environments}, not {name!r}")
        if name not in self._views:
            self._views[name] = views[name](self)
        return self._views[name]

    def __dir__(self) -> list[str]:
        held = [e for e in self.environments if e in registered() and registration(e).view is not None]
        return sorted({*super().__dir__(), *held})

    def manifest(self, run_id: str) -> RunManifest:
        """The typed manifest of ``run_id``.

        Raises:
            KeyError: no such run in the dataset.
        """
        for m in self.manifests:
            if m.run_id == run_id:
                return m
        raise KeyError(f"run {run_id!r} is not in this dataset")

    def payloads(self, kind: str, environment: str | None = None) -> pl.LazyFrame:
        """Every event of ``kind``: envelope keys plus typed payload columns.

        ``environment`` may be omitted when the dataset holds one environment. An
        empty frame (with the right columns) is returned when no event of that kind
        exists.

        Raises:
            ValueError: ``environment`` omitted with several environments present.
            KeyError: ``kind`` is not a kind of that environment.
        """
        if environment is None:
            envs = self.environments
            if len(envs) != 1:
                raise ValueError(f"this dataset holds environments {envs}; pass environment=")
            environment = envs[0]
        kinds = payload_types(environment)
        if kind not in kinds:
            raise KeyError(f"{environment!r} has no event kind {kind!r} (kinds: {sorted(kinds)})")
        df = self._payloads.get((environment, kind))
        if df is None:
            df = pl.DataFrame(schema=payload_schema(environment, kind))
        return df.lazy()


def find_run_dirs(path: Path) -> list[Path]:
    """Every directory at or below ``path`` that holds a ``manifest.json``, sorted
    (:func:`scan_folder`'s runs)."""
    return scan_folder(path)[0]


@dataclass(frozen=True)
class Tree:
    """One walk of a folder tree (:func:`walk_tree`): ``dirs`` holds every folder reached
    (links to folders are not followed) with the names of its non-folder entries,
    ``linked`` the names among those that are symbolic links, ``links`` the links to
    folders. Readers ask it instead of walking again (:meth:`matching`)."""

    root: str
    dirs: tuple[tuple[str, frozenset[str], frozenset[str]], ...]
    links: tuple[str, ...]

    def matching(self, pattern: str) -> list[Path]:
        """The files whose name matches ``pattern`` (``fnmatch``), in path order."""
        from fnmatch import filter as fnfilter

        if any(c in pattern for c in "*?["):
            hits = [os.path.join(d, n) for d, names, _ in self.dirs for n in fnfilter(names, pattern)]
        else:
            hits = [os.path.join(d, pattern) for d, names, _ in self.dirs if pattern in names]
        return [Path(h) for h in sorted(hits, key=lambda h: h.split(os.sep))]


_WALKS: ContextVar[dict[str, Any] | None] = ContextVar("_WALKS", default=None)


@contextmanager
def one_walk() -> Iterator[None]:
    """Within this block :func:`walk_tree` walks each folder tree once: detection of the
    layouts, the listing of runs and the cache's file list share one walk (outside it,
    each call walks afresh, so a changed folder is seen)."""
    token = _WALKS.set({}) if _WALKS.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _WALKS.reset(token)


def walk_tree(path: Path | str) -> Tree:
    """Walk ``path`` once with ``os.scandir`` (as ``os.walk``: links to folders are listed,
    not followed; unreadable folders are skipped); memoised inside :func:`one_walk`."""
    root = str(Path(path))  # as spelled (Path's normal form): listed paths equal Path(...) of them
    memo = _WALKS.get()
    if memo is not None and root in memo:
        return memo[root]
    dirs, links, stack = [], [], [root]
    while stack:
        d = stack.pop()
        names, linked = [], []
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    (links if e.is_symlink() else stack).append(e.path)
                else:
                    names.append(e.name)
                    if e.is_symlink():
                        linked.append(e.name)
        dirs.append((d, frozenset(names), frozenset(linked)))
    tree = Tree(root, tuple(dirs), tuple(links))
    if memo is not None:
        memo[root] = tree
    return tree


def scan_folder(path: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """``(runs, exports, links)`` at or below ``path``, each sorted: the directories
    holding a ``manifest.json`` (a run) or an export marker (a Parquet export), and the
    symbolic links to a folder holding either. Links are not followed (no loops, no run
    read twice): their data is not in the dataset (:func:`load_dataset` warns). One
    :func:`walk_tree` walk.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset path does not exist: {path}")
    if (path / MANIFEST).exists():
        return [path], [], []
    memo = _WALKS.get()
    key = "scan:" + str(path)
    if memo is not None and key in memo:
        return [list(found) for found in memo[key]]
    tree = walk_tree(path)
    runs = [d for d, names, linked in tree.dirs
            if MANIFEST in names and (MANIFEST not in linked or os.path.exists(os.path.join(d, MANIFEST)))]
    exports = [d for d, names, _ in tree.dirs if EXPORT_MARKER in names]
    links = [ln for ln in tree.links if any(os.path.exists(os.path.join(ln, m)) for m in (MANIFEST, EXPORT_MARKER))]
    out = [[Path(r) for r in sorted(found, key=lambda r: r.split(os.sep))]  # = Path order (by parts)
           for found in (runs, exports, links)]
    if memo is not None:
        memo[key] = tuple(tuple(found) for found in out)
    return out


def links_note(links: list[Path]) -> str:
    """The sentence naming symbolic links :func:`scan_folder` did not follow."""
    return (f"{len(links)} symbolic link(s) to a run or export not followed, their data left out: "
            f"{', '.join(map(str, links[:5]))}; load their targets (a list of paths) instead")


_JSON_TEXT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def _json_text(value) -> str | None:
    if value is None:
        return None
    return _JSON_TEXT.encode(value)


def _frame(rows: list[dict], columns: dict) -> pl.DataFrame:
    return pl.DataFrame([{k: r.get(k) for k in columns} for r in rows], schema=columns, orient="row")


_PY_TYPES = {pl.String: {str}, pl.Int64: {int}, pl.Float64: {int, float}, pl.Boolean: {bool}}


def _check_types(obj: dict, columns: dict, path: Path, lineno: int, skip: tuple = ()) -> None:
    """Raise TrajectoryFileError naming path, line, field and value when a field of a
    JSONL record has the wrong type for its column (null is always allowed; exact JSON
    types, so ``true`` is not an integer)."""
    for k, dtype in columns.items():
        v = obj.get(k)
        if v is not None and k not in skip and type(v) not in _PY_TYPES[dtype]:
            raise TrajectoryFileError(path, lineno, f"field {k!r} must be {dtype}, got {v!r:.80}")


def call_errors(run_dirs: list[Path]) -> tuple[int, int, str | None]:
    """``(model calls, calls with a transport/provider error, first such error)`` over
    the ``llm_calls.jsonl`` of ``run_dirs``; lets a command warn when a model name is
    wrong and every decision failed. Validation failures of answers are not counted."""
    n = bad = 0
    first = None
    for rd in run_dirs:
        for _, obj in iter_json_objects(Path(rd) / LLM_CALLS):
            n += 1
            if obj.get("error") and obj.get("raw_response") is None and not obj.get("tool_calls"):
                bad += 1
                first = first or str(obj["error"]).splitlines()[0][:200]
    return n, bad, first


def _one_dir_per_run(run_dirs: list[Path]) -> list[tuple[Path, RunManifest]]:
    """``(run_dir, manifest)`` pairs with one directory per ``run_id`` (see load_dataset)."""
    return [(rd, m) for rd, m, _ in _runs_once(run_dirs)]


def _runs_once(run_dirs: list[Path]) -> list[tuple[Path, RunManifest, int]]:
    """``(run_dir, manifest, file version)`` with one directory per ``run_id``, by path."""
    held = read_manifests(run_dirs)
    keep = _one_per_run([(str(rd), m) for rd, (m, _) in zip(run_dirs, held, strict=True)])
    return sorted(((run_dirs[i], *held[i]) for i in keep), key=lambda g: str(g[0]))


#: The head of a manifest as the recorder writes it: its schema version comes first.
_HEAD = re.compile(rb'\{\s*"schema_version":\s*(\d+)\s*,')


def read_manifests(run_dirs: Sequence[Path | str]) -> list[tuple[RunManifest, int]]:
    """``(manifest, file version)`` of each run directory, in order: what
    :func:`~.recorder.read_manifest` and :func:`~.recorder._file_version` return, read in
    bulk. Every file is read through the read gate (:func:`~.jsonl.read_bounded`: a
    regular file within ``LIMITS.manifest_bytes``); manifests that open with the current
    ``schema_version`` are validated in one pydantic call over their concatenated bytes;
    the version of the others (older, BOM, other key order) is read file by file, as is
    every manifest when the batch fails (so the error names the file and field).

    Raises:
        as :func:`~.recorder.read_manifest`.
    """
    from pydantic import ValidationError

    from .events.base import SCHEMA_VERSION
    from .events.registry import UnknownEnvironmentError, registration
    from .jsonl import read_bounded

    raws = [read_bounded(os.path.join(rd, MANIFEST)) for rd in run_dirs]
    current = [i for i, raw in enumerate(raws) if (h := _HEAD.match(raw)) and int(h.group(1)) == SCHEMA_VERSION]
    out: list[tuple[RunManifest, int] | None] = [None] * len(raws)
    if current:
        try:
            batch = TypeAdapter(list[RunManifest]).validate_json(b"[" + b",".join(raws[i] for i in current) + b"]")
        except (ValidationError, ValueError):
            batch = None
        if batch is not None:
            for i, m in zip(current, batch, strict=True):
                if m.schema_version == SCHEMA_VERSION:  # a repeated key could say otherwise
                    out[i] = (m, SCHEMA_VERSION)
            for env in {m.environment for m, _ in filter(None, out)}:
                try:
                    registration(env)
                except UnknownEnvironmentError as exc:
                    bad = next(i for i, x in enumerate(out) if x and x[0].environment == env)
                    raise UnknownEnvironmentError(f"{os.path.join(run_dirs[bad], MANIFEST)}: {exc}") from None
    for i, x in enumerate(out):
        if x is None:
            out[i] = (read_manifest(Path(run_dirs[i])), _file_version(Path(run_dirs[i])))
    return out  # type: ignore[return-value]


def _one_per_run(held: list[tuple[str, RunManifest]]) -> list[int]:
    """Indices of the ``(run directory, manifest)`` pairs of ``held`` to keep, one per
    ``run_id``: the complete one, else the one started last (ties: the later directory
    name); a ``UserWarning`` names the directories skipped (see :func:`load_dataset`)."""
    by_id: dict[str, list[int]] = {}
    for i, (_, m) in enumerate(held):
        by_id.setdefault(m.run_id, []).append(i)
    kept = []
    for run_id, group in by_id.items():
        best = max(group, key=lambda i: (held[i][1].status == "complete", held[i][1].started_at, held[i][0]))
        skipped = [held[i][0] for i in group if held[i][0] != held[best][0]]
        if skipped:
            warnings.warn(
                f"run_id {run_id!r} is held by several run directories; using {held[best][0]}, skipping {skipped}",
                stacklevel=4,
            )
        kept.append(best)
    return kept


def combine(datasets: Sequence[Dataset]) -> Dataset:
    """Several datasets of our runs (run folders or Parquet exports) as one, in order
    (one dataset is returned as it is).

    A run in several of them counts once, as in one folder (:func:`load_dataset`): the
    same run directory reached twice (a folder listed with one inside it) silently;
    two directories holding one ``run_id``: the complete one, else the one started
    last, with a ``UserWarning`` naming the directories skipped. ``layout`` is the
    parts' layout when they share one, else ``runs``.

    Raises:
        ValueError: no dataset, or a published layout among several (its reader labels
            conditions over its own files: load it alone).
    """
    if not datasets:
        raise ValueError("combine: no dataset to combine")
    if len(datasets) == 1:
        return datasets[0]
    published = [d.layout for d in datasets if d.published_environment is not None]
    if published:
        raise ValueError(f"published layouts ({', '.join(published)}) are loaded alone, not with other paths: "
                         "their readers label conditions over their own files")
    held = []  # (run directory, manifest, part) of every run of every part
    for k, d in enumerate(datasets):
        where = dict(d.runs.select("run_id", "run_dir").collect().iter_rows()) if "run_dir" in d.runs.collect_schema() else {}
        held += [(str(where.get(m.run_id) or f"dataset {k + 1}"), m, k) for m in d.manifests]
    kept = {(held[i][1].run_id, held[i][2]) for i in _one_per_run([(rd, m) for rd, m, _ in held])}

    def part(k: int, frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
        ids = [m.run_id for m in datasets[k].manifests if (m.run_id, k) in kept]
        frame = frame.lazy()
        return frame if len(ids) == len(datasets[k].manifests) else frame.filter(pl.col("run_id").is_in(ids))

    def cat(frames: list[tuple[int, pl.DataFrame | pl.LazyFrame]]) -> pl.LazyFrame:
        return pl.concat([part(k, f) for k, f in frames], how="diagonal_relaxed")

    layouts = {d.layout for d in datasets}
    return Dataset(
        **{name: cat([(k, getattr(d, name)) for k, d in enumerate(datasets)]) for name in ("runs", "events", "llm_calls")},
        manifests=tuple(m for k, d in enumerate(datasets) for m in d.manifests if (m.run_id, k) in kept),
        _payloads={key: cat([(k, d._payloads[key]) for k, d in enumerate(datasets) if key in d._payloads])
                   for key in sorted({key for d in datasets for key in d._payloads})},
        layout=layouts.pop() if len(layouts) == 1 else "runs",
    )


#: Byte strings that may stand for a non-finite float in a line (JSON has none; pydantic
#: reads them, and would write them back as null): such events are built from their
#: Python values instead of their JSON (see ``_Collector``).
_NON_FINITE = (b"NaN", b"Infinity")


class _Collector:
    """Accumulates validated events and builds the frames once per dataset.

    Each event is validated by its typed model (exact pydantic semantics, defaults
    filled), then kept as the model's own JSON (envelope and payload separately); the
    frames are parsed from that JSON by polars with the schema derived from the
    payload models, in one pass per frame (not one Python dict per event). An event
    whose line may hold a non-finite float keeps its Python values instead, and the
    frames it belongs to are built from values (JSON would turn NaN into null).
    """

    def __init__(self) -> None:
        self.order: list[tuple[int, int]] = []
        self.envs: list[str] = []
        self.envelopes: list[str] = []
        self.payloads: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.exact_events: dict[int, dict] = {}
        self.exact_payloads: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)

    def add(self, environment: str, ev: EventEnvelope, raw: bytes = b"", order: tuple[int, int] = (0, 0)) -> None:
        key = (environment, ev.kind)
        self.order.append(order)
        if b"NaN" in raw or b"Infinity" in raw:  # _NON_FINITE
            self.exact_events[len(self.envelopes)] = ev.model_dump(mode="python", exclude={"payload"})
            self.exact_payloads[key][len(self.payloads[key])] = ev.payload.model_dump(exclude={"kind"})
        self.envs.append(environment)
        self.envelopes.append(ev.model_dump_json(exclude={"payload"}))
        self.payloads[key].append(ev.payload.model_dump_json(exclude={"kind"}))

    @staticmethod
    def _read(lines: list[str], schema: dict, exact: dict[int, dict]) -> pl.DataFrame:
        if not schema:
            return pl.DataFrame(height=len(lines))
        if not lines:
            return pl.DataFrame(schema=schema)
        if exact:
            rows = [exact.get(i) or json.loads(line) for i, line in enumerate(lines)]
            for r in rows:
                if "visibility" in r and isinstance(r["visibility"], Enum):
                    r["visibility"] = r["visibility"].value
            return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")
        return pl.read_ndjson(io.BytesIO("\n".join(lines).encode()), schema=schema)

    def events_frame(self) -> pl.DataFrame:
        schema = {k: v for k, v in EVENT_COLUMNS.items() if k != "environment"}
        df = self._read(self.envelopes, schema, self.exact_events)
        run, pos = (list(x) for x in zip(*self.order, strict=True)) if self.order else ([], [])
        return df.with_columns(environment=pl.Series(self.envs, dtype=pl.String), __run=pl.Series(run, dtype=pl.Int64),
                               __pos=pl.Series(pos, dtype=pl.Int64)).select(*EVENT_COLUMNS, "__run", "__pos")

    def frames(self, events: pl.DataFrame) -> dict[tuple[str, str], pl.DataFrame]:
        out = {}
        for (env, kind), lines in self.payloads.items():
            model = payload_types(env)[kind]
            body = self._read(lines, model_schema(model, exclude=("kind",)), self.exact_payloads.get((env, kind), {}))
            keys = events.filter((pl.col("environment") == env) & (pl.col("kind") == kind)).select(
                *KEY_COLUMNS, *(c for c in ("__run", "__pos") if c in events.columns))
            out[(env, kind)] = pl.concat([keys, body], how="horizontal").select(
                *payload_schema(env, kind), *(c for c in ("__run", "__pos") if c in events.columns))
        return out


def _read_run(run_dir: Path, manifest: RunManifest, *, tolerant: bool, version: int | None = None
              ) -> list[tuple[EventEnvelope, bytes]]:
    """Every event of one run with its raw line, its sequence checked (see
    :func:`read_run_events`); ``version``: the file version, if known."""
    from .events import event_model

    version = _file_version(run_dir) if version is None else version
    model = event_model(manifest.environment)
    path = Path(run_dir) / EVENTS
    out: list[tuple[EventEnvelope, bytes]] = []
    lineno = 0
    for lineno, raw in iter_lines(path, allow_torn_tail=tolerant):
        e = validate_event_line(model, manifest.environment, raw, version, path, lineno)
        check_run_id(e.run_id, manifest.run_id, path, lineno)
        if e.seq != len(out):
            after = f"after seq {out[-1][0].seq}" if out else "as the first event"
            raise TrajectoryFileError(path, lineno, f"event seq {e.seq} {after}: seq must count 0, 1, 2... "
                                      "(a line repeated, reordered or removed?)")
        out.append((e, raw))
    if not tolerant:
        kinds = Counter(e.kind for e, _ in out)
        check_complete_run(path, manifest, len(out), out[-1][0].kind if out else None, kinds)
    return out


def read_run_events(run_dir: Path, manifest: RunManifest, *, tolerant: bool) -> list[EventEnvelope]:
    """Every event of one run as typed events (older versions migrated).

    Raises:
        TrajectoryFileError: a corrupt line, a ``seq`` out of order or repeated (path
            and line in the message), or a complete run whose events stop early (see
            :func:`check_complete_run`); a torn last line is skipped with a warning
            when ``tolerant``.
    """
    return [e for e, _ in _read_run(run_dir, manifest, tolerant=tolerant)]


def load_dataset(path: Path | str, *, include_incomplete: bool = True, cache: bool | None = None) -> Dataset:
    """Load every run below ``path`` (see the module docstring for the frames).

    Args:
        path: a run directory, any folder containing run directories, or a folder
            written by :func:`export_parquet`.
        include_incomplete: keep runs whose status is not ``complete``: their
            committed rounds are valid data (events after the last commit are left out).
        cache: keep the dataset as partitioned Parquet (:func:`export_parquet`) in the
            cache folder and load it from there while no file of any run changed
            (:mod:`scarce_lab.data.parquet`); ``None``: the ``SCARCE_LAB_CACHE``
            environment variable decides (default off). A load from the cache repeats
            no warning of the first load (e.g. skipped duplicate run directories).

    Several directories holding the same ``run_id`` (a re-run that moved an
    interrupted attempt aside to ``<run_id>.incomplete-<n>``) count once: the complete
    one is kept, else the one started last; the others are skipped with a
    ``UserWarning`` naming them, so no event is counted twice.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no run.
        TrajectoryFileError: a manifest or JSONL line is corrupt; the message names the
            file, the line, the field and the value. A torn *last* line of a run that is
            not complete (a killed writer) is skipped with a ``TornLineWarning``.
        SchemaVersionError: a file is newer than this package.
        UnknownEnvironmentError: a manifest names an unknown environment.
    """
    with one_walk():
        return _load_dataset(path, include_incomplete=include_incomplete, cache=cache)


def _load_dataset(path: Path | str, *, include_incomplete: bool, cache: bool | None) -> Dataset:
    if (Path(path) / EXPORT_MARKER).exists():
        return load_parquet(path)
    run_dirs, _, links = scan_folder(Path(path))
    if links:
        warnings.warn(f"{path}: {links_note(links)}", UserWarning, stacklevel=3)
    if not run_dirs:
        raise FileNotFoundError(f"no run directories (manifest.json) found below {path}")
    from .parquet import cache_enabled, cached, layout_files

    if cache_enabled(cache):
        tree = walk_tree(path) if Path(path).is_dir() else None
        folder = cached("dataset", path, layout_files({"runs": run_dirs}, tree), lambda tmp: export_parquet(
            load_dataset(path, include_incomplete=include_incomplete, cache=False), tmp / "dataset"),
            {"include_incomplete": include_incomplete})
        return load_parquet(folder / "dataset")
    held = [g for g in _runs_once(run_dirs) if include_incomplete or g[1].status == RunStatus.complete]
    dirs = [rd for rd, _, _ in held]
    manifests = [m for _, m, _ in held]
    events, payloads = _read_events(dirs, manifests, [v for _, _, v in held])
    calls: list[dict] = []
    for rd, m in zip(dirs, manifests, strict=True):
        try:  # most runs of a scripted sweep have an empty file: no need to open it (a FIFO
            st = os.stat(os.path.join(rd, LLM_CALLS))  # or device, size 0 too, goes to the read gate)
            if st.st_size == 0 and stat.S_ISREG(st.st_mode):
                continue
        except FileNotFoundError:
            continue
        tolerant = m.status != RunStatus.complete
        path = rd / LLM_CALLS
        for lineno, obj in iter_json_objects(path, allow_torn_tail=tolerant):
            _check_types(obj, CALL_COLUMNS, path, lineno, skip=("messages", "parsed"))
            check_run_id(obj.get("run_id"), m.run_id, path, lineno)
            for k in ("messages", "parsed"):
                obj[k] = _json_text(obj.get(k))
            calls.append(obj)
    return Dataset(
        runs=pl.defer(lambda: _runs_frame(manifests, dirs), schema=RUN_COLUMNS),
        events=events.lazy(),
        llm_calls=_frame(calls, CALL_COLUMNS).lazy(),
        manifests=tuple(manifests),
        _payloads=payloads,
    )


def _runs_frame(manifests: list[RunManifest], dirs: list[Path]) -> pl.DataFrame:
    """The ``runs`` frame (built when first queried: a table that needs only the
    manifests never pays for the JSON text of 34k configurations)."""
    rows = TypeAdapter(list[RunManifest]).dump_python(manifests, mode="json")
    for row, rd in zip(rows, dirs, strict=True):
        for k in ("models", "config", "notes", "condition_settings"):
            row[k] = _json_text(row.get(k))
        row["run_dir"] = str(rd)
    return _frame(rows, RUN_COLUMNS)


def _read_events(dirs: list[Path], manifests: list[RunManifest], versions: list[int]
                 ) -> tuple[pl.DataFrame, dict[tuple[str, str], pl.DataFrame]]:
    """The events frame and the payload frames of the runs, in run and line order.

    Complete runs in the current format go through :mod:`.fastread` (polars, one pass
    per environment); the others, and every run it leaves, line by line through the
    typed models (:func:`_read_run`), which raise ``path:line`` errors.
    """
    from . import fastread

    envelope = {k: v for k, v in EVENT_COLUMNS.items() if k != "environment"}
    fast_events: list[pl.DataFrame] = []
    fast_payloads: dict[tuple[str, str], list[pl.DataFrame]] = defaultdict(list)
    slow: set[int] = set(range(len(dirs)))
    by_env: dict[tuple[str, int], list[tuple[int, Path, str]]] = defaultdict(list)
    for pos, (rd, m, v) in enumerate(zip(dirs, manifests, versions, strict=True)):
        if m.status == RunStatus.complete and v in fastread.fast_versions():
            by_env[(m.environment, v)].append((pos, rd, m.run_id))
    for (env, version), runs in by_env.items():
        schemas = fastread.version_schemas(env, version, model_schema)
        res = fastread.read_environment(env, runs, envelope, schemas)
        if res is None:
            continue
        ev, pays, left = res
        left = left | incomplete_streams(ev, runs, manifests)
        slow -= {pos for pos, _, _ in runs} - left
        fast_events.append(fastread.drop_runs(ev, left).with_columns(environment=pl.lit(env)))
        del ev, res
        for kind in list(pays):
            df = fastread.fill_added(pays.pop(kind), env, kind, version, model_schema)
            fast_payloads[(env, kind)].append(fastread.drop_runs(df, left))
    col = _Collector()
    for pos in sorted(slow):
        rd, m = dirs[pos], manifests[pos]
        tolerant = m.status != RunStatus.complete
        evs = _read_run(rd, m, tolerant=tolerant, version=versions[pos])
        if tolerant:  # an unfinished run: only its committed rounds are data
            last = max((i for i, (e, _) in enumerate(evs) if e.kind == "round_committed"), default=-1)
            evs = evs[: last + 1]
        for i, (e, raw) in enumerate(evs):  # run_id checked per line (_read_run)
            col.add(m.environment, e, raw, order=(pos, i))
    slow_events = col.events_frame()
    order = ["__run", "__pos"]
    cols = [*EVENT_COLUMNS, *order]
    # one frame at a time: each part is let go once its sorted copy is made
    events = pl.concat([*(e.select(cols) for e in fast_events), slow_events.select(cols)], rechunk=False)
    fast_events.clear()
    events = events.sort(order)
    payloads = {}
    slow_payloads = col.frames(slow_events)
    for key in sorted(set(fast_payloads) | set(slow_payloads), key=lambda k: (k[0], k[1])):
        schema = payload_schema(*key)
        parts = [p.select(*schema, *order) for p in fast_payloads.pop(key, [])]
        if key in slow_payloads:
            parts.append(slow_payloads.pop(key).select(*schema, *order))
        payloads[key] = _in_order(pl.concat(parts, rechunk=False)).drop(order)
        del parts
    return events.drop(order), payloads


def _in_order(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` sorted by run, then line (``__run``, ``__pos``); a copy only when its rows
    are not already in that order (a kind's rows read by one fast pass are, and so are the
    events of one environment's complete runs)."""
    r, p = df["__run"].diff().slice(1), df["__pos"].diff().slice(1)  # on the two columns alone
    if ((r > 0) | ((r == 0) & (p > 0))).all():
        return df
    return df.sort("__run", "__pos")


# -- Parquet (scarce_lab.data.parquet) -----------------------------------------------------
def load_parquet(path: Path | str) -> Dataset:
    """Load a folder written by :func:`export_parquet` (frames are lazy scans: a query
    reads only the columns and partitions it needs; see :mod:`scarce_lab.data.parquet`).

    Raises:
        TrajectoryFileError: the marker or a manifest line is corrupt, or a column's
            dtype is not the one read (:func:`~.parquet.read_parquet_parts`).
        SchemaVersionError: written by a newer scarce_lab.
    """
    return Dataset(**read_parquet_parts(path, {"runs": RUN_COLUMNS, "events": EVENT_COLUMNS, "llm_calls": CALL_COLUMNS},
                                        payload_schema), layout="parquet")
