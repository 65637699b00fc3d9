"""Altair charts and one-sentence readings for the SovSim notebook.

Every function takes polars frames from :mod:`scarce_lab.analysis.sovsim` (or the
agent-round table) and returns an ``altair.Chart`` or a sentence; saving is done by
``scarce_lab.analysis.figures.save_chart``.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from .sovsim import CONDITION_ORDER, METRICS, leader_rate_vs_survival, misreports, pool_band

_ROUND_AXIS = alt.Axis(values=list(range(1, 13)), format="d")
_ROUND_SCALE = alt.Scale(domain=[1, 12])


def _conditions(df: pl.DataFrame) -> list[str]:
    present = df["condition"].unique().to_list()
    return [c for c in CONDITION_ORDER if c in present] + sorted(c for c in present if c not in CONDITION_ORDER)


def table1_display(summary: pl.DataFrame, digits: int = 2) -> pl.DataFrame:
    """Table 1 with one ``mean [ci_low, ci_high]`` text column per metric."""

    def cell(m, lo, hi):
        if m is None:
            return "–"
        return f"{m:.{digits}f}" + (f" [{lo:.{digits}f}, {hi:.{digits}f}]" if lo is not None and hi is not None else "")

    rows = []
    for r in summary.iter_rows(named=True):
        out = {"Model": r["model"], "Condition": r["condition"], "n": r["n"]}
        for key, label, _ in METRICS:
            out[label] = cell(r[f"{key}_mean"], r[f"{key}_ci_low"], r[f"{key}_ci_high"])
        rows.append(out)
    return pl.DataFrame(rows)


def pool_dynamics_chart(df: pl.DataFrame) -> alt.Chart:
    """Mean pool at the start of each round with a 95% band, per model, one panel per condition.

    The band is clipped to the feasible range [0, largest pool in the data]."""
    top = float(df["pool_before"].max() or 0.0)
    band = pool_band(df).with_columns(
        pl.col("ci_low").fill_null(pl.col("mean")).clip(0.0, top),
        pl.col("ci_high").fill_null(pl.col("mean")).clip(0.0, top),
    )
    base = alt.Chart(band.to_pandas()).encode(
        x=alt.X("round:Q", title="Round", scale=_ROUND_SCALE, axis=_ROUND_AXIS),
        color=alt.Color("model:N", title="Model"),
    )
    area = base.mark_area(opacity=0.2).encode(y=alt.Y("ci_low:Q", title="Pool (units)"), y2="ci_high:Q")
    line = base.mark_line(point=True).encode(y="mean:Q", tooltip=["model", "condition", "round", "n", "mean"])
    return (area + line).properties(width=220, height=160).facet(
        column=alt.Column("condition:N", sort=_conditions(df), title=None)
    )


def busiest_model(df: pl.DataFrame) -> str:
    """The model with the most agent-rounds, preferring models that are not
    ``scripted/...`` baselines (ties: alphabetical)."""
    counts = (
        df.group_by("model")
        .len()
        .with_columns(scripted=pl.col("model").str.starts_with("scripted/"))
        .sort(["scripted", "len", "model"], descending=[False, True, False])
    )
    return counts["model"][0]


def trajectories_chart(df: pl.DataFrame, model: str, simulation: int | None = None) -> alt.Chart:
    """Extraction per agent and round for one simulation per condition (the first one,
    or ``simulation``); the leader's line is thick and its points are diamonds."""
    d = df.filter(pl.col("model") == model)
    if simulation is None:
        first = d.group_by("condition").agg(pl.col("simulation").min())
        d = d.join(first, on=["condition", "simulation"], how="inner")
    else:
        d = d.filter(pl.col("simulation") == simulation)
    d = d.with_columns(
        who=pl.when(pl.col("is_leader")).then(pl.lit("leader")).otherwise(pl.lit("subordinate"))
    )
    return (
        alt.Chart(d.select("condition", "round", "agent", "role", "who", "extraction").to_pandas())
        .mark_line(point=True)
        .encode(
            x=alt.X("round:Q", title="Round", scale=_ROUND_SCALE, axis=_ROUND_AXIS),
            y=alt.Y("extraction:Q", title="Extraction (units)"),
            color=alt.Color("agent:N", title="Agent"),
            strokeWidth=alt.StrokeWidth("who:N", scale=alt.Scale(domain=["subordinate", "leader"], range=[1.5, 4]), title=""),
            shape=alt.Shape("who:N", scale=alt.Scale(domain=["subordinate", "leader"], range=["circle", "diamond"]), title=""),
            tooltip=["condition", "round", "agent", "role", "extraction"],
        )
        .properties(width=220, height=160)
        .facet(column=alt.Column("condition:N", sort=_conditions(d), title=None))
        .properties(title=f"{model}: one simulation per condition (leader: thick line, diamonds)")
    )


def _r_text(r: dict) -> str:
    if r["r"] is None:
        return f"r undefined (n = {r['n']})"
    ci = f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r["ci_low"] is not None and r["ci_high"] is not None else ""
    return f"r = {r['r']:.2f}{ci} (n = {r['n']})"


def leader_rate_chart(per_sim: pl.DataFrame) -> alt.Chart:
    """Scatter of per-simulation leader extraction rate vs survival time, with Pearson r per model."""
    d = per_sim.filter(pl.col("leader_extraction_rate").is_not_null())
    corr = leader_rate_vs_survival(per_sim)
    lines = [f"{r['model']}: {_r_text(r)}" for r in corr.iter_rows(named=True)]
    return (
        alt.Chart(d.select("model", "condition", "run_id", "leader_extraction_rate", "survival_time").to_pandas())
        .mark_point(filled=True, size=60, opacity=0.7)
        .encode(
            x=alt.X("leader_extraction_rate:Q", title="Leader extraction rate (z / remainder seen)"),
            y=alt.Y("survival_time:Q", title="Survival time (rounds)"),
            color=alt.Color("model:N"),
            shape=alt.Shape("condition:N"),
            tooltip=["model", "condition", "run_id", "leader_extraction_rate", "survival_time"],
        )
        .properties(width=420, height=260, title=alt.TitleParams("Leader extraction vs survival", subtitle=lines[:8] or [""]))
    )


def misreport_chart(df: pl.DataFrame) -> alt.Chart:
    """Histogram of the king's misreports (announced - true pool) in kcpr_m, per model."""
    mis = misreports(df)
    return (
        alt.Chart(mis.select("model", "misreport").to_pandas())
        .mark_bar(opacity=0.7)
        .encode(
            x=alt.X("misreport:Q", bin=alt.Bin(maxbins=30), title="Announced - true pool (units)"),
            y=alt.Y("count():Q", title="Rounds", stack=None),
            color=alt.Color("model:N"),
        )
        .properties(width=420, height=220, title="KCPR-M misreports")
    )


# -- computed one-sentence readings ----------------------------------------------------
def survival_sentence(summary: pl.DataFrame) -> str:
    """Which condition survives longest/shortest on average, per model (computed)."""
    parts = []
    for model in summary["model"].unique(maintain_order=True).to_list():
        s = summary.filter((pl.col("model") == model) & pl.col("survival_time_mean").is_not_null())
        if s.height == 0:
            continue
        best = s.sort("survival_time_mean", descending=True).row(0, named=True)
        worst = s.sort("survival_time_mean").row(0, named=True)
        if best["condition"] == worst["condition"] or best["survival_time_mean"] == worst["survival_time_mean"]:
            parts.append(f"{model}: survival time {best['survival_time_mean']:.1f} rounds in every condition shown")
        else:
            parts.append(
                f"{model}: longest survival under {best['condition']} ({best['survival_time_mean']:.1f} rounds), "
                f"shortest under {worst['condition']} ({worst['survival_time_mean']:.1f})"
            )
    return ("; ".join(parts) + ".") if parts else "No simulations to summarise."


def pool_sentence(df: pl.DataFrame) -> str:
    """Mean pool in the last observed round per condition (computed)."""
    band = pool_band(df)
    if band.height == 0:
        return "No pool data."
    last = band.sort("round").group_by("model", "condition").agg(pl.col("round").last(), pl.col("mean").last())
    lowest = last.sort("mean").row(0, named=True)
    return (
        f"The lowest final mean pool is {lowest['mean']:.0f} units ({lowest['model']}, {lowest['condition']}, "
        f"round {lowest['round']}); a collapsed pool counts as 0 after its collapse, and bands are "
        "95% t-intervals over all simulations."
    )


def correlation_sentence(per_sim: pl.DataFrame) -> str:
    """Pearson r between leader extraction rate and survival time, per model (computed)."""
    corr = leader_rate_vs_survival(per_sim)
    if corr.height == 0:
        return "No condition with a leader in this dataset."
    parts = []
    for r in corr.iter_rows(named=True):
        if r["r"] is None:
            parts.append(f"{r['model']}: r undefined (fewer than 3 simulations or no variation; n = {r['n']})")
            continue
        if r["ci_low"] is None or r["ci_high"] is None:
            sign = "without a CI"
        elif r["ci_high"] < 0:
            sign = "negative (CI below 0)"
        elif r["ci_low"] > 0:
            sign = "positive (CI above 0)"
        else:
            sign = "CI includes 0"
        parts.append(f"{r['model']}: {_r_text(r)}, {sign}")
    return "; ".join(parts) + "."


def misreport_sentence(df: pl.DataFrame) -> str:
    """Share of kcpr_m rounds with a false announcement and the mean misreport (computed)."""
    mis = misreports(df)
    if mis.height == 0:
        return "No KCPR-M announcements in this dataset."
    false_share = float((mis["misreport"] != 0).mean())
    return (
        f"Kings announced a false pool in {false_share:.0%} of {mis.height} KCPR-M rounds; "
        f"the mean misreport is {float(mis['misreport'].mean()):+.1f} units (negative = understated)."
    )
