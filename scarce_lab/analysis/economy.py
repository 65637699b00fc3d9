"""Metrics of Economy of Minds runs, on the tidy tables of
:mod:`scarce_lab.data.tables.economy` (polars frames only; no envs, no agents).

Runs (seeds) are the independent unit: every CI is over per-run values (t-interval
for means, 95 %). Episodes inside a run are never treated as independent.

Never pooled: every metric groups by ``(task, condition)`` (``condition`` is the label
unique per condition settings, :mod:`scarce_lab.data.tables`) and first checks, with
:func:`scarce_lab.analysis.pooling.check_no_pooling`, that no group mixes runs whose
settings or model differ; it raises :class:`~scarce_lab.analysis.pooling.PoolingError`
(naming the settings) rather than average them.

- :func:`solve_curve`: training solve rate per window of episodes, mean and band over runs.
- :func:`ablation_table`: per task and condition, solve rate over the first fifth and
  the last fifth of training and in frozen evaluation, with CIs over seeds.
- :func:`population_dynamics`: population size and wealth Gini per episode.
- :func:`specialisation`: which agent wins which kind of step (shares for a heat map)
  and :func:`specialisation_index` (share of an agent's wins in its main step kind).
- :func:`bid_convergence`: mean bid paid vs realised value per win, per window.
"""

from __future__ import annotations

import math

import polars as pl

try:  # the shared statistics module (lead); local t-interval until it lands
    from .stats import gini as _gini_shared
    from .stats import mean_ci as _mean_ci_shared
except ImportError:  # pragma: no cover - depends on the checkout
    _gini_shared = _mean_ci_shared = None

from .pooling import check_no_pooling  # noqa: E402  (after the optional stats import)

GROUP = ("task", "condition")
CI_METHOD = "mean over seeds, 95% t-interval clipped to [0, 1]"


def mean_ci(values: list[float], level: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """(mean, lo, hi) t-interval; (mean, None, None) for a single value; Nones if empty."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None, None, None
    if len(vals) == 1:
        return vals[0], None, None
    if _mean_ci_shared is not None:
        m, lo, hi = _mean_ci_shared(vals, level=level)
        return float(m), float(lo), float(hi)
    from scipy import stats as st

    m = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
    half = st.t.ppf(0.5 + level / 2, len(vals) - 1) * sd / math.sqrt(len(vals))
    return m, m - half, m + half


def gini(values: list[float]) -> float | None:
    """Gini coefficient of non-negative wealths (negative wealths count as 0); None if
    empty or all zero."""
    vals = sorted(max(0.0, float(v)) for v in values)
    if not vals or sum(vals) == 0:
        return None
    if _gini_shared is not None:
        return float(_gini_shared(vals))
    n = len(vals)
    cum = sum((i + 1) * v for i, v in enumerate(vals))
    return (2 * cum) / (n * sum(vals)) - (n + 1) / n


def _summ(df: pl.DataFrame, by: list[str], value: str, prefix: str) -> pl.DataFrame:
    rows = []
    for key, g in df.group_by(by, maintain_order=True):
        m, lo, hi = mean_ci(g[value].to_list())
        rows.append({**dict(zip(by, key, strict=True)), f"{prefix}": m, f"{prefix}_lo": lo,
                     f"{prefix}_hi": hi, "n_runs": g.height})
    return pl.DataFrame(rows)


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
    out = _summ(per_run.sort("window_start"), ["task", "condition", "window_start"], "rate", "solve_rate")
    return out.with_columns(
        pl.col("solve_rate_lo").clip(0.0, 1.0), pl.col("solve_rate_hi").clip(0.0, 1.0)
    ).sort("task", "condition", "window_start")


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
    a t-interval on per-run rates, clipped to [0, 1]) over the first fifth and last
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
            m, lo, hi = mean_ci(g[col].to_list())
            lo = None if lo is None else max(0.0, lo)
            hi = None if hi is None else min(1.0, hi)
            row |= {col: m, f"{col}_lo": lo, f"{col}_hi": hi}
        row["ci"] = CI_METHOD
        rows.append(row)
    cols = ["first_fifth", "last_fifth", "eval"]
    schema = {"task": pl.String, "condition": pl.String, "n_runs": pl.Int64} | {
        f"{c}{s}": pl.Float64 for c in cols for s in ("", "_lo", "_hi")} | {"ci": pl.String}
    df = pl.DataFrame(rows, schema=schema)
    return df.with_columns(
        pl.col("condition").replace_strict(_COND_ORDER, default=9, return_dtype=pl.Int64).alias("_o")
    ).sort("task", "_o", "condition").drop("_o")


def format_table(table: pl.DataFrame) -> pl.DataFrame:
    """Human-readable ablation table: ``0.44 [0.31, 0.57]`` strings."""

    def fmt(m, lo, hi):
        if m is None:
            return "-"
        if lo is None:
            return f"{m:.2f}"
        return f"{m:.2f} [{lo:.2f}, {hi:.2f}]"

    rows = []
    for r in table.iter_rows(named=True):
        rows.append({
            "task": r["task"], "condition": r["condition"], "seeds": r["n_runs"],
            "first fifth": fmt(r["first_fifth"], r["first_fifth_lo"], r["first_fifth_hi"]),
            "last fifth": fmt(r["last_fifth"], r["last_fifth_lo"], r["last_fifth_hi"]),
            "frozen eval": fmt(r["eval"], r["eval_lo"], r["eval_hi"]),
        })
    return pl.DataFrame(rows)


def population_dynamics(population: pl.DataFrame) -> pl.DataFrame:
    """Per snapshot: population size and wealth Gini (per run), then mean and band over
    runs per (task, condition, round). Training snapshots only.

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(population, GROUP, what="population_dynamics")
    tr = population.filter(pl.col("phase") == "train")
    per = tr.with_columns(
        pl.col("wealth").map_elements(lambda w: gini(list(w)), return_dtype=pl.Float64).alias("gini"),
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
    step kind's wins in the run, for the ``top`` agents by wins in each run. Adds
    ``label`` (agent id and genome description) when ``births`` is given."""
    w = wins.filter(pl.col("phase") == phase).group_by(["run_id", "agent", "step_kind"]).agg(
        pl.col("wins").sum()
    )
    kind_tot = w.group_by(["run_id", "step_kind"]).agg(pl.col("wins").sum().alias("kind_wins"))
    agent_tot = w.group_by(["run_id", "agent"]).agg(pl.col("wins").sum().alias("agent_wins"))
    ranked = agent_tot.with_columns(
        pl.col("agent_wins").rank("ordinal", descending=True).over("run_id").alias("rank")
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


def specialisation_index(wins: pl.DataFrame, *, phase: str = "train") -> pl.DataFrame:
    """Per run: win-weighted mean over agents of the share of an agent's wins in its
    most frequent step kind (1 = every agent wins one kind only). Then mean and CI over
    runs per (task, condition).

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    check_no_pooling(wins, GROUP, what="specialisation_index")
    w = wins.filter(pl.col("phase") == phase).group_by(["task", "condition", "run_id", "agent", "step_kind"]).agg(
        pl.col("wins").sum()
    )
    per_agent = w.group_by(["task", "condition", "run_id", "agent"]).agg(
        pl.col("wins").max().alias("top"), pl.col("wins").sum().alias("tot")
    )
    per_run = per_agent.group_by(["task", "condition", "run_id"]).agg(
        (pl.col("top").sum() / pl.col("tot").sum()).alias("index")
    )
    out = _summ(per_run, ["task", "condition"], "index", "specialisation")
    # a share lies in [0, 1]; the t-interval does not know that
    return out.with_columns(
        pl.col(c).cast(pl.Float64).clip(0.0, 1.0) for c in ("specialisation_lo", "specialisation_hi")
    )


def bid_convergence(agent_episodes: pl.DataFrame, window: int = 20) -> pl.DataFrame:
    """Per window of training rounds: mean bid paid per win, mean realised value per win
    (payment received from the next winner + reward) and mean absolute gap
    ``|paid - realised| / wins`` over agent-episodes; per run, then mean and band over
    runs per (task, condition, window_start).

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
    )
    keys = ["task", "condition", "window_start"]
    out = _summ(per_run, keys, "gap", "gap")
    for col in ("bid_per_win", "realised_per_win"):
        out = out.join(_summ(per_run, keys, col, col).drop("n_runs"), on=keys, how="left")
    return out.sort(keys)


# -- charts (altair; imported lazily) -------------------------------------------------
def learning_curve_chart(curve: pl.DataFrame, title: str = "Training solve rate"):
    """Mean solve rate per window with a 95% band over seeds, one colour per condition."""
    import altair as alt

    base = alt.Chart(curve).encode(
        x=alt.X("window_start:Q", title="training episode"),
        color=alt.Color("condition:N", title="condition"),
    )
    band = base.mark_area(opacity=0.2).encode(y="solve_rate_lo:Q", y2="solve_rate_hi:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("solve_rate:Q", title="solve rate", scale=alt.Scale(domain=[0, 1]))
    )
    return (band + line).properties(width=420, height=260, title=title)


def ablation_chart(table: pl.DataFrame):
    """Solve rate (mean and 95% CI over seeds) per condition: last fifth of training and
    frozen evaluation."""
    import altair as alt

    rows = []
    for r in table.iter_rows(named=True):
        for col, label in (("first_fifth", "first fifth"), ("last_fifth", "last fifth"), ("eval", "frozen eval")):
            rows.append({"condition": r["condition"], "period": label, "rate": r[col],
                         "lo": r[f"{col}_lo"], "hi": r[f"{col}_hi"]})
    df = pl.DataFrame(rows)
    base = alt.Chart(df).encode(
        x=alt.X("period:N", title=None, sort=["first fifth", "last fifth", "frozen eval"]),
        color=alt.Color("period:N", legend=None),
    )
    pts = base.mark_point(filled=True, size=60).encode(
        y=alt.Y("rate:Q", title="solve rate", scale=alt.Scale(domain=[0, 1]))
    )
    bars = base.mark_rule().encode(y="lo:Q", y2="hi:Q")
    return (bars + pts).properties(width=120, height=220).facet(column=alt.Column("condition:N", title=None))


def population_chart(dyn: pl.DataFrame):
    """Population size and wealth Gini over training (mean over seeds per condition)."""
    import altair as alt

    base = alt.Chart(dyn).encode(x=alt.X("round:Q", title="training episode"), color="condition:N")
    size = base.mark_line().encode(y=alt.Y("size:Q", title="living agents")).properties(width=320, height=200)
    g = base.mark_line().encode(y=alt.Y("gini:Q", title="wealth Gini")).properties(width=320, height=200)
    return alt.hconcat(size, g)


def specialisation_heatmap(spec: pl.DataFrame, run_id: str):
    """Heat map for one run: for each of its top agents, the share of the agent's wins
    that fall in each kind of step (rows sum to 1: a dark single cell = a specialist)."""
    import altair as alt

    df = spec.filter(pl.col("run_id") == run_id)
    label = "label" if "label" in df.columns else "agent"
    return alt.Chart(df).mark_rect().encode(
        x=alt.X("step_kind:N", title="kind of step"),
        y=alt.Y(f"{label}:N", title="agent (rule)", sort=alt.EncodingSortField("agent_wins", order="descending")),
        color=alt.Color("share_of_agent:Q", title="share of the agent's wins", scale=alt.Scale(domain=[0, 1])),
        tooltip=["agent", "step_kind", "wins", "share_of_agent", "share_of_kind"],
    ).properties(width=220, height=20 * max(1, df["agent"].n_unique()), title=run_id)


def bid_convergence_chart(conv: pl.DataFrame):
    """Mean bid paid per win and realised value per win over training, per condition."""
    import altair as alt

    long = conv.select("condition", "window_start", "bid_per_win", "realised_per_win").unpivot(
        index=["condition", "window_start"], variable_name="quantity", value_name="credits"
    )
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("window_start:Q", title="training episode"),
        y=alt.Y("credits:Q", title="credits per win"),
        color="quantity:N",
        strokeDash="quantity:N",
    ).properties(width=180, height=180).facet(column=alt.Column("condition:N", title=None))
