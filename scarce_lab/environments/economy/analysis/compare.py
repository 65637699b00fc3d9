"""Population dynamics of Economy of Minds runs side by side (e.g. our default economy
against the ``eom-reference`` preset): one row per (task, condition), on the tidy tables
of :mod:`scarce_lab.environments.economy.tables` (the method: ``sl.economy.dynamics``).
"""

from __future__ import annotations

import polars as pl

from scarce_lab.analysis.pooling import check_no_pooling

from .metrics import ci_text, clipped_mean_ci, wealth_gini

#: Groups: the economy (``default`` or the run's eom-reference preset, from its settings:
#: a run recorded without a ``preset`` setting ran the default economy) within a task and
#: condition label.
DYN_GROUP = ("task", "economy", "condition")


def with_economy(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (rows with ``settings``) with an ``economy`` column: the ``preset`` setting,
    ``default`` where the settings have none."""
    return df.with_columns(
        pl.col("settings").str.json_path_match("$.preset").fill_null("default").alias("economy"))


_RATES = ("final_gini", "train_solve", "eval_solve")
_DYN_COLS = ("final_size", "mean_size", "children", "replacements", "newcomers", "deaths", "final_gini",
             "train_solve", "eval_solve")


def dynamics_table(episodes: pl.DataFrame, population: pl.DataFrame, births: pl.DataFrame,
                   deaths: pl.DataFrame) -> pl.DataFrame:
    """Population dynamics per (task, economy, condition): mean over runs, with a 95%
    interval over runs (``*_lo``/``*_hi``: the bounded interval for the rates and the Gini in [0, 1], a
    t-interval clipped at 0 for the others; none from one run) of each per-run value:

    - ``final_size``: agents alive at the last training snapshot; ``mean_size`` over
      training snapshots;
    - ``children``, ``replacements``, ``newcomers``, ``deaths``: births by origin (founders
      left out) and removals per 10 training episodes;
    - ``final_gini``: wealth Gini at the last training snapshot (negative wealth as 0);
    - ``train_solve``, ``eval_solve``: solve rates in training and frozen evaluation.

    Raises:
        PoolingError: a (task, economy, condition) group mixes settings or models.
    """
    episodes = with_economy(episodes)
    check_no_pooling(episodes, DYN_GROUP, what="dynamics_table")
    rows = []
    for (run_id,), g in episodes.group_by(["run_id"], maintain_order=True):
        tr, ev = g.filter(pl.col("phase") == "train"), g.filter(pl.col("phase") == "eval")
        n_tr = tr.height
        pop = population.filter((pl.col("run_id") == run_id) & (pl.col("phase") == "train")).sort("round")
        b = births.filter((pl.col("run_id") == run_id) & (pl.col("origin") != "founder"))
        d = deaths.filter(pl.col("run_id") == run_id)
        def per10(n: int, n_tr: int = n_tr) -> float | None:
            return 10.0 * n / n_tr if n_tr else None

        last_w = [max(0.0, float(w)) for w in pop["wealth"][-1]] if pop.height else []
        rows.append({
            "run_id": run_id, "task": g["task"][0], "economy": g["economy"][0], "condition": g["condition"][0],
            "base_condition": g["base_condition"][0] if "base_condition" in g.columns else g["condition"][0],
            "final_size": float(pop["size"][-1]) if pop.height else None,
            "mean_size": float(pop["size"].mean()) if pop.height else None,
            "children": per10(b.filter(pl.col("origin") == "child").height),
            "replacements": per10(b.filter(pl.col("origin") == "replacement").height),
            "newcomers": per10(b.filter(pl.col("origin") == "newcomer").height),
            "deaths": per10(d.height),
            "final_gini": wealth_gini(last_w),
            "train_solve": tr["solved"].cast(pl.Float64).mean() if n_tr else None,
            "eval_solve": ev["solved"].cast(pl.Float64).mean() if ev.height else None,
        })
    per_run = pl.DataFrame(rows, schema={"run_id": pl.String, "task": pl.String, "economy": pl.String,
                                         "condition": pl.String, "base_condition": pl.String}
                           | {c: pl.Float64 for c in _DYN_COLS}, orient="row")
    out = []
    for (task, economy, cond), g in per_run.group_by(list(DYN_GROUP), maintain_order=True):
        row = {"task": task, "economy": economy, "condition": cond, "base_condition": g["base_condition"][0],
               "n_runs": g.height}
        for c in _DYN_COLS:  # every value is >= 0; rates and Gini <= 1
            row |= dict(zip((c, f"{c}_lo", f"{c}_hi"), clipped_mean_ci(g[c].to_list(), 1.0 if c in _RATES else None),
                            strict=True))
        out.append(row)
    schema = {"task": pl.String, "economy": pl.String, "condition": pl.String, "base_condition": pl.String,
              "n_runs": pl.Int64} | {
        f"{c}{s}": pl.Float64 for c in _DYN_COLS for s in ("", "_lo", "_hi")}
    return pl.DataFrame(out, schema=schema, orient="row").sort("task", "condition", "economy")


def format_dynamics(table: pl.DataFrame) -> pl.DataFrame:
    """:func:`dynamics_table` as :func:`~.metrics.ci_text` strings; ``condition`` is the
    base condition (the ablation) where, with task and economy, it names one row, else the
    full label."""
    short = table.select("task", "economy", "base_condition").is_unique().all()
    return table.with_columns(  # the short label (e.g. the ablation) where it names one row
        pl.col("base_condition" if short else "condition").alias("condition")).select(
        "task", "economy", "condition", "n_runs",
        *[pl.struct(c, f"{c}_lo", f"{c}_hi").map_elements(
            lambda s, c=c: ci_text(s[c], s[f"{c}_lo"], s[f"{c}_hi"]), return_dtype=pl.String).alias(c)
          for c in _DYN_COLS],
    )
