"""What became of the model's decisions: per model (and per agent) counts of
decisions, invalid answers, repairs, fallbacks, missing decisions, refusals and
truncations, from a dataset's ``llm_calls`` frame.

Pure polars; no environment, agent or client imports (it works on anyone's data).

Definitions (one *decision* is the first call and its optional second call, grouped by
``decision_id``):

- ``decisions``: number of decisions; ``calls``: number of model calls;
- ``ok_first``: the first call's answer was used;
- ``invalid``: the first answer did not validate (``invalid`` or ``ambiguous``);
  ``ambiguous`` counts the latter alone;
- ``repaired``: the answer used came from the second call (a repair, or a resend after a
  truncated or empty answer);
- ``fallback``: the documented fallback was played (the model answered, unusably);
- ``missing``: no value at all (no call got an answer; the run stopped there);
- ``refusals``, ``truncated``, ``empty``, ``transport_errors``, ``context_overflows``:
  decisions with at least one call of that outcome; ``tool_call``: decisions whose
  answer came as a tool call;
- ``fallback_share``, ``missing_share``: fallback / decisions, missing / decisions
  (null when there are no decisions);
- ``derived``: calls whose outcome was derived (records written before outcomes existed).

Old records (no ``outcome``, ``decision_id`` or ``missing`` field) still count: the
outcome is derived as ``ok`` when ``parsed`` is set, ``transport_error`` when there is
an ``error`` and no ``raw_response``, ``invalid`` when there is an ``error`` and a
``raw_response``, else ``ok`` (a plain completion); decisions are rebuilt from the
row order within each run (a call with ``attempt == 0`` starts a decision; the client
recorded each decision's calls together), and ``missing`` is false (the old client
played a fallback after a transport failure, so those decisions count as
``fallback`` and ``transport_errors``). Truncations, refusals and empty answers cannot
be told apart in old records.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

#: Outcomes whose answer was used as the decision.
USABLE = ("ok", "tool_call")

_COLUMNS: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "call_id": pl.String,
    "model": pl.String,
    "agent": pl.String,
    "purpose": pl.String,
    "attempt": pl.Int64,
    "outcome": pl.String,
    "decision_id": pl.String,
    "fallback_used": pl.Boolean,
    "missing": pl.Boolean,
    "parsed": pl.String,
    "error": pl.String,
    "raw_response": pl.String,
}

#: Count column -> the call outcome it counts decisions with (at least one call of it).
_ANY_CALL = {"refusals": "refusal", "truncated": "truncated", "empty": "empty", "transport_errors": "transport_error",
             "context_overflows": "context_overflow", "tool_call": "tool_call"}

COUNT_COLUMNS = (
    "decisions", "calls", "ok_first", "invalid", "ambiguous", "repaired", "fallback", "missing",
    "refusals", "truncated", "empty", "transport_errors", "context_overflows", "tool_call", "derived",
)


def _with_columns(lf: pl.LazyFrame) -> pl.LazyFrame:
    have = lf.collect_schema().names()
    add = [pl.lit(None, dtype=t).alias(c) for c, t in _COLUMNS.items() if c not in have]
    lf = lf.with_columns(add) if add else lf
    # parsed may be a struct/JSON column in some layouts; only its nullness is used
    return lf.with_columns(pl.col("parsed").is_not_null().alias("_has_parsed"))


def _derived_outcome() -> pl.Expr:
    return (
        pl.when(pl.col("outcome").is_not_null()).then(pl.col("outcome"))
        .when(pl.col("_has_parsed")).then(pl.lit("ok"))
        .when(pl.col("error").is_not_null() & pl.col("raw_response").is_null()).then(pl.lit("transport_error"))
        .when(pl.col("error").is_not_null()).then(pl.lit("invalid"))
        .otherwise(pl.lit("ok"))
    )


def llm_outcome_summary(
    llm_calls: pl.LazyFrame | pl.DataFrame, by: Sequence[str] = ("model",)
) -> pl.DataFrame:
    """Counts per group of ``by`` (default per model; ``("model", "agent")`` per
    agent) as defined in the module docstring, sorted by ``by``.

    Args:
        llm_calls: the ``llm_calls`` frame of a dataset (one row per model call).
        by: grouping columns (each must exist in ``llm_calls`` or be one of the
            record fields above).

    Raises:
        ValueError: a ``by`` column is not in the frame.
    """
    lf = llm_calls.lazy() if isinstance(llm_calls, pl.DataFrame) else llm_calls
    names = lf.collect_schema().names()
    if unknown := [c for c in by if c not in names and c not in _COLUMNS]:
        raise ValueError(f"llm_outcome_summary: unknown grouping column(s) {unknown}; the frame has {names}")
    by = list(by)
    lf = _with_columns(lf).with_row_index("_row")
    lf = lf.with_columns(
        _derived_outcome().alias("_outcome"),
        pl.col("outcome").is_null().alias("_derived"),
        pl.col("attempt").fill_null(0).alias("_attempt"),
        pl.col("fallback_used").fill_null(False).alias("_fallback"),
        pl.col("missing").fill_null(False).alias("_missing"),
    )
    starts = (pl.col("_attempt") == 0).cast(pl.Int64).cum_sum().over(pl.col("run_id").fill_null(""))
    lf = lf.with_columns(
        pl.coalesce(
            pl.col("decision_id"),
            pl.concat_str([pl.col("run_id").fill_null(""), pl.lit("#"), starts.cast(pl.String)]),
        ).alias("_decision")
    )
    usable = pl.col("_outcome").is_in(USABLE)
    per_decision = (
        lf.sort("_row")
        .group_by("_decision", maintain_order=True)
        .agg(
            *[pl.col(c).first() for c in by],
            pl.len().alias("_calls"),
            pl.col("_derived").sum().alias("_n_derived"),
            pl.col("_outcome").sort_by("_attempt").first().alias("_first"),
            (usable & (pl.col("_attempt") >= 1)).any().alias("_repaired"),
            pl.col("_fallback").any().alias("_fb"),
            pl.col("_missing").any().alias("_miss"),
            *[(pl.col("_outcome") == outcome).any().alias(f"_{name}") for name, outcome in _ANY_CALL.items()],
        )
    )
    out = (
        per_decision.group_by(by)
        .agg(
            pl.len().alias("decisions"),
            pl.col("_calls").sum().alias("calls"),
            pl.col("_first").is_in(USABLE).sum().alias("ok_first"),
            pl.col("_first").is_in(["invalid", "ambiguous"]).sum().alias("invalid"),
            (pl.col("_first") == "ambiguous").sum().alias("ambiguous"),
            pl.col("_repaired").sum().alias("repaired"),
            pl.col("_fb").sum().alias("fallback"),
            pl.col("_miss").sum().alias("missing"),
            *[pl.col(f"_{name}").sum().alias(name) for name in _ANY_CALL],
            pl.col("_n_derived").sum().alias("derived"),
        )
        .with_columns(pl.col(c).cast(pl.Int64) for c in COUNT_COLUMNS)
        .with_columns(
            (pl.col("fallback") / pl.col("decisions")).alias("fallback_share"),
            (pl.col("missing") / pl.col("decisions")).alias("missing_share"),
        )
        .sort(by, nulls_last=True)
    )
    return out.collect()
