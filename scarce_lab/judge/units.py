"""The unit a judge labels: one agent's communication in one negotiation round.

A :class:`Unit` holds an agent's public reasoning and the private messages it sent in
one round (a SCARCE contention, a SovSim discussion round), with the round's state as
the agent saw it as ``context`` text. The judge is taxonomy-agnostic: a CaSiNo
utterance is a unit too (one message to the partner, the previous turns as context;
see :mod:`scarce_lab.judge.casino`).

Builders: :func:`units_from_frame` (a frame with :data:`FRAME_COLUMNS`),
:func:`dataset_units` (a folder of runs, by the builder their environment's spec names)
and :func:`units_from_path` (either, from a file or a folder).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from .. import registry
from ..data.csvsafe import read_csv_cells
from ..data.jsonl import read_jsonl

#: Columns :func:`units_from_frame` needs (``context`` and ``public_reasoning`` may be null).
FRAME_COLUMNS = ("run_id", "contention", "agent", "public_reasoning", "private_messages", "context")


class PrivateMessage(BaseModel):
    """A message the agent sent: recipient (``None`` = unknown/all) and text."""

    model_config = ConfigDict(extra="forbid")

    to: str | None = None
    text: str


class Unit(BaseModel):
    """One agent's communication in one round, keyed by ``(run_id, round, agent)``.

    ``round`` is the contention index for SCARCE (the turn index for CaSiNo). ``gold``
    holds expert labels where they exist (validation data), else ``None``.
    """

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    run_id: str
    round: int
    agent: str
    public_reasoning: str = ""
    private_messages: list[PrivateMessage] = Field(default_factory=list)
    context: str = ""
    gold: list[str] | None = None

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to label (no reasoning, no message text)."""
        return not self.public_reasoning.strip() and not any(
            m.text.strip() for m in self.private_messages
        )

    @property
    def recipients(self) -> list[str]:
        """Distinct named recipients of the private messages, in order."""
        return list(dict.fromkeys(m.to for m in self.private_messages if m.to))


def make_unit_id(run_id: str, round_: int, agent: str) -> str:
    """The canonical unit id ``"{run_id}:{round}:{agent}"``."""
    return f"{run_id}:{round_}:{agent}"


def _messages(value: Any, where: str) -> list[PrivateMessage]:
    """Private messages from a list of ``{to, text}`` dicts (``recipient``/``content``
    accepted as names), a list of strings, JSON text of either, or null.

    A string that is not JSON text of a list or an object is one message's text.
    ``text`` must be a string and ``to`` a string, an integer id or null: other types
    are errors, never converted.
    """
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        parsed: Any = None
        if text[0] in "[{":
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                parsed = None
        if not isinstance(parsed, list | dict):
            return [PrivateMessage(text=value)]
        value = parsed
    if hasattr(value, "to_list"):  # a polars Series cell of a List column
        value = value.to_list()
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: private_messages must be a list, got {value!r}")
    out = []
    for i, m in enumerate(value):
        if isinstance(m, str):
            out.append(PrivateMessage(text=m))
        elif isinstance(m, dict):
            text = m.get("text", m.get("content"))
            if not isinstance(text, str):
                raise ValueError(f"{where}: private_messages[{i}] has no 'text' string: {m!r}")
            to = m.get("to", m.get("recipient"))
            if isinstance(to, int) and not isinstance(to, bool):
                to = str(to)
            elif to is not None and not isinstance(to, str):
                raise ValueError(f"{where}: private_messages[{i}].to must be an id, got {to!r}")
            out.append(PrivateMessage(to=to, text=text))
        else:
            raise ValueError(
                f"{where}: private_messages[{i}] is {type(m).__name__}, not a dict/str"
            )
    return out


def _where(where: str, field: str) -> str:
    return f"{where}: field {field!r}"


def _id(value: Any, field: str, where: str) -> str:
    """An id as text: a string as is (leading zeros kept), an integer as its digits."""
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{_where(where, field)}: expected a non-empty string id, got {value!r}")


def _round(value: Any, field: str, where: str) -> int:
    """A round number: an integer, or a string of digits (CSV cells are text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise ValueError(f"{_where(where, field)}: expected an integer, got {value!r}")


def _text(value: Any, field: str, where: str) -> str:
    """Free text; null is empty. Any other JSON type is an error (never converted)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise ValueError(f"{_where(where, field)}: expected text or null, got {value!r}")


def _gold(value: Any, where: str) -> list[str] | None:
    """Expert labels: null (none), a list of strings, JSON text of such a list, or
    comma-separated text (``"a,b"``; empty items dropped)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{_where(where, 'gold')}: not a JSON list: {text[:80]!r}"
                ) from exc
        else:
            return [g.strip() for g in text.split(",") if g.strip()]
    if hasattr(value, "to_list"):  # a polars Series cell of a List column
        value = value.to_list()
    if isinstance(value, list | tuple) and all(isinstance(g, str) for g in value):
        return list(value)
    raise ValueError(f"{_where(where, 'gold')}: expected a list of label strings, got {value!r}")


def unit_from_row(row: dict[str, Any], where: str) -> Unit:
    """One unit from a row with :data:`FRAME_COLUMNS` (and optional ``gold``).

    Types are explicit, never inferred from other rows: ``run_id`` and ``agent`` are
    ids (strings kept as written; integers as their digits), ``contention`` an integer
    (or a string of digits), ``public_reasoning`` and ``context`` text or null,
    ``private_messages`` as in :func:`_messages`, ``gold`` as in :func:`_gold`.
    Other keys are ignored.

    Raises:
        ValueError: a required key is missing or a value has the wrong type (the
            message names ``where``, the field and the value).
    """
    if missing := [c for c in FRAME_COLUMNS if c not in row]:
        raise ValueError(f"{where}: missing keys {missing}; has {sorted(row)}")
    run_id = _id(row["run_id"], "run_id", where)
    round_ = _round(row["contention"], "contention", where)
    agent = _id(row["agent"], "agent", where)
    uid = make_unit_id(run_id, round_, agent)
    return Unit(
        unit_id=uid,
        run_id=run_id,
        round=round_,
        agent=agent,
        public_reasoning=_text(row["public_reasoning"], "public_reasoning", where),
        private_messages=_messages(row["private_messages"], f"{where} ({uid})"),
        context=_text(row["context"], "context", where),
        gold=_gold(row.get("gold"), where),
    )


def units_from_rows(
    rows: Iterable[tuple[str, dict[str, Any]]], *, keep_empty: bool = False
) -> list[Unit]:
    """Units from ``(where, row)`` pairs (see :func:`unit_from_row`), sorted by
    ``(run_id, round, agent)``; units with nothing to label are dropped unless
    ``keep_empty``.

    Raises:
        ValueError: a bad row (see :func:`unit_from_row`) or a repeated key
            ``(run_id, contention, agent)`` (the message names both places).
    """
    units: list[Unit] = []
    seen: dict[str, str] = {}
    for where, row in rows:
        unit = unit_from_row(row, where)
        if unit.unit_id in seen:
            raise ValueError(
                f"{where}: duplicate unit (run_id, contention, agent) = {unit.unit_id!r} "
                f"(first at {seen[unit.unit_id]})"
            )
        seen[unit.unit_id] = where
        if keep_empty or not unit.is_empty:
            units.append(unit)
    return sorted(units, key=lambda u: (u.run_id, u.round, u.agent))


def units_from_frame(df: pl.DataFrame, *, keep_empty: bool = False) -> list[Unit]:
    """Units from a frame with the columns in :data:`FRAME_COLUMNS`, one row each, as
    :func:`units_from_rows` builds them (types, order, ``keep_empty``).

    Raises:
        ValueError: a required column is missing, or a bad or repeated row (as
            :func:`units_from_rows`; the message names the row).
    """
    _check_columns(df, "units frame")
    rows = ((f"units frame row {i}", r) for i, r in enumerate(df.iter_rows(named=True)))
    return units_from_rows(rows, keep_empty=keep_empty)


def units_to_frame(units: list[Unit]) -> pl.DataFrame:
    """Units as a polars frame (one row per unit; messages as JSON text)."""
    rows = [(u.unit_id, u.run_id, u.round, u.agent, u.public_reasoning,
             json.dumps([m.model_dump() for m in u.private_messages]), u.recipients, u.context) for u in units]
    schema = {"unit_id": pl.String, "run_id": pl.String, "round": pl.Int64, "agent": pl.String,
              "public_reasoning": pl.String, "private_messages": pl.String, "recipients": pl.List(pl.String),
              "context": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


def units_from_path(path: Path, *, keep_empty: bool = False) -> list[Unit]:
    """Units from a file or a trajectory dataset.

    ``path`` may be a ``.jsonl``/``.ndjson``, ``.csv`` or ``.parquet`` file with
    :data:`FRAME_COLUMNS` (and optionally ``gold``), or a folder of runs of one
    environment (:func:`dataset_units`: the builder its spec names). Files are read with explicit types, never
    inferred from a sample (:func:`unit_from_row`): a key that first appears late is
    kept, ids stay strings (leading zeros kept), text holding ``"true"`` stays text. A
    UTF-8 byte order mark and CRLF line ends are accepted; a torn last line of a JSONL
    file is skipped with a warning naming file and line
    (:func:`scarce_lab.data.jsonl.read_jsonl`).

    Raises:
        FileNotFoundError: ``path`` does not exist, or a folder holds no run.
        ValueError: unsupported file type, missing columns, or a bad row (the message
            names file and line or row, the field and the value); a folder of runs of
            several environments, or of one without judge units (:func:`dataset_units`).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or dataset: {path}")
    if path.is_dir():
        return dataset_units(path, keep_empty=keep_empty)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows = ((f"{path}:{no}", obj) for no, obj in read_jsonl(path))
        return units_from_rows(rows, keep_empty=keep_empty)
    if suffix == ".csv":
        # Every cell as text (no inference; unit_from_row converts the round number), through the
        # CSV read gate: the quote the writer put before a formula-like talk cell is removed
        frame = read_csv_cells(path)
    elif suffix == ".parquet":
        frame = pl.read_parquet(path)  # typed by its own schema; values checked per row
    else:
        raise ValueError(
            f"{path}: unsupported units file type {path.suffix!r}; use "
            "['.csv', '.jsonl', '.ndjson', '.parquet'] or a dataset folder"
        )
    _check_columns(frame, f"{path}:")
    # Line numbers (CSV): the header is line 1 (cells with newlines would shift them).
    rows = ((f"{path}: row {i + 1}", r) for i, r in enumerate(frame.iter_rows(named=True)))
    return units_from_rows(rows, keep_empty=keep_empty)


def _check_columns(frame: pl.DataFrame, where: str) -> None:
    """Raise ValueError naming the :data:`FRAME_COLUMNS` that ``frame`` lacks."""
    if missing := [c for c in FRAME_COLUMNS if c not in frame.columns]:
        raise ValueError(f"{where} lacks columns {missing}; has {frame.columns}")


def dataset_environment(path: Path) -> str | None:
    """The environment of the runs below ``path`` (from their manifests); ``None``
    when there is no run.

    Raises:
        ValueError: the runs belong to several environments (their units differ).
    """
    from ..data.loaders import find_run_dirs
    from ..data.recorder import read_manifest

    envs = sorted({read_manifest(d).environment for d in find_run_dirs(Path(path))})
    if len(envs) > 1:
        raise ValueError(f"{path}: runs of several environments {envs}; judge one environment at a time")
    return envs[0] if envs else None


def dataset_units(path: Path, *, keep_empty: bool = False, gold: str | None = None) -> list[Unit]:
    """The judge units of a folder of runs (or one run directory), built by the
    ``judge_units`` of their environment's spec (:class:`scarce_lab.registry.EnvironmentSpec`;
    :func:`dataset_environment` reads the environment from the manifests).

    Args:
        keep_empty: keep units with nothing to label.
        gold: ``"intended"``: each unit's ``gold`` is what the scripted agents recorded
            or were written to mean (the environment's ground truth, for
            :func:`scarce_lab.judge.validation.validate_panel`); ``None``: no gold.

    Raises:
        FileNotFoundError: no run directory below ``path``.
        ValueError: runs of several environments; an environment whose spec builds no
            judge units (named, with those that do); or the builder's own errors (a
            bad ``gold``, runs without talk or without ground truth).
        UnknownEnvironmentError: the runs' environment is not registered.
    """
    env = dataset_environment(path)
    if env is None:
        raise FileNotFoundError(f"no run directories (manifest.json) found below {path}")
    spec = registry.get(env)
    if spec.judge_units is None:
        raise ValueError(f"{path}: {spec.title} runs have no judge units (their environment records no talk "
                         f"to label); environments with judge units: {_with_units()}")
    return spec.judge_units(Path(path), keep_empty=keep_empty, gold=gold)


def _with_units() -> list[str]:
    return [s.name for s in registry.specs() if s.judge_units is not None]
