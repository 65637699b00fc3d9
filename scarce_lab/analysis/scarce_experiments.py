"""SCARCE experiment metrics behind notebooks 02-06 (pure functions on polars frames).

Inputs are the tidy tables of :mod:`scarce_lab.data.tables.scarce` (``contentions``,
``submissions``, ``messages``), the runs frame of
:func:`scarce_lab.data.loaders.load_dataset` (for run settings) and the judge panel's
``labels`` table (:mod:`scarce_lab.judge.panel`: one row per ``(run_id, round, agent)``
with the accepted ``labels`` list; ``round`` is the contention index). This module never
imports environments or agents.

Statistics (DESIGN.md): runs are the independent unit. Shares and means over
rounds, contentions or submissions are pooled over rows with a 95 % percentile
**cluster bootstrap** over runs (:func:`scarce_lab.analysis.stats.cluster_bootstrap_ci`;
medians use :func:`cluster_bootstrap_median`, the same resampling). Quantities with one
value per run (language drift per stage, growth factors, per-run collective outcomes)
get a Student-t interval over runs (:func:`scarce_lab.analysis.stats.mean_ci`). With a
single run there is no interval (``lo``/``hi`` null). Every result frame carries
``n`` (rows behind the estimate) and ``runs`` (clusters).

Never pooled: every metric first runs :func:`scarce_lab.analysis.pooling.check_no_pooling`
on its ``by`` groups and raises :class:`~scarce_lab.analysis.pooling.PoolingError` when a
group would mix runs whose condition settings (or solver model) differ in anything the
``by`` columns do not name; group by ``condition`` (with ``model``) to keep conditions
apart.

Size: one module for the metrics of notebooks 02-06 (each a short function over the same
tidy tables and helpers); the never-pool check and the charts live in their own modules.

Definitions used here (the SCARCE paper, sections on Tables 1-10, where it gives them):

- **stage**: within a run, its contentions in order are cut into ``n_stages`` equal
  blocks (:func:`assign_stages`); stage 1 is the earliest. ``n_stages=2`` gives the
  first and second half of a run.
- **contested**: a contention with at least two participants (only those can be won
  or lost against someone).
- **win rate**: the share of rounds (participations) in which the worker is first in the
  queue, over *all* its rounds (the paper's definition); the share over contested rounds
  only is given beside it where useful.
- **Table 1 and Figure 14** (tactic shares and private-chat use per model) are computed
  on a single subrun, the first, as in the paper (``subrun=0``; ``None`` for all).
- **Table 8** (bid drift): median winning bid by stage with 4 stages (stages 1 to 4).
- **relational round**: an agent-round with at least one relational label (taxonomy
  flag ``relational``).
- **rule-making / rule-invoking** (Table 10), from the taxonomy's "rules and
  spontaneous norms" system: *rule-making* = proposing how the group should decide, a
  label of its *process and governance norms* group (:data:`RULE_MAKING`:
  iterative bargaining, negotiation neutrality rules, issue reduction); *rule-invoking*
  = appealing to an ordering criterion to claim or concede a place, a label of its
  *time-urgency* or *classical scheduling norms* groups (:data:`RULE_INVOKING`). The
  paper's Table 10 reports their combination (``kind="rules"``: a round with either);
  the split is kept beside it.
- **budget phase** (Tables 5, 7): share of the subrun budget left before the
  contention: ``> 2/3`` -> ``">66%"``, ``1/3 .. 2/3`` -> ``"33-66%"``, ``< 1/3`` ->
  ``"<33%"``; budget left = initial budget minus payments in earlier contentions of the
  same subrun (:func:`budget_left`).
- **richer worker**: in each run, the worker whose initial budget is strictly larger
  than every other worker's (none when budgets are equal); the paper's asymmetry gives
  it 1,500 credits against 1,000. Table 7 reports its overall win rate (all phases,
  ``budget_phase="all"``) beside the rate per phase.
- **reference condition** (:func:`base_condition`): negotiated ballots, fixed bids, the
  paper's cross-subrun memory, equal budgets and deadlines, no reasoning effort.
- **urgent worker** (Table 4): deadline strictly below the run's median deadline,
  or below ``urgent_below_s`` when given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence

import polars as pl

from . import stats
from .pooling import PoolingError, check_no_pooling  # noqa: F401  (PoolingError: re-exported for notebooks)

#: Taxonomy ids (scarce.yaml, "process and governance norms") counted as rule-making.
RULE_MAKING: tuple[str, ...] = ("iterative_bargaining", "negotiation_neutrality", "issue_reduction")
#: Taxonomy ids ("time-urgency" and "classical scheduling" norms) counted as rule-invoking.
RULE_INVOKING: tuple[str, ...] = (
    "earliest_deadline_first",
    "sunk_cost_urgency",
    "first_come_first_served",
    "shortest_job_first",
    "risk_variance_first",
)
#: Table 2 behaviours (memory horizon) -> the taxonomy ids that count for each.
MEMORY_BEHAVIOURS: dict[str, tuple[str, ...]] = {
    "reciprocity": ("reciprocity",),
    "alliance_formation": ("explicit_coalition", "exclusive_coalition"),
    "alliance_loyalty": ("coalition_loyalty",),
    "reputation": ("reputation_maintenance",),
}
BUDGET_PHASES: tuple[str, ...] = (">66%", "33-66%", "<33%")

_CI = {"value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64, "runs": pl.Int64}


# -- helpers ---------------------------------------------------------------------------
def _need(df: pl.DataFrame, cols: Sequence[str], name: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{name} frame lacks columns {missing} (has {df.columns})")


def _nan_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def cluster_ci(df: pl.DataFrame, value: str, *, seed: int = 0) -> dict:
    """Pooled mean of ``value`` over rows with a cluster bootstrap over ``run_id``.

    Returns ``{"value", "lo", "hi", "n", "runs"}`` (nulls where undefined; no interval
    from a single run). Null values are dropped first.
    """
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0}
    m, lo, hi = stats.cluster_bootstrap_ci(d.with_columns(pl.col(value).cast(pl.Float64)), cluster="run_id",
                                           value=value, seed=seed)
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height,
            "runs": d["run_id"].n_unique()}


def cluster_bootstrap_median(df: pl.DataFrame, value: str, *, level: float = 0.95, n_resamples: int = 2000,
                             seed: int = 0) -> dict:
    """Median of ``value`` over rows with a percentile bootstrap that resamples whole
    runs (``run_id``) with replacement (:func:`stats.cluster_bootstrap_median`, all
    resamples at once). Same return shape as :func:`cluster_ci`."""
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0}
    est, lo, hi, k = stats.cluster_bootstrap_median(d[value].cast(pl.Float64).to_numpy(), d["run_id"].to_numpy(),
                                                    level=level, n_resamples=n_resamples, seed=seed)
    return {"value": est, "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height, "runs": k}


def mean_over_runs(values: Sequence[float], bounds: tuple[float, float] | None = None) -> dict:
    """Mean and t interval of one value per run (:func:`stats.mean_ci`); ``n`` = ``runs``.
    ``bounds``: the measure's range (e.g. ``(0, 1)`` for shares); the interval is
    clipped to it (a t interval from few runs can otherwise leave the range)."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    m, lo, hi = stats.mean_ci(vals)
    if bounds is not None and not math.isnan(lo):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": len(vals), "runs": len(vals)}


def _grouped(df: pl.DataFrame, by: Sequence[str], fn) -> pl.DataFrame:
    """Apply ``fn(sub_frame) -> dict`` (keys of the CI columns) per group of ``by``,
    groups sorted; one row per group, typed (empty frame with the schema when no rows)."""
    keys = {b: df.schema[b] for b in by}
    if not by:
        return _ci_frame([fn(df)], {})
    rows = [dict(zip(by, key, strict=True)) | fn(part)
            for key, part in df.sort(list(by), nulls_last=True).group_by(list(by), maintain_order=True)]
    return _ci_frame(rows, keys)


def _groups(df: pl.DataFrame, by: Sequence[str]):
    """``(key_dict, part)`` per group of ``by`` in sorted order (one group if no ``by``)."""
    if not by:
        yield {}, df
        return
    for key, part in df.sort(list(by), nulls_last=True).group_by(list(by), maintain_order=True):
        yield dict(zip(by, key, strict=True)), part


def _ci_frame(rows: list[dict], keys: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=keys | _CI, orient="row")


# -- run settings and stages -----------------------------------------------------------
RUN_SETTINGS_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "seed": pl.Int64,
    "workers": pl.Int64,
    "subruns": pl.Int64,
    "memory": pl.String,
    "mechanism": pl.String,
    "scheduler": pl.String,
    "reasoning_effort": pl.String,
    "rich_worker_budget": pl.Int64,
    "mixed_deadlines": pl.Boolean,
    "negotiator": pl.String,
}


def run_settings(runs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per SCARCE run with the settings the experiments split by
    (:data:`RUN_SETTINGS_SCHEMA`), read from the manifest's ``config`` JSON (the
    ``runs`` frame of :func:`~scarce_lab.data.loaders.load_dataset`).
    ``reasoning_effort`` is ``llm.reasoning_effort`` (``reasoning_effort`` in
    version-1 configs), ``"default"`` when none was passed; ``negotiator`` is the
    negotiator model (``negotiator_model`` or else ``model``)."""
    if isinstance(runs, pl.LazyFrame):
        runs = runs.collect()
    _need(runs, ("run_id", "seed", "config"), "runs")
    if "environment" in runs.columns:
        runs = runs.filter(pl.col("environment") == "scarce")
    rows = []
    for r in runs.iter_rows(named=True):
        c = json.loads(r["config"] or "{}")
        rows.append({
            "run_id": r["run_id"], "seed": r["seed"], "workers": c.get("workers"), "subruns": c.get("subruns"),
            "memory": c.get("memory"), "mechanism": c.get("mechanism"), "scheduler": c.get("scheduler"),
            "reasoning_effort": (c.get("llm") or {}).get("reasoning_effort") or c.get("reasoning_effort") or "default",
            "rich_worker_budget": c.get("rich_worker_budget"), "mixed_deadlines": bool(c.get("mixed_deadlines")),
            "negotiator": c.get("negotiator_model") or c.get("model"),
        })
    return pl.DataFrame(rows, schema=RUN_SETTINGS_SCHEMA, orient="row")


def base_condition(df: pl.DataFrame, *, except_: Sequence[str] = (), memory: str = "cross") -> pl.DataFrame:
    """Rows of runs in the reference condition (negotiated ``ballots`` schedule,
    ``fixed`` bids, ``memory`` horizon (default ``cross``, the paper's baseline), equal
    budgets, equal deadlines, no reasoning effort), optionally not constraining the
    settings named in ``except_`` (e.g. ``("memory",)``). Needs the :func:`run_settings`
    columns. Other settings (workers, deadlines, ...) are not constrained: the metrics
    refuse to pool runs that differ in them (module docstring)."""
    _need(df, ("scheduler", "mechanism", "memory", "rich_worker_budget", "mixed_deadlines", "reasoning_effort"),
          "settings-joined")
    conds = {"scheduler": pl.col("scheduler") == "ballots", "mechanism": pl.col("mechanism") == "fixed",
             "memory": pl.col("memory") == memory, "rich_worker_budget": pl.col("rich_worker_budget").is_null(),
             "mixed_deadlines": ~pl.col("mixed_deadlines"), "reasoning_effort": pl.col("reasoning_effort") == "default"}
    keep = pl.lit(True)
    for k, c in conds.items():
        if k not in except_:
            keep = keep & c
    return df.filter(keep)


def with_settings(df: pl.DataFrame, settings: pl.DataFrame, cols: Sequence[str] | None = None) -> pl.DataFrame:
    """``df`` left-joined on ``run_id`` with setting columns (default: all not in ``df``)."""
    cols = [c for c in (cols or settings.columns) if c != "run_id" and c not in df.columns]
    return df.join(settings.select("run_id", *cols), on="run_id", how="left")


def assign_stages(df: pl.DataFrame, n_stages: int = 3, *, col: str = "contention") -> pl.DataFrame:
    """Add ``stage`` (1..``n_stages``): each run's distinct ``col`` values in order,
    cut into equal blocks: ``stage = floor(rank * n_stages / n_distinct) + 1`` with
    ``rank`` 0-based. A run with fewer contentions than stages leaves later stages
    empty.

    Raises:
        ValueError: ``n_stages`` < 1 or a needed column is missing.
    """
    if n_stages < 1:
        raise ValueError(f"n_stages must be >= 1, got {n_stages}")
    _need(df, ("run_id", col), "stages input")
    order = (
        df.select("run_id", col).unique().sort("run_id", col)
        .with_columns(
            pl.col(col).rank("dense").over("run_id").cast(pl.Int64).alias("_rank"),
            pl.col(col).n_unique().over("run_id").cast(pl.Int64).alias("_n"),
        )
        .with_columns((((pl.col("_rank") - 1) * n_stages) // pl.col("_n") + 1).cast(pl.Int64).alias("stage"))
        .select("run_id", col, "stage")
    )
    return df.drop("stage", strict=False).join(order, on=["run_id", col], how="left")


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


def tactic_shares(rounds: pl.DataFrame, categories: Sequence[str], relational: Collection[str],
                  *, by: Sequence[str] = ("model",), subrun: int | None = 0, seed: int = 0) -> pl.DataFrame:
    """Share of labelled agent-rounds showing each category (the paper's Table 1, on a
    single subrun, the first, as in the paper).

    Args:
        rounds: :func:`labelled_rounds` output (``run_id``, ``labels``, ``subrun`` and ``by``).
        categories: taxonomy ids in display order (e.g. ``Taxonomy.ids``).
        relational: ids flagged relational (the paper's group: reciprocity, alliance
            formation, alliance loyalty, reputation); adds the row
            ``category = "relational"`` (share of rounds with at least one of them).
        subrun: only rounds of this subrun (0 = the first, the paper's Table 1); ``None``
            for every subrun (e.g. Table 9).
    Returns:
        One row per (``by``..., ``category``): ``value`` (share in [0, 1]), ``lo``,
        ``hi`` (cluster bootstrap over runs), ``n`` (rounds), ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(rounds, ("run_id", "labels", *by, *(("subrun",) if subrun is not None else ())), "rounds")
    if subrun is not None:
        rounds = rounds.filter(pl.col("subrun") == subrun)
    check_no_pooling(rounds, by, what="tactic_shares")
    cats = [*categories, "relational"]
    exprs = [_has_any([c]).cast(pl.Float64).alias(f"_c{i}") for i, c in enumerate(categories)]
    exprs.append(_has_any(relational).cast(pl.Float64).alias(f"_c{len(categories)}"))
    d = rounds.with_columns(exprs)
    rows = [base | {"category": c} | cluster_ci(part, f"_c{i}", seed=seed)
            for base, part in _groups(d, by) for i, c in enumerate(cats)]
    return _ci_frame(rows, {b: rounds.schema[b] for b in by} | {"category": pl.String})


def behaviour_shares(rounds: pl.DataFrame, behaviours: dict[str, Sequence[str]] | None = None,
                     *, by: Sequence[str] = ("memory",), seed: int = 0) -> pl.DataFrame:
    """Share of labelled agent-rounds showing each named behaviour (a set of taxonomy
    ids; default :data:`MEMORY_BEHAVIOURS`, the paper's Table 2), per ``by`` group.
    Same output shape as :func:`tactic_shares` with ``behaviour`` for ``category``."""
    behaviours = behaviours or MEMORY_BEHAVIOURS
    _need(rounds, ("run_id", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="behaviour_shares")
    names = list(behaviours)
    d = rounds.with_columns(_has_any(behaviours[b]).cast(pl.Float64).alias(f"_b{i}") for i, b in enumerate(names))
    rows = [base | {"behaviour": b} | cluster_ci(part, f"_b{i}", seed=seed)
            for base, part in _groups(d, by) for i, b in enumerate(names)]
    return _ci_frame(rows, {b: rounds.schema[b] for b in by} | {"behaviour": pl.String})


def relational_by_half(rounds: pl.DataFrame, relational: Collection[str], *, by: Sequence[str] = ("memory",),
                       seed: int = 0) -> pl.DataFrame:
    """Relational share in the first vs second half of each run (its decay).

    Halves are :func:`assign_stages` with 2 stages over the run's *labelled*
    contentions. Returns ``by``..., ``half`` (``"first"``/``"second"``), ``value``,
    ``lo``, ``hi``, ``n``, ``runs``."""
    _need(rounds, ("run_id", "contention", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="relational_by_half")
    d = assign_stages(rounds, 2).with_columns(
        pl.when(pl.col("stage") == 1).then(pl.lit("first")).otherwise(pl.lit("second")).alias("half"),
        _has_any(relational).cast(pl.Float64).alias("_rel"),
    )
    out = _grouped(d, [*by, "half"], lambda p: cluster_ci(p, "_rel", seed=seed))
    return out


def rule_shares_by_stage(rounds: pl.DataFrame, *, n_stages: int = 3, by: Sequence[str] = ("mechanism",),
                         making: Collection[str] = RULE_MAKING, invoking: Collection[str] = RULE_INVOKING,
                         seed: int = 0) -> pl.DataFrame:
    """Rule share of labelled agent-rounds by stage (Table 10; definitions in the module
    docstring): ``kind="rules"`` is the paper's combined rule-making plus rule-invoking
    share (a round with either), with the split beside it. Returns ``by``..., ``stage``,
    ``kind`` (``"rules"``, ``"rule_making"``, ``"rule_invoking"``), ``value``, ``lo``,
    ``hi``, ``n``, ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(rounds, ("run_id", "contention", "labels", *by), "rounds")
    check_no_pooling(rounds, by, what="rule_shares_by_stage")
    d = assign_stages(rounds, n_stages).with_columns(
        _has_any(making).cast(pl.Float64).alias("_make"), _has_any(invoking).cast(pl.Float64).alias("_inv"),
        _has_any([*making, *invoking]).cast(pl.Float64).alias("_rules"))
    rows = []
    for key, part in d.sort([*by, "stage"]).group_by([*by, "stage"], maintain_order=True):
        base = dict(zip([*by, "stage"], key, strict=True))
        rows.append(base | {"kind": "rules"} | cluster_ci(part, "_rules", seed=seed))
        rows.append(base | {"kind": "rule_making"} | cluster_ci(part, "_make", seed=seed))
        rows.append(base | {"kind": "rule_invoking"} | cluster_ci(part, "_inv", seed=seed))
    keys = {b: rounds.schema[b] for b in by} | {"stage": pl.Int64, "kind": pl.String}
    return _ci_frame(rows, keys)


def bid_revision_share(contentions: pl.DataFrame, *, by: Sequence[str] = ("model", "mechanism"), seed: int = 0
                       ) -> pl.DataFrame:
    """Share of participations whose final bid differs from the declared one (only
    possible under ``revisable`` bids). Returns ``by``..., ``value``, ``lo``, ``hi``
    (cluster bootstrap), ``n``, ``runs``."""
    _need(contentions, ("run_id", "declared_bid", "final_bid", *by), "contentions")
    check_no_pooling(contentions, by, what="bid_revision_share")
    d = contentions.filter(pl.col("declared_bid").is_not_null()).with_columns(
        (pl.col("final_bid") != pl.col("declared_bid")).cast(pl.Float64).alias("_rev"))
    return _grouped(d, by, lambda p: cluster_ci(p, "_rev", seed=seed))


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


# -- communication, outcomes -----------------------------------------------------------
def private_chat_use(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",), subrun: int | None = 0,
                     seed: int = 0) -> pl.DataFrame:
    """Share of contested participations in which the worker sent at least one private
    message, in subrun ``subrun`` (0 = the first, as the paper's Figure 14; None = all).
    Returns ``by``...,
    ``value``, ``lo``, ``hi``, ``n``, ``runs``."""
    _need(contentions, ("run_id", "subrun", "n_participants", "private_sent", *by), "contentions")
    d = contentions.filter(pl.col("n_participants") >= 2)
    if subrun is not None:
        d = d.filter(pl.col("subrun") == subrun)
    check_no_pooling(d, by, what="private_chat_use")
    d = d.with_columns((pl.col("private_sent") > 0).cast(pl.Float64).alias("_chat"))
    return _grouped(d, by, lambda p: cluster_ci(p, "_chat", seed=seed))


def win_rates(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",), seed: int = 0) -> pl.DataFrame:
    """Win rate per group: ``metric`` ``win_rate`` (the paper's: share of all its rounds in
    which the worker is first in the queue) and ``win_rate_contested`` (over contested
    rounds only); ``value``, ``lo``, ``hi`` (cluster bootstrap over runs), ``n``, ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(contentions, ("run_id", "won", "n_participants", *by), "contentions")
    check_no_pooling(contentions, by, what="win_rates")
    d = contentions.with_columns(
        pl.col("won").cast(pl.Float64).alias("win_rate"),
        pl.when(pl.col("n_participants") >= 2).then(pl.col("won").cast(pl.Float64)).otherwise(None)
        .alias("win_rate_contested"))
    rows = [base | {"metric": m} | cluster_ci(part, m, seed=seed)
            for base, part in _groups(d, by) for m in ("win_rate", "win_rate_contested")]
    return _ci_frame(rows, {b: contentions.schema[b] for b in by} | {"metric": pl.String})


def task_outcomes(submissions: pl.DataFrame, *, by: Sequence[str] = ("model",), seed: int = 0) -> pl.DataFrame:
    """Per group, over (worker, subrun) submissions: ``metric`` in
    ``full_resolution_rate`` (share with every hidden test passed), ``mean_partial_score``
    (``score``: passed / total, 0 for a missed deadline under the runner's default) and
    ``deadline_miss_rate``; ``value``, ``lo``, ``hi`` (cluster bootstrap), ``n``, ``runs``."""
    _need(submissions, ("run_id", "resolved", "score", "deadline_missed", *by), "submissions")
    check_no_pooling(submissions, by, what="task_outcomes")
    d = submissions.with_columns(
        pl.col("resolved").cast(pl.Float64).alias("full_resolution_rate"),
        pl.col("score").cast(pl.Float64).alias("mean_partial_score"),
        pl.col("deadline_missed").cast(pl.Float64).alias("deadline_miss_rate"),
    )
    metrics = ("full_resolution_rate", "mean_partial_score", "deadline_miss_rate")
    rows = [base | {"metric": m} | cluster_ci(part, m, seed=seed) for base, part in _groups(d, by) for m in metrics]
    keys = {b: submissions.schema[b] for b in by} | {"metric": pl.String}
    return _ci_frame(rows, keys)


def stage_texts(messages: pl.DataFrame, n_stages: int = 3) -> pl.DataFrame:
    """``run_id``, ``stage``, ``contention``, ``worker``, ``text`` from a SCARCE
    ``messages`` table: each agent-round's public reasoning followed by the texts of
    the private messages it sent, with :func:`assign_stages` stages."""
    _need(messages, ("run_id", "contention", "worker", "reasoning", "private_sent"), "messages")
    texts = [" ".join([r or "", *(m.get("text", "") for m in json.loads(p or "[]"))]).strip()
             for r, p in zip(messages["reasoning"], messages["private_sent"], strict=True)]
    d = messages.select("run_id", "contention", "worker", *[c for c in ("model", "condition")
                                                            if c in messages.columns])
    d = d.with_columns(pl.Series("text", texts, dtype=pl.String))
    return assign_stages(d, n_stages).sort("run_id", "contention", "worker")


def language_drift(messages: pl.DataFrame, *, n_stages: int = 3, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Language drift over the stages of each run, averaged over runs.

    Per run and stage, :func:`scarce_lab.judge.drift.drift_table` gives
    ``cosine_prev`` (bag-of-words cosine with the previous stage), ``trigram_repetition``
    and ``new_word_share``; this returns their mean over runs with a t interval (one
    value per run and stage; all three measures lie in [0, 1] and the interval is clipped
    to it): ``by``..., ``stage``, ``measure``, ``value``, ``lo``, ``hi``, ``n``, ``runs``."""
    from ..judge.drift import drift_table

    check_no_pooling(messages, by, what="language_drift")
    st = stage_texts(messages, n_stages)
    per = drift_table(st, run_col="run_id", stage_col="stage", text_col="text")
    meta = messages.select("run_id", *by).unique(subset=["run_id"])
    per = per.join(meta, on="run_id", how="left")
    rows = []
    for key, part in per.sort([*by, "stage"]).group_by([*by, "stage"], maintain_order=True):
        base = dict(zip([*by, "stage"], key, strict=True))
        for m in ("cosine_prev", "trigram_repetition", "new_word_share"):
            rows.append(base | {"measure": m} | mean_over_runs(part[m].to_list(), bounds=(0.0, 1.0)))
    keys = {b: messages.schema[b] for b in by} | {"stage": pl.Int64, "measure": pl.String}
    return _ci_frame(rows, keys)


# -- budgets and deadlines -------------------------------------------------------------
def budget_left(contentions: pl.DataFrame) -> pl.DataFrame:
    """Add ``budget_left`` (credits before this contention: ``budget_initial`` minus this
    worker's payments in earlier contentions of the same run and subrun),
    ``budget_frac`` (``budget_left / budget_initial``, null for a zero budget) and
    ``budget_phase`` (:data:`BUDGET_PHASES`; ``> 2/3``, ``>= 1/3``, else ``< 1/3``)."""
    _need(contentions, ("run_id", "subrun", "contention", "worker", "budget_initial", "payment"), "contentions")
    d = contentions.sort("run_id", "subrun", "worker", "contention").with_columns(
        (pl.col("payment").fill_null(0).cum_sum().over(["run_id", "subrun", "worker"])
         - pl.col("payment").fill_null(0)).alias("_paid_before"))
    d = d.with_columns((pl.col("budget_initial") - pl.col("_paid_before")).cast(pl.Int64).alias("budget_left"))
    d = d.with_columns(pl.when(pl.col("budget_initial") > 0)
                       .then(pl.col("budget_left") / pl.col("budget_initial")).otherwise(None).alias("budget_frac"))
    phase = (pl.when(pl.col("budget_frac").is_null()).then(None)
             .when(pl.col("budget_frac") > 2 / 3).then(pl.lit(BUDGET_PHASES[0]))
             .when(pl.col("budget_frac") >= 1 / 3).then(pl.lit(BUDGET_PHASES[1]))
             .otherwise(pl.lit(BUDGET_PHASES[2])))
    return d.with_columns(phase.alias("budget_phase")).drop("_paid_before")


def richer_worker(contentions: pl.DataFrame) -> pl.DataFrame:
    """``run_id`` -> ``rich_worker``: the worker with a strictly largest initial budget
    in the run (null when there is no single richest worker)."""
    _need(contentions, ("run_id", "worker", "budget_initial"), "contentions")
    b = contentions.group_by("run_id", "worker").agg(pl.col("budget_initial").max())
    rows = []
    for (run,), part in b.group_by("run_id"):
        vals = part.sort("budget_initial", descending=True)
        top = vals["budget_initial"].to_list()
        rich = vals["worker"][0] if len(top) > 1 and top[0] is not None and top[0] > (top[1] or 0) else None
        rows.append({"run_id": run, "rich_worker": rich})
    return pl.DataFrame(rows, schema={"run_id": pl.String, "rich_worker": pl.String}, orient="row")


def budget_phase_bids(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",), seed: int = 0) -> pl.DataFrame:
    """The richer worker's mean declared bid and win rate by budget phase against the
    others (Tables 5 and 7), only in runs that have a richer worker, with the overall
    values over all phases (``budget_phase="all"``: Table 7's overall win rate of the
    richer worker).

    Returns ``by``..., ``who`` (``"richer"``/``"others"``), ``budget_phase``
    (:data:`BUDGET_PHASES` and ``"all"``), ``metric`` (``mean_bid`` over all its
    participations, credits; ``win_rate``: share of its participations in which it was
    first in the queue, all of them; ``win_rate_contested``: the same over contested
    participations), ``value``, ``lo``, ``hi``, ``n``, ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    check_no_pooling(contentions, by, what="budget_phase_bids")
    d = budget_left(contentions).join(richer_worker(contentions), on="run_id", how="left")
    d = d.filter(pl.col("rich_worker").is_not_null()).with_columns(
        pl.when(pl.col("worker") == pl.col("rich_worker")).then(pl.lit("richer")).otherwise(pl.lit("others"))
        .alias("who"), pl.col("declared_bid").cast(pl.Float64).alias("_bid"),
        pl.col("won").cast(pl.Float64).alias("_win"),
        pl.when(pl.col("n_participants") >= 2).then(pl.col("won").cast(pl.Float64)).otherwise(None).alias("_winc"))
    d = d.filter(pl.col("budget_phase").is_not_null())
    d = pl.concat([d, d.with_columns(pl.lit("all").alias("budget_phase"))])
    rows = []
    order = {"richer": 0, "others": 1} | {p: i for i, p in enumerate((*BUDGET_PHASES, "all"))}
    for key, part in d.group_by([*by, "who", "budget_phase"]):
        base = dict(zip([*by, "who", "budget_phase"], key, strict=True))
        rows.append(base | {"metric": "mean_bid"} | cluster_ci(part, "_bid", seed=seed))
        rows.append(base | {"metric": "win_rate"} | cluster_ci(part, "_win", seed=seed))
        rows.append(base | {"metric": "win_rate_contested"} | cluster_ci(part, "_winc", seed=seed))
    keys = {b: contentions.schema[b] for b in by} | {"who": pl.String, "budget_phase": pl.String, "metric": pl.String}
    out = _ci_frame(rows, keys)
    return (out.with_columns(pl.col("who").replace_strict(order).alias("_w"),
                             pl.col("budget_phase").replace_strict(order).alias("_p"))
            .sort([*by, "metric", "_w", "_p"]).drop("_w", "_p"))


def urgency_bids(contentions: pl.DataFrame, *, n_stages: int = 3, by: Sequence[str] = ("model",),
                 urgent_below_s: float | None = None, seed: int = 0) -> pl.DataFrame:
    """Mean declared bid of urgent vs non-urgent workers by stage (Table 4), in runs
    whose workers do not all share one deadline. Urgent: ``deadline_s`` below the run's
    median deadline (or below ``urgent_below_s`` seconds). Returns ``by``..., ``stage``,
    ``urgent`` (bool), ``value`` (credits), ``lo``, ``hi``, ``n``, ``runs``."""
    _need(contentions, ("run_id", "contention", "worker", "deadline_s", "declared_bid", *by), "contentions")
    check_no_pooling(contentions, by, what="urgency_bids")
    dl = contentions.group_by("run_id", "worker").agg(pl.col("deadline_s").first())
    spread = dl.group_by("run_id").agg(pl.col("deadline_s").n_unique().alias("_k"),
                                        pl.col("deadline_s").median().alias("_med"))
    d = contentions.join(spread, on="run_id").filter(pl.col("_k") > 1)
    thr = pl.lit(urgent_below_s) if urgent_below_s is not None else pl.col("_med")
    d = assign_stages(d, n_stages).with_columns((pl.col("deadline_s") < thr).alias("urgent"),
                                                pl.col("declared_bid").cast(pl.Float64).alias("_bid"))
    return _grouped(d, [*by, "stage", "urgent"], lambda p: cluster_ci(p, "_bid", seed=seed))


# -- auction dynamics ------------------------------------------------------------------
def win_continuity(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",), seed: int = 0) -> pl.DataFrame:
    """P(win next | won this one) and, for contrast, P(win next | lost this one).

    Pairs: each worker's consecutive *contested* participations within one run and
    subrun (this one, its next one). Returns ``by``..., ``given`` (``"won"``/``"lost"``),
    ``value`` (share of pairs whose next participation was won), ``lo``, ``hi`` (cluster
    bootstrap over runs), ``n`` (pairs), ``runs``."""
    _need(contentions, ("run_id", "subrun", "contention", "worker", "won", "n_participants", *by), "contentions")
    check_no_pooling(contentions, by, what="win_continuity")
    d = (contentions.filter(pl.col("n_participants") >= 2).sort("run_id", "subrun", "worker", "contention")
         .with_columns(pl.col("won").shift(-1).over(["run_id", "subrun", "worker"]).alias("_next"))
         .filter(pl.col("_next").is_not_null())
         .with_columns(pl.when(pl.col("won")).then(pl.lit("won")).otherwise(pl.lit("lost")).alias("given"),
                       pl.col("_next").cast(pl.Float64).alias("_nw")))
    out = _grouped(d, [*by, "given"], lambda p: cluster_ci(p, "_nw", seed=seed))
    return out


def winning_bid_by_stage(contentions: pl.DataFrame, *, n_stages: int = 4, by: Sequence[str] = ("model",),
                         contested_only: bool = True, bid: str = "final_bid", seed: int = 0) -> pl.DataFrame:
    """Median winning bid (credits; ``final_bid`` by default, the declared one under
    fixed bids) per stage (bid drift; the paper's Table 8 uses stages 1 to 4, the
    default), with a cluster bootstrap interval for the median. Returns ``by``...,
    ``stage``, ``value``, ``lo``, ``hi``, ``n``, ``runs``.

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(contentions, ("run_id", "contention", "won", "n_participants", bid, *by), "contentions")
    check_no_pooling(contentions, by, what="winning_bid_by_stage")
    d = assign_stages(contentions, n_stages).filter(pl.col("won"))
    if contested_only:
        d = d.filter(pl.col("n_participants") >= 2)
    return _grouped(d, [*by, "stage"], lambda p: cluster_bootstrap_median(p, bid, seed=seed))


def requested_duration_by_subrun(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",),
                                 col: str = "requested_duration_s", seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Mean requested slot duration (seconds; the solver's request, capped) per subrun,
    and its growth factor.

    Returns ``(per_subrun, growth)``: ``per_subrun`` has ``by``..., ``subrun``,
    ``value``, ``lo``, ``hi`` (cluster bootstrap), ``n``, ``runs``; ``growth`` has
    ``by``..., ``value`` = mean over runs of (run's mean in its last subrun / its mean
    in its first subrun), t interval, ``n`` = ``runs`` = runs with two or more subruns
    with requests."""
    _need(contentions, ("run_id", "subrun", col, *by), "contentions")
    check_no_pooling(contentions, by, what="requested_duration_by_subrun")
    per = _grouped(contentions, [*by, "subrun"], lambda p: cluster_ci(p, col, seed=seed))
    run_means = (contentions.filter(pl.col(col).is_not_null())
                 .group_by("run_id", "subrun").agg(pl.col(col).cast(pl.Float64).mean().alias("_m"))
                 .sort("run_id", "subrun")
                 .group_by("run_id", maintain_order=True)
                 .agg(pl.col("_m").first().alias("_first"), pl.col("_m").last().alias("_last"),
                      pl.len().alias("_k"))
                 .filter((pl.col("_k") >= 2) & (pl.col("_first") > 0))
                 .with_columns((pl.col("_last") / pl.col("_first")).alias("growth")))
    meta = contentions.select("run_id", *by).unique(subset=["run_id"])
    g = run_means.join(meta, on="run_id", how="left")
    if g.height == 0:
        growth = _ci_frame([], {b: contentions.schema[b] for b in by})
    else:
        growth = _grouped(g, by, lambda p: mean_over_runs(p["growth"].to_list()))
    return per, growth


# -- schedulers ------------------------------------------------------------------------
OUTCOME_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "settings": pl.String,
    "deadline_misses": pl.Int64,
    "deadline_miss_rate": pl.Float64,
    "mean_partial_score": pl.Float64,
    "total_queue_wait_s": pl.Float64,
    "unstarted_slots": pl.Int64,
}


def collective_outcomes(contentions: pl.DataFrame, submissions: pl.DataFrame) -> pl.DataFrame:
    """One row per run (:data:`OUTCOME_SCHEMA`): its condition ``settings`` (null when
    the submissions frame has none), deadline misses (count and share of submissions),
    mean partial score over submissions, total queue wait (sum of ``wait_s``, request to
    slot start, seconds, over slots that started) and the number of booked slots that
    never started (the worker missed its deadline while queued)."""
    _need(contentions, ("run_id", "wait_s"), "contentions")
    _need(submissions, ("run_id", "deadline_missed", "score"), "submissions")
    if "settings" not in submissions.columns:
        submissions = submissions.with_columns(pl.lit(None, dtype=pl.String).alias("settings"))
    s = submissions.group_by("run_id").agg(
        pl.col("settings").first(),
        pl.col("deadline_missed").sum().cast(pl.Int64).alias("deadline_misses"),
        pl.col("deadline_missed").cast(pl.Float64).mean().alias("deadline_miss_rate"),
        pl.col("score").mean().alias("mean_partial_score"))
    c = contentions.group_by("run_id").agg(
        pl.col("wait_s").sum().cast(pl.Float64).alias("total_queue_wait_s"),
        pl.col("wait_s").is_null().sum().cast(pl.Int64).alias("unstarted_slots"))
    out = s.join(c, on="run_id", how="full", coalesce=True).with_columns(
        pl.col("total_queue_wait_s").fill_null(0.0), pl.col("unstarted_slots").fill_null(0))
    return out.select(list(OUTCOME_SCHEMA)).cast(OUTCOME_SCHEMA).sort("run_id")


def compare_schedulers(outcomes: pl.DataFrame, *, by: Sequence[str] = ("scheduler",),
                       reference: str = "ballots", pair_on: Sequence[str] = ("seed",)) -> pl.DataFrame:
    """Collective outcomes per scheduler, with paired differences against the
    negotiated schedule (``scheduler == reference``) on the same seeds (hence the same
    tasks and deadlines).

    Args:
        outcomes: :func:`collective_outcomes` joined with ``scheduler`` and the
            ``pair_on`` columns (e.g. :func:`with_settings`).
    Returns:
        ``by``..., ``metric``, ``value``, ``lo``, ``hi`` (t interval over runs, clipped to
        the metric's range),
        ``diff`` (mean of scheduler minus reference over paired seeds), ``diff_lo``,
        ``diff_hi``, ``pairs``.

    Raises:
        PoolingError: runs of one ``by`` group (or the reference runs and another
            scheduler's) differ in a setting other than the scheduler.
    """
    _need(outcomes, ("run_id", "scheduler", *by, *pair_on), "outcomes")
    check_no_pooling(outcomes, [b for b in by if b != "scheduler"], what="compare_schedulers",
                     allow=("scheduler",))
    metrics = ("deadline_misses", "mean_partial_score", "total_queue_wait_s")
    ref = outcomes.filter(pl.col("scheduler") == reference)
    others = [b for b in by if b != "scheduler"]
    rows = []
    for key, part in outcomes.sort(list(by)).group_by(list(by), maintain_order=True):
        base = dict(zip(by, key, strict=True))
        r = ref
        for b in others:
            r = r.filter(pl.col(b) == base[b])
        paired = part.join(r.select(*pair_on, *[pl.col(m).alias(f"_ref_{m}") for m in metrics]),
                           on=list(pair_on), how="inner")
        for m in metrics:
            ci = mean_over_runs(part[m].to_list(), bounds=(0.0, 1.0 if m == "mean_partial_score" else math.inf))
            diffs = (paired[m].cast(pl.Float64) - paired[f"_ref_{m}"].cast(pl.Float64)).to_list()
            dm, dlo, dhi = stats.mean_ci(diffs) if diffs else (math.nan,) * 3
            rows.append(base | {"metric": m, "value": ci["value"], "lo": ci["lo"], "hi": ci["hi"],
                                "runs": ci["runs"], "diff": _nan_none(dm), "diff_lo": _nan_none(dlo),
                                "diff_hi": _nan_none(dhi), "pairs": len(diffs)})
    schema = {b: outcomes.schema[b] for b in by} | {
        "metric": pl.String, "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "runs": pl.Int64,
        "diff": pl.Float64, "diff_lo": pl.Float64, "diff_hi": pl.Float64, "pairs": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


# -- presentation ----------------------------------------------------------------------
def with_ci_text(df: pl.DataFrame, digits: int = 2, *, col: str = "estimate") -> pl.DataFrame:
    """Add a text column ``value [lo, hi]`` (just ``value`` without an interval, ``n/a``
    without a value) for display tables."""
    def cell(v, lo, hi):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "n/a"
        return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" if lo is not None and hi is not None \
            else f"{v:.{digits}f}"

    return df.with_columns(pl.Series(col, [cell(v, lo, hi) for v, lo, hi in
                                           zip(df["value"], df["lo"], df["hi"], strict=True)], dtype=pl.String))


def describe_extremes(df: pl.DataFrame, keys: Sequence[str], what: str, *, digits: int = 2,
                      scope: str = "In this dataset") -> str:
    """One sentence naming the groups with the highest and lowest ``value`` of a result
    frame (with their intervals), e.g. for a notebook's interpretation line. Says so
    when there is nothing to compare. Ties are broken deterministically: among equal
    values the group first in ascending order of ``keys`` is named (the sentence says how
    many groups tie)."""
    d = df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan())
    if d.height == 0:
        return f"{scope}, there is no data for {what}."
    d = with_ci_text(d, digits)
    name = lambda r: ", ".join(f"{k}={r[k]}" for k in keys) or "all"  # noqa: E731
    order = [str(k) for k in keys]
    hi = d.sort(["value", *order], descending=[True] + [False] * len(order), nulls_last=True).row(0, named=True)
    lo = d.sort(["value", *order], nulls_last=True).row(0, named=True)
    runs = int(d["runs"].max() or 0)
    if d.height == 1 or hi["value"] == lo["value"]:
        where = f"for {name(hi)}" if d.height == 1 else f"in every group ({d.height} groups)"
        ci = ("; no interval from a single run" if runs <= 1 else
              "; 95% CI in brackets" if int(d["runs"].min() or 0) > 1 else
              "; 95% CI in brackets where a group has more than one run")
        return f"{scope}, {what} is {hi['estimate']} {where} (at most {runs} run(s) per group{ci})."
    n_top = d.filter(pl.col("value") == hi["value"]).height
    n_bot = d.filter(pl.col("value") == lo["value"]).height
    tie = lambda k: f", tied with {k - 1} other group(s)" if k > 1 else ""  # noqa: E731
    overlap = lo["hi"] is not None and hi["lo"] is not None and lo["hi"] >= hi["lo"]
    return (f"{scope}, {what} is highest for {name(hi)} ({hi['estimate']}{tie(n_top)}) and lowest for "
            f"{name(lo)} ({lo['estimate']}{tie(n_bot)}); "
            + ("at least one of them comes from a single run (no interval), so the data cannot separate them."
               if lo["hi"] is None or hi["lo"] is None
               else "their 95% intervals overlap, so the data do not separate them." if overlap
               else "their 95% intervals do not overlap."))


# -- loading (datasets -> tidy tables with run settings) ---------------------------------
class ScarceTables:
    """The tidy SCARCE tables of one or more datasets, each joined with the run settings
    (:func:`run_settings`): ``contentions``, ``submissions``, ``messages``, ``settings``."""

    def __init__(self, contentions: pl.DataFrame, submissions: pl.DataFrame, messages: pl.DataFrame,
                 settings: pl.DataFrame):
        self.settings = settings
        self.contentions = with_settings(contentions, settings)
        self.submissions = with_settings(submissions, settings)
        self.messages = with_settings(messages, settings)

    def __repr__(self) -> str:
        return (f"ScarceTables({self.settings.height} runs, {self.contentions.height} participations, "
                f"{self.submissions.height} submissions)")


def load_scarce(paths: str | Sequence) -> ScarceTables:
    """Load SCARCE datasets (run directories or folders of them; several are
    concatenated, a run present twice is kept once, and the condition labels are made
    unique per settings over all of them) into :class:`ScarceTables`.

    Raises:
        FileNotFoundError: a path holds no run directory.
    """
    from pathlib import Path

    from ..data.loaders import load_dataset
    from ..data.tables.scarce import contentions_table, messages_table, submissions_table

    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    parts: dict[str, list[pl.DataFrame]] = {"c": [], "s": [], "m": [], "r": []}
    for p in paths:
        ds = load_dataset(Path(p))
        parts["c"].append(contentions_table(ds))
        parts["s"].append(submissions_table(ds))
        parts["m"].append(messages_table(ds))
        parts["r"].append(run_settings(ds.runs))
    from ..data.tables import label_conditions

    # condition labels are unique per settings within one table: relabel the concatenation
    # (each dataset alone may show no differing setting, so two could share a label)
    def cat(k):
        return label_conditions(pl.concat(parts[k]).unique(maintain_order=True), skip=("scheduler", "mechanism", "memory"))

    return ScarceTables(cat("c"), cat("s"), cat("m"), pl.concat(parts["r"]).unique(subset=["run_id"], maintain_order=True))


# -- charts ----------------------------------------------------------------------------
from .scarce_charts import ci_chart  # noqa: E402,F401  (kept here: notebooks call X.ci_chart)
