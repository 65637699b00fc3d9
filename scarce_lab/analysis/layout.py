"""Finding frames in a paper's layout: the long frame every finding computes (one row
per group, with ``value``, ``lo``, ``hi``, ``se``, ``n``, ``runs``) as the wide table a
paper prints, its short row and column labels, and the sentence shown instead of a
table with nothing to show.

A paper table is wide: e.g. the SCARCE paper's Table 1 has tactic categories as rows
and models as columns; Table 8 has stages 1-4 as columns. :func:`wide_table` pivots a
long frame into that layout, with ``value [lo, hi]`` cells (:func:`with_ci_text`), and
refuses to put two rows of the long frame into one cell (conditions are never pooled).
Labels name only what differs between the groups shown (:func:`group_labels`,
:func:`setting_labels`, :mod:`.labels`); the full condition behind each label is
:func:`settings_table`, which a finding shows folded (:func:`folded`), one click away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from .figures import TABLE_FILES, Nothing
from .labels import condition_parts, differing_parts, part_key


def _need(df: pl.DataFrame, cols: Sequence[str], name: str) -> None:
    """Raise ValueError naming the columns of ``cols`` that ``df`` lacks."""
    if missing := [c for c in cols if c not in df.columns]:
        raise ValueError(f"{name} frame lacks columns {missing} (has {df.columns})")


def ci_cell(v: float | None, lo: float | None, hi: float | None, digits: int = 2, missing: str = "n/a") -> str:
    """``value [lo, hi]``; just ``value`` without an interval, ``missing`` without a value."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return missing
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" if lo is not None and hi is not None \
        else f"{v:.{digits}f}"


def with_ci_text(df: pl.DataFrame, digits: int = 2, *, col: str = "estimate") -> pl.DataFrame:
    """Add a text column of :func:`ci_cell` strings for display tables."""
    return df.with_columns(pl.Series(col, [ci_cell(v, lo, hi, digits) for v, lo, hi in
                                           zip(df["value"], df["lo"], df["hi"], strict=True)], dtype=pl.String))


def group_labels(df: pl.DataFrame, *, model: str = "model", condition: str = "condition",
                 out: str = "group") -> pl.DataFrame:
    """``df`` with ``out``: a short chart label per (model, condition), distinct whenever
    the pairs are (charts colour and place by it; conditions are never pooled).

    The label is the model, then the parts of its condition label (the primary
    condition, ``name=value`` settings) that differ from the most common value of that
    part among the model's conditions in ``df`` (ties: an unset ``=None`` value, then
    sorted order); a
    condition with no such part shows its primary condition, and a model with one
    condition in ``df`` is its name alone. The full condition stays in the tables'
    ``condition`` column. Example: ``embedded/smollm2 | workers=3``,
    ``embedded/smollm2 | ballots_fixed_mem-cross``, ``scripted/strategic``. Should two
    labels still coincide, the full condition labels are used.

    Raises:
        ValueError: a column is missing.
    """
    _need(df, (model, condition), "group_labels input")
    pairs = df.select(model, condition).unique().sort(model, condition, nulls_last=True)
    labels: dict[tuple, str] = {}
    for (m,), g in pairs.group_by(model, maintain_order=True):
        conds = g[condition].to_list()
        if len(conds) == 1:
            labels[(m, conds[0])] = str(m)
            continue
        rest = differing_parts(c or "" for c in conds)
        for c in conds:
            shown = rest[c or ""] or condition_parts(c or "")[:1]
            labels[(m, c)] = f"{m} | {','.join(shown)}"
    if len(set(labels.values())) < len(labels):  # never merge two conditions under one label
        labels = {(m, c): f"{m} | {c}" for m, c in labels}
    keys_df = pl.DataFrame({"_m": [k[0] for k in labels], "_c": [k[1] for k in labels], out: list(labels.values())},
                           schema={"_m": df.schema[model], "_c": df.schema[condition], out: pl.String})
    return df.drop(out, strict=False).join(keys_df, left_on=[model, condition], right_on=["_m", "_c"],
                                           how="left", nulls_equal=True)


def wide_table(res: pl.DataFrame, index: Sequence[str], columns: str, *,
               column_order: Sequence | None = None, index_order: dict[str, Sequence] | None = None,
               digits: int = 2, runs_row: bool = True) -> pl.DataFrame:
    """``res`` (long, with ``value``/``lo``/``hi``/``runs``) as a wide table: one row per
    value of ``index``, one column per value of ``columns`` (as text, in
    ``column_order`` when given, else sorted), cells ``value [lo, hi]`` (``value`` alone
    without an interval, empty where the long frame has no row). ``index_order`` fixes
    the row order of an index column (values not listed go last, sorted). With
    ``runs_row`` a last row gives the runs behind each column (``a-b`` when rows of a
    column rest on different numbers of runs).

    Raises:
        ValueError: a column is missing; or two rows of ``res`` fall in one cell (the
            message names the cell: the index is missing a setting that differs, and
            showing one value of the two would pool or drop a condition).
    """
    _need(res, [*index, columns, "value", "lo", "hi", "runs"], "wide_table: the result")
    dup = res.group_by([*index, columns]).len().filter(pl.col("len") > 1)
    if dup.height:
        raise ValueError(f"wide_table: {dup.height} cell(s) hold several rows, e.g. {dup.row(0, named=True)}: "
                         f"add the setting that differs to the index {list(index)} (conditions are never pooled)")
    d = with_ci_text(res, digits).with_columns(pl.col(columns).cast(pl.String).alias("_col"))
    present = d["_col"].unique().to_list()
    order = [str(c) for c in column_order if str(c) in present] if column_order is not None else []
    order += sorted(c for c in present if c not in order)
    wide = d.pivot(on="_col", index=list(index), values="estimate", aggregate_function=None)
    wide = wide.with_columns(pl.lit(None, pl.String).alias(c) for c in order if c not in wide.columns)
    wide = wide.select(*index, *order).with_columns(pl.col(order).fill_null(""))
    sort_keys = []
    for col in index:
        rank = {v: i for i, v in enumerate((index_order or {}).get(col, []))}
        sort_keys.append(pl.col(col).map_elements(lambda v, r=rank: r.get(v, len(r)), return_dtype=pl.Int64))
        sort_keys.append(pl.col(col).cast(pl.String))
    wide = wide.sort(sort_keys, nulls_last=True)
    wide = wide.with_columns(pl.col(c).cast(pl.String) for c in index)
    if runs_row:
        runs = {c: _span(d.filter(pl.col("_col") == c)["runs"].to_list()) for c in order}
        foot = {c: None for c in index} | runs
        foot[index[-1]] = "runs"
        wide = pl.concat([wide, pl.DataFrame([foot], schema=wide.schema)])
    return wide


def _span(values: list) -> str:
    vals = sorted({int(v) for v in values if v is not None})
    return "" if not vals else str(vals[0]) if len(vals) == 1 else f"{vals[0]}-{vals[-1]}"


def settings_table(res: pl.DataFrame, label: str = "group", cols: Sequence[str] = ("model", "condition")) -> pl.DataFrame:
    """One row per short label (``label``) with the full settings behind it (``cols``),
    sorted by label: the key to a table or chart whose labels name only what differs.

    Raises:
        ValueError: a column is missing, or one label stands for two settings.
    """
    _need(res, (label, *cols), "settings_table: the result")
    out = res.select(label, *cols).unique().sort(label, nulls_last=True)
    if out[label].n_unique() != out.height:
        raise ValueError(f"settings_table: a {label!r} label stands for several settings; labels must be distinct")
    return out


def folded(summary: str, markdown: str) -> str:
    """``markdown`` inside an HTML ``<details>`` element (JupyterLab, GitHub and
    nbviewer render it folded, with ``summary`` to click)."""
    return f"<details><summary>{summary}</summary>\n\n{markdown}\n</details>\n"


def blank_repeats(df: pl.DataFrame, cols: Sequence[str]) -> pl.DataFrame:
    """``df`` for display with a value of ``cols`` blanked where it repeats the row above
    (with every column before it): the paper's grouped rows (``relational`` once, then its
    categories). Saved tables keep every value."""
    out = {c: df[c].to_list() for c in df.columns}
    for i in range(df.height - 1, 0, -1):
        for j, c in enumerate(cols):
            if all(out[k][i] == df[k][i - 1] for k in cols[: j + 1]) and df[c][i] is not None:
                out[c][i] = ""
    return pl.DataFrame(out, schema={c: (pl.String if c in cols else t) for c, t in df.schema.items()})


def setting_labels(res: pl.DataFrame, column: str, *, model: str = "model", condition: str = "condition",
                   out: str = "setting") -> pl.DataFrame:
    """``res`` with ``out``: a short row label for a wide table whose columns are the
    values of ``column`` (memory horizon, mechanism...): the model, then what its
    condition says apart from ``column`` and that differs between the model's rows
    (:func:`.labels.differing_parts`). Conditions that differ only in ``column``
    share a label (they are the columns of one row); any other difference keeps rows
    apart. The primary condition (``ballots_fixed_mem-cross``) loses the token holding
    the row's ``column`` value; a ``column=value`` part is dropped.

    Raises:
        ValueError: a column is missing.
    """
    _need(res, (model, condition, column), "setting_labels: the result")

    def rest(cond: str | None, value) -> str:
        parts = condition_parts(cond or "")
        v = str(value)
        kept = []
        for p in parts:
            if part_key(p) == "":
                p = "_".join(t for t in p.split("_") if v not in t.split("-") and t != v)
            elif part_key(p) == column:
                continue
            kept.append(p)
        return ",".join(kept)

    keys = [rest(c, v) for c, v in zip(res[condition].to_list(), res[column].to_list(), strict=True)]
    d = res.with_columns(pl.Series("_rest", keys, dtype=pl.String))
    labels: dict[tuple, str] = {}
    for (m,), g in d.select(model, "_rest").unique().group_by(model, maintain_order=True):
        conds = sorted(g["_rest"].to_list())
        diff = differing_parts(conds) if len(conds) > 1 else {conds[0]: []}
        for c in conds:
            labels[(m, c)] = str(m) if len(conds) == 1 else f"{m} | {','.join(diff[c]) or 'reference'}"
    if len(set(labels.values())) < len(labels):
        labels = {(m, c): f"{m} | {c}" for m, c in labels}
    return d.with_columns(pl.Series(out, [labels[(m, c)] for m, c in zip(d[model].to_list(), d["_rest"].to_list(),
                                                                          strict=True)], dtype=pl.String)).drop("_rest")


class NoTable(Nothing):
    """What stands in for a table with nothing to show ("a table or chart with
    nothing to show becomes a sentence that says so"): the reason, displayed as the sentence
    ``No table: <reason>`` (the table counterpart of :class:`~scarce_lab.analysis.figures.NoFigure`)."""

    what = "table"

    def __str__(self) -> str:
        return self._repr_markdown_()


def nothing_to_show(res: pl.DataFrame, name: str, out_dir=None, *, value: str = "value") -> NoTable | None:
    """A :class:`NoTable` when the result frame ``res`` has nothing to show: no row, or every
    ``value`` null, NaN or zero (e.g. tactic shares of a model that never wrote a tactic: a
    table of zeros reads as a finding); ``None`` when it has something. With ``out_dir``,
    the files an earlier run saved under ``name`` and ``name + "_values"`` are removed (so a
    table of other data cannot pass for this data's).

    Raises:
        ValueError: ``res`` has no ``value`` column.
    """
    if value not in res.columns:
        raise ValueError(f"nothing_to_show: the result frame has no {value!r} column (columns: {res.columns})")
    v = res[value]
    if v.dtype.is_float():
        v = v.fill_nan(None)
    v = v.drop_nulls()
    if res.height == 0:
        why = f"{name}: the data has no row for it"
    elif v.len() == 0:
        why = f"{name}: no group has a value in this data"
    elif v.dtype.is_numeric() and bool((v == 0).all()):
        why = f"{name}: every value is zero in this data (" + (
            f"all {v.len()} values" if v.len() == res.height else f"{v.len()} values over {res.height} rows") + ")"
    else:
        return None
    if out_dir is not None:
        from pathlib import Path

        for stem in (name, name + "_values"):
            for ext in TABLE_FILES:
                (Path(out_dir) / f"{stem}{ext}").unlink(missing_ok=True)
    return NoTable(why)
