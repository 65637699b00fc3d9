"""SCARCE metrics from the judge panel's labels: tactic shares (Table 1), memory
behaviours (Table 2), relational decay, rule-making and rule-invoking by stage
(Table 10), reasoning effort (Table 9). Definitions: :mod:`.base`."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

import polars as pl

from scarce_lab.analysis.pooling import check_no_pooling

from .base import (
    MEMORY_BEHAVIOURS,
    RULE_INVOKING,
    RULE_MAKING,
    SHARE,
    _ci_frame,
    _grouped,
    _groups,
    _need,
    assign_stages,
    cluster_ci,
)


# -- labels ----------------------------------------------------------------------------
def labelled_rounds(labels: pl.DataFrame, contentions: pl.DataFrame | None = None) -> pl.DataFrame:
    """The judge ``labels`` table as agent-rounds: ``run_id``, ``contention``
    (= ``round``), ``worker`` (= ``agent``), ``labels`` (accepted list), joined with
    the contention row (model, condition, subrun, won, ...) when ``contentions`` is
    given. Units that no valid judge answered (``n_valid`` = 0 or status
    ``insufficient``) are dropped: they say nothing about behaviour.

    Raises:
        ValueError: ``labels`` lacks ``run_id``, ``round``, ``agent`` or ``labels``.
    """
    _need(labels, ("run_id", "round", "agent", "labels"), "labels")
    lab = labels
    if "status" in lab.columns:
        lab = lab.filter(pl.col("status") != "insufficient")
    if "n_valid" in lab.columns:
        lab = lab.filter(pl.col("n_valid") > 0)
    lab = lab.select("run_id", pl.col("round").cast(pl.Int64).alias("contention"),
                     pl.col("agent").alias("worker"), pl.col("labels").fill_null([]))
    if contentions is not None:
        _need(contentions, ("run_id", "contention", "worker"), "contentions")
        lab = lab.join(contentions, on=["run_id", "contention", "worker"], how="left")
    return lab


def _has_any(ids: Collection[str]) -> pl.Expr:
    ids = sorted(set(ids))
    return pl.col("labels").list.eval(pl.element().is_in(ids)).list.any().fill_null(False)


def _id_shares(rounds: pl.DataFrame, named: Sequence[tuple[str, Collection[str]]], keys: Sequence[str],
               name: str) -> pl.DataFrame:
    """Per ``keys`` group and per ``(name, ids)`` of ``named`` in order: the share of
    rounds with at least one of the ids (t interval over run means)."""
    d = rounds.with_columns(_has_any(ids).cast(pl.Float64).alias(f"_s{i}") for i, (_, ids) in enumerate(named))
    rows = [base | {name: n} | cluster_ci(part, f"_s{i}", bounds=SHARE)
            for base, part in _groups(d, keys) for i, (n, _) in enumerate(named)]
    return _ci_frame(rows, {k: d.schema[k] for k in keys} | {name: pl.String})


def tactic_shares(rounds: pl.DataFrame, categories: Sequence[str], relational: Collection[str],
                  *, by: Sequence[str] = ("model",), subrun: int | None = 0) -> pl.DataFrame:
    """Share of labelled agent-rounds showing each category (Table 1; the method:
    :func:`~.findings.tactic_shares`).

    Args:
        rounds: :func:`labelled_rounds` output (``run_id``, ``labels``, ``subrun`` and ``by``).
        categories: taxonomy ids in display order (e.g. ``Taxonomy.ids``).
        relational: ids flagged relational; adds the row ``category = "relational"``
            (share of rounds with at least one of them).
        subrun: only rounds of this subrun (0 = the first, the paper's Table 1); ``None``
            for every subrun (e.g. Table 9).
    Returns:
        One row per (``by``..., ``category``): ``value`` (share in [0, 1]), ``lo``,
        ``hi`` (t interval over run means), ``n`` (rounds), ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(rounds, ("run_id", "labels", *by, *(("subrun",) if subrun is not None else ())), "rounds")
    if subrun is not None:
        rounds = rounds.filter(pl.col("subrun") == subrun)
    check_no_pooling(rounds, by, what="tactic_shares")
    return _id_shares(rounds, [*((c, [c]) for c in categories), ("relational", relational)], by, "category")


def behaviour_shares(rounds: pl.DataFrame, behaviours: dict[str, Sequence[str]] | None = None,
                     *, by: Sequence[str] = ("memory",)) -> pl.DataFrame:
    """Share of labelled agent-rounds showing each named behaviour (a set of taxonomy
    ids; default :data:`MEMORY_BEHAVIOURS`, the paper's Table 2), per ``by`` group.
    Same output shape as :func:`tactic_shares` with ``behaviour`` for ``category``."""
    behaviours = behaviours or MEMORY_BEHAVIOURS
    _need(rounds, ("run_id", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="behaviour_shares")
    return _id_shares(rounds, list(behaviours.items()), by, "behaviour")


def relational_by_half(rounds: pl.DataFrame, relational: Collection[str], *, by: Sequence[str] = ("memory",)) -> pl.DataFrame:
    """Relational share by half of each run (the method: :func:`~.findings.relational_by_half`;
    halves: :func:`assign_stages` with 2 stages). Returns ``by``..., ``half``
    (``"first"``/``"second"``), ``value``, ``lo``, ``hi``, ``n``, ``runs``."""
    _need(rounds, ("run_id", "contention", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="relational_by_half")
    d = assign_stages(rounds, 2).with_columns(
        pl.when(pl.col("stage") == 1).then(pl.lit("first")).otherwise(pl.lit("second")).alias("half"),
        _has_any(relational).cast(pl.Float64).alias("_rel"),
    )
    return _grouped(d, [*by, "half"], lambda p: cluster_ci(p, "_rel", bounds=SHARE))


def rule_shares_by_stage(rounds: pl.DataFrame, *, n_stages: int = 3, by: Sequence[str] = ("mechanism",),
                         making: Collection[str] = RULE_MAKING, invoking: Collection[str] = RULE_INVOKING) -> pl.DataFrame:
    """Rule share of labelled agent-rounds by stage (Table 10; the definitions:
    :func:`~.findings.rule_shares`): ``kind="rules"`` is the paper's combined share (a
    round with either), with the split beside it. Returns ``by``..., ``stage``, ``kind``
    (``"rules"``, ``"rule_making"``, ``"rule_invoking"``), ``value``, ``lo``, ``hi``,
    ``n``, ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(rounds, ("run_id", "contention", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="rule_shares_by_stage")
    kinds = [("rules", [*making, *invoking]), ("rule_making", making), ("rule_invoking", invoking)]
    return _id_shares(assign_stages(rounds, n_stages), kinds, [*by, "stage"], "kind")


def bid_revision_share(contentions: pl.DataFrame, *, by: Sequence[str] = ("model", "mechanism")
                       ) -> pl.DataFrame:
    """Share of participations whose final bid differs from the declared one (only
    possible under ``revisable`` bids). Returns ``by``..., ``value``, ``lo``, ``hi``
    (t interval over run means), ``n``, ``runs``."""
    _need(contentions, ("run_id", "declared_bid", "final_bid", *by), "contentions")
    check_no_pooling(contentions, by, what="bid_revision_share")
    d = contentions.filter(pl.col("declared_bid").is_not_null()).with_columns(
        (pl.col("final_bid") != pl.col("declared_bid")).cast(pl.Float64).alias("_rev"))
    return _grouped(d, by, lambda p: cluster_ci(p, "_rev", bounds=SHARE))


def label_distribution(rounds: pl.DataFrame, categories: Sequence[str], *, by: Sequence[str] = ("reasoning_effort",)
                       ) -> pl.DataFrame:
    """Distribution of accepted labels over categories (each label occurrence counts
    once; shares sum to 1 per group with any label). Returns ``by``..., ``category``,
    ``count``, ``share`` (null when the group has no label at all). Descriptive, no CI:
    pair it with :func:`tactic_shares` for intervals."""
    _need(rounds, ("labels", *by), "rounds")
    check_no_pooling(rounds, by, what="label_distribution")
    long = rounds.select(*by, "labels").explode("labels").drop_nulls("labels").rename({"labels": "category"})
    counts = long.group_by([*by, "category"]).agg(pl.len().cast(pl.Int64).alias("count"))
    groups = rounds.select(*by).unique()
    grid = groups.join(pl.DataFrame({"category": list(categories)}), how="cross")
    out = grid.join(counts, on=[*by, "category"], how="left").with_columns(pl.col("count").fill_null(0))
    tot = pl.col("count").sum().over(list(by)) if by else pl.col("count").sum()
    out = out.with_columns(pl.when(tot > 0).then(pl.col("count") / tot).otherwise(None).alias("share"))
    order = {c: i for i, c in enumerate(categories)}
    return (out.with_columns(pl.col("category").replace_strict(order, default=len(order)).alias("_o"))
            .sort([*by, "_o"]).drop("_o"))


# -- ground truth of the scripted population ----------------------------------------------
def labels_from_intent(messages: pl.DataFrame) -> pl.DataFrame:
    """The ground truth that strategic scripted negotiators record, in the shape of the
    judge panel's ``labels`` table, so every tactic table of this module runs on a
    scripted population: ``run_id``, ``round`` (= contention), ``agent`` (= worker),
    ``labels`` (list of taxonomy ids), ``status`` = ``"ground_truth"`` and
    ``source`` = ``"scripted intent"`` (tables built from it say so: these are the
    tactics the policies were written to use, not a judge's reading of model talk).

    Args:
        messages: :func:`scarce_lab.environments.scarce.tables.messages_table` (needs
            ``run_id``, ``contention``, ``worker``, ``intended_tactics``).

    Raises:
        ValueError: a column is missing, or no run records ground truth (only the
            strategic scripted negotiators do; the message says which runs lack it).
    """
    _need(messages, ("run_id", "contention", "worker", "intended_tactics"), "messages")
    lacking = messages.filter(pl.col("intended_tactics").is_null())
    if lacking.height == messages.height:
        runs = sorted(set(lacking["run_id"].to_list()))[:5]
        raise ValueError(f"no run records intended tactics (strategic scripted negotiators do); e.g. {runs}")
    rows = messages.filter(pl.col("intended_tactics").is_not_null())
    return pl.DataFrame({
        "run_id": rows["run_id"],
        "round": rows["contention"],
        "agent": rows["worker"],
        "labels": pl.Series([json.loads(x) for x in rows["intended_tactics"]], dtype=pl.List(pl.String)),
        "status": pl.Series(["ground_truth"] * rows.height, dtype=pl.String),
        "source": pl.Series(["scripted intent"] * rows.height, dtype=pl.String),
    })
