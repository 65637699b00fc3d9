"""Interval charts of result frames: SCARCE's (notebooks 02-06, 09) and the say-do
tables of every environment (:func:`scarce_lab.analysis.saydo.rates_chart`).

A result frame (e.g. from :mod:`scarce_lab.environments.scarce.analysis.dynamics`) has one row per group
with ``value`` and its 95% interval ``lo``-``hi`` (plus ``n`` and ``runs``);
:func:`ci_chart` draws it to the toolkit's figure standard.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import polars as pl

from .figures import (
    CHAR_PX,
    MAX_COLOURS,
    ONE_SERIES,
    NoFigure,
    caption,
    chart_data,
    colour_book,
    series_colour,
    titled,
    wrap_columns,
)

#: The interval of every SCARCE result frame (scarce_base.mean_over_runs): each run counts once.
T_OVER_RUNS = "95% t interval over run means"

#: Readable names of the codes that appear as column names or values in result frames
#: (mostly SCARCE's settings and tactic categories; ``model`` names SCARCE's negotiator
#: model, so a frame of another environment's agents calls the column ``agent_model``).
LABELS: dict[str, str] = {
    "model": "Negotiator model", "agent_model": "Agent's model", "memory": "Memory horizon", "mechanism": "Bid mechanism",
    "stage": "Stage of the run", "subrun": "Subrun", "half": "Half of the run",
    "budget_phase": "Budget left before the contention", "who": "Worker", "given": "Previous contention",
    "metric": "Measure", "measure": "Measure", "kind": "Kind", "behaviour": "Behaviour",
    "category": "Tactic category", "reasoning_effort": "Reasoning effort", "scheduler": "Scheduler",
    "worker": "Worker", "urgent": "Urgent",
    "full_resolution_rate": "Full resolution rate", "mean_partial_score": "Mean partial score",
    "deadline_miss_rate": "Deadline miss rate", "deadline_misses": "Deadline misses per run",
    "total_queue_wait_s": "Total queue wait (s)", "cosine_prev": "Cosine similarity to the previous stage",
    "trigram_repetition": "Trigram repetition", "new_word_share": "Share of new words",
    "rule_making": "Rule-making", "rule_invoking": "Rule-invoking", "mean_bid": "Mean bid (credits)",
    "win_rate": "Win rate", "win_rate_contested": "Win rate in contested rounds", "group": "Model | setting", "won": "after a win", "lost": "after a loss", "richer": "richer worker",
    "others": "other workers", "ballots": "ballots (negotiated)", "fifo": "FIFO", "sjf": "SJF",
    "edf": "EDF", "highest-bid": "highest bid", "relational": "relational (any)",
    "alliance_formation": "Alliance formation", "alliance_loyalty": "Alliance loyalty",
    "reciprocity": "Reciprocity", "reputation": "Reputation",
}


#: Vega expression drawing a panel title's lines (ci_chart wraps the text with newlines).
PANEL_LINES = "split(datum.value, '\\n')"
#: Longest tick label (px) before Vega-Lite cuts it with "..." (its default is 180, which cut
#: "embedded/smollm2 | ballots fi..."): ~50 characters, a model and what differs; a longer
#: label is refused by the figure rules (figures.chart_problems), never drawn cut.
TICK_LABEL_LIMIT = 300
#: Tallest chart (px): beyond, panels wrap into more, narrower columns (down to MIN_PANEL_WIDTH).
MAX_CHART_HEIGHT = 1200
MIN_PANEL_WIDTH = 130
#: Height a wrapped panel row adds besides its plot (header lines, x labels, axis title), and
#: the chart's title and caption lines (px), as drawn in JupyterLab.
PANEL_EXTRA_HEIGHT = 130
TITLE_HEIGHT = 100


def pretty(code: object) -> str:
    """Readable name of a code (``full_resolution_rate`` -> ``Full resolution rate``):
    :data:`LABELS` first, else underscores become spaces."""
    s = str(code)
    return LABELS.get(s, s.replace("_", " "))


#: Names of values that mean something only in their column (``none`` is SCARCE's memory
#: horizon there, and no talk, no institution... elsewhere): column -> value -> name.
COLUMN_VALUES: dict[str, dict[str, str]] = {
    "memory": {"none": "none (fresh each contention)", "cross": "cross-subrun"},
}


def pretty_value(code: object, column: str | None = None) -> str:
    """Readable name of a value in a chart (a legend entry, a tick label) of ``column``:
    its name in :data:`COLUMN_VALUES` for that column, else as :func:`pretty`, but a plain
    word whose name would only be capitalised stays as it is (``urgent`` beside ``not
    urgent``, not ``Urgent``); codes (``win_rate``) get their names."""
    s = str(code)
    if column is not None and s in COLUMN_VALUES.get(column, {}):
        return COLUMN_VALUES[column][s]
    p = pretty(s)
    return s if "_" not in s and p.casefold() == s.casefold() else p


def _readable(d: pl.DataFrame, cols: Sequence[str]) -> pl.DataFrame:
    out = [pl.col(c).cast(pl.String).map_elements(lambda v, c=c: pretty_value(v, c), return_dtype=pl.String)
           for c in cols if d.schema[c] in (pl.String, pl.Boolean)]
    return d.with_columns(out) if out else d


def wrap_title(text: str, width_px: int) -> str | list[str]:
    """An axis title that fits a panel of ``width_px``: the text, or its lines (Vega-Lite
    draws a list as lines) when it is wider than the panel, so that titles of panels side by
    side do not run into each other."""
    chars = max(8, int(width_px / CHAR_PX))
    lines = textwrap.wrap(text, chars)
    return text if len(lines) <= 1 else lines


def ci_chart(df: pl.DataFrame, x: str, *, color: str | None = None, column: str | None = None,
             row: str | None = None, kind: str = "bar", title: str = "", y_title: str = "value",
             x_sort: Sequence | None = None, width: int = 220, height: int = 180,
             ci: str = T_OVER_RUNS, x_title: str | None = None, y_domain: tuple[float, float] | None = None):
    """A chart of a result frame: ``value`` as points (``kind="bar"``, x nominal) or
    lines (``kind="line"``, x ordinal) over ``x`` with ``lo``-``hi`` error bars (95%
    interval by ``ci``), optionally coloured by ``color`` and faceted by ``column`` /
    ``row`` (independent y scales per facet). Codes are shown through :func:`pretty`.

    Readability rules: units in the axis titles; error bars in the colour of their point;
    a caption line (models, runs, interval method); ``model | setting`` tick labels whole (up to :data:`TICK_LABEL_LIMIT`)
    with the full ``condition`` in the tooltip; coloured lines also differ in dash and point
    shape (equal lines stay visible); wrapped panels narrow (down to :data:`MIN_PANEL_WIDTH`)
    and then lower so that the chart stays within :data:`MAX_CHART_HEIGHT`; an uncoloured
    series takes the notebook colour book's :data:`~scarce_lab.analysis.figures.ONE_SERIES`
    colour, never a group's.

    ``y_domain``: a fixed y range shared by every panel (a share: ``(0, 1)``), so that
    panels with independent scales never make 0.10 look like 0.9.

    Returns :class:`NoFigure` (with the reason) when no row has a value.

    Raises:
        ValueError: a named column is missing (the message names it).
    """
    import altair as alt

    need = [c for c in (x, color, column, row, "value", "lo", "hi") if c]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"ci_chart: result frame has no column(s) {missing} (columns: {df.columns})")
    d = df.filter(pl.col("value").is_not_null() & ~pl.col("value").is_nan())
    if d.height == 0:
        return NoFigure(f"no group has a value for {title or y_title} in this data")
    book = colour_book()

    def colourable(c: str) -> bool:
        # at most MAX_COLOURS hues in a chart, and colours the notebook's book can still give
        # without one colour standing for two things
        return d[c].n_unique() <= MAX_COLOURS and book.fits(_readable(d.select(c), [c])[c].unique().to_list())

    if color and not colourable(color):
        # the groups become panels (wrapped), and an existing panel variable, when it can be
        # coloured, becomes the colour
        if column is None:
            color, column = None, color
        elif row is None and colourable(column):
            color, column = column, color
        else:
            raise ValueError(f"ci_chart: {d[color].n_unique()} groups of {color!r} and panels by {column!r}, "
                             f"more than {MAX_COLOURS} colours or more than the notebook's colour book has left: "
                             f"filter the frame to fewer groups")
    keys = [c for c in (x, color, column, row) if c]
    d = _readable(chart_data(d), keys)
    if column and not row:
        # wrapped panels (below): many panels (notebook 06's 17 groups) get narrower, down to
        # MIN_PANEL_WIDTH, then lower, so that the chart stays within MAX_CHART_HEIGHT
        n_panels = d[column].n_unique()
        per_line = wrap_columns(width, n_panels)
        while -(-n_panels // per_line) * (height + PANEL_EXTRA_HEIGHT) + TITLE_HEIGHT > MAX_CHART_HEIGHT \
                and width > MIN_PANEL_WIDTH:
            width = max(MIN_PANEL_WIDTH, width - 20)
            per_line = wrap_columns(width, n_panels)
        if -(-n_panels // per_line) * (height + PANEL_EXTRA_HEIGHT) + TITLE_HEIGHT > MAX_CHART_HEIGHT:
            height = max(80, (MAX_CHART_HEIGHT - TITLE_HEIGHT) // -(-n_panels // per_line) - PANEL_EXTRA_HEIGHT)
    if column and d.schema[column] == pl.String:
        # panel titles on lines within the panel's width (drawn by PANEL_LINES), never cut: two
        # labels cut at the same place would read alike
        d = d.with_columns(pl.col(column).map_elements(lambda v: "\n".join(textwrap.wrap(v, max(8, int(width / CHAR_PX)))
                                                                            or [v]), return_dtype=pl.String))
    # no x_sort: Vega-Lite's ascending order (``sort=None`` would be null, the data's order:
    # stages 1, 3, 2, 4 when a group lacks stage 2)
    sort = [pretty_value(v, x) for v in x_sort] if x_sort else alt.Undefined
    xtitle = x_title or pretty(x)
    if column or row:  # panels side by side: each panel's axis title within its width
        xtitle = wrap_title(xtitle, width)
    # "model | setting" labels whole: a cut label ("ballots fi...") would hide what differs
    # between the groups (two-line rotated labels ran into their neighbours)
    xenc = alt.X(f"{x}:{'O' if kind == 'line' else 'N'}", sort=sort, title=xtitle,
                 axis=alt.Axis(labelAngle=-40 if kind != "line" else 0, labelLimit=TICK_LABEL_LIMIT))
    enc: dict = {"x": xenc}
    if color:
        enc["color"] = alt.Color(f"{color}:N", title=pretty(color),
                                 legend=alt.Legend(labelLimit=0, orient="bottom", direction="vertical",
                                                   columns=2 if d[color].n_unique() > 3 else 1))
        if kind == "line":
            # lines with equal values (notebook 03's "none" and "subrun") stay visible: each
            # group also has its own dash and point shape (one legend: same field and title)
            enc["strokeDash"] = alt.StrokeDash(f"{color}:N", title=pretty(color))
            enc["shape"] = alt.Shape(f"{color}:N", title=pretty(color))
        if kind == "bar":
            enc["xOffset"] = alt.XOffset(f"{color}:N")
    base = alt.Chart(d).encode(**enc)
    mark = base.mark_line(point=True) if kind == "line" else base.mark_point(filled=True, size=60, opacity=1)
    tips = [alt.Tooltip(f"{c}:N", title=pretty(c)) for c in keys] + [
        alt.Tooltip(f"{c}:N", title=f"full {c}") for c in ("condition",) if c in d.columns and c not in keys] + [
        alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"), alt.Tooltip("hi:Q", format=".3f")]
    tips += [c for c in ("n", "runs") if c in d.columns]
    if y_title == "value":
        y_title = "Value (unit: see each panel's title)" if column in ("metric", "measure") else "Value"
    # panels: the y title on lines within the panel's height (a longer one sets the row's height)
    ytitle = wrap_title(y_title, height) if (column or row) else y_title
    if not color:  # one series: the notebook's colour for it, never a group's
        one = series_colour()
        mark = (base.mark_line(point=alt.OverlayMarkDef(color=one), color=one, description=ONE_SERIES) if kind == "line"
                else base.mark_point(filled=True, size=60, opacity=1, color=one, description=ONE_SERIES))
    yscale = alt.Scale(domain=list(y_domain)) if y_domain else alt.Undefined
    err = (base.mark_errorbar(ticks=True) if color else base.mark_errorbar(ticks={"description": ONE_SERIES}, rule={"description": ONE_SERIES}, color=one)).encode(
        y=alt.Y("lo:Q", title=ytitle, scale=yscale), y2="hi:Q"
    ).transform_filter("isValid(datum.lo) && isValid(datum.hi)")  # a single run has no interval to draw
    layer = alt.layer(err, mark.encode(y=alt.Y("value:Q", title=ytitle, scale=yscale), tooltip=tips)).properties(
        width=width, height=height)
    y_resolve = "shared" if y_domain else "independent"
    if column and not row:
        # wrapped panels: as many per line as fit the notebook output area (OUTPUT_WIDTH);
        # many panels (notebook 06's 17 groups) get narrower, down to MIN_PANEL_WIDTH, so that
        # the chart stays within MAX_CHART_HEIGHT
        per_line = wrap_columns(width, d[column].n_unique())
        layer = layer.facet(facet=alt.Facet(f"{column}:N", title=None, header=alt.Header(labelExpr=PANEL_LINES, labelLimit=0)),
                            columns=per_line).resolve_scale(y=y_resolve)
    elif column or row:
        facet = {}
        if column:
            facet["column"] = alt.Column(f"{column}:N", title=None, header=alt.Header(labelExpr=PANEL_LINES, labelLimit=0))
        if row:
            facet["row"] = alt.Row(f"{row}:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left"))
        layer = layer.facet(**facet).resolve_scale(y=y_resolve)
    runs = int(df["runs"].max()) if "runs" in df.columns and df["runs"].max() is not None else None
    models = sorted(set(df["model"].drop_nulls().to_list())) if "model" in df.columns else []
    has_bars = d.select(pl.col("lo", "hi").cast(pl.Float64).fill_nan(None)).drop_nulls().height > 0
    cap = [caption(f"Point: estimate; bars: {ci}" if has_bars else f"Point: estimate; no bars: no group has an interval "
                   f"(the method: {ci})",
                   f"up to {runs} runs per group" if runs is not None else "")]
    if models:
        cap.append(caption("models: " + ", ".join(models)))
    if color and kind == "line" and (same := coinciding_groups(d, x, color, [c for c in (column, row) if c])):
        # a line drawn exactly over another (notebook 03's "none" under "subrun") is said
        cap.append(caption("; ".join(" and ".join(g) + " coincide (equal values; dashes and point shapes tell them apart)"
                                     for g in same)))
    return titled(layer, title or y_title, cap)


def coinciding_groups(d: pl.DataFrame, x: str, color: str, panels: Sequence[str] = ()) -> list[list[str]]:
    """Groups of ``color`` values whose lines coincide: in every panel (``panels`` columns)
    the same ``x`` points with the same ``value``, ``lo`` and ``hi`` (rounded to 1e-9).
    Returns each set of two or more coinciding values (sorted, as text), sorted."""
    def key(g: pl.DataFrame) -> tuple:
        cols = [*panels, x, "value", "lo", "hi"]
        return tuple(sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r)
                            for r in g.select(cols).iter_rows()))
    lines: dict[tuple, list[str]] = {}
    for (value,), g in d.group_by(color):
        lines.setdefault(key(g), []).append(str(value))
    return sorted(sorted(v) for v in lines.values() if len(v) > 1)
