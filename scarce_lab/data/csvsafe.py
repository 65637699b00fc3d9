"""The one gate for every CSV the package writes and for the CSVs it reads back: cells
that a spreadsheet program would evaluate are written so it does not.

Agent talk, model names, run ids and judge evidence are attacker-controlled text (a
model's answer is whatever the model said). A CSV cell that begins with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice Calc and Google
Sheets as a formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``, DDE), so a research
assistant who opens a label sheet or a report in a spreadsheet would run it. The
policy is OWASP's ("CSV Injection", owasp.org/www-community/attacks/CSV_Injection):
such a cell is written with a single quote (``'``) in front, which spreadsheets show
as text, and every cell is quoted by the CSV writer where CSV needs it.

Rules (:func:`neutralize`, :func:`restore`):

- A text cell gets one ``'`` in front when it begins, after any leading spaces
  (:data:`LEADING_SPACE`: a spreadsheet that trims spaces on import evaluates
  ``" =1+1"``), with one of :data:`FORMULA_STARTS` (``= + - @``, tab, carriage return,
  NUL (OWASP ASVS 1.2.10) and the full-width ``＝ ＋ － ＠`` that East Asian input turns
  into formulas) **or with a ``'`` itself**: the last case makes the rule invertible,
  so ``restore(neutralize(s)) == s`` for every text ``s`` (a text that really begins
  with ``'=`` comes back as written, not stripped).
- :func:`restore` removes that one ``'`` exactly where :func:`neutralize` would have
  added it (a ``'`` followed by what :func:`neutralize` prefixes) and changes nothing else.
- Column names are cells too (a pivot's columns are model names, agent ids): the
  header is neutralized and restored by the same rules.
- Only text columns are neutralized: a number column is written by polars' number
  formatter (digits, sign, ``.``, ``e``, ``inf``, ``NaN``), which a spreadsheet reads
  as a number, never as a formula; a negative number therefore stays ``-0.12``, not
  text. Nested columns (lists, structs) must be made text first (JSON): they are
  refused, never written in polars' own form.

Writers: :func:`frame_to_csv` (a polars frame to a file or to text), the only place the
package calls ``write_csv``. Readers: :func:`read_csv_cells` (a file through the read
gate, :func:`scarce_lab.data.jsonl.read_bounded`, with ``LIMITS.csv_file_bytes``,
every cell as text, :func:`restore` applied).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from .jsonl import BOM, read_bounded, write_atomic

__all__ = ["FORMULA_STARTS", "frame_to_csv", "neutralize", "read_csv_cells", "restore", "safe_frame"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP), plus the
#: quote itself (so that the prefix can be undone exactly; see the module docstring).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_PREFIXED = (*FORMULA_STARTS, "'")
#: Spaces a spreadsheet may trim before it reads a cell (so they never hide a formula start).
LEADING_SPACE = " \n\x0b\x0c\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
                "\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"


def neutralize(text: str) -> str:
    """``text`` as a spreadsheet shows it and never evaluates it: one ``'`` in front
    when it begins (after :data:`LEADING_SPACE`) with one of :data:`FORMULA_STARTS` or ``'``;
    else unchanged."""
    return "'" + text if text.lstrip(LEADING_SPACE).startswith(_PREFIXED) else text


def restore(text: str) -> str:
    """The exact inverse of :func:`neutralize`: drop one leading ``'`` when what follows
    begins with a character :func:`neutralize` prefixes; anything else unchanged (a
    ``'abc`` a person typed stays ``'abc``)."""
    return text[1:] if text.startswith("'") and text[1:].lstrip(LEADING_SPACE).startswith(_PREFIXED) else text


# The same rules as column expressions (the tests check them against the functions above).
def _class(chars: str) -> str:
    return "[" + "".join(f"\\x{{{ord(c):X}}}" for c in chars) + "]"


_STARTS_CLASS = _class("".join(_PREFIXED))
_SPACE_CLASS = _class(LEADING_SPACE) + "*"


def _neutralize_expr(col: pl.Expr) -> pl.Expr:
    return pl.when(col.str.contains(f"^{_SPACE_CLASS}{_STARTS_CLASS}")).then(pl.lit("'") + col).otherwise(col)


def _restore_expr(col: pl.Expr) -> pl.Expr:
    return pl.when(col.str.contains(f"^'{_SPACE_CLASS}{_STARTS_CLASS}")).then(col.str.slice(1)).otherwise(col)


def safe_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every text (and categorical) column's cells and every column name
    :func:`neutralize`-d; number, boolean and temporal cells unchanged.

    Raises:
        TypeError: a nested column (list, struct, array), naming it: make it text
            (JSON) first; polars would write it in a form nothing reads back.
    """
    if nested := [c for c, dt in frame.schema.items() if dt.is_nested()]:
        raise TypeError(f"CSV cells must be flat: columns {nested} are nested (write them as JSON text first)")
    text = [c for c, dt in frame.schema.items() if dt in (pl.String, pl.Categorical) or isinstance(dt, pl.Enum)]
    frame = frame.with_columns(_neutralize_expr(pl.col(c).cast(pl.String)).alias(c) for c in text)
    return frame.rename({c: neutralize(c) for c in frame.columns if neutralize(c) != c})


def frame_to_csv(frame: pl.DataFrame, path: str | Path | None = None) -> str | None:
    """Write ``frame`` as CSV (header, comma, UTF-8, ``\\n``) with every text cell
    :func:`neutralize`-d (:func:`safe_frame`): to ``path`` atomically (temporary file,
    fsync, rename; returns ``None``) or, with no ``path``, as text (returned).

    Raises:
        TypeError: a nested column (:func:`safe_frame`); nothing is written then.
    """
    text = safe_frame(frame).write_csv()
    if path is None:
        return text
    write_atomic(path, text)
    return None


def read_csv_cells(path: str | Path) -> pl.DataFrame:
    """A CSV file the package wrote (or a person edited) as a frame of text cells: read
    through the read gate (a regular file within ``LIMITS.csv_file_bytes``), a UTF-8
    byte order mark accepted, no type inference, every cell :func:`restore`-d. An
    empty cell is null.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        FileLimitError: not a regular file, or over its size limit.
        ValueError: not UTF-8, not CSV polars can parse, separated by ``;`` (a
            spreadsheet's regional setting), or a column name given twice
            (which of the two a reader takes would be a guess; the message names the
            file, the name and its positions).
    """
    data = read_bounded(path).removeprefix(BOM)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text at byte {exc.start}: {exc.reason}") from exc
    header = next(csv.reader(io.StringIO(data.decode("utf-8"), newline="")), [])
    if len(header) == 1 and ";" in header[0]:
        raise ValueError(f"{path}: columns separated by ';' (a spreadsheet's regional setting), not ','; "
                         "save it as CSV with comma separators")
    try:
        frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        raise ValueError(f"{path}: not a CSV table: {exc}") from exc
    where: dict[str, list[int]] = {}
    for i, name in enumerate(header, 1):
        if name.strip():  # a spreadsheet's blank trailing columns have no name; they may repeat
            where.setdefault(name, []).append(i)
    if twice := {n: at for n, at in where.items() if len(at) > 1}:
        raise ValueError(f"{path}: column name(s) given more than once (name: column numbers): {twice}; keep one")
    if len(header) == frame.width:  # the names as CSV spells them (polars keeps a quoted name's "" doubled)
        frame.columns = [n if n.strip() else c for n, c in zip(header, frame.columns, strict=True)]
    frame = frame.with_columns(_restore_expr(pl.col(c)).alias(c) for c in frame.columns)
    return frame.rename({c: restore(c) for c in frame.columns if restore(c) != c})
