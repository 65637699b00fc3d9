"""The charts, layouts and one-sentence readings of the findings of :mod:`.paper`.

Size: the paper's figures (pool dynamics, trajectories, leader rate, misreports) and
their readings in one module, each beside the sentence that describes it.

Every function takes polars frames (the agent-round table, or the per-simulation
metrics of :mod:`.metrics`) and returns an ``altair`` chart, a
:class:`~scarce_lab.analysis.figures.NoFigure` that says why there is nothing to draw,
a display frame or a sentence. Charts follow one standard: readable condition and model
names, units on the axes, legends that match the marks, small multiples instead of
overplotting, and a caption line (models, n, interval method). Sentences that name one
of several tied groups say how many tie and which was named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from scarce_lab.analysis import comparisons
from scarce_lab.analysis.figures import (
    ONE_SERIES,
    REFERENCE,
    NoFigure,
    caption,
    chart_data,
    series_colour,
    titled,
    wrap_columns,
)
from scarce_lab.analysis.labels import condition_label as _condition_label
from scarce_lab.analysis.readings import _correction_name, describe_extremes
from scarce_lab.data.schema import calls_no_model

from .conventions import Convention, examples
from .drops import CONDITION_ORDER, condition_key, condition_values
from .dynamics import misreports, pool_band, pool_dynamics
from .metrics import leader_rate_vs_survival

if TYPE_CHECKING:  # altair is imported by the functions that draw (seconds at import)
    import altair as alt

CONDITION_LABELS = {
    "cpr": "CPR (symmetric)",
    "bcpr": "BCPR (boss)",
    "kcpr": "KCPR (king)",
    "kcpr_m": "KCPR-M (king may misreport)",
}
T_BAND = "95% t-interval over simulations"


def condition_label(c: str) -> str:
    """Readable name of a condition code (``kcpr_m`` -> ``KCPR-M (king may misreport)``);
    unknown codes are returned unchanged (:func:`scarce_lab.analysis.labels.condition_label`)."""
    return _condition_label(c, CONDITION_LABELS)


def _conditions(df: pl.DataFrame) -> list[str]:
    return sorted(df["condition"].unique().to_list(), key=condition_key)


def _labelled(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        condition_label=pl.col("condition").replace_strict(CONDITION_LABELS, default=pl.col("condition"))
    )


def _count(n: int, noun: str) -> str:
    """``1 pair``, ``2 pairs``: a count with its noun in the right number."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _models_text(models: list[str], limit: int = 6) -> str:
    return "models: " + examples(sorted(models), limit)


# -- Figure 3: pool dynamics ------------------------------------------------------------
def pool_dynamics_chart(df: pl.DataFrame, conv: Convention | None = None) -> alt.FacetChart | NoFigure:
    """SovSim Figure 3 (:func:`~.paper.pool_dynamics`); the collapse threshold is
    ``conv.collapse_threshold`` (default the SovSim preset's 12 units)."""
    import altair as alt
    if df.height == 0:
        return NoFigure("the dataset has no agent-rounds")
    threshold = (conv or Convention()).collapse_threshold
    top = float(df["pool_before"].max() or 0.0)
    band = _labelled(chart_data(pool_band(df).with_columns(
        pl.col("ci_low").fill_null(pl.col("mean")).clip(0.0, top),
        pl.col("ci_high").fill_null(pl.col("mean")).clip(0.0, top),
    ))).with_columns(threshold=pl.lit(threshold))
    rounds = int(band["round"].max())
    x = alt.X("round:Q", title="Round", scale=alt.Scale(domain=[1, rounds]),
              axis=alt.Axis(values=list(range(1, rounds + 1, 2 if rounds > 12 else 1)), format="d"))
    y_scale = alt.Scale(domain=[0, max(top, threshold) * 1.05])
    base = alt.Chart(band).encode(x=x)
    one = series_colour()  # the mean and its band: the notebook's one-series colour, never a group's
    area = base.mark_area(color=one, opacity=0.25, description=ONE_SERIES).encode(
        y=alt.Y("ci_low:Q", title="Pool (units)", scale=y_scale), y2="ci_high:Q")
    line = base.mark_line(color=one, point=alt.OverlayMarkDef(color=one, size=18), description=ONE_SERIES).encode(
        y="mean:Q", tooltip=["model", "condition_label", "round", "n",
                             alt.Tooltip("mean:Q", format=".1f"), alt.Tooltip("ci_low:Q", format=".1f"),
                             alt.Tooltip("ci_high:Q", format=".1f")])
    rule = alt.Chart(band).mark_rule(color=REFERENCE, strokeDash=[4, 3]).encode(y="threshold:Q")
    n_lo, n_hi = int(band["n"].min()), int(band["n"].max())
    n_text = f"n = {n_lo} simulations per panel" if n_lo == n_hi else f"n = {n_lo} to {n_hi} simulations per panel"
    chart = (area + rule + line).properties(width=150, height=95).facet(
        column=alt.Column("condition_label:N", title=None,
                          sort=[condition_label(c) for c in _conditions(df)]),
        row=alt.Row("model:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
    )
    return titled(chart, "Pool at the start of each round", [
        caption(f"Line: mean; band: {T_BAND}; dashed grey: collapse threshold ({threshold:g} units)",
                "a collapsed pool counts as 0 afterwards"),
        caption(n_text, _models_text(band["model"].unique().to_list()))])


# -- Figure 4: agent trajectories with the pool ------------------------------------------
def pick_simulations(per_sim: pl.DataFrame, models: list[str], condition: str = "kcpr",
                     simulations: list[int] | None = None, per_model: int = 1) -> pl.DataFrame:
    """The simulations a trajectory figure shows (:func:`~.paper.trajectories`):
    ``model, simulation, run_id, survival_time, survived, why``, one row per shown
    simulation (lowest simulation number first)."""
    d = per_sim.filter((pl.col("condition") == condition) & pl.col("model").is_in(models))
    if simulations is not None:
        d = d.filter(pl.col("simulation").is_in(list(simulations))).with_columns(why=pl.lit("chosen"))
    else:
        d = (d.filter(pl.col("survived")).sort("model", "simulation")
             .group_by("model", maintain_order=True).head(per_model).with_columns(why=pl.lit("first surviving")))
    return d.select("model", "simulation", "run_id", "survival_time", "survived", "why").sort("model", "simulation")


def default_trajectory_models(df: pl.DataFrame, per_sim: pl.DataFrame,
                              condition: str = "kcpr") -> tuple[list[str], list[str]]:
    """The models a trajectory figure shows by default (:func:`~.paper.trajectories`),
    and the models that are not ``scripted/...`` left out for want of a surviving
    ``condition`` simulation (the caption names them)."""
    surv = per_sim.filter((pl.col("condition") == condition) & pl.col("survived"))
    with_survivor = sorted(set(surv["model"].to_list()))
    llm = sorted(m for m in set(df["model"].to_list()) if not calls_no_model(m))
    chosen = [m for m in llm if m in with_survivor] or with_survivor[:1]
    return chosen, [m for m in llm if m not in with_survivor]


def nice_top(value: float, headroom: float = 0.1) -> float:
    """A round top for an axis from 0 with ``value`` below it: the smallest 1, 1.5, 2,
    2.5, 3, 4, 5, 6, 8 x 10^k at least ``value * (1 + headroom)`` and 1 (15 -> 20)."""
    need = max(float(value) * (1.0 + headroom), 1.0)
    power = 10.0 ** np.floor(np.log10(need))
    return float(next(m * power for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= need - 1e-9))


#: The pool's colour in the trajectories (a light grey: the reference grey is darker).
POOL_COLOUR = "#969696"


def _trajectory_panel(d: pl.DataFrame, title: str, rounds: int) -> alt.VConcatChart:
    import altair as alt
    scale = alt.Scale(domain=[1, rounds])
    x = alt.X("round:Q", title="Round", scale=scale, axis=alt.Axis(values=list(range(1, rounds + 1)), format="d"))
    pool = (d.group_by("round").agg(pl.col("pool_before").first()).sort("round"))
    # headroom above the largest pool: a pool that stays full is a line below the panel's
    # top edge over a light fill, not a grey block whose line is the border
    pool_top = nice_top(float(pool["pool_before"].max() or 0.0))
    pool_chart = alt.Chart(chart_data(pool)).mark_area(
        # one colour for the pool (its line, points and a see-through fill), far from the
        # reference grey of the thresholds (one meaning per colour in a notebook)
        color=POOL_COLOUR, opacity=0.25, line={"color": POOL_COLOUR, "strokeWidth": 2, "opacity": 1},
        point={"color": POOL_COLOUR, "size": 14, "opacity": 1}, description="pool at the start of the round").encode(
        x=alt.X("round:Q", title=None, scale=scale, axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("pool_before:Q", title="Pool (units)", scale=alt.Scale(domain=[0, pool_top], nice=False),
                axis=alt.Axis(values=[0, pool_top / 2, pool_top], format="~r", labelFlush=True)),
        tooltip=["round", alt.Tooltip("pool_before:Q", title="pool (units)")],
    ).properties(width=260, height=70, title=alt.TitleParams(title, anchor="start", fontSize=12))
    d = chart_data(d.with_columns(
        label=pl.when(pl.col("is_leader")).then(pl.col("agent") + " (leader)").otherwise(pl.col("agent")),
        who=pl.when(pl.col("is_leader")).then(pl.lit("leader")).otherwise(pl.lit("other agents")),
    ))
    labels = sorted(d["label"].unique().to_list(), key=lambda s: (not s.endswith("(leader)"), s))
    tips = ["round", "agent", "role", alt.Tooltip("extraction:Q", title="extraction (units)")]
    top = nice_top(float(d["extraction"].max() or 0.0))  # the largest extraction sits below the strip's top
    strips = alt.Chart(d).mark_line(point=alt.OverlayMarkDef(size=22, filled=True)).encode(
        x=x,
        y=alt.Y("extraction:Q", title=None, scale=alt.Scale(domain=[0, top], nice=False),
                axis=alt.Axis(values=[0, top], format="~r", labelFlush=True)),
        # leader / other agents by field: the notebook's colour book gives each its own colour
        color=alt.Color("who:N", sort=["leader", "other agents"], legend=None),
        strokeWidth=alt.condition("datum.is_leader", alt.value(2.5), alt.value(1.5)),
        tooltip=tips,
    ).properties(width=260, height=38).facet(
        row=alt.Row("label:N", sort=labels, title="Extraction (units)",
                    header=alt.Header(labelAngle=0, labelAlign="left", titleFontSize=11, titleFontWeight="bold")),
        spacing=6)
    return alt.vconcat(pool_chart, strips, spacing=4)


def trajectories_chart(df: pl.DataFrame, per_sim: pl.DataFrame, models: list[str] | None = None,
                       condition: str = "kcpr", simulations: list[int] | None = None,
                       per_model: int = 1) -> alt.VConcatChart | NoFigure:
    """SovSim Figure 4 (:func:`~.paper.trajectories`) for the simulations of
    :func:`pick_simulations`; ``models`` default: :func:`default_trajectory_models`.

    Raises:
        ValueError: a model of ``models`` is not in ``df``.
    """
    import altair as alt
    no_survivor: list[str] = []
    if not models:
        models, no_survivor = default_trajectory_models(df, per_sim, condition)
    missing = [m for m in models if m not in set(df["model"].to_list())]
    if missing:
        raise ValueError(f"models not in the dataset: {missing} (present: {sorted(set(df['model'].to_list()))})")
    picks = pick_simulations(per_sim, models, condition, simulations, per_model)
    if picks.height == 0:
        what = "the chosen simulations" if simulations is not None else "a surviving simulation"
        whose = f"of {', '.join(models)} " if models else "of any model "
        return NoFigure(f"no {condition_label(condition)} run {whose}is {what}"
                        " in this dataset (pick others with TRAJ_SIMULATIONS or TRAJ_CONDITION)")
    rounds = int(df["round"].max())
    rows = []
    for model in picks["model"].unique(maintain_order=True).to_list():
        panels = []
        for r in picks.filter(pl.col("model") == model).iter_rows(named=True):
            d = df.filter(pl.col("run_id") == r["run_id"])
            state = "survived" if r["survived"] else "collapsed"
            panels.append(_trajectory_panel(
                d, f"{model} · simulation {r['simulation']} ({state}, {r['survival_time']} rounds) · {r['run_id']}",
                rounds))
        rows.append(alt.hconcat(*panels))
    left_out = sorted(set(models + no_survivor) - set(picks["model"].to_list()))
    note = (f"no {'chosen' if simulations is not None else 'surviving'} {condition_label(condition)} "
            f"simulation of {', '.join(left_out)}") if left_out else ""
    chart = alt.vconcat(*rows).resolve_scale(color="independent")
    return titled(chart, f"Agent extraction and pool in {condition_label(condition)}", [
        caption("Grey: pool at the start of the round (units); below, one strip per agent: its extraction (units)"
                + (", leader's strip in its own colour, drawn thicker" if bool(df.filter(pl.col("run_id").is_in(picks["run_id"].to_list()))["is_leader"].any())
                   else "")),
        caption(f"simulations: {'as chosen' if simulations is not None else 'the first surviving one per model'}",
                note)])


# -- leader extraction vs survival --------------------------------------------------------
def _r_text(r: dict) -> str:
    if r["r"] is None:
        return f"r undefined (n = {r['n']})"
    ci = f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r["ci_low"] is not None and r["ci_high"] is not None else ""
    return f"r = {r['r']:.2f}{ci} (n = {r['n']})"


def correlation_table(per_sim: pl.DataFrame) -> pl.DataFrame:
    """The layout of :func:`~.paper.leader_rate_vs_survival`: ``Model, n simulations,
    r, 95% CI (Fisher z), p`` and the Holm-adjusted p (its column names the number of
    tests)."""
    corr = leader_rate_vs_survival(per_sim)
    return corr.select(
        pl.col("model").alias("Model"), pl.col("n").alias("n simulations"), pl.col("r").round(2).alias("r"),
        pl.when(pl.col("ci_low").is_not_null())
        .then(pl.format("[{}, {}]", pl.col("ci_low").round(2), pl.col("ci_high").round(2)))
        .otherwise(pl.lit("–")).alias("95% CI (Fisher z)"),
        pl.col("p").round(3).alias("p"),
        pl.col("p_adj").round(3).alias(f"p adjusted ({corr['correction'][0] if corr.height else 'Holm'}, "
                                       f"{int(corr['n_tests'][0]) if corr.height else 0} tests)"),
    )


def leader_rate_chart(per_sim: pl.DataFrame) -> alt.FacetChart | NoFigure:
    """The chart of :func:`~.paper.leader_rate_vs_survival`: one point per simulation,
    one panel per model, shape and colour by condition (a density of counts above
    :data:`MAX_POINTS` simulations)."""
    import altair as alt
    d = _labelled(chart_data(per_sim.filter(pl.col("leader_extraction_rate").is_not_null())))
    if d.height == 0:
        return NoFigure("no simulation with a leader (BCPR, KCPR or KCPR-M) in this dataset")
    if d.height > MAX_POINTS:
        return _leader_rate_density(d)
    conds = [condition_label(c) for c in _conditions(d)]
    chart = alt.Chart(d.select("model", "condition_label", "run_id", "simulation",
                               "leader_extraction_rate", "survival_time")).mark_point(
        filled=True, size=55, opacity=0.85).encode(
        x=alt.X("leader_extraction_rate:Q", scale=alt.Scale(domain=[0, 1]),
                title="Leader extraction rate"),
        y=alt.Y("survival_time:Q", title="Survival time (rounds)"),
        color=alt.Color("condition_label:N", title="Condition", sort=conds, legend=alt.Legend(labelLimit=0),
                        scale=alt.Scale(domain=conds)),  # colours: the notebook's colour book
        shape=alt.Shape("condition_label:N", title="Condition", sort=conds, legend=alt.Legend(labelLimit=0),
                        scale=alt.Scale(domain=conds, range=["circle", "square", "triangle-up", "diamond"][: len(conds)])),
        tooltip=["model", "condition_label", "simulation", "run_id",
                 alt.Tooltip("leader_extraction_rate:Q", format=".2f"), "survival_time"],
    ).properties(width=210, height=150).facet(facet=alt.Facet("model:N", title=None),
                                              columns=wrap_columns(210, d["model"].n_unique(), legend_width=150))
    return titled(chart, "Leader extraction rate vs survival time", [
        caption("One point per simulation (identical simulations overlap); leader extraction rate = mean over the "
                "leader's rounds of its extraction divided by the pool left after the others' extractions"),
        caption(f"n = {d.height} simulations", "Pearson r per model in the table below")])


#: Most points a scatter draws; more become a density of counts (charts stay light
#: for large datasets, and altair's row limit is never reached).
MAX_POINTS = 3000


def _leader_rate_density(d: pl.DataFrame) -> alt.FacetChart:
    """:func:`leader_rate_chart` for many simulations: counts per cell (leader rate in
    bins of 0.05 x survival time in rounds), one panel per model and condition."""
    import altair as alt
    cells = (
        d.with_columns(rate_lo=(pl.col("leader_extraction_rate").clip(0, 0.9999) * 20).floor() / 20)
        .group_by("model", "condition_label", "rate_lo", "survival_time").agg(pl.len().alias("simulations"))
        .with_columns(rate_hi=pl.col("rate_lo") + 0.05, t_lo=pl.col("survival_time") - 0.5,
                      t_hi=pl.col("survival_time") + 0.5,
                      panel=pl.col("model") + " · " + pl.col("condition_label"))
    )
    chart = alt.Chart(cells).mark_rect().encode(
        x=alt.X("rate_lo:Q", scale=alt.Scale(domain=[0, 1]), title="Leader extraction rate"), x2="rate_hi:Q",
        y=alt.Y("t_lo:Q", title="Survival time (rounds)"), y2="t_hi:Q",
        color=alt.Color("simulations:Q", title="Simulations", scale=alt.Scale(scheme="blues")),
        tooltip=["model", "condition_label", "survival_time", alt.Tooltip("rate_lo:Q", format=".2f"), "simulations"],
    ).properties(width=180, height=130).facet(facet=alt.Facet("panel:N", title=None),
                                              columns=wrap_columns(180, cells["panel"].n_unique(), legend_width=80))
    return titled(chart, "Leader extraction rate vs survival time", [
        caption(f"{d.height} simulations (more than {MAX_POINTS}): counts per cell of 0.05 x 1 round",
                "Pearson r per model in the table below")])


# -- KCPR-M misreports -------------------------------------------------------------------
def _misreport_groups(mis: pl.DataFrame) -> pl.DataFrame:
    """``misreports`` with ``group``: the model, and the condition too when the data hold
    more than one KCPR-M condition (other settings), so no panel or number pools them."""
    several = mis["condition"].n_unique() > 1
    return mis.with_columns(group=pl.col("model") + " · " + pl.col("condition") if several else pl.col("model"))


def misreport_chart(df: pl.DataFrame) -> alt.FacetChart | NoFigure:
    """The chart of :func:`~.paper.misreport_distribution`: one panel per model (and
    condition, when several), each with its own count axis (a model with a few
    king-rounds is not flattened by one with many) and its rounds and simulations in its
    title; the bins are counted in polars, so the chart holds a few dozen rows whatever
    the dataset's size."""
    import altair as alt
    mis = chart_data(_misreport_groups(misreports(df)))
    if mis.height == 0:
        return NoFigure("no KCPR-M announcements in this dataset")
    origin = float(mis["misreport"].min())  # about 30 equal bins of an integer width
    width = max(1.0, float(int((float(mis["misreport"].max()) - origin) / 30) + 1))
    panels = {g: f"{g} ({_count(r, 'round')}, {_count(k, 'simulation')})" for g, r, k in
              mis.group_by("group").agg(pl.len(), pl.col("run_id").n_unique()).rows()}
    counts = (
        mis.with_columns(lo=((pl.col("misreport") - origin) / width).floor() * width + origin)
        .group_by("group", "lo").agg(pl.len().alias("rounds"))
        .with_columns(hi=pl.col("lo") + width, zero=pl.lit(0), panel=pl.col("group").replace_strict(panels))
        .sort("group", "lo")
    )
    # a ranged bar needs both ends on both axes: from 0 up to the count (without y2
    # vega-lite draws a square at the count)
    chart = alt.Chart(counts).mark_bar(color=series_colour(), description=ONE_SERIES).encode(
        x=alt.X("lo:Q", title=["Announced minus", "true pool (units)"]), x2="hi:Q",
        y=alt.Y("rounds:Q", title="Rounds", axis=alt.Axis(tickMinStep=1, format="d")), y2="zero:Q",
        tooltip=["group", alt.Tooltip("lo:Q", title="from"), alt.Tooltip("hi:Q", title="to"), "rounds"],
    ).properties(width=200, height=120).facet(
        facet=alt.Facet("panel:N", title=None, sort=sorted(counts["panel"].unique().to_list()),
                        header=alt.Header(labelLimit=0)),
        columns=3).resolve_scale(y="independent")
    return titled(chart, "KCPR-M: the king's announced pool minus the true pool", [
        caption("One count per king-round; negative = understated",
                "each panel its own count axis; rounds and simulations in its title"),
        caption(_models_text(mis["model"].unique().to_list()))])


# -- computed one-sentence readings ----------------------------------------------------
def _condition_tests(per_sim: pl.DataFrame, value: str, correction: str) -> dict[tuple[str, str, str], float]:
    """Adjusted p of Welch's t-test of ``value`` per simulation between every pair of
    conditions of every model: one family (all models' pairs together), adjusted with
    ``correction``. Keys ``(model, condition_a, condition_b)`` with a < b; pairs that
    cannot be tested (a condition with fewer than 2 simulations, or both without
    spread) are absent."""
    keys, pv = [], []
    for model in sorted(per_sim["model"].unique().to_list()):
        m = per_sim.filter(pl.col("model") == model)
        vals = {c: condition_values(m, c, value) for c in sorted(m["condition"].unique().to_list())}
        conds = sorted(vals)
        for i, a in enumerate(conds):
            for b in conds[i + 1:]:
                x, y = vals[a], vals[b]
                if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
                    continue
                keys.append((model, a, b))
                # from the groups' means and standard errors: scipy's ttest_ind on a
                # group without spread warns of "catastrophic cancellation" (same p)
                pv.append(comparisons.welch_p(*(v for z in (x, y) for v in (
                    float(np.mean(z)), float(np.std(z, ddof=1) / np.sqrt(len(z))), len(z)))))
    _, adj = comparisons.adjust_pvalues(pv, correction)
    return dict(zip(keys, (float(q) for q in adj), strict=True))


def survival_sentence(summary: pl.DataFrame, per_sim: pl.DataFrame | None = None, correction: str = "holm") -> str:
    """The reading of Table 1 (:func:`~.paper.table`): per model (alphabetical), the
    conditions of longest and shortest mean survival. When several conditions tie, the
    sentence says how many and names the first: SovSim's conditions in CPR, BCPR, KCPR,
    KCPR-M order, any other condition (GovSim's scenarios, settings) alphabetically after
    them; the rule is stated only when a tie happened. With ``per_sim`` the pairs of
    conditions are tested (:func:`_condition_tests`, ``correction`` ``"holm"`` or
    ``"fdr_bh"``); without it the sentence says that nothing was tested.

    Raises:
        ValueError: an unknown ``correction``.
    """
    corr = _correction_name("survival_sentence", correction)
    tests = _condition_tests(per_sim, "survival_time", correction) if per_sim is not None else None
    parts, tied = [], []
    for model in sorted(summary["model"].unique().to_list()):
        s = summary.filter((pl.col("model") == model) & pl.col("survival_time_mean").is_not_null())
        if s.height == 0:
            continue
        rows = sorted(s.iter_rows(named=True), key=lambda r: condition_key(r["condition"]))
        best = max(rows, key=lambda r: r["survival_time_mean"])  # max/min keep the first of ties
        worst = min(rows, key=lambda r: r["survival_time_mean"])
        if best["survival_time_mean"] == worst["survival_time_mean"]:
            parts.append(f"{model}: survival time {best['survival_time_mean']:.1f} rounds in every condition shown "
                         "(the comparison cannot tell the conditions apart)")
            continue

        def tie(pick: dict, rows: list[dict] = rows) -> str:
            same = [r["condition"] for r in rows if r["survival_time_mean"] == pick["survival_time_mean"]]
            if len(same) > 1:
                tied.extend(same)
            return f", tied with {_count(len(same) - 1, 'other condition')}" if len(same) > 1 else ""

        text = (f"{model}: longest survival under {condition_label(best['condition'])} "
                f"({best['survival_time_mean']:.1f} rounds{tie(best)}), shortest under "
                f"{condition_label(worst['condition'])} ({worst['survival_time_mean']:.1f}{tie(worst)})")
        if tests is not None:
            q = tests.get((model, *sorted((best["condition"], worst["condition"]))))
            text += (", not testable (too few simulations or no spread)" if q is None else
                     f", adjusted p = {q:.2g}" + (" (a difference at 5%)" if q < 0.05 else " (not a difference at 5%)"))
        parts.append(text)
    if not parts:
        return "No simulations to summarise."
    tail = "."
    if tied:
        order = ("the order CPR, BCPR, KCPR, KCPR-M (others alphabetically after them)"
                 if any(c in CONDITION_ORDER for c in tied) else "alphabetical order")
        tail += f" A tie names the first tied condition in {order}."
    if tests is None:
        return "; ".join(parts) + tail + " Descriptive only: no test was run."
    n, k = len(tests), sum(q < 0.05 for q in tests.values())
    if n == 0:
        return ("; ".join(parts) + tail + " No pair of conditions within a model could be tested (too few "
                "simulations or no spread), so the data cannot tell the conditions apart.")
    return ("; ".join(parts) + tail + f" {'A Welch t-test' if n == 1 else 'Welch t-tests'} of survival time over "
            f"simulations for {_count(n, 'pair')} of conditions within models, {corr}-adjusted together "
            f"({_count(n, 'comparison')}): {k} {'differs' if k == 1 else 'differ'} at the 5% level.")


def pool_sentence(df: pl.DataFrame, correction: str = "holm") -> str:
    """The reading of Figure 3 by :func:`~scarce_lab.analysis.readings.describe_extremes`:
    the (model, condition) groups of highest and lowest mean pool in the last round (a
    collapsed pool counts as 0), how many tie with each (the first by model, then
    condition label, named), every pair tested (Welch's t over simulations, adjusted)."""
    final = pool_dynamics(df)
    if final.height == 0:
        return "No pool data."
    last = int(final["round"].max())
    v = pl.col("pool_before").cast(pl.Float64)
    groups = (
        final.filter(pl.col("round") == last).group_by("model", "condition")
        .agg(v.mean().alias("value"), (v.std(ddof=1) / pl.len().sqrt()).alias("se"), pl.len().alias("runs"))
        .join(pool_band(df).filter(pl.col("round") == last).select("model", "condition", "ci_low", "ci_high"),
              on=["model", "condition"], how="left")
        .with_columns(lo=pl.col("ci_low").clip(lower_bound=0.0), hi=pl.col("ci_high"),
                      condition=pl.col("condition").replace_strict(CONDITION_LABELS, default=pl.col("condition")))
    )
    return (describe_extremes(groups, ["model", "condition"], f"the mean pool at the start of round {last} (units)",
                              digits=0, scope="In this dataset", correction=correction)
            + f" A collapsed pool counts as 0 after its collapse; bands are {T_BAND.replace('interval', 'intervals')}.")


def correlation_sentence(per_sim: pl.DataFrame, correction: str = "holm") -> str:
    """The reading of :func:`~.paper.leader_rate_vs_survival` (models in alphabetical
    order; ``correction``: ``"holm"`` or ``"fdr_bh"``)."""
    corr = leader_rate_vs_survival(per_sim, correction=correction)
    if corr.height == 0:
        return "No condition with a leader in this dataset."
    parts = []
    for r in corr.sort("model").iter_rows(named=True):
        if r["r"] is None:
            parts.append(f"{r['model']}: r undefined (fewer than 3 distinct points or no variation; n = {r['n']} simulations)")
            continue
        if r["p_adj"] is None:
            sign = "not tested"
        elif r["p_adj"] < 0.05:
            sign = ("negative" if r["r"] < 0 else "positive") + f" (adjusted p = {r['p_adj']:.2g})"
        else:
            sign = f"not different from 0 after adjustment (adjusted p = {r['p_adj']:.2g})"
        parts.append(f"{r['model']}: {_r_text(r)}, {sign}")
    n = int(corr["n_tests"][0])
    name = corr["correction"][0]
    return ("; ".join(parts) + f". p-values {name}-adjusted over the {n} model(s) with an r ({n} comparisons); "
            "the 95% CIs are per model, unadjusted.")


def misreport_sentence(df: pl.DataFrame) -> str:
    """Per model (alphabetical; per model and condition when the data hold several
    KCPR-M conditions), never pooled across them: the share of the king's rounds with a
    false announcement and the mean misreport (announced - true pool, units) averaged
    over simulations as Table 1 does (each simulation's mean over its rounds)."""
    mis = _misreport_groups(misreports(df))
    if mis.height == 0:
        return "No KCPR-M announcements in this dataset."
    per_group = (
        mis.group_by("group", "run_id").agg(pl.col("misreport").cast(pl.Float64).mean().alias("sim_mean"),
                                            (pl.col("misreport") != 0).sum().alias("false"), pl.len().alias("rounds"))
        .group_by("group").agg(pl.col("sim_mean").mean().alias("mean"), pl.col("false").sum(),
                               pl.col("rounds").sum(), pl.len().alias("sims"))
        .sort("group")
    )
    parts = [f"{r['group']}: false in {r['false'] / r['rounds']:.0%} of {_count(r['rounds'], 'king-round')} "
             f"({_count(r['sims'], 'simulation')}), mean misreport {r['mean']:+.1f} units"
             for r in per_group.iter_rows(named=True)]
    return ("KCPR-M announcements per model (never pooled across models; misreport = announced minus true pool, "
            "negative = understated, averaged over simulations as in Table 1): " + "; ".join(parts) + ".")
