"""SCARCE negotiation as judge units: one worker's communication in one contention.

A unit (:class:`scarce_lab.judge.units.Unit`) holds the worker's public reasoning and
the private messages it sent in the contention, with the contention's public state as
``context`` text (template ``judge_context.j2`` beside this module). The registry's
SCARCE spec names :func:`units_from_dataset` as its ``judge_units`` and ``scarce`` as its
taxonomy, so :func:`scarce_lab.judge.units.units_from_path` and ``scarce-lab judge
label`` / ``judge validate`` build these units from a folder of SCARCE runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ...analysis.layout import _need
from ...judge.units import Unit, dataset_environment, units_from_frame

#: The context template (beside this module).
CONTEXT_TEMPLATE = Path(__file__).parent / "judge_context.j2"


def units_from_dataset(path: Path, *, keep_empty: bool = False, gold: str | None = None) -> list[Unit]:
    """Units from a SCARCE trajectory dataset (a run directory or a folder of them).

    Built from :func:`scarce_lab.environments.scarce.tables.messages_table` via
    :func:`scarce_units_frame`: one unit per worker per contention. With
    ``gold="intended"`` each unit's ``gold`` is the ground truth that the strategic
    scripted negotiators record (``tactic_intent`` events: the categories they wrote
    their texts to express), so :func:`scarce_lab.judge.validation.validate_panel` scores
    a judge panel against it as it does against CaSiNo's expert labels.

    Raises:
        FileNotFoundError: no run directory below ``path``.
        ValueError: runs of another environment; ``gold`` is not ``None`` or ``"intended"``; or ``gold="intended"``
            and some runs record no ground truth (the message names them).
    """
    from .tables import messages_table

    env = dataset_environment(path)
    if env not in (None, "scarce"):
        raise ValueError(f"{path}: a {env} dataset, not SCARCE; its talk units come from "
                         "scarce_lab.judge.units.units_from_path (by the runs' environment)")
    if gold not in (None, "intended"):
        raise ValueError(f"gold must be None or 'intended', got {gold!r}")
    messages = messages_table(path)
    frame = scarce_units_frame(messages)
    if gold == "intended":
        missing = sorted(set(messages.filter(pl.col("intended_tactics").is_null())["run_id"].to_list()))
        if missing or messages.is_empty():
            raise ValueError(f"{path}: {len(missing)} runs record no intended tactics (only the strategic scripted "
                             f"negotiators do: spend-down, urgency, reciprocal, coalition, strategic): {missing[:5]}"
                             if missing else f"{path}: no SCARCE negotiation to validate against")
        frame = frame.with_columns(gold=messages["intended_tactics"])
    return units_from_frame(frame, keep_empty=keep_empty)


def scarce_units_frame(messages: pl.DataFrame) -> pl.DataFrame:
    """The :data:`~scarce_lab.judge.units.FRAME_COLUMNS` frame from a SCARCE ``messages`` table.

    ``agent`` = ``worker``, ``public_reasoning`` = ``reasoning``,
    ``private_messages`` = ``private_sent`` (JSON ``[{round, to, text}]``), and
    ``context`` = the contention's public state as text (template
    :data:`CONTEXT_TEMPLATE`): queue, declarations, the other participants' public
    reasoning, the previous contention's outcome, and the private messages the worker
    received.

    Raises:
        ValueError: a column of the messages table is missing.
    """
    _need(messages, ("context", "contention", "private_received", "private_sent", "reasoning", "run_id", "worker"),
          "SCARCE messages")
    template = _context_template()
    contexts = []
    for row in messages.iter_rows(named=True):
        state = json.loads(row["context"] or "{}")
        received = json.loads(row["private_received"] or "[]")
        contexts.append(template.render(
            contention=row["contention"], worker=row["worker"], queue=state.get("queue") or [],
            declarations=state.get("declarations") or {},
            reasoning={w: t for w, t in (state.get("reasoning") or {}).items() if w != row["worker"]},
            previous=state.get("previous_outcome") or [], received=received).strip())
    return pl.DataFrame({"run_id": messages["run_id"], "contention": messages["contention"],
                         "agent": messages["worker"], "public_reasoning": messages["reasoning"],
                         "private_messages": messages["private_sent"],
                         "context": pl.Series(contexts, dtype=pl.String)})


def _context_template():
    from ...llm.quoting import template_env

    return template_env(CONTEXT_TEMPLATE.parent, trim_blocks=True, lstrip_blocks=True).get_template(CONTEXT_TEMPLATE.name)
