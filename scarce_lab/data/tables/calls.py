"""From a decision to the model calls behind it: what the model saw and said.

Every decision event (:class:`~scarce_lab.data.events.DecisionFields`: SovSim
extraction and announcement; SCARCE declaration, reasoning, private message or
silence, bid revision, ballot and solver action) carries ``call_ids`` since schema
version 4: the ``call_id`` of each call of ``llm_calls.jsonl`` that produced it (first
call, then a repair or resend). :func:`decision_calls` joins the two, so "what did the
model see and say when it over-extracted in round 7" is one call::

    decision_calls(ds, "extraction", round=7, agent="a2")

Rows of a scripted policy, and of files written before version 4 (their ``call_ids``
are empty: migrated, never guessed), have null call columns and ``n_calls`` 0; a
call id with no record in ``llm_calls.jsonl`` (a run whose call file was lost) is
kept with ``call_found`` false rather than dropped. An id recorded twice (a round
that failed and was replayed on resume) gives one row, the last record, with
``call_records`` 2.
"""

from __future__ import annotations

import polars as pl

__all__ = ["CALL_FIELDS", "decision_calls"]

#: Columns of the call taken into :func:`decision_calls` (``call_`` prefixed where a
#: decision column has the same name).
CALL_FIELDS = ("call_id", "attempt", "model", "purpose", "messages", "raw_response", "parsed", "error",
               "outcome", "finish_reason", "decision_source", "fallback_used", "cache_hit")


def decision_calls(ds, kind: str, *, environment: str | None = None, run_id: str | None = None,
                   agent: str | None = None, round: int | None = None) -> pl.DataFrame:
    """The decisions of ``kind`` (optionally of one run, agent and round) with their
    model calls: one row per (decision, call), calls in the order they were made.

    Args:
        ds: a :class:`~scarce_lab.data.loaders.Dataset`.
        kind: a decision kind of the environment (``extraction``, ``declaration``, ...).
        environment: needed when ``ds`` holds several environments.
        run_id, agent, round: filters (``None``: all).

    Returns:
        The decision's envelope keys and payload columns (``kind``, ``outcome``,
        ``valid``, ``fallback_used``... as recorded on the event), ``n_calls`` (number
        of ids on the event), ``call_index`` (0-based position among them, null when
        none), ``call_found`` (the id has a record), ``call_records`` (how many records
        hold the id: more than 1 when a round replayed on resume recorded it again;
        the row shows the last, the one the kept decision came from; null when not
        found), and the call's :data:`CALL_FIELDS`
        prefixed ``call_`` (``call_messages``: the prompt as JSON text;
        ``call_raw_response``: the model's answer; ``call_outcome``: that call's
        outcome).

    Raises:
        KeyError: ``kind`` is not a kind of the environment, or is not a decision
            kind (its events carry no ``call_ids``).
        ValueError: ``environment`` omitted with several environments present.
    """
    dec = ds.payloads(kind, environment)
    if "call_ids" not in dec.collect_schema().names():
        raise KeyError(f"event kind {kind!r} is not a decision (its payload has no call_ids)")
    if run_id is not None:
        dec = dec.filter(pl.col("run_id") == run_id)
    if agent is not None:
        dec = dec.filter(pl.col("agent") == agent)
    if round is not None:
        dec = dec.filter(pl.col("round") == round)
    dec = (dec.with_columns(kind=pl.lit(kind), n_calls=pl.col("call_ids").list.len(),
                            call_index=pl.int_ranges(pl.col("call_ids").list.len()))
           .explode("call_ids", "call_index", empty_as_null=True).rename({"call_ids": "call_id"}))
    # One record per (run, call id): a round replayed on resume records its calls again
    # under the same deterministic ids; the last record is the one the kept decision
    # came from, and call_records says how many there were.
    calls = ds.llm_calls.select(
        pl.col("run_id"), *(pl.col(c).alias(f"call_{c}") for c in CALL_FIELDS),
    ).with_columns(call_found=pl.lit(True), call_records=pl.len().over("run_id", "call_call_id").cast(pl.UInt32)
                   ).unique(subset=["run_id", "call_call_id"], keep="last", maintain_order=True)
    out = dec.rename({"call_id": "call_call_id"}).join(
        calls, on=["run_id", "call_call_id"], how="left", nulls_equal=False)
    out = out.with_columns(call_found=pl.col("call_found").fill_null(False) & pl.col("call_call_id").is_not_null())
    out = out.rename({"call_call_id": "call_id"})
    return out.sort("run_id", "seq", "call_index", nulls_last=True).collect()
