"""Charts in notebooks (offline, interactive, with a static image) and on disk.

Rendering (:func:`enable_offline_charts`): altair's own offline Jupyter path. Each chart
is shown as an ``alt.JupyterChart`` widget (anywidget) whose JavaScript (vega, vega-lite,
vega-embed) comes from the ``vl-convert-python`` package instead of a CDN
(``JupyterChart.enable_offline()``), so it renders in JupyterLab without network, with
its tooltips and selections. The same output also carries a static PNG made by
vl-convert: a frontend without the widget (nbviewer, a code host, an untrusted notebook
in JupyterLab, an executed report) shows the image. :func:`static_outputs` removes the
widget part from an executed notebook so that only the image remains there.

On disk: :func:`save_chart` writes PNG + SVG; :func:`save_table` CSV + Markdown.
A chart function with nothing to draw returns a :class:`NoFigure` that says why; it
displays as that sentence and :func:`save_chart` writes no file for it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
from pathlib import Path
from typing import Any

import polars as pl

RENDERER = "scarce_lab"
CI_T = "95% t-intervals over simulations"


class NoFigure:
    """What a chart function returns when there is nothing to draw: the reason.

    Displays in a notebook as the sentence ``No figure: <reason>``; :func:`save_chart`
    writes no file for it (and removes an older figure of the same name).
    """

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"No figure: {self.reason}"

    def _repr_markdown_(self) -> str:
        return f"*No figure: {self.reason}*"

    def __bool__(self) -> bool:
        return False


def chart_data(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with NaN (and +-inf) in float columns replaced by null, for altair.

    Polars NaN is written into a chart spec as the bare token ``NaN``, which is not
    JSON: strict parsers (browsers' ``JSON.parse``, vega's loader) reject the whole
    chart. Null is JSON and vega treats it as missing.
    """
    fix = [
        pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c)
        for c, dt in df.schema.items()
        if dt.is_float()
    ]
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


def titled(chart, title: str, caption_line: str | list[str] | None = None):
    """``chart`` with a left-aligned title and a caption under it (as subtitle; a list
    gives one line per item)."""
    import altair as alt

    params = {"text": title, "anchor": "start", "fontSize": 14}
    if caption_line:
        params |= {"subtitle": caption_line, "subtitleColor": "#444", "subtitleFontSize": 11}
    return chart.properties(title=alt.TitleParams(**params))


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
    try:
        from altair.vegalite.v6.display import jupyter_renderer
    except ImportError:
        jupyter_renderer = None
    widget: Any = None
    if jupyter_renderer is not None:
        try:
            widget = jupyter_renderer(spec, offline=True, embed_options=metadata.get("embed_options"))
        except ImportError:  # anywidget missing
            widget = None
    if widget is None:
        data["text/plain"] = "<altair chart: static image only (install anywidget for interactive charts)>"
        return data, meta
    wdata, wmeta = widget if isinstance(widget, tuple) else (widget, {})
    data |= wdata
    meta |= wmeta or {}
    return data, meta


def enable_offline_charts() -> None:
    """Show altair charts with :func:`offline_renderer` from now on (idempotent).

    Notebooks call it once in their setup cell. See the module docstring for what renders
    where; JupyterLab needs the ``anywidget`` and ``jupyterlab_widgets`` packages (both in
    the ``notebooks`` extra).
    """
    import altair as alt

    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, offline_renderer)
    alt.renderers.enable(RENDERER)


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
def save_chart(chart, name: str, out_dir: str | Path = "figures", scale: float = 2.0) -> list[Path]:
    """Save an altair chart as ``<out_dir>/<name>.png`` and ``.svg``; return both paths.

    A :class:`NoFigure` writes nothing, removes an older ``<name>.png``/``.svg`` in
    ``out_dir`` (so a figure of earlier data cannot pass for this data's) and returns [].

    Raises:
        ValueError: ``name`` is empty or contains a path separator, or the chart's data
            holds NaN (see :func:`strict_spec`).
    """
    _check_name(name)
    out = Path(out_dir)
    if isinstance(chart, NoFigure):
        for ext in ("png", "svg"):
            (out / f"{name}.{ext}").unlink(missing_ok=True)
        return []
    spec = strict_spec(chart)
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{name}.png", out / f"{name}.svg"
    png.write_bytes(static_png(spec, scale)[0])
    chart.save(str(svg), format="svg")
    return [png, svg]


def markdown_table(df: pl.DataFrame, float_digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (floats rounded to ``float_digits``)."""
    cols = df.columns

    def fmt(v) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.{float_digits}f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def save_table(df: pl.DataFrame, name: str, out_dir: str | Path = "figures") -> list[Path]:
    """Save ``df`` as ``<out_dir>/<name>.csv`` and ``.md``; return both paths.

    Nested columns (lists, structs) are written as strict JSON text (NaN and infinities
    as null) in both files.
    """
    _check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv, md = out / f"{name}.csv", out / f"{name}.md"
    flat = df.with_columns(
        pl.Series(c, [None if v is None else json.dumps(_json_safe(v), default=str, allow_nan=False)
                      for v in df[c].to_list()], dtype=pl.String)
        for c, dt in df.schema.items()
        if dt.is_nested()
    )
    flat.write_csv(csv)
    md.write_text(markdown_table(flat))
    return [csv, md]


def _json_safe(v):
    """``v`` with NaN and infinities as ``None`` (strict JSON has no NaN)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    return v


def _check_name(name: str) -> None:
    if not name or "/" in name or "\\" in name:
        raise ValueError(f"figure/table name must be a plain file stem, got {name!r}")
