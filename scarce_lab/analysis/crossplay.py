"""Cross-play analysis: focal payoffs, the invader's advantage, and choices against
uniform (any environment; the environment packages build the inputs).

Melting Pot's focal/background protocol (Leibo et al. 2021): in each run the *focal*
seats play one model (or policy) and the *background* seats another; a run whose
focal seats, or whose background seats, play more than one model is not such a
composition and is refused (named), never assigned to a cell.

Inputs are tidy frames:

- ``per_agent``: one row per (run, agent): ``run_id``, ``agent``, ``model`` (the
  agent's model as its run's manifest records it), ``payoff`` (the environment's
  per-agent payoff of the whole run), optional ``role``, and the condition columns
  named by ``by`` (every condition-defining setting except the composition: the
  composition is the cell).
- ``choices`` (:func:`choice_vs_uniform`): one row per choice (a ballot's first
  place, a message's recipient): the chooser's model, the chosen agent's model and
  the chance that a uniform choice among the same options picks that model.

Statistics. Runs are the unit: each run gives one focal payoff, one resident payoff
and their paired difference. Means get a Student-t interval over runs
(:func:`scarce_lab.analysis.stats.mean_ci`; :data:`CI_METHOD`), printed from
:data:`MIN_RUNS_INTERVAL` runs with spread: the coverage benchmark
(``benchmarks/bench_coverage.py``, rows "t over runs") measured 0.93-0.95 at 3-30
runs for per-run means and 0.92-0.93 at 3-10 runs for a mean with a mass at a bound;
below 2 runs, or when every run gave the same value, a cell has no interval and says
why (``ci_note``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from ..undefined import reason_of
from .stats import mean_ci

#: How every interval of this module is computed (stated in each table's ``ci`` column).
CI_METHOD = "95% Student-t interval over runs (stats.mean_ci); the run is the unit"
#: Runs from which a cell prints an interval (with fewer: none, and ``ci_note`` says why).
MIN_RUNS_INTERVAL = 2

__all__ = [
    "CI_METHOD", "MIN_RUNS_INTERVAL", "CompositionError", "choice_vs_uniform", "focal_payoff_matrix", "focal_runs",
    "invader_advantage", "payoff_matrix_chart",
]


class CompositionError(ValueError):
    """A run that is not a focal/background composition, or a focal seat it lacks
    (the run and the models are named)."""


def _ci_row(values: list[float]) -> dict:
    """``mean, ci_low, ci_high, n_runs, ci_note`` of per-run ``values``."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(vals)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n_runs": 0, "ci_note": "no runs"}
    m, lo, hi = mean_ci(vals)
    if n < MIN_RUNS_INTERVAL or math.isnan(lo):
        why = reason_of(lo) or "no interval"
        note = f"{n} run: no interval (a t interval needs {MIN_RUNS_INTERVAL} runs)" if n < MIN_RUNS_INTERVAL \
            else f"{n} runs: no interval ({why})"
        return {"mean": m, "ci_low": None, "ci_high": None, "n_runs": n, "ci_note": note}
    return {"mean": m, "ci_low": lo, "ci_high": hi, "n_runs": n, "ci_note": ""}


def focal_runs(per_agent: pl.DataFrame, focal: Sequence[str] | str, *, by: Sequence[str] = ()) -> pl.DataFrame:
    """One row per run: the focal and background models, the focal payoff (mean over
    the focal agents), the residents' payoff (mean over the background agents) and
    ``advantage`` = focal - resident (the run's paired difference).

    Args:
        per_agent: see the module docstring.
        focal: the focal seats: agent ids (``a3``, ``w0``) or roles (``king``), or
            ``"a0,a1"``; an agent is focal when its id or role is listed.
        by: condition columns kept (constant within a run).

    Returns:
        Columns ``run_id, *by, focal_model, background_model, focal_agents,
        focal_payoff, resident_payoff, advantage``, sorted by run id.

    Raises:
        CompositionError: a run without a focal agent or without a background agent,
            or whose focal (or background) agents play several models (named).
        ValueError: a missing column (named).
    """
    keys = [k.strip() for k in (focal.split(",") if isinstance(focal, str) else focal) if k.strip()]
    if not keys:
        raise ValueError(f"focal: name at least one seat (agent id or role), got {focal!r}")
    need = {"run_id", "agent", "model", "payoff", *by}
    missing = sorted(need - set(per_agent.columns))
    if missing:
        raise ValueError(f"focal_runs: per-agent frame lacks column(s) {missing} (has {per_agent.columns})")
    is_focal = pl.col("agent").is_in(keys)
    if "role" in per_agent.columns:
        is_focal = is_focal | pl.col("role").is_in(keys)
    df = per_agent.with_columns(is_focal.alias("_focal"))
    rows = []
    for (run_id,), g in df.group_by(["run_id"], maintain_order=True):
        f, b = g.filter(pl.col("_focal")), g.filter(~pl.col("_focal"))
        if f.is_empty():
            raise CompositionError(f"run {run_id}: no agent is focal seat {keys} (agents {sorted(g['agent'])})")
        if b.is_empty():
            raise CompositionError(f"run {run_id}: every agent is a focal seat {keys}: no background")
        fm, bm = sorted(set(f["model"])), sorted(set(b["model"]))
        if len(fm) != 1 or len(bm) != 1:
            raise CompositionError(f"run {run_id}: not a focal/background composition (focal seats {sorted(f['agent'])} "
                                   f"play {fm}, the others {bm}); choose the focal seats the grid used")
        row = {"run_id": run_id, **{c: g[c][0] for c in by}, "focal_model": fm[0], "background_model": bm[0],
               "focal_agents": "+".join(sorted(f["agent"])),
               "focal_payoff": float(f["payoff"].mean()), "resident_payoff": float(b["payoff"].mean())}
        row["advantage"] = row["focal_payoff"] - row["resident_payoff"]
        rows.append(row)
    return pl.DataFrame(rows).sort("run_id")


def focal_payoff_matrix(runs: pl.DataFrame, *, by: Sequence[str] = ()) -> pl.DataFrame:
    """The focal payoff matrix: per condition (``by``), focal model x background
    model: the mean focal payoff over runs with its interval (:data:`CI_METHOD`).

    Args:
        runs: :func:`focal_runs`' frame.

    Returns:
        Columns ``*by, focal_model, background_model, n_runs, mean, ci_low, ci_high,
        ci, ci_note`` (``ci_low``/``ci_high`` null with ``ci_note`` saying why).
    """
    return _cells(runs, "focal_payoff", by)


def invader_advantage(runs: pl.DataFrame, *, by: Sequence[str] = (), include_self_play: bool = False) -> pl.DataFrame:
    """One invader among residents: per condition, focal model x background model,
    the mean over runs of (focal payoff - the residents' payoff in the same run), with
    its interval (:data:`CI_METHOD`, on the paired per-run differences). Self-play
    cells (focal model = background model) are left out unless
    ``include_self_play`` (there the difference is a seat effect, not an invasion).

    Returns:
        Columns ``*by, focal_model, background_model, n_runs, mean, ci_low, ci_high,
        ci, ci_note`` (``mean``: the advantage, payoff units).
    """
    if not include_self_play:
        runs = runs.filter(pl.col("focal_model") != pl.col("background_model"))
    return _cells(runs, "advantage", by)


def _cells(runs: pl.DataFrame, value: str, by: Sequence[str]) -> pl.DataFrame:
    keys = [*by, "focal_model", "background_model"]
    schema = {**{c: runs.schema[c] for c in by if c in runs.columns}, "focal_model": pl.String,
              "background_model": pl.String, "n_runs": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "ci": pl.String, "ci_note": pl.String}
    if runs.is_empty():
        return pl.DataFrame(schema=schema)
    rows = []
    for key, g in runs.group_by(keys, maintain_order=True):
        rows.append({**dict(zip(keys, key, strict=True)), **_ci_row(g[value].to_list()), "ci": CI_METHOD})
    return pl.DataFrame(rows, schema=schema).sort(keys)


def choice_vs_uniform(choices: pl.DataFrame) -> pl.DataFrame:
    """Who picks whom, by model, against a uniform choice among the same options.

    Args:
        choices: one row per choice: ``run_id``, ``chooser_model``, ``chosen_model``
            (the model of the option that was picked, per option model) and
            ``expected`` (the chance a uniform pick among that choice's options gives
            an option of ``chosen_model``) and ``picked`` (1 when the choice went to
            ``chosen_model``, else 0): one row per (choice, option model).

    Returns:
        Per ``chooser_model, chosen_model``: ``choices`` (the chooser's choices that
        had an option of that model), ``observed`` (how many went to it), ``expected``
        (the uniform count), ``excess_share`` = (observed - expected) / choices, and
        its interval over runs (per-run excess shares, :data:`CI_METHOD`); ``runs``.
        Positive: the chooser's model picks that model more than chance.
    """
    need = {"run_id", "chooser_model", "chosen_model", "expected", "picked"}
    missing = sorted(need - set(choices.columns))
    if missing:
        raise ValueError(f"choice_vs_uniform: choices frame lacks column(s) {missing}")
    schema = {"chooser_model": pl.String, "chosen_model": pl.String, "choices": pl.Int64, "observed": pl.Int64,
              "expected": pl.Float64, "excess_share": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "runs": pl.Int64, "ci": pl.String, "ci_note": pl.String}
    if choices.is_empty():
        return pl.DataFrame(schema=schema)
    per_run = (choices.group_by(["chooser_model", "chosen_model", "run_id"])
               .agg(pl.len().alias("n"), pl.col("picked").sum().alias("obs"), pl.col("expected").sum().alias("exp"))
               .with_columns(((pl.col("obs") - pl.col("exp")) / pl.col("n")).alias("excess")))
    rows = []
    for (cm, om), g in per_run.group_by(["chooser_model", "chosen_model"], maintain_order=True):
        n, obs, exp = int(g["n"].sum()), int(g["obs"].sum()), float(g["exp"].sum())
        c = _ci_row(g["excess"].to_list())
        rows.append({"chooser_model": cm, "chosen_model": om, "choices": n, "observed": obs, "expected": exp,
                     "excess_share": (obs - exp) / n, "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                     "runs": c["n_runs"], "ci": CI_METHOD + " of per-run excess shares", "ci_note": c["ci_note"]})
    return pl.DataFrame(rows, schema=schema).sort(["chooser_model", "chosen_model"])


def payoff_matrix_chart(matrix: pl.DataFrame, *, title: str, value_label: str, facet: str | None = None):
    """Points with interval bars: the mean per focal model (y), coloured by the
    background model, faceted by ``facet`` when given; a cell without an interval is
    drawn as a point only (its ``ci_note`` is in the tooltip).

    Returns:
        A titled altair chart, or a :class:`~scarce_lab.analysis.figures.NoFigure`.
    """
    import altair as alt

    from .figures import caption, titled

    df = matrix.filter(pl.col("mean").is_not_null())
    if df.is_empty():
        from .figures import NoFigure

        return NoFigure(f"{title}: no cell has a mean")
    short = {m: m.rsplit("/", 1)[-1] for m in set(df["focal_model"]) | set(df["background_model"])}
    df = df.with_columns(pl.col("focal_model").replace_strict(short).alias("focal"),
                         pl.col("background_model").replace_strict(short).alias("background"))
    base = alt.Chart(df.to_pandas())
    y = alt.Y("focal:N", title="focal model")
    colour = alt.Color("background:N", title="background")
    tips = ["focal_model", "background_model", "n_runs", alt.Tooltip("mean:Q", format=".2f"), "ci_note"]
    points = base.mark_point(filled=True, size=60).encode(x=alt.X("mean:Q", title=value_label), y=y,
                                                          color=colour, yOffset="background:N", tooltip=tips)
    bars = base.mark_rule().encode(x="ci_low:Q", x2="ci_high:Q", y=y, color=colour, yOffset="background:N")
    chart = (bars + points).properties(width=360, height=alt.Step(14))
    if facet:
        chart = chart.facet(row=alt.Row(f"{facet}:N", title=None))
    n = int(df["n_runs"].min()), int(df["n_runs"].max())
    return titled(chart, title, caption(f"runs per cell {n[0]}-{n[1]}", "bars: " + CI_METHOD,
                                        "no bar: fewer than 2 runs or no spread"))
