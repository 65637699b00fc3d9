"""Metrics and charts of Economy of Minds runs, on the tidy tables of
:mod:`scarce_lab.environments.economy.tables` (polars frames only; no envs, no agents),
behind the findings of :mod:`scarce_lab.environments.economy.analysis` (whose docstring
states the conventions: runs are the unit, 95% t-intervals over per-run values, groups
checked by :func:`scarce_lab.analysis.pooling.check_no_pooling`, never pooled).
"""

from __future__ import annotations

import math

import polars as pl

from scarce_lab.analysis import stats
from scarce_lab.analysis.figures import (
    ONE_SERIES,
    NoFigure,
    caption,
    chart_data,
    series_colour,
    titled,
    window_means,
    wrap_columns,
)
from scarce_lab.analysis.labels import condition_label as _condition_label
from scarce_lab.analysis.layout import ci_cell
from scarce_lab.analysis.pooling import check_no_pooling
from scarce_lab.analysis.stats import mean_ci_cells as mean_ci

GROUP = ("task", "condition")
CI_METHOD = "mean over seeds, 95% bounded interval (hull of the t and the score interval in [0, 1])"


def wealth_gini(wealths: list[float]) -> float | None:
    """Gini (:func:`scarce_lab.analysis.stats.gini`) of an economy's wealths, negative
    wealth counted as 0; ``None`` when there is no wealth (no agent, or all zero:
    nothing to compare), as :func:`population_dynamics` per snapshot."""
    vals = [max(0.0, float(v)) for v in wealths]
    return float(stats.gini(vals)) if sum(vals) > 0 else None


def _summ(df: pl.DataFrame, by: list[str], value: str, prefix: str, *, share: bool = False) -> pl.DataFrame:
    """Mean and interval (:func:`mean_ci`; with ``share``, a value in [0, 1] the
    t-interval does not know the bounds of: :func:`clipped_mean_ci`) of ``value`` per
    ``by`` group. The schema is
    explicit: the group keys keep their dtypes and the mean and bounds are Float64 even
    when every bound is missing (one run per group gives no interval: a column of
    nulls, which polars would otherwise type as Null, on which ``clip`` and most
    operations fail), and no group gives an empty frame with the same columns."""
    rows = []
    for key, g in df.group_by(by, maintain_order=True):
        m, lo, hi = clipped_mean_ci(g[value].to_list()) if share else mean_ci(g[value].to_list())
        rows.append({**dict(zip(by, key, strict=True)), f"{prefix}": m, f"{prefix}_lo": lo,
                     f"{prefix}_hi": hi, "n_runs": g.height})
    schema = {k: df.schema[k] for k in by} | {prefix: pl.Float64, f"{prefix}_lo": pl.Float64,
                                              f"{prefix}_hi": pl.Float64, "n_runs": pl.Int64}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def solve_curve(episodes: pl.DataFrame, window: int = 10) -> pl.DataFrame:
    """Training solve rate per window of ``window`` episodes: per run first, then mean
    and 95% band over runs. Columns: task, condition, window_start, solve_rate,
    solve_rate_lo, solve_rate_hi, n_runs.

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(episodes, GROUP, what="solve_curve")
    tr = episodes.filter(pl.col("phase") == "train").with_columns(
        (pl.col("episode") // window * window).alias("window_start")
    )
    per_run = tr.group_by(["task", "condition", "run_id", "window_start"]).agg(
        pl.col("solved").cast(pl.Float64).mean().alias("rate")
    )
    out = _summ(per_run.sort("window_start", "run_id"), ["task", "condition", "window_start"], "rate", "solve_rate",
                share=True)
    return out.sort("task", "condition", "window_start")


def per_run_rates(episodes: pl.DataFrame) -> pl.DataFrame:
    """Per run: solve rate over the first fifth and last fifth of training episodes and
    in frozen evaluation (null when the run has no evaluation episodes)."""
    rows = []
    for (run_id,), g in episodes.group_by(["run_id"], maintain_order=True):
        tr = g.filter(pl.col("phase") == "train").sort("episode")
        ev = g.filter(pl.col("phase") == "eval")
        k = max(1, tr.height // 5)
        first = tr.head(k)["solved"].cast(pl.Float64).mean() if tr.height else None
        last = tr.tail(k)["solved"].cast(pl.Float64).mean() if tr.height else None
        evr = ev["solved"].cast(pl.Float64).mean() if ev.height else None
        rows.append({"run_id": run_id, "task": g["task"][0], "condition": g["condition"][0],
                     "model": g["model"][0], "seed": g["seed"][0], "first_fifth": first,
                     "last_fifth": last, "eval": evr, "train_episodes": tr.height, "eval_episodes": ev.height})
    schema = {"run_id": pl.String, "task": pl.String, "condition": pl.String, "model": pl.String,
              "seed": pl.Int64, "first_fifth": pl.Float64, "last_fifth": pl.Float64, "eval": pl.Float64,
              "train_episodes": pl.Int64, "eval_episodes": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


_COND_ORDER = {"none": 0, "no-auction": 1, "no-exploration": 2, "no-exploitation": 3}


def ablation_table(episodes: pl.DataFrame) -> pl.DataFrame:
    """Rows per (task, condition): n_runs and the solve rate (mean, 95% CI over seeds;
    the bounded interval on per-run rates, :func:`clipped_mean_ci`) over the first fifth and last
    fifth of training, and in frozen evaluation.

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(episodes, GROUP, what="ablation_table")
    pr = per_run_rates(episodes)
    rows = []
    for (task, cond), g in pr.group_by(["task", "condition"], maintain_order=True):
        row = {"task": task, "condition": cond, "n_runs": g.height}
        for col in ("first_fifth", "last_fifth", "eval"):
            row |= dict(zip((col, f"{col}_lo", f"{col}_hi"), clipped_mean_ci(g[col].to_list()), strict=True))
        row["ci"] = CI_METHOD
        rows.append(row)
    cols = ["first_fifth", "last_fifth", "eval"]
    schema = {"task": pl.String, "condition": pl.String, "n_runs": pl.Int64} | {
        f"{c}{s}": pl.Float64 for c in cols for s in ("", "_lo", "_hi")} | {"ci": pl.String}
    df = pl.DataFrame(rows, schema=schema)
    return df.with_columns(
        pl.col("condition").str.split(",").list.first()
        .replace_strict(_COND_ORDER, default=9, return_dtype=pl.Int64).alias("_o")
    ).sort("task", "_o", "condition").drop("_o")


def clipped_mean_ci(values: list, top: float | None = 1.0) -> tuple[float | None, float | None, float | None]:
    """Mean and 95% interval of per-run values that lie in ``[0, top]`` (``None``, null
    and non-finite values left out). With ``top`` (a rate: 1): the bounded interval
    (:func:`~scarce_lab.analysis.stats.bounded_mean_ci`: the hull of the t and the score
    interval, which keeps its 95% at few runs where a clipped t interval covered 84-90% on
    rates piled at a bound, and under a stopping rule on its width: kind ``bounded``);
    without (no upper bound): :func:`~scarce_lab.analysis.stats.mean_ci_cells`, clipped at 0."""
    if top is None:
        m, lo, hi = mean_ci(values)
        return m, None if lo is None else max(0.0, lo), hi
    from scarce_lab.undefined import or_none

    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return tuple(or_none(v) for v in stats.bounded_mean_ci(vals, 0.0, top))  # type: ignore[return-value]


def ci_text(m: float | None, lo: float | None, hi: float | None) -> str:
    """``0.44 [0.31, 0.57]`` (:func:`~scarce_lab.analysis.layout.ci_cell`), ``-`` without a mean."""
    return ci_cell(m, lo, hi, missing="-")


def format_table(table: pl.DataFrame) -> pl.DataFrame:
    """Human-readable ablation table: readable condition names (:func:`short_names`: the
    ablation's name and the settings that tell it apart; the full labels are in the
    frame and in :func:`conditions_key`) and :func:`ci_text` strings."""
    names = short_names(table["condition"].to_list()) if table.height else {}
    return pl.DataFrame([
        {"task": r["task"], "condition": names[r["condition"]], "seeds": r["n_runs"],
         **{name: ci_text(r[c], r[f"{c}_lo"], r[f"{c}_hi"])
            for c, name in (("first_fifth", "first fifth"), ("last_fifth", "last fifth"), ("eval", "frozen eval"))}}
        for r in table.iter_rows(named=True)])


def conditions_key(conditions: list[str]) -> str:
    """The full condition label behind each readable name (:func:`short_names`), folded
    under a table (Markdown ``<details>``); empty without conditions."""
    from scarce_lab.analysis.figures import markdown_table
    from scarce_lab.analysis.layout import folded

    if not conditions:
        return ""
    names = short_names(conditions)
    key = pl.DataFrame({"condition": list(names.values()), "full condition": list(names)})
    return folded("Full conditions behind the labels", markdown_table(key))


def population_dynamics(population: pl.DataFrame) -> pl.DataFrame:
    """Per snapshot: population size and wealth Gini (per run), then mean and band over
    runs per (task, condition, round). Training snapshots only.

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(population, GROUP, what="population_dynamics")
    tr = population.filter(pl.col("phase") == "train")
    # gini() above, for every snapshot at once: negative wealth counts as 0, none if all zero
    wealth = pl.col("wealth").list.eval(pl.element().cast(pl.Float64).clip(lower_bound=0.0))
    per = tr.with_columns(
        pl.when(wealth.list.sum() > 0).then(wealth.list.eval(stats.gini_expr("")).list.first()).alias("gini"),
        pl.col("wealth").list.sum().alias("agent_wealth"),
    )
    size = _summ(per, ["task", "condition", "round"], "size", "size")
    g = _summ(per.filter(pl.col("gini").is_not_null()), ["task", "condition", "round"], "gini", "gini")
    return size.join(g.drop("n_runs"), on=["task", "condition", "round"], how="left").sort(
        "task", "condition", "round"
    )


def specialisation(wins: pl.DataFrame, births: pl.DataFrame | None = None, *, phase: str = "train",
                   top: int = 12) -> pl.DataFrame:
    """Who wins which kind of step: per (run, agent, step_kind) wins and share of that
    step kind's wins in the run, for the ``top`` agents by wins in each run (ties broken
    by agent id). Adds
    ``label`` (agent id and genome description) when ``births`` is given."""
    w = wins.filter(pl.col("phase") == phase).group_by(["run_id", "agent", "step_kind"]).agg(
        pl.col("wins").sum()
    )
    kind_tot = w.group_by(["run_id", "step_kind"]).agg(pl.col("wins").sum().alias("kind_wins"))
    agent_tot = w.group_by(["run_id", "agent"]).agg(pl.col("wins").sum().alias("agent_wins"))
    # ties in wins broken by agent id (group_by's row order is not stable across runs)
    ranked = agent_tot.sort("run_id", "agent_wins", "agent", descending=[False, True, False]).with_columns(
        pl.int_range(pl.len()).over("run_id").add(1).alias("rank")
    ).filter(pl.col("rank") <= top)
    out = w.join(kind_tot, on=["run_id", "step_kind"]).join(ranked, on=["run_id", "agent"]).with_columns(
        (pl.col("wins") / pl.col("kind_wins")).alias("share_of_kind"),
        (pl.col("wins") / pl.col("agent_wins")).alias("share_of_agent"),
    )
    if births is not None and births.height:
        lab = births.select("run_id", "agent", "genome_text").with_columns(
            (pl.col("agent") + ": " + pl.col("genome_text").fill_null("")).alias("label")
        ).drop("genome_text")
        out = out.join(lab, on=["run_id", "agent"], how="left")
    return out.sort("run_id", "rank", "step_kind")


def _index_per_run(wins: pl.DataFrame, phase: str) -> pl.DataFrame:
    """Per (task, condition, run): the win-weighted share of an agent's wins in its main
    step kind (``index``), after :func:`check_no_pooling`."""
    check_no_pooling(wins, GROUP, what="specialisation_index")
    w = wins.filter(pl.col("phase") == phase).group_by(["task", "condition", "run_id", "agent", "step_kind"]).agg(
        pl.col("wins").sum()
    )
    per_agent = w.group_by(["task", "condition", "run_id", "agent"]).agg(
        pl.col("wins").max().alias("top"), pl.col("wins").sum().alias("tot")
    )
    return per_agent.group_by(["task", "condition", "run_id"]).agg(
        (pl.col("top").sum() / pl.col("tot").sum()).alias("index")
    ).sort("run_id")  # runs in one order: the mean over runs is the same to the last bit every time


def specialisation_index(wins: pl.DataFrame, *, phase: str = "train") -> pl.DataFrame:
    """Per run: win-weighted mean over agents of the share of an agent's wins in its
    most frequent step kind (1 = every agent wins one kind only). Then mean and CI over
    runs per (task, condition).

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    return _summ(_index_per_run(wins, phase), ["task", "condition"], "index", "specialisation", share=True)


def specialisation_values(wins: pl.DataFrame, *, phase: str = "train") -> pl.DataFrame:
    """:func:`specialisation_index` as a result frame (one row per task and condition,
    in ablation order): ``value``, ``lo``, ``hi`` (the same mean and clipped 95%
    t-interval over runs), ``se`` (standard error of the mean over runs; null where
    there is no interval: one run, or runs that agree), ``n`` and ``runs`` (runs).

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    per_run = _index_per_run(wins, phase)
    se = per_run.group_by(["task", "condition"]).agg(
        (pl.col("index").std() / pl.col("index").len().sqrt()).alias("se"))
    idx = specialisation_index(wins, phase=phase).join(se, on=["task", "condition"], how="left")
    out = idx.select("task", "condition", value=pl.col("specialisation"), lo=pl.col("specialisation_lo"),
                     hi=pl.col("specialisation_hi"),
                     se=pl.when(pl.col("specialisation_lo").is_not_null()).then(pl.col("se")),
                     n=pl.col("n_runs"), runs=pl.col("n_runs"))
    order = {c: i for i, c in enumerate(sorted(set(out["condition"].to_list()), key=_order))}
    return out.sort(pl.col("task"), pl.col("condition").replace_strict(order, return_dtype=pl.Int64))


def bid_convergence(agent_episodes: pl.DataFrame, window: int = 20) -> pl.DataFrame:
    """Per window of training rounds: mean bid paid per win, mean realised value per win
    (payment received from the next winner + reward) and mean absolute gap
    ``|paid - realised| / wins`` over agent-episodes; per run, then mean and band over
    runs per (task, condition, window_start) (method: ``sl.economy.bid_convergence``).

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(agent_episodes, GROUP, what="bid_convergence")
    tr = agent_episodes.filter((pl.col("phase") == "train") & (pl.col("n_wins") > 0)).with_columns(
        (pl.col("round") // window * window).alias("window_start"),
        ((pl.col("paid") - pl.col("realised")).abs() / pl.col("n_wins")).alias("gap"),
    )
    per_run = tr.group_by(["task", "condition", "run_id", "window_start"]).agg(
        (pl.col("paid").sum() / pl.col("n_wins").sum()).alias("bid_per_win"),
        (pl.col("realised").sum() / pl.col("n_wins").sum()).alias("realised_per_win"),
        pl.col("gap").mean().alias("gap"),
    ).sort("run_id")  # runs in one order: the means over runs are the same to the last bit every time
    keys = ["task", "condition", "window_start"]
    out = _summ(per_run, keys, "gap", "gap")
    for col in ("bid_per_win", "realised_per_win"):
        out = out.join(_summ(per_run, keys, col, col).drop("n_runs"), on=keys, how="left")
    return out.sort(keys)


# -- charts (altair; imported lazily) -------------------------------------------------
_T_SEEDS = "95% bounded interval over seeds (rates in [0, 1])"
CONDITION_LABELS = {"none": "full economy", "no-auction": "no auction", "no-exploration": "no exploration",
                    "no-exploitation": "no exploitation"}
#: Chart titles of the tasks (``runs.task``); others are named as recorded.
TASK_TITLES = {"blocksworld": "Blocks World", "arithmetic": "Arithmetic", "jsonl": "Question answering"}


def _base(c: str) -> str:
    """The ablation (or baseline) a condition label starts with (``none,agents=12`` ->
    ``none``; labels are built by :func:`scarce_lab.data.tables.label_conditions`)."""
    return c.split(",", 1)[0]


def _order(c: str) -> tuple[int, str]:
    """Sort key of condition labels: ablation order, then the label."""
    return (_COND_ORDER.get(_base(c), 9), c)


def condition_label(c: str) -> str:
    """Readable name of a condition label: the ablation's name (``none`` -> ``full
    economy``) followed by the settings the label names
    (:func:`scarce_lab.analysis.labels.condition_label`)."""
    return _condition_label(c, CONDITION_LABELS, with_settings=True)


def _full_economy(conditions: list[str]) -> str | None:
    """The full economy's condition among ``conditions``: base ``none``, the paper's fixed
    bids preferred over Holland's scheme; ``None`` when absent."""
    full = sorted((c for c in conditions if _base(c) == "none"), key=lambda c: ("bid_scheme=holland" in c, c))
    return full[0] if full else None


def short_names(conditions: list[str]) -> dict[str, str]:
    """Readable names of condition labels, each keeping only the settings that differ
    from the most common value among ``conditions`` (``full economy`` and ``full economy
    (bid_scheme=holland)``, not two names cut to the same text); should two names
    coincide, the full labels (:func:`condition_label`) are used."""
    from scarce_lab.analysis.labels import condition_parts, differing_parts

    codes = sorted(set(conditions), key=_order)
    rest = differing_parts(codes)
    names = {c: condition_label(",".join([condition_parts(c)[0], *(p for p in rest[c] if "=" in p)]))
             for c in codes}
    if len(set(names.values())) < len(names):
        names = {c: condition_label(c) for c in codes}
    return names


def _readable_conditions(df: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """``df`` with readable condition names (:func:`short_names`, panel titles are short
    and distinct) and their order."""
    names = short_names(df["condition"].to_list())
    return (df.with_columns(pl.col("condition").replace_strict(names, return_dtype=pl.String)),
            list(names.values()))


def learning_curve_chart(curve: pl.DataFrame, title: str = "Training solve rate"):
    """Mean solve rate per window (line) with its 95% t-band over seeds, one panel per
    condition (small multiples: bands never overlap). Returns ``NoFigure`` without rows."""
    import altair as alt

    if curve.height == 0:
        return NoFigure("no training episodes")
    d, order = _readable_conditions(chart_data(curve))
    base = alt.Chart(d).encode(x=alt.X("window_start:Q", title=["Training episode", "(window start)"]))
    one = series_colour()  # the notebook's one-series colour, never a group's
    band = base.mark_area(color=one, opacity=0.25, description=ONE_SERIES).encode(
        y=alt.Y("solve_rate_lo:Q", title="Solve rate", scale=alt.Scale(domain=[0, 1])), y2="solve_rate_hi:Q")
    line = base.mark_line(color=one, description=ONE_SERIES).encode(
        y="solve_rate:Q", tooltip=["condition", "window_start", alt.Tooltip("solve_rate:Q", format=".2f"), "n_runs"])
    chart = (band + line).properties(width=200, height=150).facet(
        facet=alt.Facet("condition:N", title=None, sort=order), columns=4)
    n = int(d["n_runs"].max())
    return titled(chart, title, caption(f"Line: mean over seeds; band: {_T_SEEDS}", f"n = up to {n} seeds per condition"))


def ablation_chart(table: pl.DataFrame):
    """Solve rate (mean and 95% CI over seeds) per condition: first and last fifth of
    training and frozen evaluation. Returns ``NoFigure`` without rows."""
    import altair as alt

    rows = []
    for r in table.iter_rows(named=True):
        for col, label in (("first_fifth", "first fifth"), ("last_fifth", "last fifth"), ("eval", "frozen eval")):
            rows.append({"condition": r["condition"], "period": label, "rate": r[col],
                         "lo": r[f"{col}_lo"], "hi": r[f"{col}_hi"], "n_runs": r["n_runs"]})
    if not rows:
        return NoFigure("no runs")
    df, order = _readable_conditions(chart_data(pl.DataFrame(rows)))
    base = alt.Chart(df).encode(
        x=alt.X("period:N", title=None, sort=["first fifth", "last fifth", "frozen eval"]),
        color=alt.Color("period:N", title="Period", sort=["first fifth", "last fifth", "frozen eval"]),
    )
    pts = base.mark_point(filled=True, size=60, opacity=1).encode(
        y=alt.Y("rate:Q", title="Solve rate", scale=alt.Scale(domain=[0, 1])),
        tooltip=["condition", "period", alt.Tooltip("rate:Q", format=".2f"), "n_runs"])
    bars = base.mark_rule(strokeWidth=2).encode(y="lo:Q", y2="hi:Q")
    chart = (bars + pts).properties(width=120, height=200).facet(facet=alt.Facet("condition:N", title=None, sort=order),
                                                                  columns=wrap_columns(120, len(order), legend_width=130))
    return titled(chart, "Solve rate by ablation", caption(
        f"Point: mean over seeds; bar: {_T_SEEDS}", f"n = {int(df['n_runs'].max())} seeds per condition"))


def population_chart(dyn: pl.DataFrame):
    """Living agents and wealth Gini over training (mean over seeds), one colour per
    condition. Above :data:`~scarce_lab.analysis.figures.MAX_LINE_POINTS` snapshots per
    condition the lines show means over windows of ``k`` episodes (the caption says
    ``k``; :func:`~scarce_lab.analysis.figures.window_means`). Returns ``NoFigure``
    without rows."""
    import altair as alt

    if dyn.height == 0:
        return NoFigure("no population snapshots")
    keep = [c for c in ("task", "condition", "round", "size", "gini", "n_runs") if c in dyn.columns]
    dyn, k = window_means(dyn.select(keep), "round", ["task", "condition"], ["size", "gini"])
    d, order = _readable_conditions(chart_data(dyn))
    color = alt.Color("condition:N", title="Condition", sort=order, legend=alt.Legend(orient="bottom", columns=2, labelLimit=0))
    base = alt.Chart(d).encode(x=alt.X("round:Q", title="Training episode"), color=color)
    size = base.mark_line().encode(y=alt.Y("size:Q", title="Living agents"),
                                   tooltip=["condition", "round", alt.Tooltip("size:Q", format=".1f")]
                                   ).properties(width=300, height=200)
    g = base.mark_line().encode(y=alt.Y("gini:Q", title="Wealth Gini (0 = equal)", scale=alt.Scale(domain=[0, 1])),
                                tooltip=["condition", "round", alt.Tooltip("gini:Q", format=".2f")]
                                ).properties(width=300, height=200)
    n = int(d["n_runs"].max()) if "n_runs" in d.columns and d["n_runs"].max() is not None else None
    return titled(alt.hconcat(size, g), "Population and wealth inequality",
                  caption("Mean over seeds (no interval)", f"n = up to {n} seeds" if n else "",
                          f"each point the mean over a window of {k} episodes" if k > 1 else ""))


def specialisation_heatmap(spec: pl.DataFrame, run_id: str):
    """Heat map for one run: for each of its top agents, the share of the agent's wins
    that fall in each kind of step (rows sum to 1: a dark single cell = a specialist).
    Returns ``NoFigure`` when the run has no wins."""
    import altair as alt

    df = chart_data(spec.filter(pl.col("run_id") == run_id))
    if df.height == 0:
        return NoFigure(f"run {run_id} has no wins to show")
    label = "label" if "label" in df.columns else "agent"
    chart = alt.Chart(df).mark_rect().encode(
        x=alt.X("step_kind:N", title="Kind of step"),
        # whole rules (never cut with "..."): two cut rules can read alike; the axis title sat
        # over the long labels, so the caption names the rows instead
        y=alt.Y(f"{label}:N", title=None, sort=alt.EncodingSortField("agent_wins", order="descending"),
                axis=alt.Axis(labelLimit=0)),
        color=alt.Color("share_of_agent:Q", title="Share of the agent's wins", scale=alt.Scale(domain=[0, 1])),
        tooltip=["agent", "step_kind", "wins", alt.Tooltip("share_of_agent:Q", format=".2f"),
                 alt.Tooltip("share_of_kind:Q", format=".2f")],
    ).properties(width=220, height=20 * max(1, df["agent"].n_unique()))
    return titled(chart, "Who wins which kind of step", caption(
        f"Run {run_id}", f"rows: the top {df['agent'].n_unique()} agents by wins (their rules); each row sums to 1"))


def bid_convergence_chart(conv: pl.DataFrame):
    """Mean absolute gap between the bid paid and the value realised per win (line) with
    its 95% t-band over seeds, one panel per condition: the quantity the reading gives
    (:func:`~.readings.bid_sentence`). Windows from one run have no band. Returns
    ``NoFigure`` without rows."""
    import altair as alt

    if conv.height == 0:
        return NoFigure("no winning agents in training")
    d, order = _readable_conditions(chart_data(conv))
    base = alt.Chart(d).encode(x=alt.X("window_start:Q", title=["Training episode", "(window start)"]))
    one = series_colour()  # the notebook's one-series colour, never a group's
    band = base.mark_area(color=one, opacity=0.25, description=ONE_SERIES).encode(
        y=alt.Y("gap_lo:Q", title=["|bid paid - value realised|", "per win (credits)"]), y2="gap_hi:Q"
    ).transform_filter("isValid(datum.gap_lo) && isValid(datum.gap_hi)")  # one run: no interval to draw
    line = base.mark_line(point=True, color=one, description=ONE_SERIES).encode(
        y="gap:Q", tooltip=["condition", "window_start", alt.Tooltip("gap:Q", format=".2f"),
                            alt.Tooltip("gap_lo:Q", format=".2f"), alt.Tooltip("gap_hi:Q", format=".2f"), "n_runs"])
    chart = (band + line).properties(width=180, height=150).facet(
        facet=alt.Facet("condition:N", title=None, sort=order),
        columns=wrap_columns(180, d["condition"].n_unique(), legend_width=0))
    n = int(d["n_runs"].max())
    return titled(chart, "Gap between the bid paid and the value realised per win", caption(
        "Line: mean over seeds of the mean |bid paid - value realised| / wins over agent-episodes; band: "
        "95% t-interval over seeds (none from one seed)", f"n = up to {n} seeds per condition",
        "value realised = payment from the next winner plus reward"))
