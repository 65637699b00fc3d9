"""Write charts (PNG + SVG through vl-convert) and tables (CSV + Markdown) to ``figures/``."""

from __future__ import annotations

from pathlib import Path

import polars as pl


def save_chart(chart, name: str, out_dir: str | Path = "figures", scale: float = 2.0) -> list[Path]:
    """Save an altair chart as ``<out_dir>/<name>.png`` and ``.svg``; return both paths.

    Raises:
        ValueError: ``name`` is empty or contains a path separator.
    """
    _check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{name}.png", out / f"{name}.svg"
    chart.save(str(png), format="png", scale_factor=scale)
    chart.save(str(svg), format="svg")
    return [png, svg]


def markdown_table(df: pl.DataFrame, float_digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (floats rounded to ``float_digits``)."""
    cols = df.columns

    def fmt(v) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return "nan" if v != v else f"{v:.{float_digits}f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def save_table(df: pl.DataFrame, name: str, out_dir: str | Path = "figures") -> list[Path]:
    """Save ``df`` as ``<out_dir>/<name>.csv`` and ``.md``; return both paths.

    Nested columns (lists, structs) are written as JSON text in the CSV.
    """
    _check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv, md = out / f"{name}.csv", out / f"{name}.md"
    flat = df.with_columns(
        pl.col(c).map_elements(lambda v: str(v), return_dtype=pl.String)
        for c, dt in df.schema.items()
        if dt.is_nested()
    )
    flat.write_csv(csv)
    md.write_text(markdown_table(flat))
    return [csv, md]


def _check_name(name: str) -> None:
    if not name or "/" in name or "\\" in name:
        raise ValueError(f"figure/table name must be a plain file stem, got {name!r}")
