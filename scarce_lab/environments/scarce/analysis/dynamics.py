"""SCARCE metrics of communication, outcomes, budgets, deadlines and auction dynamics
(Tables 3-8, Figures 14-16, the scheduler comparison). Definitions:
:mod:`.base`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import polars as pl

from scarce_lab.analysis import stats
from scarce_lab.analysis.pooling import check_no_pooling

from .base import (
    BUDGET_PHASES,
    NON_NEGATIVE,
    SHARE,
    _ci_frame,
    _grouped,
    _groups,
    _nan_none,
    _need,
    assign_stages,
    cluster_bootstrap_median,
    cluster_ci,
    mean_over_runs,
)


# -- communication, outcomes -----------------------------------------------------------
def private_chat_use(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",), subrun: int | None = 0) -> pl.DataFrame:
    """Private-chat use (the method: :func:`~.findings.private_chat_use`) in subrun
    ``subrun`` (None = all): ``by``..., ``value``, ``lo``, ``hi``, ``n``, ``runs``."""
    _need(contentions, ("run_id", "subrun", "n_participants", "private_sent", *by), "contentions")
    d = contentions.filter(pl.col("n_participants") >= 2)
    if subrun is not None:
        d = d.filter(pl.col("subrun") == subrun)
    check_no_pooling(d, by, what="private_chat_use")
    d = d.with_columns((pl.col("private_sent") > 0).cast(pl.Float64).alias("_chat"))
    return _grouped(d, by, lambda p: cluster_ci(p, "_chat", bounds=SHARE))


def _all_contenders_in_group(part: pl.DataFrame) -> bool:
    """True when, in every contention of ``part``, the group's rows are all its
    participants (rows per (run, contention) == ``n_participants``)."""
    if "contention" not in part.columns or part.height == 0:
        return False
    per = part.group_by("run_id", "contention").agg(pl.len().alias("_k"), pl.col("n_participants").max())
    return bool((per["_k"] == per["n_participants"]).all())


def win_rates(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Win rates per group (the method: :func:`~.findings.win_rates`): ``metric``
    (``win_rate``, ``win_rate_contested``), ``value``, ``lo``, ``hi`` (t interval over run
    means), ``n``, ``runs``, ``by_construction`` (:func:`_all_contenders_in_group`).

    Raises:
        PoolingError: a ``by`` group mixes conditions.
    """
    _need(contentions, ("run_id", "won", "n_participants", *by), "contentions")
    check_no_pooling(contentions, by, what="win_rates")
    d = contentions.with_columns(
        pl.col("won").cast(pl.Float64).alias("win_rate"),
        pl.when(pl.col("n_participants") >= 2).then(pl.col("won").cast(pl.Float64)).otherwise(None)
        .alias("win_rate_contested"))
    rows = []
    for base, part in _groups(d, by):
        same = _all_contenders_in_group(part)
        for m in ("win_rate", "win_rate_contested"):
            rows.append(base | {"metric": m} | cluster_ci(part, m, bounds=SHARE)
                        | {"by_construction": bool(same)})
    return _ci_frame(rows, {b: contentions.schema[b] for b in by} | {"metric": pl.String,
                                                                     "by_construction": pl.Boolean})


def task_outcomes(submissions: pl.DataFrame, *, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Task outcomes per group (the method: :func:`~.findings.task_outcomes`): ``metric``,
    ``value``, ``lo``, ``hi`` (t interval over run means), ``n``, ``runs``."""
    _need(submissions, ("run_id", "resolved", "score", "deadline_missed", *by), "submissions")
    check_no_pooling(submissions, by, what="task_outcomes")
    d = submissions.with_columns(
        pl.col("resolved").cast(pl.Float64).alias("full_resolution_rate"),
        pl.col("score").cast(pl.Float64).alias("mean_partial_score"),
        pl.col("deadline_missed").cast(pl.Float64).alias("deadline_miss_rate"),
    )
    metrics = ("full_resolution_rate", "mean_partial_score", "deadline_miss_rate")
    rows = [base | {"metric": m} | cluster_ci(part, m, bounds=SHARE) for base, part in _groups(d, by) for m in metrics]
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
    """Language drift over the stages of each run (the method: :func:`~.findings.language_drift`):
    the measures of :func:`scarce_lab.judge.drift.drift_table` per run and stage, their
    mean over runs with a t interval clipped to [0, 1]: ``by``..., ``stage``, ``measure``,
    ``value``, ``lo``, ``hi``, ``n``, ``runs``."""
    from scarce_lab.judge.drift import drift_table

    check_no_pooling(messages, by, what="language_drift")
    st = stage_texts(messages, n_stages)
    per = drift_table(st, run_col="run_id", stage_col="stage", text_col="text")
    meta = messages.select("run_id", *by).unique(subset=["run_id"])
    per = per.join(meta, on="run_id", how="left")
    rows = []
    for base, part in _groups(per, [*by, "stage"]):
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


def budget_phase_bids(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Tables 5 and 7 (the method: :func:`~.findings.budget_phases`): the richer worker
    (:func:`richer_worker`) against the others by budget phase (:func:`budget_left`) and
    over all phases, in runs that have a richer worker.

    Returns ``by``..., ``who`` (``"richer"``/``"others"``), ``budget_phase``
    (:data:`BUDGET_PHASES` and ``"all"``), ``metric`` (``mean_bid``, credits;
    ``win_rate``; ``win_rate_contested``), ``value``, ``lo``, ``hi``, ``n``, ``runs``.

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
    order = {"richer": 0, "others": 1} | {p: i for i, p in enumerate((*BUDGET_PHASES, "all"))}
    metrics = {"mean_bid": ("_bid", NON_NEGATIVE), "win_rate": ("_win", SHARE), "win_rate_contested": ("_winc", SHARE)}
    rows = [base | {"metric": m} | cluster_ci(part, col, bounds=b)
            for base, part in _groups(d, [*by, "who", "budget_phase"]) for m, (col, b) in metrics.items()]
    keys = {b: contentions.schema[b] for b in by} | {"who": pl.String, "budget_phase": pl.String, "metric": pl.String}
    out = _ci_frame(rows, keys)
    return (out.with_columns(pl.col("who").replace_strict(order).alias("_w"),
                             pl.col("budget_phase").replace_strict(order).alias("_p"))
            .sort([*by, "metric", "_w", "_p"]).drop("_w", "_p"))


def urgency_bids(contentions: pl.DataFrame, *, n_stages: int = 3, by: Sequence[str] = ("model",),
                 urgent_below_s: float | None = None) -> pl.DataFrame:
    """Table 4 (the method: :func:`~.findings.urgency_bids`): ``by``..., ``stage``,
    ``urgent`` (bool), ``value`` (mean declared bid, credits), ``lo``, ``hi``, ``n``, ``runs``."""
    _need(contentions, ("run_id", "contention", "worker", "deadline_s", "declared_bid", *by), "contentions")
    check_no_pooling(contentions, by, what="urgency_bids")
    dl = contentions.group_by("run_id", "worker").agg(pl.col("deadline_s").first())
    spread = dl.group_by("run_id").agg(pl.col("deadline_s").n_unique().alias("_k"),
                                        pl.col("deadline_s").median().alias("_med"))
    d = contentions.join(spread, on="run_id").filter(pl.col("_k") > 1)
    thr = pl.lit(urgent_below_s) if urgent_below_s is not None else pl.col("_med")
    d = assign_stages(d, n_stages).with_columns((pl.col("deadline_s") < thr).alias("urgent"),
                                                pl.col("declared_bid").cast(pl.Float64).alias("_bid"))
    return _grouped(d, [*by, "stage", "urgent"], lambda p: cluster_ci(p, "_bid"))


# -- auction dynamics ------------------------------------------------------------------
def win_continuity(contentions: pl.DataFrame, *, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Table 8's win continuity (the method: :func:`~.findings.win_continuity`):
    ``by``..., ``given`` (``"won"``/``"lost"``), ``value`` (share of pairs of consecutive
    contested participations whose next was won), ``lo``, ``hi`` (t interval over run
    means), ``n`` (pairs), ``runs``."""
    _need(contentions, ("run_id", "subrun", "contention", "worker", "won", "n_participants", *by), "contentions")
    check_no_pooling(contentions, by, what="win_continuity")
    d = (contentions.filter(pl.col("n_participants") >= 2).sort("run_id", "subrun", "worker", "contention")
         .with_columns(pl.col("won").shift(-1).over(["run_id", "subrun", "worker"]).alias("_next"))
         .filter(pl.col("_next").is_not_null())
         .with_columns(pl.when(pl.col("won")).then(pl.lit("won")).otherwise(pl.lit("lost")).alias("given"),
                       pl.col("_next").cast(pl.Float64).alias("_nw")))
    return _grouped(d, [*by, "given"], lambda p: cluster_ci(p, "_nw", bounds=SHARE))


def winning_bid_by_stage(contentions: pl.DataFrame, *, n_stages: int = 4, by: Sequence[str] = ("model",),
                         contested_only: bool = True, bid: str = "final_bid", seed: int = 0) -> pl.DataFrame:
    """Table 8's bid drift (the method: :func:`~.findings.bid_drift`; 4 stages as the
    paper): median winning ``bid`` (credits) per stage with a cluster-bootstrap interval:
    ``by``..., ``stage``, ``value``, ``lo``, ``hi``, ``n``, ``runs``.

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
                                 col: str = "requested_duration_s") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Mean ``col`` (seconds) per subrun and its growth factor (the method:
    :func:`~.findings.durations`).

    Returns ``(per_subrun, growth)``: ``per_subrun`` has ``by``..., ``subrun``,
    ``value``, ``lo``, ``hi`` (t interval over run means), ``n``, ``runs``; ``growth`` has
    ``by``..., ``value``, t interval, ``n`` = ``runs`` = runs with two or more subruns
    with requests."""
    _need(contentions, ("run_id", "subrun", col, *by), "contentions")
    check_no_pooling(contentions, by, what="requested_duration_by_subrun")
    per = _grouped(contentions, [*by, "subrun"], lambda p: cluster_ci(p, col))
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
    "run_id": pl.String, "settings": pl.String, "submissions": pl.Int64, "deadline_misses": pl.Int64,
    "deadline_miss_rate": pl.Float64, "mean_partial_score": pl.Float64, "total_queue_wait_s": pl.Float64,
    "unstarted_slots": pl.Int64}


def collective_outcomes(contentions: pl.DataFrame, submissions: pl.DataFrame) -> pl.DataFrame:
    """One row per run (:data:`OUTCOME_SCHEMA`): its condition ``settings`` (null when
    the submissions frame has none), its number of (worker, subrun) ``submissions`` (the
    most deadlines it can miss), deadline misses (count and share of submissions),
    mean partial score over submissions, total queue wait (sum of ``wait_s``, request to
    slot start, seconds, over slots that started) and the number of booked slots that
    never started (the worker missed its deadline while queued)."""
    _need(contentions, ("run_id", "wait_s"), "contentions")
    _need(submissions, ("run_id", "deadline_missed", "score"), "submissions")
    if "settings" not in submissions.columns:
        submissions = submissions.with_columns(pl.lit(None, dtype=pl.String).alias("settings"))
    s = submissions.group_by("run_id").agg(
        pl.col("settings").first(),
        pl.len().cast(pl.Int64).alias("submissions"),
        pl.col("deadline_missed").sum().cast(pl.Int64).alias("deadline_misses"),
        pl.col("deadline_missed").cast(pl.Float64).mean().alias("deadline_miss_rate"),
        pl.col("score").mean().alias("mean_partial_score"))
    c = contentions.group_by("run_id").agg(
        pl.col("wait_s").sum().cast(pl.Float64).alias("total_queue_wait_s"),
        pl.col("wait_s").is_null().sum().cast(pl.Int64).alias("unstarted_slots"))
    out = s.join(c, on="run_id", how="full", coalesce=True).with_columns(
        pl.col("total_queue_wait_s").fill_null(0.0), pl.col("unstarted_slots").fill_null(0))
    return out.select(list(OUTCOME_SCHEMA)).cast(OUTCOME_SCHEMA).sort("run_id")


def _outcome_bounds(part: pl.DataFrame, metric: str) -> tuple[float, float]:
    """Range of a per-run collective outcome: a score in [0, 1]; misses in [0, the most
    submissions a run of the group has] (a count of 4 workers' deadlines never exceeds
    4); a wait >= 0."""
    if metric == "mean_partial_score":
        return (0.0, 1.0)
    if metric == "deadline_misses" and "submissions" in part.columns and part["submissions"].max() is not None:
        return (0.0, float(part["submissions"].max()))
    return (0.0, math.inf)


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
        the metric's range: deadline misses to [0, the run's submissions]), ``se``,
        ``diff`` (mean of scheduler minus reference over paired seeds), ``diff_lo``,
        ``diff_hi``, ``pairs``.

    Raises:
        PoolingError: runs of one ``by`` group (or the reference runs and another
            scheduler's) differ in a setting other than the scheduler.
    """
    _need(outcomes, ("run_id", "scheduler", *by, *pair_on), "outcomes")
    check_no_pooling(outcomes, [b for b in by if b != "scheduler"], what="compare_schedulers",
                     allow=("scheduler",))
    return paired_outcomes(outcomes, by, outcomes.filter(pl.col("scheduler") == reference),
                           ("deadline_misses", "mean_partial_score", "total_queue_wait_s"), _outcome_bounds,
                           pair_on=pair_on, match=[b for b in by if b != "scheduler"])


def paired_outcomes(outcomes: pl.DataFrame, by: Sequence[str], ref: pl.DataFrame, metrics: Sequence[str],
                    bounds, *, pair_on: Sequence[str] = ("seed",), match: Sequence[str] = ()) -> pl.DataFrame:
    """Per ``by`` group and metric of ``metrics`` (one value per run): the mean over runs
    with its interval (:func:`mean_over_runs`, clipped to ``bounds(part, metric)``) and
    the mean paired difference to the ``ref`` runs with the same ``pair_on`` values (and
    the group's ``match`` columns): ``by``..., ``metric``, ``value``, ``lo``, ``hi``,
    ``runs``, ``se``, ``diff``, ``diff_lo``, ``diff_hi`` (t interval over the pairs; null
    without pairs), ``pairs``."""
    rows = []
    for key, part in outcomes.sort(list(by)).group_by(list(by), maintain_order=True):
        base = dict(zip(by, key, strict=True))
        r = ref.filter(*[pl.col(b) == base[b] for b in match]) if match else ref
        paired = part.join(r.select(*pair_on, *[pl.col(m).alias(f"_ref_{m}") for m in metrics]),
                           on=list(pair_on), how="inner")
        for m in metrics:
            ci = mean_over_runs(part[m].to_list(), bounds=bounds(part, m))
            diffs = (paired[m].cast(pl.Float64) - paired[f"_ref_{m}"].cast(pl.Float64)).to_list()
            dm, dlo, dhi = stats.mean_ci(diffs) if diffs else (math.nan,) * 3
            rows.append(base | {"metric": m, "value": ci["value"], "lo": ci["lo"], "hi": ci["hi"],
                                "runs": ci["runs"], "se": ci["se"], "diff": _nan_none(dm), "diff_lo": _nan_none(dlo),
                                "diff_hi": _nan_none(dhi), "pairs": len(diffs)})
    schema = {b: outcomes.schema[b] for b in by} | {
        "metric": pl.String, "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "runs": pl.Int64,
        "se": pl.Float64, "diff": pl.Float64, "diff_lo": pl.Float64, "diff_hi": pl.Float64, "pairs": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")
