"""A finding that shows and saves itself: the numbers, the paper's layout of them, a
chart, a one-sentence reading and the convention they were computed under, one object.

Every result cell of a notebook used to repeat compute -> save the table -> show it ->
say the reading -> chart -> save the chart -> display it. A :class:`Finding` holds the
pieces, displays them in that order (table, reading, chart) when it is the cell's last
value, and ``.save(out)`` writes the table and the chart with the project's writers
(:func:`scarce_lab.analysis.figures.save_table`: CSV, Markdown, LaTeX and the
convention sidecar; :func:`~scarce_lab.analysis.figures.save_chart`: PNG and SVG), so a
finding is one line::

    sl.sovsim.table(ds, preset="sovsim").save(OUT)

Also :func:`say` and :func:`show`, the two display helpers the notebooks share.
"""

from __future__ import annotations

import html
import types
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from .labels import displayed_markdown


def say(text: str) -> None:
    """Display ``text`` as Markdown (a reading sentence) in the notebook (``$`` shown as
    written: :func:`displayed_markdown`)."""
    from IPython.display import Markdown, display

    display(Markdown(displayed_markdown(text)))


def show(df: pl.DataFrame, float_digits: int = 2) -> None:
    """Display ``df`` as a Markdown table (floats rounded to ``float_digits``)."""
    from .figures import markdown_table

    say(markdown_table(df, float_digits=float_digits))


@dataclass(frozen=True)
class Finding:
    """One finding: ``frame`` (the table), ``chart`` (an altair chart, a
    :class:`~scarce_lab.analysis.figures.NoFigure` saying why there is none, or
    ``None``), ``reading`` (the sentence that says what it shows, Markdown) and the
    ``convention`` its numbers were computed under (written beside the saved table).

    Attributes:
        name: file stem of the saved table and chart (a plain file name:
            as `save_table` checks it; so are ``table_name``,
            the ``extra`` names and the ``stale`` stems, checked on construction).
        frame: the numbers (what CSV and JSON give): saved as ``<name>_values`` when
            there is a ``layout``, else as ``<name>`` (CSV/Markdown/LaTeX).
        layout: the paper's layout of the numbers (formatted cells, e.g. ``mean [lo,
            hi]``), what a notebook shows; saved as ``<name>``; ``None``: the frame is
            shown.
        chart, reading, convention: see above; ``convention`` is required to save a
            frame (:func:`~scarce_lab.analysis.figures.save_table` refuses none).
        text: the table as displayed (Markdown); default: the layout (or the frame)
            rounded to 2 digits.
        table_name: the stem the layout (or, without one, the frame) is saved under
            (default: ``name``).
        show_frame: display the table (``False``: a long frame that is saved, not shown).
        extra: other frames saved beside it, ``{name: frame}`` (e.g. the unformatted
            values of a formatted table), with the same convention.
        stale: table stems whose older files ``save`` removes (a table with nothing to
            show this time: a table of other data must not pass for this data's).
        method: how the numbers are computed (units, interval method and its coverage,
            what is left out), the paragraph a notebook used to carry: for
            ``help()``-style reading, never displayed with the table.
        departures: settings that every run behind the finding shares and that depart
            from the environment's defaults (the paper's settings), ``{dotted setting:
            value}``: displayed above the table and written into the convention, so a
            table of 3-round games says so even when no column can
            (:func:`scarce_lab.analysis.labels.departures`).
    """

    name: str
    frame: pl.DataFrame | None = None
    layout: pl.DataFrame | None = None
    chart: Any = None
    reading: str = ""
    convention: Any = None
    text: str | None = None
    table_name: str | None = None
    show_frame: bool = True
    extra: dict[str, pl.DataFrame] = field(default_factory=dict)
    stale: tuple[str, ...] = ()
    departures: dict[str, Any] = field(default_factory=dict)
    method: str = ""

    def __post_init__(self) -> None:
        from .figures import _check_name as check_name

        if isinstance(self.stale, str) or not isinstance(self.extra, dict):
            raise TypeError(f"Finding {self.name!r}: stale must be a tuple of stems and extra a dict of frames, "
                            f"got stale={self.stale!r}, extra of type {type(self.extra).__name__}")
        for what, stem in (("name", self.name), ("table_name", self.table_name),
                           *(("extra", k) for k in self.extra), *(("stale", k) for k in self.stale)):
            if stem is not None:  # every stem save() writes or removes, checked before any file is touched
                try:
                    check_name(stem)
                except ValueError as exc:
                    raise ValueError(f"Finding {what}: {exc}") from None
        for what in ("frame", "layout"):
            value = getattr(self, what)
            if value is not None and not isinstance(value, pl.DataFrame):
                raise TypeError(f"Finding {self.name!r}: {what} must be a polars DataFrame, got {type(value).__name__}")

    def with_(self, **changes: Any) -> Finding:
        """A copy with ``changes`` (e.g. ``reading=``, ``chart=``)."""
        return replace(self, **changes)

    def departures_line(self) -> str:
        """One sentence naming :attr:`departures` (empty when there are none)."""
        from .labels import format_departures

        return format_departures(self.departures)

    def markdown(self) -> str:
        """The table as displayed (``text``, else the frame as a Markdown table),
        after the :meth:`departures_line`."""
        from .figures import markdown_table

        head = self.departures_line()
        shown = self.layout if self.layout is not None else self.frame
        body = self.text if self.text is not None else "" if shown is None else markdown_table(shown, float_digits=2)
        return "\n\n".join(p for p in (head, body) if p)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document: ``name``, ``convention``, ``departures``, ``reading``,
        ``table`` (the frame's rows: the numbers), ``layout`` (the paper layout's rows,
        when there is one) and one key per :attr:`extra` frame (its rows)."""
        doc: dict[str, Any] = {"name": self.name, "convention": self.convention, "departures": dict(self.departures),
                               "reading": self.reading,
                               "table": None if self.frame is None else self.frame.to_dicts()}
        if self.layout is not None:
            doc["layout"] = self.layout.to_dicts()
        doc.update({k: v.to_dicts() for k, v in self.extra.items()})
        return doc

    def save(self, out: str | Path) -> Finding:
        """Write the frame (and :attr:`extra`) with
        :func:`~scarce_lab.analysis.figures.save_table` and the chart with
        :func:`~scarce_lab.analysis.figures.save_chart` under ``out``, named
        :attr:`name`; a ``NoFigure`` writes no file and removes an older figure of that
        name. Returns ``self``, so ``res.save(OUT)`` as a cell's last line displays it.

        ``out``: a folder (made when missing; ``~`` expanded; a relative one is below the
        working directory: ``sl.path(...)`` gives one from the project root).

        Raises:
            ValueError: a frame to save without a ``convention`` (every saved table
                states what it was computed under); an empty ``out`` (it would write into
                the working directory).
            NotADirectoryError: ``out`` is a file.
        """
        from .figures import TABLE_FILES, save_chart, save_table

        if not str(out).strip():
            raise ValueError(f"Finding {self.name!r}: an empty output folder {str(out)!r}; name a folder")
        out = Path(out).expanduser()
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(f"Finding {self.name!r}: {out} is a file, not a folder to save into")
        for stem in self.stale:
            for ext in TABLE_FILES:
                (Path(out) / f"{stem}{ext}").unlink(missing_ok=True)
        frames: dict[str, pl.DataFrame] = {}
        if self.layout is not None:
            frames[self.table_name or self.name] = self.layout
            if self.frame is not None:
                frames[f"{self.name}_values"] = self.frame
        elif self.frame is not None:
            frames[self.table_name or self.name] = self.frame
        frames |= self.extra
        if frames and self.convention is None:
            raise ValueError(f"Finding {self.name!r}: no convention to save beside the table; pass convention=")
        convention = self.convention
        if self.departures and isinstance(convention, dict):
            convention = convention | {"departures_from_defaults": dict(self.departures)}
        for stem, df in frames.items():
            save_table(df, stem, out, convention=convention)
        if self.chart is not None:
            save_chart(self.chart, self.name, out)
        return self

    def _ipython_display_(self) -> None:
        from IPython.display import Markdown, display

        if self.show_frame and (self.frame is not None or self.layout is not None or self.text):
            display(Markdown(displayed_markdown(self.markdown())))
        elif self.departures:
            display(Markdown(displayed_markdown(self.departures_line())))
        if self.reading:
            display(Markdown(displayed_markdown(self.reading)))
        if self.chart is not None:
            display(self.chart)

    def _repr_html_(self) -> str:
        """HTML of the table and the reading (outside IPython's display hooks; the
        chart is shown by :meth:`_ipython_display_`)."""
        parts = []
        shown = self.layout if self.layout is not None else self.frame
        if shown is not None:
            parts.append(shown._repr_html_())
        if self.reading:
            parts.append(f"<p>{html.escape(self.reading)}</p>")
        if self.chart is not None and not self.chart:
            parts.append(f"<p><em>No figure: {html.escape(str(getattr(self.chart, 'reason', '')))}</em></p>")
        return "\n".join(parts)

    def __repr__(self) -> str:
        shape = "no frame" if self.frame is None else f"{self.frame.height} rows x {self.frame.width} columns"
        shape += "" if self.layout is None else " (and the paper's layout)"
        chart = "no chart" if self.chart is None else ("chart" if self.chart else repr(self.chart))
        return f"Finding({self.name!r}: {shape}, {chart}; {self.reading[:80]!r})"


def finding(name: str, values: pl.DataFrame, *, convention: dict[str, Any], index: Sequence[str] | None = None,
            columns: str | None = None, shown: Sequence[str] | None = None, key: str = "group", reading: str = "",
            chart: Any = None, method: str = "", **wide: Any) -> Finding:
    """The one way a metric's result frame becomes a :class:`Finding` named ``name``.

    ``values`` is the long frame every metric computes: one row per group with
    ``value``, ``lo``, ``hi`` (the interval, null where none is given), ``se``, ``n`` and
    ``runs``. The finding's ``frame`` is that frame with ``estimate`` (``value [lo,
    hi]`` as text, :func:`~scarce_lab.analysis.layout.with_ci_text`), saved as
    ``<name>_values``. Its ``layout`` is the paper's table: with ``index`` and
    ``columns``, :func:`~scarce_lab.analysis.layout.wide_table` (``wide`` goes to it:
    ``column_order``, ``index_order``...), shown with repeated index cells blanked and,
    folded below, the full conditions behind the short labels of ``key``
    (``group``: :func:`~scarce_lab.analysis.layout.settings_table`); otherwise the
    columns ``shown`` of the frame (default: every column but the interval's numbers).
    ``reading`` (one sentence, e.g. :func:`~scarce_lab.analysis.readings.describe_extremes`),
    ``chart`` and ``method`` (how the numbers are computed, for ``help()`` and
    ``.method``, never a notebook paragraph) are kept as given.

    A frame with nothing to show (no row, every value null, NaN or zero) becomes the
    sentence that says so, and saving it removes an earlier run's files of that name
    (:func:`~scarce_lab.analysis.layout.nothing_to_show`).

    Raises:
        ValueError: ``values`` lacks ``value``/``lo``/``hi``/``runs``, or two of its rows
            fall in one cell of the layout (conditions are never pooled: the message
            names the cell), or only one of ``index`` and ``columns`` is given.
    """
    from .figures import markdown_table
    from .layout import (
        blank_repeats,
        folded,
        nothing_to_show,
        settings_table,
        wide_table,
        with_ci_text,
    )

    if (index is None) != (columns is None):
        raise ValueError(f"finding {name!r}: give both index and columns (the paper's layout) or neither")
    if (empty := nothing_to_show(values, name)) is not None:  # all zeros or no value: a sentence
        return Finding(name, text=str(empty), chart=chart, convention=convention, method=method,
                       stale=(name, f"{name}_values"))
    frame = with_ci_text(values)
    if index is None:
        cols = list(shown) if shown is not None else [c for c in frame.columns
                                                       if c not in ("value", "lo", "hi", "se")]
        return Finding(name, frame=frame, layout=frame.select(cols), reading=reading, chart=chart,
                       convention=convention, method=method)
    layout = wide_table(values, index, columns, **wide)
    text = markdown_table(blank_repeats(layout, list(index)[:-1]), float_digits=2)
    if key in values.columns:
        tab = (settings_table(values, key) if key == "group"
               else values.select(key, columns, "condition").unique().sort(key, columns))
        text += "\n\n" + folded("Full conditions behind the labels", markdown_table(tab))
    return Finding(name, frame=frame, layout=layout, text=text, reading=reading, chart=chart, convention=convention,
                   method=method)


def method_of(fn: Any, statistics: str = "") -> str:
    """The methods paragraph of the finding ``fn`` returns: its docstring up to its
    ``Args:``, ``Returns:`` or ``Raises:`` section, then ``statistics`` (a paragraph its
    environment's findings share)."""
    import inspect

    text = inspect.getdoc(fn) or ""
    cut = [i for i in (text.find(f"\n{h}:") for h in ("Args", "Returns", "Raises")) if i >= 0]
    text = (text[: min(cut)] if cut else text).strip()
    return f"{text}\n\n{statistics}".strip() if statistics else text


def _plain(v: Any) -> Any:
    """A parameter as JSON for a convention (a frame by its size, a path as text)."""
    import json

    if isinstance(v, pl.DataFrame):
        return f"a frame of {v.height} rows"
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    try:
        json.dumps(v)
        return v
    except TypeError:
        return str(v)


def finding_function(environment: str, statistics: str = "") -> Any:
    """Decorator of an environment's public metric ``fn(ds, **parameters) -> Finding``
    (a face's findings): the finding it returns gets ``method`` (:func:`method_of`
    ``fn`` with ``statistics``, unless ``fn`` set one), ``departures`` (the settings
    every ``environment`` run of the dataset shares that depart from the paper's
    defaults: :func:`scarce_lab.analysis.labels.departures`; none for a published
    layout) and, in a dict convention, ``parameters`` (every argument but the dataset,
    defaults included), so that no finding states its method, settings or parameters
    by hand.

    Every call's arguments pass one gate first (:func:`_check_arguments`).

    Raises:
        TypeError: ``fn`` returned something other than a :class:`Finding`; an argument
            of the wrong kind (a string for a sequence).
        ValueError: an argument outside its ``Literal`` choices (the choices named).
    """
    import functools
    import inspect
    import typing

    from .labels import departures

    def decorate(fn: Any) -> Any:
        sig = inspect.signature(fn)
        method = method_of(fn, statistics)
        hints = typing.get_type_hints(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Finding:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            _check_arguments(fn.__name__, hints, bound.arguments)
            found = fn(*args, **kwargs)
            if not isinstance(found, Finding):
                raise TypeError(f"{fn.__name__} returned {type(found).__name__}, not a Finding")
            ds = next(iter(bound.arguments.values()), None)
            changes: dict[str, Any] = {"method": found.method or method}
            if getattr(ds, "manifests", ()):
                changes["departures"] = departures(ds, environment)
            if isinstance(found.convention, dict):
                params = {k: _plain(v) for k, v in list(bound.arguments.items())[1:]}
                # a value the function resolved itself (a ``None`` default it filled) is the one used
                params |= found.convention.get("parameters", {})
                changes["convention"] = found.convention | {"parameters": params}
            return found.with_(**changes)

        return wrapper

    return decorate


def _check_arguments(name: str, hints: dict[str, Any], arguments: dict[str, Any]) -> None:
    """The gate of :func:`finding_function`: each argument against its annotation's
    ``Literal`` choices and, for a sequence annotation, not a bare string (``by="model"``
    would be read letter by letter).

    Raises:
        ValueError: a value outside the ``Literal`` (``name``, parameter, value and
            choices named).
        TypeError: a string given for a sequence of strings.
    """
    import collections.abc
    import typing

    for param, value in arguments.items():
        hint = hints.get(param)
        options = [hint, *typing.get_args(hint)] if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
        choices = [c for o in options if typing.get_origin(o) is typing.Literal for c in typing.get_args(o)]
        if choices and value not in choices and not (value is None and type(None) in options):
            raise ValueError(f"{name}: {param}={value!r} is not one of {choices}")
        sequence = any(typing.get_origin(o) in (collections.abc.Sequence, tuple, list) for o in options)
        if sequence and isinstance(value, str) and not any(o is str for o in options):
            raise TypeError(f"{name}: {param} takes a list of names, got the string {value!r} (write [{value!r}])")
