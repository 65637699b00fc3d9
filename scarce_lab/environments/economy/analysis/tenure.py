"""Tenure in the Economy of Minds: the run's newcomer (the agent that joined with its own
seat; founders are agents of origin ``founder``) against the founders living when it
joined (the incumbents), per run and then over runs. The measures and their intervals
are the method of the finding :func:`scarce_lab.environments.economy.analysis.tenure`.
"""

from __future__ import annotations

import polars as pl

from scarce_lab.analysis.pooling import check_no_pooling
from scarce_lab.analysis.stats import bounded_mean_ci, mean_ci_cells, proportion_ci
from scarce_lab.undefined import or_none

from .metrics import _summ

GROUP = ["task", "condition"]
CI_METHOD = ("wealth and wins: mean over runs, 95% Student-t interval; survival: newcomer share of runs, "
             "95% Clopper-Pearson interval; incumbents: mean over runs of the share alive, 95% bounded t/score hull")


def tenure_per_run(joins: pl.DataFrame, births: pl.DataFrame, deaths: pl.DataFrame, agent_wealth: pl.DataFrame,
                   agent_episodes: pl.DataFrame) -> pl.DataFrame:
    """One row per run with a newcomer and tenure (``newcomer`` | ``incumbent``):
    run keys, join_episode, n_agents, wealth, wins, survival (share never removed in
    training; 0 or 1 for the newcomer). Incumbents: the founders not removed before
    the join (no death at a round before ``k``).

    Args:
        joins, births, deaths, agent_wealth, agent_episodes: the tables of
            :mod:`scarce_lab.environments.economy.tables` of one dataset.

    Raises:
        ValueError: a run with more than one joined agent (this measure compares one
            newcomer with the incumbents).
    """
    keys = ["run_id", "task", "condition", "settings", "model"]
    if "episodes" not in joins.columns:
        raise ValueError("tenure_per_run: joins needs the run's training 'episodes' (the joins table has it)")
    rows = []
    if joins.height and joins.group_by("run_id").len()["len"].max() > 1:
        raise ValueError("tenure_per_run: a run has several joined agents; this measure compares one newcomer")
    for j in joins.iter_rows(named=True):
        run, k = j["run_id"], j["episode"]
        train = agent_wealth.filter((pl.col("run_id") == run) & (pl.col("phase") == "train"))
        after = train.filter(pl.col("round") >= k)
        founders = births.filter((pl.col("run_id") == run) & (pl.col("origin") == "founder"))["agent"].to_list()
        died = dict(deaths.filter(pl.col("run_id") == run).select("agent", "round").iter_rows())
        groups = {"newcomer": [j["agent"]], "incumbent": [a for a in founders if died.get(a, k) >= k]}
        eps = agent_episodes.filter((pl.col("run_id") == run) & (pl.col("phase") == "train")
                                    & (pl.col("round") >= k))
        n_eps = int(j["episodes"]) - k
        for tenure, agents in groups.items():
            if not agents:
                continue
            w = after.filter(pl.col("agent").is_in(agents)).group_by("agent").agg(pl.col("wealth").mean())
            wins = eps.filter(pl.col("agent").is_in(agents)).group_by("agent").agg(pl.col("n_wins").sum())
            per_agent_wins = {a: 0 for a in agents} | dict(wins.iter_rows())
            rows.append({
                **{c: j[c] for c in keys}, "tenure": tenure, "join_episode": k, "n_agents": len(agents),
                "wealth": float(w["wealth"].mean()) if w.height else None,
                "wins": (sum(per_agent_wins.values()) / len(agents) / n_eps) if n_eps else None,
                "survival": sum(a not in died for a in agents) / len(agents),
            })
    schema = {"run_id": pl.String, "task": pl.String, "condition": pl.String, "settings": pl.String,
              "model": pl.String, "tenure": pl.String, "join_episode": pl.Int64, "n_agents": pl.Int64,
              "wealth": pl.Float64, "wins": pl.Float64, "survival": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def tenure_table(per_run: pl.DataFrame) -> pl.DataFrame:
    """Per task, condition and tenure, over runs: n_runs, wealth / wins / survival with
    ``_lo`` / ``_hi`` bounds (the intervals: :data:`CI_METHOD`, the finding's method);
    null bounds where undefined (one run, no spread).

    Raises:
        PoolingError: a task/condition group mixes runs of different settings.
    """
    check_no_pooling(per_run, GROUP, what="tenure_table")
    rows = []
    for (task, cond, tenure), g in per_run.group_by([*GROUP, "tenure"], maintain_order=True):
        row = {"task": task, "condition": cond, "tenure": tenure, "n_runs": g["run_id"].n_unique()}
        for col in ("wealth", "wins"):
            m, lo, hi = mean_ci_cells(g[col].to_list())
            row |= {col: m, f"{col}_lo": lo, f"{col}_hi": hi}
        if tenure == "newcomer":
            s = int(g["survival"].sum())
            p, lo, hi = (or_none(v) for v in proportion_ci(s, g.height))
        else:
            p, lo, hi = (or_none(v) for v in bounded_mean_ci(g["survival"].to_list(), 0.0, 1.0))
        row |= {"survival": p, "survival_lo": lo, "survival_hi": hi}
        rows.append(row)
    cols = ["wealth", "wins", "survival"]
    schema = {"task": pl.String, "condition": pl.String, "tenure": pl.String, "n_runs": pl.Int64} | {
        f"{c}{s}": pl.Float64 for c in cols for s in ("", "_lo", "_hi")}
    return pl.DataFrame(rows, schema=schema, orient="row")


def tenure_wealth_curve(joins: pl.DataFrame, births: pl.DataFrame, agent_wealth: pl.DataFrame) -> pl.DataFrame:
    """Wealth over time after the join: per task, condition, tenure and episodes since
    the join (0 = the join episode), the mean over runs of the group's mean wealth
    (credits) with a 95% t interval (``wealth_lo`` / ``wealth_hi``) and ``n_runs`` (runs
    whose group had a living agent at that point).

    Raises:
        PoolingError: a task/condition group mixes runs of different settings.
    """
    check_no_pooling(joins, GROUP, what="tenure_wealth_curve")
    founders = births.filter(pl.col("origin") == "founder").select("run_id", "agent").with_columns(
        tenure=pl.lit("incumbent"))
    newcomers = joins.select("run_id", "agent").with_columns(tenure=pl.lit("newcomer"))
    who = pl.concat([founders, newcomers])
    d = (agent_wealth.filter(pl.col("phase") == "train")
         .join(joins.select("run_id", k="episode"), on="run_id", how="inner")
         .filter(pl.col("round") >= pl.col("k"))
         .join(who, on=["run_id", "agent"], how="inner")
         .with_columns(since=pl.col("round") - pl.col("k")))
    per_run = d.group_by([*GROUP, "run_id", "tenure", "since"]).agg(pl.col("wealth").mean())
    keys = [*GROUP, "tenure", "since"]
    return _summ(per_run.sort([*keys, "run_id"]), keys, "wealth", "wealth")
