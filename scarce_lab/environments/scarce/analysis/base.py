"""Shared pieces of the SCARCE experiment metrics (:mod:`.experiments`):
constants of the paper's definitions, helpers for cluster intervals, run settings,
stages and presentation."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from scarce_lab.analysis import comparisons, stats
from scarce_lab.analysis.labels import condition_parts, differing_parts
from scarce_lab.analysis.pooling import PoolingError, check_no_pooling  # noqa: F401

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

_CI = {"value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "n": pl.Int64, "runs": pl.Int64,
       "se": pl.Float64}
#: Range of a share (rates, fractions of rounds): intervals are clipped to it.
SHARE = (0.0, 1.0)
#: Range of a non-negative measure (credits, seconds, counts without a known cap).
NON_NEGATIVE = (0.0, math.inf)


# -- helpers ---------------------------------------------------------------------------
def _need(df: pl.DataFrame, cols: Sequence[str], name: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{name} frame lacks columns {missing} (has {df.columns})")


def _nan_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def cluster_ci(df: pl.DataFrame, value: str, *, seed: int = 0, bounds: tuple[float, float] = NON_NEGATIVE) -> dict:
    """Mean over runs (``run_id``) of each run's mean of ``value``, with a t interval over
    the run means (:func:`stats.cluster_mean_ci`; the percentile cluster bootstrap it
    replaces covered 58-90% with 2-10 runs, ``benchmarks/bench_coverage.py``).

    ``bounds``: the measure's range (:data:`SHARE` for a rate; default
    :data:`NON_NEGATIVE`); the interval is clipped to it. ``seed`` is accepted for
    callers of the bootstrap it replaces and unused. Returns ``{"value", "lo", "hi",
    "n", "runs", "se"}`` (``se``: standard error of the mean over runs; nulls where
    undefined: no interval from one run or from runs that all give the same value).
    Null values are dropped first.
    """
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0, "se": None}
    d = d.with_columns(pl.col(value).cast(pl.Float64))
    m, lo, hi = stats.cluster_mean_ci(d, cluster="run_id", value=value, bounds=bounds)
    means = stats.cluster_means(d, cluster="run_id", value=value)
    se = float(means.std(ddof=1)) / math.sqrt(len(means)) if len(means) > 1 and not math.isnan(lo) else None
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height,
            "runs": len(means), "se": se}


def cluster_bootstrap_median(df: pl.DataFrame, value: str, *, level: float = 0.95, n_resamples: int = 2000,
                             seed: int = 0) -> dict:
    """Median of ``value`` over rows with a percentile bootstrap that resamples whole
    runs (``run_id``) with replacement (:func:`stats.cluster_bootstrap_median`, all
    resamples at once), given from :data:`stats.MIN_RUNS_MEDIAN` runs on (with fewer
    it undercovers). Same return shape as :func:`cluster_ci` (``se`` null: a median's
    interval is not a t interval)."""
    d = df.filter(pl.col(value).is_not_null())
    if d.height == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "runs": 0, "se": None}
    est, lo, hi, k = stats.cluster_bootstrap_median(d[value].cast(pl.Float64).to_numpy(), d["run_id"].to_numpy(),
                                                    level=level, n_resamples=n_resamples, seed=seed)
    return {"value": est, "lo": _nan_none(lo), "hi": _nan_none(hi), "n": d.height, "runs": k, "se": None}


def mean_over_runs(values: Sequence[float], bounds: tuple[float, float] | None = None) -> dict:
    """Mean and t interval of one value per run (:func:`stats.mean_ci`); ``n`` = ``runs``.
    ``bounds``: the measure's range (e.g. ``(0, 1)`` for shares, ``(0, workers)`` for a
    count per run): with both finite, :func:`stats.bounded_mean_ci` (an interval that
    keeps 95% at few runs, also when every run gives the same value); otherwise the t
    interval, none when runs all agree (a zero-width interval would claim certainty);
    ``se`` as in :func:`cluster_ci`."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if bounds is not None and math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and vals:
        m, lo, hi = stats.bounded_mean_ci(vals, bounds[0], bounds[1])  # holds at few runs (stats docs)
    else:
        m, lo, hi = stats.mean_ci(vals)
        if len(vals) > 1 and stats.near_constant(vals):
            lo = hi = math.nan
    if bounds is not None and not math.isnan(lo):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    se = float(np.std(vals, ddof=1)) / math.sqrt(len(vals)) if len(vals) > 1 and not math.isnan(lo) else None
    return {"value": _nan_none(m), "lo": _nan_none(lo), "hi": _nan_none(hi), "n": len(vals), "runs": len(vals),
            "se": se}


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


def _run_negotiator(row: dict, cfg: dict) -> str | None:
    """The run's negotiator model: ``negotiator_model`` or else ``model``; with seats
    (``config.seats``), the manifest's ``models["negotiator"]`` (one model every worker's
    negotiator shares, or ``mixed``)."""
    if cfg.get("seats"):
        models = json.loads(row.get("models") or "{}") if isinstance(row.get("models"), str) else (row.get("models") or {})
        return models.get("negotiator") or "mixed"
    return cfg.get("negotiator_model") or cfg.get("model")


def scarce_run_configs(runs: pl.DataFrame | pl.LazyFrame) -> list[tuple[dict, dict]]:
    """``(row, config)`` for every SCARCE run of a ``runs`` frame (columns ``run_id``,
    ``seed``, ``config``: the manifest's config JSON, read into a dict; other
    environments' rows left out). The one reader of per-run settings for
    :func:`run_settings` and the institutions' settings.

    Raises:
        ValueError: a missing column (named)."""
    if isinstance(runs, pl.LazyFrame):
        runs = runs.collect()
    _need(runs, ("run_id", "seed", "config"), "runs")
    if "environment" in runs.columns:
        runs = runs.filter(pl.col("environment") == "scarce")
    return [(r, json.loads(r["config"] or "{}")) for r in runs.iter_rows(named=True)]


def run_settings(runs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per SCARCE run with the settings the experiments split by
    (:data:`RUN_SETTINGS_SCHEMA`), read from the manifest's ``config`` JSON (the
    ``runs`` frame of :func:`~scarce_lab.data.loaders.load_dataset`).
    ``reasoning_effort`` is ``llm.reasoning_effort`` (``reasoning_effort`` in
    version-1 configs), ``"default"`` when none was passed; ``negotiator`` is the
    negotiator model (``negotiator_model`` or else ``model``; ``mixed`` for a run whose
    seats give workers different negotiators)."""
    rows = []
    for r, c in scarce_run_configs(runs):
        rows.append({
            "run_id": r["run_id"], "seed": r["seed"], "workers": c.get("workers"), "subruns": c.get("subruns"),
            "memory": c.get("memory"), "mechanism": c.get("mechanism"), "scheduler": c.get("scheduler"),
            "reasoning_effort": (c.get("llm") or {}).get("reasoning_effort") or c.get("reasoning_effort") or "default",
            "rich_worker_budget": c.get("rich_worker_budget"), "mixed_deadlines": bool(c.get("mixed_deadlines")),
            "negotiator": _run_negotiator(r, c),
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


def _identifying_keys(d: pl.DataFrame, keys: list[str]) -> list[str]:
    """``keys``, or the smallest extension of them that identifies one row of ``d``."""
    if d.height <= 1 or (keys and d.select(keys).n_unique() == d.height):
        return keys
    rest = [k for k in keys if k not in ("model", "condition", "group")]
    for cand in (["group", *rest], [*keys, "condition"], ["model", "condition", *rest]):
        if all(c in d.columns for c in cand) and d.select(cand).n_unique() == d.height:
            return list(dict.fromkeys(cand))
    raise ValueError(f"describe_extremes: {keys} name several rows ({d.height} rows, "
                     f"{d.select(keys).n_unique() if keys else 1} distinct); pass keys that identify one")


def describe_extremes(df: pl.DataFrame, keys: Sequence[str], what: str, *, digits: int = 2,
                      scope: str = "In this dataset", correction: str = "holm") -> str:
    """One sentence naming the groups with the highest and lowest ``value`` of a result
    frame (with their intervals), and what the data say about their differences, for a
    notebook's interpretation line.

    Naming the highest and lowest of ``g`` groups compares every pair, so the claim is
    a family of ``g (g - 1) / 2`` comparisons: each pair of groups with a standard error
    (``se``, more than one run and some spread between runs) gets Welch's t-test over
    run means (:func:`comparisons.welch_p`), the p-values are adjusted together
    (``correction``: ``"holm"`` or ``"fdr_bh"``, :func:`comparisons.adjust_pvalues`), and the
    sentence says which correction, how many comparisons, how many differ at 5% and the
    highest-vs-lowest adjusted p. Overlapping or disjoint intervals are never presented
    as a test. A frame without ``se`` gets no test (the sentence says so). Mechanical
    results are not findings: every group equal says the comparison cannot tell them
    apart; rows whose ``by_construction`` column is true (e.g. a win rate of 1/n
    because every contender is the same policy) are named as such.

    Ties are broken deterministically: among equal values the group first in ascending
    order of ``keys`` is named (the sentence says how many groups tie). When ``keys``
    name several rows (a model with several conditions), the sentence names the chart
    ``group`` (or adds the ``condition``).

    Raises:
        ValueError: no such extension identifies one row (the sentence would name a
            model for a value of one of its conditions); an unknown ``correction``.
    """
    corr = comparisons.CORRECTIONS.get(correction)
    if corr is None:
        raise ValueError(f"describe_extremes: correction must be one of {sorted(comparisons.CORRECTIONS)}, "
                         f"got {correction!r}")
    d = df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan())
    if d.height == 0:
        return f"{scope}, there is no data for {what}."
    d = with_ci_text(d, digits).with_row_index("_i")
    keys = _identifying_keys(d, list(keys))
    name = lambda r: ", ".join(f"{k}={r[k]}" for k in keys) or "all"  # noqa: E731
    order = [str(k) for k in keys]
    hi = d.sort(["value", *order], descending=[True] + [False] * len(order), nulls_last=True).row(0, named=True)
    lo = d.sort(["value", *order], nulls_last=True).row(0, named=True)
    runs = int(d["runs"].max() or 0)
    mech = ""
    if "by_construction" in d.columns and d["by_construction"].fill_null(False).any():
        k = int(d["by_construction"].fill_null(False).sum())
        if k == d.height:  # nothing to compare: every value is fixed by the contenders' number
            return (f"{scope}, {what} ranges from {lo['estimate']} to {hi['estimate']} over {d.height} group(s), "
                    "each fixed by construction: every contender of every contention is the same policy, so its "
                    "value is contentions / participations (1 / contenders). Not a finding; no comparison is made.")
        mech = (f" {k} of the {d.height} group(s) have this value by construction (every contender is the same "
                "policy, so it is 1/(contenders)): not a finding.")
    if d.height == 1 or hi["value"] == lo["value"]:
        where = f"for {name(hi)}" if d.height == 1 else f"in every group ({d.height} groups)"
        ci = "; no interval from a single run" if runs <= 1 else "; 95% CI in brackets where there is one"
        same = "" if d.height == 1 else " The comparison cannot tell the groups apart."
        return f"{scope}, {what} is {hi['estimate']} {where} (at most {runs} run(s) per group{ci}).{same}{mech}"
    n_top = d.filter(pl.col("value") == hi["value"]).height
    n_bot = d.filter(pl.col("value") == lo["value"]).height
    tie = lambda k: f", tied with {k - 1} other group(s)" if k > 1 else ""  # noqa: E731
    head = (f"{scope}, {what} is highest for {name(hi)} ({hi['estimate']}{tie(n_top)}) and lowest for "
            f"{name(lo)} ({lo['estimate']}{tie(n_bot)}); ")
    return head + _pairwise_sentence(d, hi, lo, correction, corr) + mech


def describe_change(df: pl.DataFrame, along: str, order: Sequence, keys: Sequence[str], question: str, *,
                    digits: int = 2, correction: str = "holm") -> str:
    """The answer to a table's question about a change along ``along`` (budget phase,
    stage...): for each group of ``keys``, its estimates in ``order`` (``a -> b -> c``),
    and whether the last value present differs from the first (Welch's t-test over run
    means, :func:`comparisons.welch_p`; unpaired, so conservative when the same runs give
    both values), the p-values of all groups adjusted together (``correction``). Opens
    with ``question``. Groups whose every row is ``by_construction`` are named as such
    and not tested (the "mechanical result" rule of :func:`describe_extremes`).

    Raises:
        ValueError: a column is missing, or an unknown ``correction``.
    """
    corr = comparisons.CORRECTIONS.get(correction)
    if corr is None:
        raise ValueError(f"describe_change: correction must be one of {sorted(comparisons.CORRECTIONS)}, "
                         f"got {correction!r}")
    _need(df, (*keys, along, "value", "se", "runs"), "describe_change input")
    d = with_ci_text(df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan()), digits)
    rank = {v: i for i, v in enumerate(order)}
    d = d.filter(pl.col(along).is_in(list(order)))
    if d.height == 0:
        return f"{question} No group has a value at {', '.join(map(str, order))}."
    parts, pv, idx = [], [], []
    for key, part in d.group_by(list(keys), maintain_order=True):
        rows = sorted(part.iter_rows(named=True), key=lambda r: rank[r[along]])
        name = ", ".join(str(k) for k in key)
        path = " -> ".join(f"{r['estimate']}" for r in rows)
        where = " -> ".join(str(r[along]) for r in rows)
        if len(rows) < 2:
            parts.append(f"{name}: only {where} ({rows[0]['estimate']}), no change to test")
            continue
        if "by_construction" in part.columns and part["by_construction"].fill_null(False).all():
            parts.append(f"{name}: {path} ({where}), fixed by construction (every contender the same policy): "
                         "not a finding")
            continue
        first, last = rows[0], rows[-1]
        diff = last["value"] - first["value"]
        verb = "rises" if diff > 0 else "falls" if diff < 0 else "does not change"
        p = comparisons.welch_p(last["value"], last["se"], int(last["runs"] or 0),
                                first["value"], first["se"], int(first["runs"] or 0))
        parts.append(f"{name}: {path} ({where}), {verb}" + (f" by {abs(diff):.{digits}f}" if diff else ""))
        pv.append(p)
        idx.append(len(parts) - 1)
    tested = int(np.sum(~np.isnan(pv))) if pv else 0
    if tested:
        reject, adj = comparisons.adjust_pvalues(pv, correction)
        for j, i in enumerate(idx):
            parts[i] += ("; untestable (a single run or no spread)" if math.isnan(adj[j]) else
                         f"; adjusted p = {adj[j]:.2g}" + (", a change at the 5% level" if reject[j] else ", not a change at the 5% level"))
        test = (f" First vs last value per group: Welch t over run means, {corr}-adjusted over {tested} comparison(s); "
                f"{int(reject.sum())} change(s) at the 5% level.")
    else:
        test = (" No group's change can be tested (single runs or runs that all give the same value), so the data "
                "cannot say whether anything changes." if pv else "")
    return f"{question} " + "; ".join(parts) + "." + test


def _pairwise_sentence(d: pl.DataFrame, hi: dict, lo: dict, correction: str, corr: str) -> str:
    """The multiple-comparison half of :func:`describe_extremes`."""
    g = d.height
    pairs = g * (g - 1) // 2
    if "se" not in d.columns:
        return (f"no test was run (the table has no standard errors), so naming them claims no difference "
                f"among the {g} groups.")
    rows = d.select("value", "se", "runs").rows()
    pv, pair_ids = [], []
    for i in range(g):
        for j in range(i + 1, g):
            (m1, s1, n1), (m2, s2, n2) = rows[i], rows[j]
            pv.append(comparisons.welch_p(m1, s1, int(n1 or 0), m2, s2, int(n2 or 0)))
            pair_ids.append((i, j))
    tested = int(np.sum(~np.isnan(pv)))
    if tested == 0:
        return ("no pair of groups can be tested (a group from a single run, or whose runs all give the same "
                "value, has no standard error), so the data cannot separate them.")
    reject, adj = comparisons.adjust_pvalues(pv, correction)
    hi_i, lo_i = int(hi["_i"]), int(lo["_i"])
    k = pair_ids.index((min(hi_i, lo_i), max(hi_i, lo_i)))
    extreme = ("the highest and lowest cannot be tested against each other"
               if math.isnan(adj[k]) else
               f"highest vs lowest: adjusted p = {adj[k]:.2g}"
               + (", a difference at the 5% level" if reject[k] else ", not a difference at the 5% level"))
    untested = f"; {pairs - tested} pair(s) untestable (single run or no spread)" if tested < pairs else ""
    return (f"Welch t-tests over run means for {tested} of the {pairs} pairs of groups, {corr}-adjusted "
            f"({tested} comparisons{untested}): {int(reject.sum())} differ at the 5% level ({extreme}).")


def group_labels(df: pl.DataFrame, *, model: str = "model", condition: str = "condition",
                 out: str = "group") -> pl.DataFrame:
    """``df`` with ``out``: a short chart label per (model, condition), distinct whenever
    the pairs are (charts colour and place by it; conditions are never pooled).

    The label is the model, then the parts of its condition label (the primary
    condition, ``name=value`` settings) that differ from the most common value of that
    part among the model's conditions in ``df`` (ties: an unset ``=None`` value, then
    sorted order); a
    condition with no such part shows its primary condition, and a model with one
    condition in ``df`` is its name alone. The full condition stays in the tables'
    ``condition`` column. Example: ``embedded/smollm2 | workers=3``,
    ``embedded/smollm2 | ballots_fixed_mem-cross``, ``scripted/strategic``. Should two
    labels still coincide, the full condition labels are used.

    Raises:
        ValueError: a column is missing.
    """
    _need(df, (model, condition), "group_labels input")
    pairs = df.select(model, condition).unique().sort(model, condition, nulls_last=True)
    labels: dict[tuple, str] = {}
    for (m,), g in pairs.group_by(model, maintain_order=True):
        conds = g[condition].to_list()
        if len(conds) == 1:
            labels[(m, conds[0])] = str(m)
            continue
        rest = differing_parts(c or "" for c in conds)
        for c in conds:
            shown = rest[c or ""] or condition_parts(c or "")[:1]
            labels[(m, c)] = f"{m} | {','.join(shown)}"
    if len(set(labels.values())) < len(labels):  # never merge two conditions under one label
        labels = {(m, c): f"{m} | {c}" for m, c in labels}
    keys_df = pl.DataFrame({"_m": [k[0] for k in labels], "_c": [k[1] for k in labels], out: list(labels.values())},
                           schema={"_m": df.schema[model], "_c": df.schema[condition], out: pl.String})
    return df.drop(out, strict=False).join(keys_df, left_on=[model, condition], right_on=["_m", "_c"],
                                           how="left", nulls_equal=True)
