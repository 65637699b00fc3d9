"""Institutional behaviour derived from arbitrated labels (pure functions on frames).

Following the SCARCE paper's definition, a labelled behaviour is **institutional** when
it is

- **spontaneous**: not asked for by the environment's instructions (the taxonomy's
  ``induced_by_instructions`` list, e.g. bid priority under auction rules), and
- **persistent**: it recurs in a later round for the same agent (scope ``agent``) or,
  for a relational label, between the same pair of agents (scope ``pair``: one of them
  shows it in a round where it messaged the other).

Relational and non-relational labels are reported separately (:func:`institutional_summary`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from .taxonomy import Taxonomy

INSTITUTION_SCHEMA = {
    "run_id": pl.String,
    "scope": pl.String,
    "who": pl.String,
    "label": pl.String,
    "relational": pl.Boolean,
    "spontaneous": pl.Boolean,
    "rounds": pl.List(pl.Int64),
    "first_round": pl.Int64,
    "n_rounds": pl.Int64,
    "persistent": pl.Boolean,
    "institutional": pl.Boolean,
}


def institutions(
    labels: pl.DataFrame,
    taxonomy: Taxonomy,
    *,
    recipients: pl.DataFrame | None = None,
    induced: Iterable[str] | None = None,
) -> pl.DataFrame:
    """One row per (run, agent or pair, label) that the panel accepted at least once.

    Args:
        labels: the panel's ``labels`` frame (``run_id``, ``round``, ``agent``,
            ``labels`` list; optionally ``unit_id``).
        taxonomy: gives the relational flags and the induced labels.
        recipients: ``unit_id`` + ``recipients`` (list of agent names) per unit, e.g.
            :func:`scarce_lab.judge.units.units_to_frame`; needed for ``pair`` rows.
        induced: overrides the taxonomy's ``induced_by_instructions`` ids.

    Returns:
        :data:`INSTITUTION_SCHEMA` rows; ``who`` is the agent, or ``"a|b"`` (sorted
        names) for a pair.

    Raises:
        ValueError: ``labels`` lacks a needed column.
    """
    need = {"run_id", "round", "agent", "labels"}
    if missing := need - set(labels.columns):
        raise ValueError(f"institutions: labels frame lacks {sorted(missing)}")
    induced_ids = set(taxonomy.induced_ids if induced is None else induced)
    rel = taxonomy.relational_ids
    long = (
        labels.select(
            "run_id",
            "round",
            "agent",
            *(["unit_id"] if "unit_id" in labels.columns else []),
            "labels",
        )
        .explode("labels")
        .rename({"labels": "label"})
        .drop_nulls("label")
    )
    agent_rows = long.select(
        "run_id", pl.lit("agent").alias("scope"), pl.col("agent").alias("who"), "label", "round"
    )
    parts = [agent_rows]
    if recipients is not None and "unit_id" in long.columns:
        pairs = (
            long.filter(pl.col("label").is_in(sorted(rel)))
            .join(recipients.select("unit_id", "recipients"), on="unit_id", how="inner")
            .explode("recipients")
            .drop_nulls("recipients")
            .filter(pl.col("recipients") != pl.col("agent"))
            .select(
                "run_id",
                pl.lit("pair").alias("scope"),
                pl.concat_str(
                    pl.min_horizontal("agent", "recipients"),
                    pl.lit("|"),
                    pl.max_horizontal("agent", "recipients"),
                ).alias("who"),
                "label",
                "round",
            )
        )
        parts.append(pairs)
    allrows = pl.concat(parts)
    out = (
        allrows.group_by("run_id", "scope", "who", "label")
        .agg(pl.col("round").unique().sort().alias("rounds"))
        .with_columns(
            pl.col("label").is_in(sorted(rel)).alias("relational"),
            (~pl.col("label").is_in(sorted(induced_ids))).alias("spontaneous"),
            pl.col("rounds").list.first().alias("first_round"),
            pl.col("rounds").list.len().cast(pl.Int64).alias("n_rounds"),
        )
        .with_columns((pl.col("n_rounds") >= 2).alias("persistent"))  # recurs in a later round
        .with_columns((pl.col("spontaneous") & pl.col("persistent")).alias("institutional"))
    )
    order = {lab: i for i, lab in enumerate(taxonomy.ids)}
    out = out.with_columns(pl.col("label").replace_strict(order, default=len(order)).alias("_o"))
    return (
        out.sort("run_id", "scope", "who", "_o", "label")
        .drop("_o")
        .select(list(INSTITUTION_SCHEMA))
        .cast(INSTITUTION_SCHEMA)
    )


def institutional_summary(
    table: pl.DataFrame, *, by: Sequence[str] = ("relational",)
) -> pl.DataFrame:
    """Counts of behaviours and institutional ones, split relational / non-relational.

    Returns columns ``by`` + ``scope``, ``behaviours`` (rows), ``institutional`` (rows
    flagged institutional), ``share`` (institutional / behaviours).
    """
    keys = [*by, "scope"]
    return (
        table.group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("behaviours"),
            pl.col("institutional").sum().cast(pl.Int64).alias("institutional"),
        )
        .with_columns((pl.col("institutional") / pl.col("behaviours")).alias("share"))
        .sort(keys)
    )
