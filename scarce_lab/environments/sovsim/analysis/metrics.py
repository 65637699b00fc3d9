"""SovSim metrics and Table 1's frame: pure functions on the agent-round table
(:mod:`scarce_lab.environments.sovsim.tables`). Runs are the independent unit: every
metric is computed per simulation (:func:`simulation_metrics`), then averaged per
(model, condition) with a 95% CI over simulations (:func:`summarize`, which never pools
runs whose settings differ: :mod:`.pooling`); :func:`sovsim_table` first fits the
preset to the data (:func:`~.conventions.resolve_convention`).

Size: every Table 1 metric's per-simulation rule and the table's frame in one module,
so that each metric's code sits beside the others it shares a lazy query with.

Every metric's rule and paper source, each cell's status (:data:`STATUSES`) and the
intervals (the bounds of :data:`RANGES`, the convention's rounds and payoff cap): the
finding :func:`~.paper.table`. Cross-model results: :mod:`.cross`.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any, Literal

import polars as pl

from scarce_lab.analysis import comparisons, stats
from scarce_lab.data.csvsafe import frame_to_csv
from scarce_lab.undefined import or_none

from .conventions import Convention, differing_games, examples, resolve_convention
from .drops import CONDITION_ORDER, condition_key, relative_drops
from .pooling import Grouping, pool_groups

#: (key, label, CI method) of every metric in Table 1, in order.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("survival_time", "Survival time", "t"),
    ("survival_rate", "Survival rate", "clopper-pearson"),
    ("total_payoff", "Total payoff", "t"),
    ("efficiency", "Efficiency", "t"),
    ("equality", "Equality", "t"),
    ("overuse", "Over-usage", "t"),
    ("leader_extraction_rate", "Leader extraction rate", "t"),
    ("defection_onset", "Defection onset", "t"),
    ("misreport", "Misreport", "t"),
    ("survival_drop", "Survival drop vs CPR", "bootstrap"),
)

#: Status of a Table 1 cell.
STATUSES = {
    "ok": "a value over the simulations that have one (its own n)",
    "not_applicable": "the metric does not exist in this condition (leader rate and defection onset "
                      "without a leader, misreport outside KCPR-M, drop of the baseline itself or in a "
                      "dataset without baseline runs)",
    "no_event": "the metric exists but no simulation produced one (no subordinate ever defected; "
                "the leader never saw a positive remainder): a result, not missing data",
    "undefined": "no value can be computed (drop from a zero baseline survival rate, or no baseline "
                 "run with the same settings)",
}

#: Natural range of each t-interval metric (None = unbounded); intervals are clipped to it.
RANGES: dict[str, tuple[float | None, float | None]] = {
    "survival_time": (1.0, None),
    "total_payoff": (0.0, None),
    "efficiency": (0.0, 1.0),
    "equality": (0.0, 1.0),
    "overuse": (0.0, 1.0),
    "leader_extraction_rate": (0.0, 1.0),
    "defection_onset": (1.0, None),
}

_SIM_COLUMNS = (
    "source", "model", "condition", "base_condition", "settings", "run_id", "simulation", "rounds_played",
    "collapsed", "finished", "survival_time", "survived", "survived_lenient", "survived_strict", "total_payoff",
    "total_extraction", "efficiency", "equality", "overuse", "overuse_leader", "overuse_subordinates",
    "has_leader", "has_announcement", "defection_applicable", "leader_extraction_rate", "defection_onset",
    "misreport",
)


#: Agent-round columns the metrics require.
_REQUIRED_INPUTS = {"run_id", "model", "condition", "round", "agent", "extraction", "payoff", "pool_before",
                    "remaining", "collapsed"}

#: Agent-round columns the metrics read besides the required ones.
_OPTIONAL_INPUTS = {"source", "simulation", "base_condition", "settings", "is_leader", "pool_seen", "remainder_seen",
                    "announced_pool"}


#: Every agent-round column Table 1 reads (the metrics and the convention's fit).
_TABLE1_INPUTS = _REQUIRED_INPUTS | _OPTIONAL_INPUTS | {"settings", "source"}


class UnfinishedRunsWarning(UserWarning):
    """Simulations were left out of a table because they are unfinished (an
    interrupted run); the message gives how many and which."""


class EmptyTableError(ValueError):
    """A table was asked of data that holds no finished simulation (e.g. a folder of
    failed runs, or a model filter that matches nothing): a table of nothing is an
    error, not an empty table."""


class AgentRoundError(ValueError):
    """Agent-round rows that would be counted wrongly: one given twice, or an extraction
    that is missing, NaN or infinite (the message names runs, rounds and agents)."""


def agent_rounds(data: Any, *, models: list[str] | None = None) -> pl.DataFrame:
    """The agent-round table (one row per agent and round) of ``data``: a
    :class:`~scarce_lab.data.loaders.Dataset` (our runs or a published layout: its view's
    ``ds.sovsim.agent_rounds``) or an agent-round frame (returned as is). ``models``:
    keep only these models.

    Raises:
        ValueError: a model of ``models`` is not in the data (a misspelt model would
            silently give a table of nothing; the message lists the models present), or
            a Dataset that holds no SovSim data (it names what it holds).
        TypeError: ``data`` is neither (a path is loaded with ``sl.load`` first).
    """
    from scarce_lab.data.loaders import Dataset

    if isinstance(data, pl.DataFrame):
        df = data
    elif isinstance(data, Dataset):
        df = data.sovsim.agent_rounds
    else:
        raise TypeError(f"sl.sovsim: expected a Dataset (sl.load(path)) or an agent-round frame, "
                        f"got {type(data).__name__}")
    if models:
        present = sorted(df["model"].unique().to_list())
        absent = sorted(set(models) - set(present))
        if absent:
            raise ValueError(f"models: {absent} not in the data; its models: {present}")
        df = df.filter(pl.col("model").is_in(models))
    return df


def require_dataset(ds: Any) -> Any:
    """``ds`` if it is a :class:`~scarce_lab.data.loaders.Dataset` (what every finding
    of ``sl.sovsim`` takes).

    Raises:
        TypeError: anything else (a path or a frame: load it with ``sl.load`` first).
    """
    from scarce_lab.data.loaders import Dataset

    if not isinstance(ds, Dataset):
        raise TypeError(f"sl.sovsim: a finding takes a Dataset (ds = sl.load(path)), got {type(ds).__name__}")
    return ds


def _check_agent_rounds(lf: pl.LazyFrame) -> None:
    """Refuse rows that would be counted wrongly (see :func:`simulation_metrics`)."""
    # per run (few groups, little memory): rows against distinct (round, agent) pairs
    runs = (lf.group_by("run_id").agg(pl.len().alias("rows"), pl.struct("round", "agent").n_unique().alias("pairs"))
            .filter(pl.col("rows") > pl.col("pairs")).sort("run_id").head(3).collect())
    if runs.height:
        ids = runs["run_id"].to_list()
        twice = (lf.filter(pl.col("run_id").is_in(ids)).group_by("run_id", "round", "agent")
                 .agg(pl.len().alias("rows")).filter(pl.col("rows") > 1).sort("run_id", "round", "agent")
                 .head(3).collect())
        where = "; ".join(f"{r['run_id']} round {r['round']} agent {r['agent']} ({r['rows']} rows)"
                          for r in twice.iter_rows(named=True))
        raise AgentRoundError(f"agent-rounds given more than once (they would be counted twice): {where}; "
                         "a repeated record in the run's file, or the same dataset loaded twice?")
    bad = (lf.filter(pl.col("extraction").is_null() | ~pl.col("extraction").cast(pl.Float64).is_finite())
           .select("run_id", "round", "agent", "extraction").sort("run_id", "round", "agent").head(3).collect())
    if bad.height:
        where = "; ".join(f"{r['run_id']} round {r['round']} agent {r['agent']}: {r['extraction']!r}"
                          for r in bad.iter_rows(named=True))
        raise AgentRoundError(f"extractions missing, NaN or infinite (no metric can use them): {where}")


def simulation_metrics(
    df: pl.DataFrame | pl.LazyFrame, conv: Convention | None = None, *, drop_unfinished: bool = True
) -> pl.DataFrame:
    """One row per simulation (``run_id``) with every per-simulation metric.

    Columns: :data:`_SIM_COLUMNS` (identity: ``source, model, condition, base_condition,
    settings, run_id, simulation``; flags ``has_leader``, ``has_announcement``,
    ``defection_applicable``; the metrics of :func:`~.paper.table`). One lazy query:
    only the columns used are read.

    Args:
        drop_unfinished: drop simulations that neither collapsed nor reached the last
            round (an interrupted run), with an :class:`UnfinishedRunsWarning` naming
            them.

    Raises:
        AgentRoundError: an agent-round appears twice (the same ``run_id, round,
            agent``: a repeated record, or a dataset loaded twice, would be counted
            twice), or an extraction is missing, NaN or infinite.
        ValueError: a required column is missing, or a negative per-agent total (the
            Gini of the equality metric needs non-negative totals).
    """
    conv = conv or Convention()
    need = _REQUIRED_INPUTS
    lf = df.lazy()
    names = lf.collect_schema().names()
    missing = need - set(names)
    if missing:
        raise ValueError(f"agent-round table lacks column(s) {sorted(missing)}")
    lf = lf.select([c for c in names if c in need | _OPTIONAL_INPUTS])
    for col, dtype in (("base_condition", pl.String), ("settings", pl.String), ("source", pl.String),
                       ("simulation", pl.Int64), ("announced_pool", pl.Float64), ("remainder_seen", pl.Float64)):
        if col not in names:
            lf = lf.with_columns(pl.lit(None, dtype=dtype).alias(col))
    if "pool_seen" not in names:
        lf = lf.with_columns(pool_seen=pl.col("pool_before"))
    if "is_leader" not in names:
        lf = lf.with_columns(is_leader=pl.lit(False))
    d = conv.overuse_divisor
    ref = pl.col("pool_before") if conv.defection_pool == "true" else pl.coalesce("pool_seen", "pool_before")
    x = lf.with_columns(
        base_condition=pl.coalesce("base_condition", "condition"),
        is_leader=pl.col("is_leader").fill_null(False),
    ).with_columns(
        run_has_leader=pl.col("is_leader").any().over("run_id"),
        collapsed_round=pl.col("collapsed") | (
            pl.col("remaining") > conv.collapse_threshold if conv.collapse_above
            else pl.col("remaining") < conv.collapse_threshold),
        over=(pl.col("extraction") < conv.unsustainable_below if conv.unsustainable_below is not None
              else pl.col("extraction") > pl.col("pool_before") / d),
    ).with_columns(
        defect=(~pl.col("is_leader")) & (pl.col("extraction") > ref / d)
        & (pl.col("run_has_leader") | pl.lit(conv.defection_in_cpr)),
        leader_rate=pl.when(pl.col("is_leader") & (pl.col("remainder_seen") > 0))
        .then(pl.col("extraction") / pl.col("remainder_seen"))
        .otherwise(None),
        misrep=pl.when(pl.col("is_leader") & pl.col("announced_pool").is_not_null())
        .then(pl.col("announced_pool") - pl.col("pool_before"))
        .otherwise(None),
    )
    eq_col = "payoff" if conv.equality_over == "payoff" else "extraction"
    # the checks of _check_agent_rounds ride on the metrics' own passes (an agent-round
    # twice: some agent of a run with more rows than distinct rounds); it is called, for
    # its message, only when one fails
    per_agent = x.group_by("run_id", "agent").agg(
        pl.col(eq_col).sum().alias("agent_total"), (pl.len() > pl.col("round").n_unique()).alias("_twice"))
    # nobody harvested (Gini 0/0): the preset's source decides (Convention.equality_when_no_harvest)
    no_harvest = pl.lit(conv.equality_when_no_harvest, dtype=pl.Float64)
    equality = per_agent.group_by("run_id").agg(
        pl.when(pl.col("agent_total").sum() == 0).then(no_harvest)
        .otherwise(1.0 - stats.gini_expr("agent_total")).alias("equality"),
        pl.col("agent_total").min().alias("_min_total"), pl.col("_twice").any())
    sims = (
        x.group_by("run_id")
        .agg(
            *(pl.col(c).first() for c in ("source", "model", "condition", "base_condition", "settings", "simulation")),
            pl.col("round").max().alias("rounds_played"),
            pl.col("collapsed_round").any().alias("collapsed"),
            (pl.col("payoff").sum() / (pl.col("agent").n_unique() if conv.total_payoff_per == "agent" else 1))
            .alias("total_payoff"),
            pl.col("extraction").sum().alias("total_extraction"),
            pl.col("over").mean().alias("overuse"),
            pl.col("over").filter(pl.col("is_leader")).mean().alias("overuse_leader"),
            pl.col("over").filter(~pl.col("is_leader")).mean().alias("overuse_subordinates"),
            pl.col("is_leader").any().alias("has_leader"),
            pl.col("announced_pool").is_not_null().any().alias("has_announcement"),
            pl.col("leader_rate").mean().alias("leader_extraction_rate"),
            pl.col("round").filter(pl.col("defect")).min().alias("defection_onset"),
            pl.col("misrep").mean().alias("misreport"),
            (pl.col("extraction").is_null() | ~pl.col("extraction").cast(pl.Float64).is_finite()).any()
            .alias("_bad_extraction"),
        )
        .join(equality.select("run_id", "equality", "_min_total", "_twice"), on="run_id", how="left")
        .with_columns(
            survival_time=pl.col("rounds_played"),
            survived_lenient=pl.col("rounds_played") >= conv.rounds,
            finished=pl.col("collapsed") | (pl.col("rounds_played") >= conv.rounds),
            defection_applicable=pl.col("has_leader") | pl.lit(conv.defection_in_cpr),
            efficiency=pl.lit(None, dtype=pl.Float64) if conv.efficiency_benchmark is None else 1.0
            - (conv.efficiency_benchmark - pl.col("total_extraction")).clip(lower_bound=0.0)
            / conv.efficiency_benchmark,
        )
        .with_columns(survived_strict=pl.col("survived_lenient") & ~pl.col("collapsed"))
        .with_columns(survived=pl.col("survived_strict") if conv.strict_survival else pl.col("survived_lenient"))
    )
    sims = sims.collect()
    if sims.select(pl.col("_twice").any() | pl.col("_bad_extraction").any()).item():
        _check_agent_rounds(lf)  # raises, naming the rows
        raise AgentRoundError("an agent-round given more than once, or an extraction missing or not finite")
    low = sims["_min_total"].min()
    if low is not None and low < 0:  # Gini needs non-negative totals (stats.gini)
        raise ValueError(f"equality over {eq_col}: gini needs non-negative 'agent_total', got min {low}")
    if drop_unfinished:
        left = sims.filter(~pl.col("finished"))
        if left.height:
            ids = left.sort("run_id")["run_id"].to_list()
            warnings.warn(UnfinishedRunsWarning(
                f"left out {len(ids)} unfinished simulation(s) of {sims.height} (neither collapsed nor reached "
                f"round {conv.rounds}): {examples(ids, 5)}"), stacklevel=2)
        sims = sims.filter(pl.col("finished"))
    return sims.select(_SIM_COLUMNS).with_columns(pl.col("defection_onset").cast(pl.Float64)).sort(
        "model", _condition_rank(), "condition", "simulation", "run_id"
    )


def _condition_rank() -> pl.Expr:
    order = {c: i for i, c in enumerate(CONDITION_ORDER)}
    return pl.col("base_condition").replace_strict(order, default=len(order), return_dtype=pl.Int64)


def _clip(v: float | None, lo: float | None, hi: float | None) -> float | None:
    if v is None:
        return None
    if lo is not None:
        v = max(lo, v)
    if hi is not None:
        v = min(hi, v)
    return v


def _proportion(successes: int, n: int) -> tuple[float | None, float | None, float | None]:
    """Rate and 95% Clopper-Pearson interval (:func:`stats.proportion_ci`: Wilson's dips
    to 0.80-0.90 coverage near rates of 0.05-0.1, ``benchmarks/bench_coverage.py``)."""
    if n == 0:
        return None, None, None
    _, lo, hi = stats.proportion_ci(successes, n)
    return successes / n, or_none(lo), or_none(hi)


#: The flag of the simulations in which a metric exists (in none of a group's: not applicable).
_EXISTS_WHERE = {"leader_extraction_rate": "has_leader", "defection_onset": "defection_applicable",
                 "misreport": "has_announcement"}


def _status(key: str, g: pl.DataFrame, n: int) -> str:
    if key in _EXISTS_WHERE and not g[_EXISTS_WHERE[key]].any():
        return "not_applicable"
    return "ok" if n > 0 else "no_event"


def metric_ranges(conv: Convention | None) -> dict[str, tuple[float | None, float | None]]:
    """The range of each Table 1 metric (:data:`RANGES`; with ``conv``, survival time and
    defection onset end at ``conv.rounds`` and total payoff at ``conv.max_total_payoff``).
    Both ends known: :func:`summarize` prints the bounded interval, else the t interval."""
    ranges = dict(RANGES)
    if conv is not None:
        ranges |= {"survival_time": (1.0, float(conv.rounds)), "defection_onset": (1.0, float(conv.rounds)),
                   "total_payoff": (0.0, conv.max_total_payoff)}
    return ranges


def interval_kind(key: str, conv: Convention | None) -> str:
    """The kind of interval (:data:`scarce_lab.analysis.stats.INTERVAL_KINDS`) that
    :func:`summarize` prints for Table 1 metric ``key`` under ``conv``."""
    if key == "survival_rate":
        return "exact_binomial"
    if key == "survival_drop":
        return "drop_bootstrap"
    a, b = metric_ranges(conv).get(key, (None, None))
    return "bounded" if a is not None and b is not None else "t"


def summarize(
    per_sim: pl.DataFrame, *, baseline: str = "cpr", seed: int = 0, conv: Convention | None = None,
    by: Grouping = "condition", force: bool = False,
) -> pl.DataFrame:
    """Table 1: one row per (model, condition) with ``base_condition``, ``settings``,
    ``source``, ``n`` and, for each metric in :data:`METRICS`, ``<metric>_mean``,
    ``<metric>_ci_low``, ``<metric>_ci_high``, ``<metric>_n`` (simulations with a value)
    and ``<metric>_status`` (:data:`STATUSES`). With ``conv``, survival time and defection
    onset are clipped to ``conv.rounds`` and total payoff to ``conv.max_total_payoff``.

    ``by``: ``"condition"`` (every condition-defining setting) or ``"base_condition"``
    (pool the settings of each power condition): see
    :func:`~scarce_lab.environments.sovsim.analysis.pooling.pool_groups`.

    Raises:
        PoolingError: a (model, condition) group would mix settings and ``force`` is false.
        EmptyTableError: ``per_sim`` has no row (no finished simulation).
    """
    if per_sim.is_empty():
        raise EmptyTableError("no finished simulation to tabulate: every run failed, was interrupted before "
                              "its game ended, or was filtered out (a table of nothing is refused)")
    ranges = metric_ranges(conv)
    per_sim = pool_groups(per_sim, by, keys=("model",), force=force, what="Table 1")
    drops = relative_drops(per_sim, "survived", baseline=baseline, seed=seed)
    drop_map = {(r["model"], r["condition"]): r for r in drops.iter_rows(named=True)}
    has_baseline = bool((per_sim["base_condition"] == baseline).any())  # else the drop is not applicable
    payoff_unit = "mean per agent" if conv is not None and conv.total_payoff_per == "agent" else "sum over agents"
    no_efficiency = conv is not None and conv.efficiency_benchmark is None
    rows = []
    keys = per_sim.select("model", "condition", "base_condition").unique().rows()
    for model, cond, base in sorted(keys, key=lambda k: (k[0], condition_key(k[2]), k[1])):
        g = per_sim.filter((pl.col("model") == model) & (pl.col("condition") == cond))
        row: dict = {"model": model, "condition": cond, "base_condition": base, "settings": g["settings"][0],
                     "source": g["source"][0], "n": g.height}
        for key, _, _ in METRICS:
            if key == "survival_rate":
                mean, lo, hi = _proportion(int(g["survived"].cast(pl.Int64).sum()), g.height)
                n, status = g.height, "ok"
            elif key == "survival_drop":
                d = drop_map.get((model, cond))
                if base == baseline or not has_baseline or d is None:
                    mean = lo = hi = None
                    n, status = 0, "not_applicable"
                else:
                    mean, lo, hi, status = d["drop"], d["ci_low"], d["ci_high"], d["status"]
                    n = g.height if status == "ok" else 0
            else:
                vals = [v for v in g[key].to_list() if v is not None and math.isfinite(float(v))]
                a, b = ranges.get(key, (None, None))
                if a is not None and b is not None and vals:  # bounded: an interval that holds at 3-10 runs
                    mean, lo, hi = (or_none(v) for v in stats.bounded_mean_ci(vals, a, b, level=0.95))
                else:
                    mean, lo, hi = stats.mean_ci_cells(vals)
                lo, hi = _clip(lo, a, b), _clip(hi, a, b)
                n = len(vals)
                status = "not_applicable" if key == "efficiency" and no_efficiency else _status(key, g, n)
            row.update({f"{key}_mean": mean, f"{key}_ci_low": lo, f"{key}_ci_high": hi, f"{key}_n": n,
                        f"{key}_status": status})
        row["total_payoff_unit"] = payoff_unit
        rows.append(row)
    schema: dict = {"model": pl.String, "condition": pl.String, "base_condition": pl.String, "settings": pl.String,
                    "source": pl.String, "n": pl.Int64}
    for key, _, _ in METRICS:
        schema |= {f"{key}_mean": pl.Float64, f"{key}_ci_low": pl.Float64, f"{key}_ci_high": pl.Float64,
                   f"{key}_n": pl.Int64, f"{key}_status": pl.String}
    schema["total_payoff_unit"] = pl.String
    return pl.DataFrame(rows, schema=schema, orient="row")


def metric_label(summary: pl.DataFrame, key: str, label: str) -> str:
    """Table 1 column label of metric ``key``; the total payoff names its unit (sum over
    agents, or mean per agent under the GovSim preset)."""
    if key == "total_payoff" and "total_payoff_unit" in summary.columns and summary.height:
        return f"{label} ({summary['total_payoff_unit'][0]})"
    return label


def leader_rate_vs_survival(per_sim: pl.DataFrame, by: tuple[str, ...] = ("model",),
                            correction: str = "holm") -> pl.DataFrame:
    """The frame of :func:`~.paper.leader_rate_vs_survival` (whose docstring holds the
    method): one row per group in ``by`` (default per model), columns ``*by, n, r, r2,
    ci_low, ci_high, p, p_adj, n_tests, correction``; ``p_adj`` is ``p`` adjusted over the
    ``n_tests`` groups with an r (``correction``: ``"holm"`` or ``"fdr_bh"``,
    :func:`comparisons.adjust_pvalues`).

    Raises:
        ValueError: an unknown ``correction``.
    """
    x = per_sim.filter(pl.col("leader_extraction_rate").is_not_null())
    rows = []
    groups = x.select(by).unique().rows() if by else [()]
    for key in sorted(groups):
        g = x
        for col, val in zip(by, key, strict=True):
            g = g.filter(pl.col(col) == val)
        a = g["leader_extraction_rate"].cast(pl.Float64).to_list()
        b = g["survival_time"].cast(pl.Float64).to_list()
        r, lo, hi, p = (or_none(v) for v in stats.pearson_ci(a, b))
        rows.append({**dict(zip(by, key, strict=True)), "n": len(a), "r": r, "r2": None if r is None else r * r,
                     "ci_low": lo, "ci_high": hi, "p": p})
    _, adj = comparisons.adjust_pvalues([math.nan if r["p"] is None else r["p"] for r in rows], correction)
    n_tests = sum(r["p"] is not None for r in rows)
    for r, q in zip(rows, adj, strict=True):
        r |= {"p_adj": or_none(q), "n_tests": n_tests, "correction": comparisons.CORRECTIONS[correction]}
    schema = {c: pl.String for c in by} | {"n": pl.Int64, "r": pl.Float64, "r2": pl.Float64, "ci_low": pl.Float64,
                                           "ci_high": pl.Float64, "p": pl.Float64, "p_adj": pl.Float64,
                                           "n_tests": pl.Int64, "correction": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


# -- formatting -----------------------------------------------------------------------
def table1_cell(row: dict, key: str, digits: int = 2) -> str:
    """One Table 1 cell of a :func:`summarize` row for metric ``key``: ``mean [lo, hi]``,
    ``(n=k)`` when fewer simulations than the row's n have a value, ``n/a`` (not
    applicable), ``none (0/N)`` (no event) or ``undef.`` (undefined)."""
    status, mean, lo, hi, n = (row[f"{key}_{s}"] for s in ("status", "mean", "ci_low", "ci_high", "n"))
    if status == "not_applicable":
        return "n/a"
    if status == "no_event":
        return f"none (0/{row['n']})"
    if status == "undefined" or mean is None:
        return "undef."
    s = f"{mean:.{digits}f}"
    if lo is not None and hi is not None:
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    if n < row["n"]:
        s += f" (n={n})"
    return s


def table1_display(summary: pl.DataFrame, digits: int = 2) -> pl.DataFrame:
    """Table 1 as printed: ``Model, Condition``, a column per game setting that differs
    between the rows (rows of different games, e.g. ``rounds``:
    :func:`~.conventions.differing_games`), ``n``, then one text column per metric
    (:func:`table1_cell`)."""
    rows, games = [], differing_games(summary)
    for r, game in zip(summary.iter_rows(named=True), games.iter_rows(named=True), strict=True):
        out = {"Model": r["model"], "Condition": r["condition"], **game, "n": r["n"]}
        for key, label, _ in METRICS:
            out[metric_label(summary, key, label)] = table1_cell(r, key, digits)
        rows.append(out)
    return pl.DataFrame(rows)


def format_table(summary: pl.DataFrame, fmt: Literal["markdown", "csv", "json"] = "markdown", digits: int = 2) -> str:
    """Render :func:`summarize` output. ``markdown``: :func:`table1_display` and a note on
    the CI methods; ``csv``: the wide frame (with ``<metric>_status`` columns);
    ``json``: a list of rows with ``model, condition, base_condition, settings, n`` and,
    per metric, ``{"mean", "ci_low", "ci_high", "n", "ci", "status"}``.

    Raises:
        ValueError: unknown ``fmt``.
    """
    if fmt == "csv":
        return frame_to_csv(summary)
    if fmt == "json":
        return json.dumps(table1_rows(summary), indent=2)
    if fmt != "markdown":
        raise ValueError(f"format must be markdown, csv or json, got {fmt!r}")
    shown = table1_display(summary, digits)
    lines = ["| " + " | ".join(shown.columns) + " |", "|" + "---|" * shown.width]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in shown.iter_rows()]
    lines += [
        "",
        "Mean [95% CI] over simulations. CIs for bounded metrics (survival time, efficiency, equality, "
        "over-usage, leader rate, defection onset, total payoff under a known cap): the hull of the "
        "t-interval and a maximum-variance score interval (covers at least 95% at 2-30 simulations; "
        "the t-interval alone covers 89-93% when survival times pile up at the last round). "
        "A group whose simulations all give the same value still gets this interval, so an exact-looking "
        "value (e.g. 960.00 in every simulation) has a wide one: a few identical simulations do not show "
        "that the metric cannot vary, so the score part takes the largest spread the metric's bounds allow "
        "at that mean (the t-interval alone would shrink to the point and undercover). "
        "Other means: t-interval, clipped to the metric's range; "
        "Clopper-Pearson for the survival rate, percentile bootstrap for the survival drop vs CPR (given from "
        f"{stats.MIN_RUNS_DROP} simulations per condition on; with fewer it undercovers, see "
        "benchmarks/bench_coverage.py). (n=k): only k simulations have a value (defection onset: those "
        "with a defection). n/a: not applicable (no leader, not KCPR-M, the baseline itself); none (0/N): "
        "applicable but no simulation had the event; undef.: no value can be computed (zero or missing baseline).",
    ]
    return "\n".join(lines) + "\n"


def table1_rows(summary: pl.DataFrame) -> list[dict]:
    """Table 1 as JSON-ready rows (see :func:`format_table`, ``json``)."""
    out = []
    for row in summary.iter_rows(named=True):
        item = {k: row.get(k) for k in ("model", "condition", "base_condition", "settings", "n")}
        item["settings"] = json.loads(item["settings"]) if item["settings"] else None
        for key, _, method in METRICS:
            item[key] = {s: row[f"{key}_{s}"] for s in ("mean", "ci_low", "ci_high", "n", "status")} | {"ci": method}
        if row.get("total_payoff_unit"):
            item["total_payoff"]["unit"] = row["total_payoff_unit"]
        out.append(item)
    return out


def sovsim_table(
    df: pl.DataFrame | pl.LazyFrame, preset: str = "sovsim", strict: bool = False, *, force: bool = False,
    by: Grouping = "condition",
) -> pl.DataFrame:
    """Agent-round table -> Table 1 frame: :func:`resolve_convention` (the preset
    fitted to the runs' own game), :func:`simulation_metrics`, :func:`summarize`; kept
    beside a cached agent-round scan and read back for the same data and arguments
    (:mod:`scarce_lab.environments.sovsim.simcache`).

    Raises:
        PresetMismatchError: the data do not fit the preset (unless ``force``).
        PoolingError: a group would pool different settings (unless ``force``).
    """
    from ..agent_rounds import is_parsed_scan
    from ..simcache import kept_table

    def compute() -> pl.DataFrame:
        data = df
        if is_parsed_scan(df):  # files parsed once, not once per step: only the columns the steps use
            data = df.select(c for c in df.collect_schema().names() if c in _TABLE1_INPUTS).collect()
        conv = resolve_convention(data, preset, force=force, strict_survival=strict)
        return summarize(simulation_metrics(data, conv), conv=conv, by=by, force=force)

    return kept_table(df, {"preset": preset, "strict": strict, "force": force, "by": by}, compute)
