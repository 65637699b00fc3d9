"""Charts in notebooks (offline, interactive, with a static image) and on disk.

Rendering (:func:`enable_offline_charts`, which the first chart of a Jupyter kernel
calls itself: :func:`charts_in_kernel`): altair's own offline Jupyter path. Each chart
is shown as an ``alt.JupyterChart`` widget (anywidget) whose JavaScript (vega, vega-lite,
vega-embed) comes from the ``vl-convert-python`` package instead of a CDN
(``JupyterChart.enable_offline()``), so it renders in JupyterLab without network, with
its tooltips and selections. The same output also carries a static PNG made by
vl-convert: a frontend without the widget (nbviewer, a code host, an untrusted notebook
in JupyterLab, an executed report) shows the image. :func:`static_outputs` removes the
widget part from an executed notebook so that only the image remains there.

On disk: :func:`save_chart` (a chart) and :func:`save_table` (a table with the
convention it was computed under). A chart function with nothing to draw returns a
:class:`NoFigure` that says why.

Chart sizes: every chart of the package leaves its builder through :func:`titled`,
which switches altair to this module's data transformer (:func:`use_chart_limits`):
altair's own refuses more than 5,000 rows (``MaxRowsError``), which an Economy run of
1,300 episodes in four ablations already exceeds; builders whose data grows with the
length of a run aggregate before charting (:func:`window_means`).

Figure rules (:func:`check_chart`, applied by :func:`titled`): the Okabe-Ito palette,
at most 8 colour groups, no two legend entries alike, a width within the notebook output area,
and a :class:`NoFigure` sentence for a chart with nothing to show; paper export in
:func:`save_chart` (PDF/SVG/PNG, column-width presets, titles off).

Size: about 1,070 lines because this is the one gate every chart and table of the package goes
through (limits, rules, rendering, saving); splitting the rules from ``titled`` would make two.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import sys
import textwrap
from pathlib import Path
from typing import Any

import polars as pl

from ..data.csvsafe import frame_to_csv

RENDERER = "scarce_lab"
#: Most data rows one chart embeds (each data set of a layered/concatenated chart);
#: above it :class:`ChartTooLargeError`. 20,000 rows of a few columns is a few MB of
#: spec, which vl-convert renders and a browser draws without trouble.
MAX_CHART_ROWS = 20_000
#: Points per line that a chart over a run's episodes draws at most (see :func:`window_means`).
MAX_LINE_POINTS = 500


class ChartTooLargeError(ValueError):
    """A chart's data set has more rows than :data:`MAX_CHART_ROWS`; aggregate first."""


def _limited_transformer(data, max_rows: int = MAX_CHART_ROWS):
    """altair data transformer: altair's default with ``max_rows`` and an error that says
    what to do."""
    import altair as alt

    try:
        return alt.default_data_transformer(data, max_rows=max_rows)
    except alt.MaxRowsError:
        n = getattr(data, "height", None) or getattr(data, "shape", [None])[0]
        raise ChartTooLargeError(
            f"a chart's data has {n if n is not None else 'more than ' + str(max_rows)} rows, more than "
            f"{max_rows}: aggregate before charting (e.g. scarce_lab.analysis.figures.window_means)") from None


def use_chart_limits() -> None:
    """Make :func:`_limited_transformer` altair's data transformer (idempotent). Called
    by :func:`titled` (every chart of the package) and :func:`enable_offline_charts`."""
    import altair as alt

    use_theme()
    if RENDERER not in alt.data_transformers.names():
        alt.data_transformers.register(RENDERER, _limited_transformer)
    if alt.data_transformers.active != RENDERER:
        alt.data_transformers.enable(RENDERER)


def use_theme() -> None:
    """Make the package's altair theme active (idempotent): :data:`PALETTE` for nominal
    colours (a colour-blind-safe palette; one meaning per colour comes from colouring one
    field per notebook section), 11 px labels. Called by :func:`use_chart_limits`."""
    import altair as alt

    if RENDERER not in alt.theme.names():
        @alt.theme.register(RENDERER, enable=False)
        def _theme():
            return {"config": {"range": {"category": PALETTE}, "mark": {"color": PALETTE[0]},
                               "axis": {"labelFontSize": 11, "titleFontSize": 12},
                               "legend": {"labelFontSize": 11, "titleFontSize": 12}}}
    if alt.theme.active != RENDERER:
        alt.theme.enable(RENDERER)


def window_means(df: pl.DataFrame, x: str, by: list[str], values: list[str],
                 max_points: int = MAX_LINE_POINTS) -> tuple[pl.DataFrame, int]:
    """``df`` with at most ``max_points`` values of ``x`` per ``by`` group: when there
    are more, ``x`` is cut into windows of ``k`` consecutive values (``x // k * k``, the
    window start) and each of ``values`` is averaged within the window (nulls skipped).
    Returns the frame and ``k`` (1 when nothing was aggregated), for the caption.

    Raises:
        ValueError: ``max_points`` below 1.
    """
    if max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    if df.is_empty():
        return df, 1
    per_group = df.group_by(by).agg(pl.col(x).n_unique().alias("_n"))["_n"].max()
    span = int(df[x].max()) - int(df[x].min()) + 1
    if per_group is None or per_group <= max_points:
        return df, 1
    k = max(2, math.ceil(span / max_points))
    out = (df.with_columns((pl.col(x) // k * k).alias(x))
           .group_by([*by, x]).agg([pl.col(v).mean() for v in values]
                                   + [pl.col(c).max() for c in df.columns if c not in {*by, x, *values}])
           .sort([*by, x]))
    return out.select(df.columns), k


class Nothing:
    """Base of :class:`NoFigure` and :class:`~scarce_lab.analysis.layout.NoTable`: the
    reason there is nothing to show, displayed as ``No <what>: <reason>``; false."""

    what = "figure"

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"No {self.what}: {self.reason}"

    def _repr_markdown_(self) -> str:
        from .labels import displayed_markdown

        return displayed_markdown(f"*{self!r}*")

    def __bool__(self) -> bool:
        return False


class NoFigure(Nothing):
    """What a chart function returns when there is nothing to draw: the reason.

    Displays in a notebook as the sentence ``No figure: <reason>``; :func:`save_chart`
    writes no file for it (and removes an older figure of the same name).
    """


def chart_data(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with NaN (and +-inf) in float columns replaced by null, for altair.

    Polars NaN is written into a chart spec as the bare token ``NaN``, which is not
    JSON: strict parsers (browsers' ``JSON.parse``, vega's loader) reject the whole
    chart. Null is JSON and vega treats it as missing.
    """
    fix = [pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c)
           for c, dt in df.schema.items() if dt.is_float()]
    return df.with_columns(fix) if fix else df


def strict_spec(chart) -> dict:
    """The chart's Vega-Lite spec as a dict that is strict JSON.

    Raises:
        ValueError: the spec holds NaN or infinity (pass the data through
            :func:`chart_data`); the message names the chart's title.
    """
    spec = chart.to_dict()
    try:
        json.dumps(spec, allow_nan=False)
    except ValueError:
        title = spec.get("title", "(untitled)")
        raise ValueError(
            f"chart {title!r} holds NaN or infinity in its data, which is not JSON; "
            "build it from scarce_lab.analysis.figures.chart_data(df)"
        ) from None
    return spec


def caption(*parts: str) -> str:
    """One caption line from its parts (models, n, interval method), skipping empty ones."""
    return "; ".join(p for p in parts if p) + "."


def titled(chart, title: str, caption_line: str | list[str] | None = None, *, check: bool = True):
    """``chart`` with a left-aligned title and a caption under it (as subtitle; a list
    gives one line per item), checked against the figure rules (:func:`check_chart`).

    Every chart of the package leaves its builder through here, so the figure rules (the
    module docstring; :func:`check_chart`) hold for all of them.

    Returns:
        The titled chart, or a :class:`NoFigure` when the chart has no data row or every
        plotted quantity is zero.

    Raises:
        ChartRuleError: a rule above broken (:func:`check_chart` lists them; the message
            names the chart, the values and what to do instead).
    """
    import altair as alt

    use_chart_limits()
    charts_in_kernel()
    params = {"text": title, "anchor": "start", "fontSize": 14}
    if caption_line:
        # long caption lines wrap: a subtitle sets the chart's width as much as its panels do
        lines = [caption_line] if isinstance(caption_line, str) else list(caption_line)
        wrapped = [w for line in lines for w in (textwrap.wrap(line, CAPTION_CHARS) or [""])]
        params |= {"subtitle": wrapped, "subtitleColor": "#444", "subtitleFontSize": 11}
    out = chart.properties(title=alt.TitleParams(**params))
    if check:
        empty = check_chart(out)
        if empty:
            return NoFigure(f"{title}: {empty}")
    if _BOOK.active:  # after the check: a chart that is not drawn takes no colour
        apply_colour_book(out)
    return out


# -- figure rules ---------------------------------------------------------------
#: Okabe & Ito's colour-blind-safe qualitative palette (Okabe & Ito 2008, "Color Universal
#: Design"; Wong 2011, Nature Methods 8:441), in their order, black last.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
#: Most colour groups in one chart: beyond, groups are faceted or highlighted
#: (hues past ~8 are not told apart, and the palette has 8).
MAX_COLOURS = len(PALETTE)
#: Widest chart (CSS px, title and legend included) that fits JupyterLab's output area in a
#: 1,400 px window with the left sidebar open (about 1,400 - 300 sidebar - 140 gutters and prompt).
OUTPUT_WIDTH = 940
#: Longest caption line (characters) before it wraps: ~120 x 6 px fits OUTPUT_WIDTH.
CAPTION_CHARS = 120
#: Approximate width of a character of the chart's 11 px sans-serif labels (px), for estimates.
CHAR_PX = 6.5
#: Approximate width of a character of the 10 px axis tick labels (px): a label line longer
#: than the axis ``labelLimit`` is cut with "..." (checked by :func:`chart_problems`).
TICK_CHAR_PX = 6.0


#: Colours a notebook's colour book hands out after :data:`PALETTE`'s eight (a notebook colours
#: more than eight different things, one chart at most eight): grey and three of Paul Tol's
#: colour-blind-safe "muted" colours (Tol 2021, "Colour Schemes", SRON/EPS/TN/09-002), chosen
#: at least :data:`NEAR_DELTA_E` from every other book colour and :data:`REFERENCE` (Tol's
#: teal #44AA99 is 19 from Okabe-Ito's green: it read as the same colour).
BOOK_EXTRA = ["#999999", "#882255", "#999933", "#332288"]
#: The order a colour book hands colours out: :data:`PALETTE` without its yellow (weak on white
#: for points and thin lines), :data:`BOOK_EXTRA`, the yellow last.
BOOK_ORDER = [c for c in PALETTE if c != "#F0E442"] + BOOK_EXTRA + ["#F0E442"]
#: The colour of reference marks drawn at a fixed value (a collapse threshold, a chance level,
#: a zero line): a neutral dark grey that no :class:`ColourBook` hands to a group, so that a
#: reference line never reads as one of the things a notebook colours.
REFERENCE = "#4D4D4D"
#: Fixed colours with a meaning of their own in every notebook (``{colour: meaning}``):
#: marks drawn in them need no legend entry and stand for that meaning in
#: :func:`colour_meanings`.
FIXED_MEANINGS = {REFERENCE.lower(): "reference"}
#: The meaning (mark ``description``) of a chart's only series drawn without a colour field.
ONE_SERIES = "one series"
#: Two different colours closer than this CIELAB distance (Delta E 1976) read as one colour
#: (a just-noticeable difference is ~2.3; Okabe-Ito's closest pair, orange and yellow, is ~40
#: apart): :func:`colour_conflicts` treats them as one when they stand for different things.
NEAR_DELTA_E = 20.0


def reads_as(text) -> str:
    """The key under which two labels read alike (case and every space ignored:
    ``'Scripted/ urgency '`` and ``'scripted/urgency'``): one colour in the book, one thing in
    :func:`colour_conflicts`, a duplicate legend entry in :func:`chart_problems`."""
    return "".join(str(text).split()).casefold()


class ColourBook:
    """One meaning per colour within a notebook: the colour of each thing a chart
    colours (a legend entry: ``richer worker``, ``scripted/urgency``, ``after a win``), handed
    out the first time a chart draws it and kept for every later chart of the notebook, and
    never handed to another thing. Colours come in :data:`BOOK_ORDER`. Inactive (altair's own
    colours) until :func:`start_colour_book`;
    :func:`enable_offline_charts` (called by a kernel's first chart) starts a fresh one."""

    def __init__(self) -> None:
        self.active = False
        self.colours: dict[str, str] = {}  # thing as first spelt -> colour
        self._spelt: dict[str, str] = {}   # reads_as(thing) -> thing as first spelt

    @property
    def free(self) -> list[str]:
        used = set(self.colours.values())
        return [c for c in BOOK_ORDER if c not in used]

    def fits(self, things) -> bool:
        """Whether ``things`` (values, compared as text) all have or can get a colour."""
        new = {reads_as(t) for t in things} - {reads_as(t) for t in self.colours}
        return not self.active or len(new) <= len(self.free)

    def colour(self, thing) -> str:
        """The colour of ``thing`` (as text), handing out the next free one if it has none.

        Raises:
            ChartRuleError: every colour is taken (the message names the thing and the
                colours' meanings).
        """
        key = self._spelt.setdefault(reads_as(thing), str(thing))  # things that read alike: one colour
        if key not in self.colours:
            free = self.free
            if not free:
                raise ChartRuleError(
                    f"this notebook already colours {len(self.colours)} different things "
                    f"({sorted(self.colours)}); {key!r} would share a colour with one of them: facet by it, "
                    "or start a new colour book (scarce_lab.analysis.figures.start_colour_book)")
            self.colours[key] = free[0]
        return self.colours[key]


_BOOK = ColourBook()


def series_colour() -> str:
    """The colour of a chart's only series (no colour field): the active colour book's colour
    for :data:`ONE_SERIES` (so that it never stands for a group elsewhere in the notebook),
    else :data:`PALETTE`'s first. Draw such marks with ``description=ONE_SERIES``."""
    charts_in_kernel()  # a kernel's first chart may start here, before titled
    return _BOOK.colour(ONE_SERIES) if _BOOK.active else PALETTE[0]


def start_colour_book() -> ColourBook:
    """Start a fresh :class:`ColourBook` for the charts built from now on (one notebook) and
    return it."""
    _BOOK.colours.clear()
    _BOOK.active = True
    return _BOOK


def stop_colour_book() -> None:
    """Back to altair's own colours (each chart: its sorted values along :data:`PALETTE`)."""
    _BOOK.colours.clear()
    _BOOK.active = False


def colour_book() -> ColourBook:
    """The current :class:`ColourBook` (inactive unless :func:`start_colour_book` ran, or
    this is a Jupyter kernel's first chart: :func:`charts_in_kernel`)."""
    charts_in_kernel()
    return _BOOK


def _colour_domains(spec: dict, rows: list[dict]) -> dict[str, list]:
    """Per nominal/ordinal colour field without an explicit colour range: the values the
    chart draws, in legend order (:func:`_legend_order`)."""
    out: dict[str, list] = {}

    def visit(d: dict) -> None:
        col = (d.get("encoding") or {}).get("color") if isinstance(d.get("encoding"), dict) else None
        if not (isinstance(col, dict) and col.get("field") and col.get("type") in ("nominal", "ordinal")):
            return
        scale = col.get("scale") or {}
        if scale.get("range") is not None or scale.get("scheme") is not None:
            return
        dom = _legend_order(col, rows)
        out.setdefault(col["field"], [])
        out[col["field"]] += [v for v in dom if v not in out[col["field"]]]

    _walk(spec, visit)
    return out


def _legend_order(col: dict, rows: list[dict]) -> list:
    """The values of colour encoding ``col`` that ``rows`` hold, in legend order: the
    encoding's ``sort`` list, then the rest ascending (as Vega-Lite sorts them)."""
    values = {r[col["field"]] for r in rows if r.get(col["field"]) is not None}
    order = col.get("sort") if isinstance(col.get("sort"), list) else []
    return [v for v in order if v in values] + sorted((v for v in values if v not in order), key=str)


def apply_colour_book(chart, book: ColourBook | None = None) -> None:
    """Give every nominal colour encoding of ``chart`` (an altair chart, changed in place,
    layers, facets and concatenations included) an explicit scale: its values and their
    colours from ``book`` (default: the current one). Called by :func:`titled` while a book is
    active.

    Raises:
        ChartRuleError: the book has no colour left for a new value.
    """
    import altair as alt

    book = book or _BOOK
    spec = chart.to_dict()
    domains = _colour_domains(spec, _rows(spec))
    if not domains:
        return
    scales = {f: alt.Scale(domain=dom, range=[book.colour(v) for v in dom]) for f, dom in domains.items()}

    def visit(obj) -> None:
        if isinstance(obj, list):
            for x in obj:
                visit(x)
            return
        kw = getattr(obj, "_kwds", None)
        if not isinstance(kw, dict):
            return
        enc = kw.get("encoding")
        col = getattr(enc, "_kwds", {}).get("color") if enc is not None else None
        if col is not None and hasattr(col, "_kwds"):
            field = col.to_dict().get("field") if hasattr(col, "to_dict") else None
            if field in scales:
                enc._kwds["color"] = col.copy(deep=False)
                enc._kwds["color"]._kwds["scale"] = scales[field]
                # a second channel on the field (strokeDash, shape) gets the same values, so
                # that Vega-Lite still draws one legend for both
                for ch in ("strokeDash", "shape", "size", "opacity", "strokeWidth"):
                    other = enc._kwds.get(ch)
                    if other is not None and hasattr(other, "_kwds") and hasattr(other, "to_dict") \
                            and other.to_dict().get("field") == field:
                        old = other._kwds.get("scale")
                        scale = old.copy(deep=False) if hasattr(old, "_kwds") else alt.Scale()
                        scale._kwds["domain"] = list(scales[field]._kwds["domain"])
                        enc._kwds[ch] = other.copy(deep=False)
                        enc._kwds[ch]._kwds["scale"] = scale
        for k in ("layer", "spec", "hconcat", "vconcat", "concat"):
            if k in kw:
                visit(kw[k])

    visit(chart)


#: Colour channels of an encoding and colour properties of a mark definition.
_COLOUR_CHANNELS = ("color", "fill", "stroke")


def _fixed_thing(value: str, mark: dict | None, what: str) -> str:
    """The meaning of a colour drawn at a fixed value: the mark's ``description`` when set,
    else the colour's :data:`FIXED_MEANINGS` entry, else ``what`` (how it is drawn)."""
    if isinstance(mark, dict):
        # an error bar's description sits on its parts
        for m in (mark, mark.get("rule"), mark.get("ticks")):
            if isinstance(m, dict) and m.get("description"):
                return str(m["description"])
    return FIXED_MEANINGS.get(str(value).lower(), what)


def colour_meanings(spec: dict) -> dict[str, dict[str, str]]:
    """What each colour of a Vega-Lite ``spec`` stands for: ``{colour: {thing: field}}``.

    - a nominal/ordinal colour encoding (``color``/``fill``/``stroke`` with a ``field``): one
      entry per value (explicit ``scale.domain``/``range`` when given, else Vega-Lite's
      default: the sorted values along :data:`PALETTE`, the package theme's range), the
      field as its source;
    - a colour drawn at a fixed value: the mark's ``color``/``fill``/``stroke`` (and those of
      its ``point``/``line`` overlays), an encoding's ``value``, and each ``condition``'s
      ``value``. Its thing is the mark's ``description`` when set, else its
      :data:`FIXED_MEANINGS` name (``reference``), else for a condition ``where <test>``
      (the else value: ``where not (<test>)``), else ``a fixed colour`` (one series drawn in
      one colour); the source reads ``fixed``/``condition``.

    For :func:`colour_conflicts`. Colours are lower-case hex as written in the spec.
    """
    rows = _rows(spec)
    out: dict[str, dict[str, str]] = {}

    def add(colour, thing: str, source: str) -> None:
        if isinstance(colour, str) and colour.startswith("#"):
            out.setdefault(colour.lower(), {})[thing] = source

    def visit(d: dict) -> None:
        mark = d.get("mark") if isinstance(d.get("mark"), dict) else None
        for m in (mark, mark.get("point"), mark.get("line")) if mark else ():  # the mark and its overlays
            if isinstance(m, dict):
                for k in _COLOUR_CHANNELS:
                    add(m.get(k), _fixed_thing(m.get(k), mark, "a fixed colour"), "fixed")
        enc = d.get("encoding") if isinstance(d.get("encoding"), dict) else {}
        for ch in _COLOUR_CHANNELS:
            col = enc.get(ch)
            if not isinstance(col, dict):
                continue
            conds = col.get("condition")
            conds = conds if isinstance(conds, list) else [conds] if isinstance(conds, dict) else []
            tests = []
            for c in conds:
                test = c.get("test") or c.get("param") or "a selection"
                tests.append(str(test))
                if "value" in c:
                    add(c["value"], _fixed_thing(c["value"], mark, f"where {test}"), "condition")
            if "value" in col:
                otherwise = f"where not ({' or '.join(tests)})" if tests else "a fixed colour"
                add(col["value"], _fixed_thing(col["value"], mark, otherwise), "condition" if tests else "fixed")
            if not (col.get("field") and col.get("type") in ("nominal", "ordinal")):
                continue
            scale = col.get("scale") or {}
            if isinstance(scale.get("domain"), list) and isinstance(scale.get("range"), list):
                pairs = zip(scale["domain"], scale["range"], strict=False)
            elif scale.get("scheme") is not None:
                continue
            else:
                dom = _legend_order(col, rows)
                pairs = zip(dom, [*PALETTE] * (len(dom) // len(PALETTE) + 1), strict=False)
            for value, colour in pairs:
                out.setdefault(str(colour).lower(), {})[str(value)] = col["field"]

    _walk({k: v for k, v in spec.items() if k != "config"}, visit)  # the theme's defaults draw nothing
    return out


def _lab(colour: str) -> tuple[float, float, float] | None:
    """CIELAB (D65) of a ``#rgb``/``#rrggbb`` colour; ``None`` for anything else."""
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6 or any(c not in "0123456789abcdefABCDEF" for c in h):
        return None

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(h[i:i + 2], 16) / 255) for i in (0, 2, 4))
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = (f(t) for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e(a: str, b: str) -> float:
    """CIE 1976 colour difference of two hex colours (Euclidean distance in CIELAB);
    ``inf`` when either is not a hex colour."""
    la, lb = _lab(a), _lab(b)
    if la is None or lb is None:
        return float("inf")
    return sum((x - y) ** 2 for x, y in zip(la, lb, strict=True)) ** 0.5


def colour_conflicts(specs) -> list[str]:
    """Where the charts ``specs`` (Vega-Lite dicts, e.g. every chart of one notebook, as
    ``(name, spec)`` pairs or bare specs) break "one meaning per colour": a colour that stands
    for two things, two colours closer than :data:`NEAR_DELTA_E` (they read as one) that stand
    for different things, or a thing drawn in two colours. Colours at fixed values count
    (:func:`colour_meanings`). Returns one message per conflict."""
    by_colour: dict[str, dict[str, str]] = {}
    by_thing: dict[str, dict[str, str]] = {}
    for i, item in enumerate(specs, 1):
        name, spec = item if isinstance(item, tuple) else (None, item)
        if name is None:
            t = spec.get("title")
            name = f"chart {i} ({(t.get('text') if isinstance(t, dict) else t) or 'untitled'})"
        for colour, things in colour_meanings(spec).items():
            for label, source in things.items():
                thing = reads_as(label)  # one group spelt two ways is one thing
                by_colour.setdefault(colour, {}).setdefault(thing, name)
                if source not in ("fixed", "condition") or not (label.startswith("where ") or label == "a fixed colour"):
                    by_thing.setdefault(thing, {}).setdefault(colour, name)
    out = [f"colour {c} stands for {len(t)} things: " + "; ".join(f"{k!r} in {v}" for k, v in t.items())
           for c, t in by_colour.items() if len(t) > 1]
    colours = sorted(by_colour)
    for i, a in enumerate(colours):
        for b in colours[i + 1:]:
            if (d := delta_e(a, b)) < NEAR_DELTA_E and set(by_colour[a]) != set(by_colour[b]):
                out.append(f"colours {a} and {b} look alike (Delta E {d:.0f} < {NEAR_DELTA_E:g}) but stand for "
                           f"different things: " + "; ".join(f"{k!r} in {v}" for k, v in by_colour[a].items())
                           + " / " + "; ".join(f"{k!r} in {v}" for k, v in by_colour[b].items()))
    out += [f"{thing!r} is drawn in {len(c)} colours: " + "; ".join(f"{k} in {v}" for k, v in c.items())
            for thing, c in by_thing.items() if len(c) > 1]
    return out


def wrap_columns(panel_width: int, n_panels: int, legend_width: int = 0) -> int:
    """How many panels of ``panel_width`` px fit side by side in :data:`OUTPUT_WIDTH`
    (with axis gutters and a right-hand legend of ``legend_width``): at least 1, at most
    ``n_panels``. For ``facet(..., columns=wrap_columns(...))``."""
    return max(1, min(n_panels, (OUTPUT_WIDTH - 80 - legend_width) // (panel_width + 70)))


class ChartRuleError(ValueError):
    """A chart breaks a figure rule of :func:`check_chart` (the message says which and what
    to do instead)."""


def _walk(spec, fn) -> None:
    if isinstance(spec, dict):
        fn(spec)
        for v in spec.values():
            _walk(v, fn)
    elif isinstance(spec, list):
        for v in spec:
            _walk(v, fn)


def _rows(spec: dict) -> list[dict]:
    rows: list[dict] = []
    for data in (spec.get("datasets") or {}).values():
        rows += [r for r in data if isinstance(r, dict)]
    _walk({k: v for k, v in spec.items() if k != "datasets"},
          lambda d: rows.extend(r for r in (d.get("data") or {}).get("values", []) if isinstance(r, dict))
          if isinstance(d.get("data"), dict) else None)
    return rows


def chart_problems(spec: dict) -> tuple[list[str], str | None]:
    """The figure rules a Vega-Lite ``spec`` breaks, as messages, and why it is empty
    (``None`` when it has something to show). See :func:`check_chart`."""
    problems: list[str] = []
    rows = _rows(spec)
    colour_fields: dict[str, int | None] = {}
    quantities: dict[str, set[str]] = {"y": set(), "x": set()}
    tick_fields: list[tuple[str, int, str | None]] = []  # (field, label limit px, line separator)

    def visit(d: dict) -> None:
        enc = d.get("encoding")
        if not isinstance(enc, dict):
            return
        col = enc.get("color")
        if isinstance(col, dict) and col.get("field") and col.get("type") in ("nominal", "ordinal"):
            legend = col.get("legend")
            limit = legend.get("labelLimit") if isinstance(legend, dict) else None
            if legend is not None or col["field"] not in colour_fields:
                colour_fields[col["field"]] = limit if legend is not None else 160
        for ch in ("y", "x"):
            e = enc.get(ch)
            if isinstance(e, dict) and e.get("type") == "quantitative" and e.get("field") and not e.get("aggregate"):
                quantities[ch].add(e["field"])
            if isinstance(e, dict) and e.get("type") in ("nominal", "ordinal") and e.get("field") \
                    and e.get("axis", {}) is not None:
                axis = e.get("axis") or {}
                limit = axis.get("labelLimit", 180)
                expr = axis.get("labelExpr")
                split = re.fullmatch(r"split\(datum\.(?:label|value), '(.+)'\)", expr or "")
                if limit and (expr is None or split):  # another label expression: not estimated
                    sep = split.group(1).encode().decode("unicode_escape") if split else None
                    tick_fields.append((e["field"], limit, sep))

    _walk(spec, visit)
    title = spec.get("title")
    name = (title.get("text") if isinstance(title, dict) else title) or "(untitled)"
    for field, limit in colour_fields.items():
        values = sorted({str(r[field]) for r in rows if r.get(field) is not None})
        if len(values) > MAX_COLOURS:
            problems.append(f"chart {name!r} colours {len(values)} groups of {field!r} (at most {MAX_COLOURS}: "
                            "facet by it, or highlight a few and grey the rest)")
        seen: dict[str, str] = {}
        cut = int(limit / CHAR_PX) if limit else None
        for v in values:
            key = reads_as(v)[:cut] if cut else reads_as(v)
            if key in seen:
                problems.append(f"chart {name!r}: legend entries {seen[key]!r} and {v!r} read alike"
                                + (f" (labels cut at {limit} px)" if cut and reads_as(v) != reads_as(seen[key]) else "")
                                + ": label the groups by what differs between them")
            seen.setdefault(key, v)
    for field, limit, sep in tick_fields:
        long = sorted({str(r[field]) for r in rows if r.get(field) is not None
                       and any(len(line) * TICK_CHAR_PX > limit for line in (str(r[field]).split(sep) if sep else [str(r[field])]))})
        if long:
            problems.append(f"chart {name!r}: tick labels of {field!r} longer than the axis's {limit} px label limit "
                            f"would be cut with '...': {long[:3]} (label the groups by what differs between them, "
                            "put the rest in the tooltip, or raise labelLimit)")
    width = estimate_width(spec, rows)
    if width > OUTPUT_WIDTH:
        problems.append(f"chart {name!r} is about {width} px wide, wider than the notebook output area "
                        f"({OUTPUT_WIDTH} px): wrap its facets (columns=...) or narrow its panels")
    empty = None
    if not rows and not any("data" in str(k) for k in spec):
        empty = "there is no data to draw"
    elif rows and (fields := quantities["y"] or quantities["x"]):  # the value axis: y, else x
        vals = [r.get(q) for r in rows for q in fields if r.get(q) is not None]
        if vals and all(isinstance(v, int | float) and not isinstance(v, bool) and v == 0 for v in vals):
            empty = "every plotted value is zero"
    return problems, empty


def estimate_width(spec: dict, rows: list[dict] | None = None) -> int:
    """Estimated width (CSS px) of a Vega-Lite ``spec`` as drawn: panel width times the
    facet columns (wrapped facets: ``columns``) or the sum of a horizontal concatenation,
    plus an axis gutter and a right-hand legend (longest label). A ``"container"`` width
    counts as 0 (it takes the output area's width)."""
    rows = _rows(spec) if rows is None else rows

    def width_of(s: dict) -> int:
        if "hconcat" in s:
            return sum(width_of(x) for x in s["hconcat"]) + 10 * (len(s["hconcat"]) - 1)
        if "vconcat" in s:
            return max((width_of(x) for x in s["vconcat"]), default=0)
        if "concat" in s:
            n = s.get("columns") or len(s["concat"])
            return max((width_of(x) for x in s["concat"]), default=0) * min(n, len(s["concat"]))
        if "facet" in s and "spec" in s:
            inner = width_of(s["spec"]) + 20
            f = s["facet"]
            field = f.get("field") if "field" in f else (f.get("column") or {}).get("field")
            n = len({r.get(field) for r in rows}) if field else 1
            if s.get("columns"):
                n = min(n, s["columns"])
            return inner * max(n, 1)
        if "layer" in s:
            w = s.get("width")
            return w if isinstance(w, int) else max((width_of(x) for x in s["layer"]), default=0)
        w = s.get("width")
        if isinstance(w, int):
            return w
        if isinstance(w, dict) and "step" in w:
            x = (s.get("encoding") or {}).get("x") or {}
            return int(w["step"]) * len({r.get(x.get("field")) for r in rows})
        return 0 if w == "container" else 300

    labels: list[str] = []

    def visit(d: dict) -> None:
        col = (d.get("encoding") or {}).get("color") if isinstance(d.get("encoding"), dict) else None
        if isinstance(col, dict) and col.get("field") and col.get("legend", {}) is not None:
            lg = col.get("legend") or {}
            if lg.get("orient", "right") in ("right", "left"):
                labels.extend(str(r.get(col["field"])) for r in rows if r.get(col["field"]) is not None)

    _walk(spec, visit)
    legend = int(min(max(len(x) for x in labels) * CHAR_PX, 260)) + 50 if labels else 0
    title = spec.get("title") if isinstance(spec.get("title"), dict) else {"text": spec.get("title") or ""}
    sub = title.get("subtitle") or []
    text = max([len(str(title.get("text") or "")) * 8, *(len(x) * 6 for x in ([sub] if isinstance(sub, str) else sub))])
    return max(int(width_of(spec)) + 60 + legend, text)


def check_chart(chart) -> str | None:
    """Check an altair chart against the figure rules; return why it is empty (``None``
    when it has something to show).

    Raises:
        ChartRuleError: more than :data:`MAX_COLOURS` colour groups, two legend entries
            that read alike (equal after case and space folding, or after the legend's
            label cut), tick labels longer than their axis's ``labelLimit`` (cut with "...";
            estimated at :data:`TICK_CHAR_PX` per character, per line of a
            ``split(datum.label, sep)`` label expression), or an estimated width over
            :data:`OUTPUT_WIDTH`.
    """
    problems, empty = chart_problems(chart.to_dict())
    if problems:
        raise ChartRuleError("; ".join(problems))
    return empty


# -- notebook rendering ---------------------------------------------------------------
def _png_size(png: bytes) -> tuple[int, int]:
    w, h = struct.unpack(">II", png[16:24])
    return w, h


_PNG_CACHE: dict[str, tuple[bytes, int, int]] = {}


def static_png(spec: dict, scale: float = 2.0) -> tuple[bytes, int, int]:
    """PNG bytes of a Vega-Lite ``spec`` (vl-convert, no browser) and its size in CSS
    pixels (the image is ``scale`` times larger). The last few results are kept, so a
    chart saved by :func:`save_chart` and then displayed is converted once."""
    from altair.vegalite.v6.display import png_renderer  # altair's own "png" renderer

    key = hashlib.sha256(json.dumps([spec, scale], sort_keys=True).encode()).hexdigest()
    if key in _PNG_CACHE:
        return _PNG_CACHE[key]
    bundle, _ = png_renderer(spec, scale_factor=scale)
    png = bundle["image/png"]
    png = base64.b64decode(png) if isinstance(png, str) else png
    w, h = _png_size(png)
    if len(_PNG_CACHE) >= 16:
        _PNG_CACHE.pop(next(iter(_PNG_CACHE)))
    _PNG_CACHE[key] = (png, round(w / scale), round(h / scale))
    return _PNG_CACHE[key]


def offline_renderer(spec: dict, **metadata) -> tuple[dict, dict]:
    """altair renderer: the offline ``JupyterChart`` widget plus a static PNG.

    A frontend with the widget manager (JupyterLab with anywidget installed) shows the
    interactive chart; any other shows the PNG. Without anywidget the output is the PNG
    alone (its text form says why).
    """
    json.dumps(spec, allow_nan=False)  # ValueError on NaN: never hand the browser bad JSON
    png, w, h = static_png(spec)
    data: dict[str, Any] = {"image/png": base64.b64encode(png).decode("ascii")}
    meta: dict[str, Any] = {"image/png": {"width": w, "height": h}}
    widget: Any = None
    try:
        from altair.vegalite.v6.display import jupyter_renderer

        widget = jupyter_renderer(spec, offline=True, embed_options=metadata.get("embed_options"))
    except ImportError:  # no such renderer in this altair, or anywidget missing
        pass
    if widget is None:
        data["text/plain"] = "<altair chart: static image only (install anywidget for interactive charts)>"
        return data, meta
    wdata, wmeta = widget if isinstance(widget, tuple) else (widget, {})
    data |= wdata
    meta |= wmeta or {}
    return data, meta


_KERNEL_CHARTS = False  # whether charts_in_kernel has run in this process


def charts_in_kernel() -> None:
    """Once per process, at the first chart the package builds (:func:`titled`, or the
    first colour it asks of the book: :func:`series_colour`, :func:`colour_book`): in a
    Jupyter kernel, start the notebook's :class:`ColourBook` and, unless another renderer
    was chosen (altair's is still ``default``), show charts offline
    (:func:`enable_offline_charts`). So a fresh notebook renders without a CDN and
    without a setup call; outside a kernel (scripts, tests) nothing changes. Importing
    ``scarce_lab`` does not import altair: this runs at the first chart."""
    global _KERNEL_CHARTS
    if _KERNEL_CHARTS:
        return
    _KERNEL_CHARTS = True
    if "ipykernel" not in sys.modules:
        return
    import altair as alt

    if alt.renderers.active == "default":
        enable_offline_charts()
    else:
        start_colour_book()


def enable_offline_charts() -> None:
    """Show altair charts with :func:`offline_renderer` from now on (idempotent), and start
    a fresh colour book.

    The first chart of a Jupyter kernel calls it (:func:`charts_in_kernel`); call it
    yourself to render a chart of your own offline before any of the package's, or to
    start a new colour book. See the module docstring for what renders where; JupyterLab
    needs the ``anywidget`` and ``jupyterlab_widgets`` packages (both in the ``notebooks``
    extra).
    """
    import altair as alt

    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, offline_renderer)
    alt.renderers.enable(RENDERER)
    use_chart_limits()
    start_colour_book()  # one meaning per colour from here on


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def static_outputs(nb) -> int:
    """Drop widget views (and saved widget state) from an executed notebook ``nb`` in
    place, so that each chart output keeps only its static image; returns how many
    outputs changed. A widget view without its kernel shows an error in JupyterLab, and
    the saved state of an offline chart repeats ~1 MB of JavaScript per chart."""
    changed = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and WIDGET_MIME in data and any(k.startswith("image/") for k in data):
                del data[WIDGET_MIME]
                if "text/plain" in data and "JupyterChart" in str(data["text/plain"]):
                    data["text/plain"] = "<altair chart>"
                changed += 1
    nb.metadata.pop("widgets", None)
    return changed


# -- files ------------------------------------------------------------------------------
#: Paper figure widths (points = CSS px at 72 dpi): a two-column paper's single column
#: (3.5 in, e.g. ACM/IEEE) and its full text width (7.16 in). ``None``: the chart's own size.
SIZE_PRESETS: dict[str | None, int | None] = {None: None, "one_column": 252, "two_column": 516}
#: Smallest scale a preset may shrink a chart to: below it the 11 px labels fall under
#: ~6 pt and the figure needs fewer panels, not a smaller font.
MIN_PAPER_SCALE = 0.55
FORMATS = ("png", "svg", "pdf")


def save_chart(chart, name: str, out_dir: str | Path = "figures", scale: float = 2.0, *,
               formats: tuple[str, ...] = ("png", "svg"), size: str | None = None,
               title: bool = True) -> list[Path]:
    """Save an altair chart as ``<out_dir>/<name>.<fmt>`` for each of ``formats``
    (``png``, ``svg``, ``pdf``; vl-convert, no browser); return the paths.

    Paper export: ``size="one_column"`` or ``"two_column"`` (:data:`SIZE_PRESETS`)
    scales the figure to that width (PNG at 300 dpi); ``title=False`` drops the title and
    subtitle from the files (the caption goes in the paper) and writes them to
    ``<name>.caption.txt`` instead.

    A :class:`NoFigure` writes nothing, removes older files of that name in ``out_dir`` (so
    a figure of earlier data cannot pass for this data's) and returns [].

    Raises:
        ValueError: ``name`` is empty or contains a path separator, an unknown format or
            size, or the chart's data holds NaN (see :func:`strict_spec`).
        ChartRuleError: the preset would shrink the chart below :data:`MIN_PAPER_SCALE`.
    """
    import vl_convert as vlc

    _check_name(name)
    if bad := [f for f in formats if f not in FORMATS]:
        raise ValueError(f"save_chart: formats must be among {FORMATS}, got {bad}")
    if size not in SIZE_PRESETS:
        raise ValueError(f"save_chart: size must be one of {sorted(k for k in SIZE_PRESETS if k)} or None, got {size!r}")
    out = Path(out_dir)
    if isinstance(chart, NoFigure):
        for ext in (*FORMATS, "caption.txt"):
            (out / f"{name}.{ext}").unlink(missing_ok=True)
        return []
    use_chart_limits()
    spec = strict_spec(chart)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if not title and "title" in spec:
        t = spec.pop("title")
        text = t.get("text", "") if isinstance(t, dict) else str(t)
        sub = t.get("subtitle", []) if isinstance(t, dict) else []
        lines = [text, *([sub] if isinstance(sub, str) else sub)]
        cap = out / f"{name}.caption.txt"
        cap.write_text("\n".join(x for x in lines if x) + "\n")
        paths.append(cap)
    fig_scale = 1.0
    if SIZE_PRESETS[size]:
        _, w, _ = static_png(spec, 1.0)
        fig_scale = SIZE_PRESETS[size] / w
        if fig_scale < MIN_PAPER_SCALE:
            raise ChartRuleError(f"chart {name!r} is {w} px wide: {size} ({SIZE_PRESETS[size]} pt) would shrink it to "
                                 f"{fig_scale:.2f}, its labels under 6 pt; draw fewer panels or wrap them")
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        if fmt == "png":
            dpi_scale = (300 / 72) * fig_scale if size else scale
            path.write_bytes(static_png(spec, dpi_scale)[0])
        elif fmt == "svg":
            path.write_text(_scaled_svg(vlc.vegalite_to_svg(spec, vl_version=_vl_version()), fig_scale))
        else:
            path.write_bytes(vlc.vegalite_to_pdf(spec, scale=fig_scale, vl_version=_vl_version()))
        paths.append(path)
    return paths


def _scaled_svg(svg: str, scale: float) -> str:
    """``svg`` (vl-convert's, with a ``viewBox``) drawn at ``scale`` times its size: the
    root element's ``width``/``height`` change, the drawing scales with them."""
    if scale == 1.0:
        return svg
    head, rest = svg.split(">", 1)
    head = re.sub(r'\b(width|height)="([0-9.]+)"', lambda m: f'{m[1]}="{float(m[2]) * scale:.1f}"', head)
    return head + ">" + rest


def _vl_version() -> str:
    """The Vega-Lite version altair writes (``"6.1"`` from ``v6.1.0``), for vl-convert."""
    import altair as alt

    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def markdown_table(df: pl.DataFrame, float_digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (floats rounded to ``float_digits``)."""
    cols = df.columns

    def fmt(v) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.{float_digits}f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(fmt(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join(lines) + "\n"


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)


def latex_table(df: pl.DataFrame, float_digits: int = 3, caption: str | None = None) -> str:
    """A ``booktabs`` LaTeX ``tabular`` of ``df`` (text left-aligned, numbers right;
    floats rounded to ``float_digits``, NaN and null empty), inside a ``table``
    environment with ``caption`` when given (needs ``\\usepackage{booktabs}``)."""
    def fmt(v) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        if isinstance(v, float):
            return f"{v:.{float_digits}f}"
        return latex_escape(str(v))

    align = "".join("r" if dt.is_numeric() else "l" for dt in df.schema.values())
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(latex_escape(c) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(fmt(v) for v in row) + r" \\" for row in df.iter_rows()]
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines)
    if caption:
        body = "\\begin{table}\n\\centering\n" + body + f"\n\\caption{{{latex_escape(caption)}}}\n\\end{{table}}"
    return body + "\n"


def convention_dict(convention: Any) -> dict[str, Any]:
    """A table's convention as a plain JSON-able dict: a mapping as given, a dataclass
    (e.g. :class:`scarce_lab.environments.sovsim.analysis.conventions.Convention`) by its fields.

    Raises:
        TypeError: anything else (a table's convention is named settings, not prose).
        ValueError: an empty convention.
    """
    import dataclasses

    if dataclasses.is_dataclass(convention) and not isinstance(convention, type):
        out = dataclasses.asdict(convention)
    elif isinstance(convention, dict):
        out = dict(convention)
    else:
        raise TypeError(f"a table's convention must be a dict or a dataclass, got {type(convention).__name__}")
    if not out:
        raise ValueError("a table's convention is empty: state what it was computed under")
    return {str(k): _json_safe(v if isinstance(v, str | int | float | bool | list | dict | type(None)) else str(v))
            for k, v in out.items()}


#: File suffixes :func:`save_table` writes (a table with nothing to show removes them).
TABLE_FILES = (".csv", ".md", ".tex", ".convention.json")


def save_table(df: pl.DataFrame, name: str, out_dir: str | Path = "figures", *,
               convention: Any) -> list[Path]:
    """Save ``df`` as ``<out_dir>/<name>.csv``, ``.md`` and ``.tex`` (:func:`latex_table`,
    the convention as its caption) and its ``convention`` as ``<name>.convention.json``;
    return the four paths (csv, md, convention, tex).

    ``convention`` (required): what the numbers were computed under, as a dict or a
    dataclass (:func:`convention_dict`): e.g. SovSim's :class:`Convention` (survival
    definition strict/lenient, preset, thresholds) plus the interval method. The
    sidecar holds ``{"table": name, "rows": n, "columns": [...], "convention": {...}}``
    and the Markdown file ends with a footnote listing it, so a table read without its
    notebook still says which definitions it used.

    Nested columns (lists, structs) are written as strict JSON text (NaN and infinities
    as null) in both table files.

    Raises:
        TypeError, ValueError: a convention that is not a non-empty dict or dataclass;
            a bad ``name``.
    """
    _check_name(name)
    conv = convention_dict(convention)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv, md, meta = out / f"{name}.csv", out / f"{name}.md", out / f"{name}.convention.json"
    flat = df.with_columns(
        pl.Series(c, [None if v is None else json.dumps(_json_safe(v), default=str, allow_nan=False)
                      for v in df[c].to_list()], dtype=pl.String)
        for c, dt in df.schema.items()
        if dt.is_nested()
    )
    frame_to_csv(flat, csv)
    note = "; ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in conv.items())
    md.write_text(markdown_table(flat) + f"\nComputed under: {note}.\n")
    meta.write_text(json.dumps({"table": name, "rows": df.height, "columns": df.columns, "convention": conv},
                               indent=2, allow_nan=False, default=str) + "\n")
    tex = out / f"{name}.tex"
    tex.write_text(latex_table(flat, caption=f"{name}. Computed under: {note}."))
    return [csv, md, meta, tex]


def _json_safe(v):
    """``v`` with NaN and infinities as ``None`` (strict JSON has no NaN)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    return v


#: The longest suffix a figure or table file gets (``<name>.convention.json``); a stem
#: must leave room for it in a file name of 255 bytes (the common file-system limit).
_LONGEST_SUFFIX = max(len(x) for x in (*TABLE_FILES, ".caption.txt", *(f".{f}" for f in FORMATS)))


def _check_name(name: str) -> None:
    """Refuse a stem that is not one plain, visible file name in ``out_dir``: empty, a path
    separator, a leading dot (``..``, ``.x``: a hidden file, or one that reads as a path),
    a control character, or too long for every file of it to be written (a table half
    saved would sit beside an older half of other data)."""
    if (not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith(".")
            or any(ord(c) < 32 or ord(c) == 127 for c in name)
            or len(name.encode("utf-8")) + _LONGEST_SUFFIX > 255):
        raise ValueError(f"figure/table name must be a plain file stem (no path separator, no leading dot, no "
                         f"control character, at most {255 - _LONGEST_SUFFIX} bytes), got {name!r}")
