"""The unit a judge labels: one agent's communication in one negotiation round.

A :class:`Unit` holds an agent's public reasoning and the private messages it sent in
one round (a SCARCE contention), with the round's public state as ``context`` text. The
judge is taxonomy-agnostic: a CaSiNo utterance is a unit too (one message to the
partner, the previous turns as context; see :mod:`scarce_lab.judge.casino`).

Builders:

- :func:`units_from_frame`: from a simple polars frame with columns ``run_id``,
  ``contention``, ``agent``, ``public_reasoning``, ``private_messages``, ``context``.
- :func:`units_from_dataset`: from a SCARCE trajectory dataset (run directories), via
  the tidy ``messages`` table of :mod:`scarce_lab.data.tables.scarce`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

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
        out: list[str] = []
        for m in self.private_messages:
            if m.to and m.to not in out:
                out.append(m.to)
        return out


def make_unit_id(run_id: str, round_: int, agent: str) -> str:
    """The canonical unit id ``"{run_id}:{round}:{agent}"``."""
    return f"{run_id}:{round_}:{agent}"


def _messages(value: Any, where: str) -> list[PrivateMessage]:
    """Accept a list of ``{to, text}`` dicts, a list of strings, JSON text, or null."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return [PrivateMessage(text=value)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"{where}: private_messages must be a list, got {type(value).__name__}")
    out = []
    for i, m in enumerate(value):
        if isinstance(m, str):
            out.append(PrivateMessage(text=m))
        elif isinstance(m, dict):
            text = m.get("text", m.get("content"))
            if text is None:
                raise ValueError(f"{where}: private_messages[{i}] has no 'text': {m!r}")
            to = m.get("to", m.get("recipient"))
            out.append(PrivateMessage(to=None if to is None else str(to), text=str(text)))
        else:
            raise ValueError(
                f"{where}: private_messages[{i}] is {type(m).__name__}, not a dict/str"
            )
    return out


def units_from_frame(df: pl.DataFrame, *, keep_empty: bool = False) -> list[Unit]:
    """Build units from a frame with the columns in :data:`FRAME_COLUMNS`.

    ``private_messages`` may be a list of ``{to, text}`` structs, a list of strings or
    JSON text. Units with neither reasoning nor message text are dropped unless
    ``keep_empty``. Rows are returned sorted by ``(run_id, contention, agent)``.

    Raises:
        ValueError: a required column is missing, a key is null, or a key
            ``(run_id, contention, agent)`` repeats (the message names it).
    """
    missing = [c for c in FRAME_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"units frame lacks columns {missing}; has {df.columns}")
    units: list[Unit] = []
    seen: set[str] = set()
    for row in df.sort(["run_id", "contention", "agent"]).iter_rows(named=True):
        for key in ("run_id", "contention", "agent"):
            if row[key] is None:
                raise ValueError(f"units frame: null {key!r} in row {row!r}")
        uid = make_unit_id(str(row["run_id"]), int(row["contention"]), str(row["agent"]))
        if uid in seen:
            raise ValueError(f"units frame: duplicate unit (run_id, contention, agent) = {uid!r}")
        seen.add(uid)
        unit = Unit(
            unit_id=uid,
            run_id=str(row["run_id"]),
            round=int(row["contention"]),
            agent=str(row["agent"]),
            public_reasoning=row["public_reasoning"] or "",
            private_messages=_messages(row["private_messages"], uid),
            context=row["context"] or "",
            gold=list(row["gold"]) if row.get("gold") is not None else None,
        )
        if keep_empty or not unit.is_empty:
            units.append(unit)
    return units


def units_to_frame(units: list[Unit]) -> pl.DataFrame:
    """Units as a polars frame (one row per unit; messages as JSON text)."""
    rows = [
        {
            "unit_id": u.unit_id,
            "run_id": u.run_id,
            "round": u.round,
            "agent": u.agent,
            "public_reasoning": u.public_reasoning,
            "private_messages": json.dumps([m.model_dump() for m in u.private_messages]),
            "recipients": u.recipients,
            "context": u.context,
        }
        for u in units
    ]
    schema = {
        "unit_id": pl.String,
        "run_id": pl.String,
        "round": pl.Int64,
        "agent": pl.String,
        "public_reasoning": pl.String,
        "private_messages": pl.String,
        "recipients": pl.List(pl.String),
        "context": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def units_from_path(path: Path, *, keep_empty: bool = False) -> list[Unit]:
    """Units from a file or a trajectory dataset.

    ``path`` may be a ``.parquet``, ``.csv`` or ``.jsonl`` frame with
    :data:`FRAME_COLUMNS`, or a folder of SCARCE run directories
    (:func:`units_from_dataset`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: unsupported file type or missing columns.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or dataset: {path}")
    if path.is_dir():
        return units_from_dataset(path, keep_empty=keep_empty)
    readers = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}
    reader = readers.get(path.suffix)
    if reader is None:
        raise ValueError(
            f"{path}: unsupported units file type {path.suffix!r}; use {sorted(readers)}"
        )
    return units_from_frame(reader(path), keep_empty=keep_empty)


def units_from_dataset(path: Path, *, keep_empty: bool = False) -> list[Unit]:
    """Units from a SCARCE trajectory dataset (a run directory or a folder of them).

    Built from :func:`scarce_lab.data.tables.scarce.messages_table` via
    :func:`scarce_units_frame`: one unit per worker per contention.

    Raises:
        FileNotFoundError: no run directory below ``path``.
    """
    from ..data.tables.scarce import messages_table

    return units_from_frame(scarce_units_frame(messages_table(path)), keep_empty=keep_empty)


def scarce_units_frame(messages: pl.DataFrame) -> pl.DataFrame:
    """The :data:`FRAME_COLUMNS` frame from a SCARCE ``messages`` table.

    ``agent`` = ``worker``, ``public_reasoning`` = ``reasoning``,
    ``private_messages`` = ``private_sent`` (JSON ``[{round, to, text}]``), and
    ``context`` = the contention's public state as text (template
    ``prompts/scarce_context.j2``): queue, declarations, the other participants' public
    reasoning, the previous contention's outcome, and the private messages the worker
    received.

    Raises:
        ValueError: a column of the messages table is missing.
    """
    need = {
        "run_id",
        "contention",
        "worker",
        "reasoning",
        "private_sent",
        "private_received",
        "context",
    }
    if missing := sorted(need - set(messages.columns)):
        raise ValueError(f"SCARCE messages table lacks columns {missing}")
    template = _template("scarce_context.j2")
    contexts = []
    for row in messages.iter_rows(named=True):
        state = json.loads(row["context"] or "{}")
        received = json.loads(row["private_received"] or "[]")
        contexts.append(
            template.render(
                contention=row["contention"],
                worker=row["worker"],
                queue=state.get("queue") or [],
                declarations=state.get("declarations") or {},
                reasoning={
                    w: t for w, t in (state.get("reasoning") or {}).items() if w != row["worker"]
                },
                previous=state.get("previous_outcome") or [],
                received=received,
            ).strip()
        )
    return pl.DataFrame(
        {
            "run_id": messages["run_id"],
            "contention": messages["contention"],
            "agent": messages["worker"],
            "public_reasoning": messages["reasoning"],
            "private_messages": messages["private_sent"],
            "context": pl.Series(contexts, dtype=pl.String),
        }
    )


def _template(name: str):
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "prompts"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(name)
