"""Label sheets as real spreadsheet programs save them and as people spell names: the
import either reads the labels the coder meant or refuses, naming what is wrong; it never
changes a label or counts one person as two coders (scarce_lab/judge/sheets.py)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import unicodedata

import pytest

from scarce_lab.judge.sheets import SheetError, coder_key, export_sheet, human_labels, import_sheet
from scarce_lab.judge.store import HUMAN_FILE
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.validation import coder_agreement
from tests.judge.test_label_sheets import _units

TAX = load_taxonomy("scarce")
ANCHOR, BID = "anchoring", "bid_priority"


@pytest.fixture
def blank(tmp_path):
    return export_sheet(_units(["give me the slot", "=SUM(A1)", "fine, agreed\nsecond line"]), TAX,
                        tmp_path / "blank.csv")


def _save(blank, tmp_path, name, labels, coders, *, extra=None, sep=",", eol="\r\n", tail=()):
    """A coder's spreadsheet: fills ``labels`` and ``coder`` per row, adds ``extra``
    (header -> cells) and ``tail`` rows, saves with ``sep`` and ``eol`` and a BOM."""
    rows = list(csv.reader(io.StringIO(blank.csv.read_text(encoding="utf-8"), newline="")))
    for row, lab, who in zip(rows[1:], labels, coders, strict=True):
        row[6], row[7] = lab, who
    for head, cells in (extra or {}).items():
        rows[0].append(head)
        for row, c in zip(rows[1:], cells, strict=True):
            row.append(c)
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, lineterminator=eol).writerows(rows + [list(t) for t in tail])
    out = tmp_path / f"{name}.csv"
    out.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode("utf-8"))
    shutil.copy(blank.manifest, out.with_suffix(".manifest.json"))
    return out


def test_a_copied_labels_column_is_refused_not_read_from_the_first_copy(tmp_path, blank):
    """Before: the second 'labels' (what the coder filled) was read as
    'labels_duplicated_0' and ignored; the first copy's labels were stored."""
    f = _save(blank, tmp_path, "dup", ["none"] * 3, ["ann"] * 3, extra={"labels": [ANCHOR, BID, ANCHOR]})
    with pytest.raises(ValueError, match=r"'labels': \[7, 10\]"):
        import_sheet(f, tmp_path / "store")
    assert not (tmp_path / "store" / HUMAN_FILE).exists()


@pytest.mark.parametrize("spellings", [
    ["Ann", "ann", "ANN"],
    ["José", unicodedata.normalize("NFD", "José"), "José"],
    ["ann", "ann\u200b", "ann"],            # a zero-width space pasted with the name
    ["Ann Lee", "Ann  Lee", "Ann Lee"],
])
def test_one_name_spelled_two_ways_in_a_sheet_is_refused(tmp_path, blank, spellings):
    f = _save(blank, tmp_path, "mixed", ["none"] * 3, spellings)
    with pytest.raises(SheetError, match="one name spelled differently"):
        import_sheet(f, tmp_path / "store")
    assert not (tmp_path / "store" / HUMAN_FILE).exists()
    assert len({coder_key(s) for s in spellings}) == 1


def test_a_second_sheet_under_another_spelling_of_a_stored_coder_is_refused(tmp_path, blank):
    """Before: 'Bo' re-importing a corrected sheet as 'bo' became a second coder who
    agreed with the first on every unit: inter-coder agreement from one person."""
    import_sheet(_save(blank, tmp_path, "first", [ANCHOR, "none", BID], ["Bo"] * 3), tmp_path / "store")
    import_sheet(_save(blank, tmp_path, "other", [ANCHOR, BID, BID], ["cy"] * 3), tmp_path / "store")
    again = _save(blank, tmp_path, "again", [ANCHOR, "none", "none"], ["bo "] * 3)
    with pytest.raises(SheetError, match=r"\['Bo', 'bo'\] are one name.*already holds \['Bo'\]"):
        import_sheet(again, tmp_path / "store")
    assert sorted(human_labels(tmp_path / "store")) == ["Bo", "cy"]
    assert coder_agreement(tmp_path / "store", TAX, n_boot=20).coders == ["Bo", "cy"]


def test_blank_rows_and_columns_a_spreadsheet_pads_with_are_skipped_and_counted(tmp_path, blank):
    f = _save(blank, tmp_path, "padded", [ANCHOR, "none", BID], ["ann"] * 3,
              extra={"": ["", "", ""]}, tail=[[""] * 10, [" "] * 10])
    res = import_sheet(f, tmp_path / "store")
    assert res.blank_rows == 2 and len(res.labels) == 3
    assert human_labels(tmp_path / "store")["ann"] == {"game0:0:w0": [ANCHOR], "game0:1:w1": [], "game0:2:w0": [BID]}


def test_a_row_with_only_a_label_is_not_blank(tmp_path, blank):
    f = _save(blank, tmp_path, "stray", ["none"] * 3, ["ann"] * 3, tail=[[""] * 6 + [ANCHOR, "", ""]])
    with pytest.raises(SheetError, match="row 5, column 'unit_id'"):
        import_sheet(f, tmp_path / "store")


def test_a_semicolon_separated_sheet_is_named_as_such(tmp_path, blank):
    f = _save(blank, tmp_path, "semi", ["none"] * 3, ["ann"] * 3, sep=";")
    with pytest.raises(ValueError, match="separated by ';'"):
        import_sheet(f, tmp_path / "store")


def test_a_sheet_of_another_taxonomy_version_is_refused(tmp_path, blank):
    """Same ids, other definitions: the labels would mean something else."""
    f = _save(blank, tmp_path, "old", ["none"] * 3, ["ann"] * 3)
    man = json.loads(f.with_suffix(".manifest.json").read_text())
    f.with_suffix(".manifest.json").write_text(json.dumps(man | {"taxonomy_version": "0.0-draft"}))
    with pytest.raises(ValueError, match="version '0.0-draft'"):
        import_sheet(f, tmp_path / "store")


def test_a_manifest_widened_to_more_categories_is_refused(tmp_path, blank):
    f = _save(blank, tmp_path, "wide", ["bribe"] * 3, ["ann"] * 3)
    man = json.loads(f.with_suffix(".manifest.json").read_text())
    f.with_suffix(".manifest.json").write_text(json.dumps(man | {"categories": [*man["categories"], "bribe"]}))
    with pytest.raises(ValueError, match="export a new sheet"):
        import_sheet(f, tmp_path / "store")


@pytest.mark.parametrize("cell", ["Anchoring", "anch\u200boring", "anchoring\u00a0;none", "аnchoring"])  # Cyrillic а
def test_look_alike_category_ids_are_refused(tmp_path, blank, cell):
    f = _save(blank, tmp_path, "alike", [cell, "none", "none"], ["ann"] * 3)
    with pytest.raises(SheetError, match="row 2, column 'labels'"):
        import_sheet(f, tmp_path / "store")


@pytest.mark.parametrize("edit", [lambda r: "1.0e5" if r == "game0" else r, lambda r: r.replace("game0", "Game0")])
def test_reformatted_shown_cells_are_refused(tmp_path, blank, edit):
    rows = list(csv.reader(io.StringIO(blank.csv.read_text(encoding="utf-8"), newline="")))
    for row in rows[1:]:
        row[1], row[6], row[7] = edit(row[1]), "none", "ann"
    f = tmp_path / "fmt.csv"
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    f.write_text(buf.getvalue())
    shutil.copy(blank.manifest, f.with_suffix(".manifest.json"))
    with pytest.raises(SheetError, match="row 2, column 'run_id'"):
        import_sheet(f, tmp_path / "store")


def test_validate_on_an_empty_label_file_names_it(tmp_path):
    """Before: an IndexError from the CLI (a folder whose human_labels.jsonl is empty)."""
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    (tmp_path / HUMAN_FILE).write_text("")
    r = CliRunner().invoke(app, ["judge", "validate", "--data", str(tmp_path), "--judges", "scripted/none"])
    assert r.exit_code == 2 and "holds no human labels" in r.output


def test_a_sheet_of_another_dataset_with_the_same_unit_ids_is_refused(tmp_path, blank):
    """Two datasets can share run ids (a run replayed, a dataset rebuilt): before, the
    second coder's labels of other talk were compared with the first's as one unit."""
    import_sheet(_save(blank, tmp_path, "ann", [ANCHOR, "none", BID], ["ann"] * 3), tmp_path / "store")
    other = export_sheet(_units(["give me the slot", "other talk here", "fine, agreed\nsecond line"]), TAX,
                         tmp_path / "other" / "blank.csv")
    f = _save(other, tmp_path / "other", "bo", [ANCHOR, "none", BID], ["bo"] * 3)
    with pytest.raises(SheetError, match=r"row 3, column 'unit_id', value 'game0:1:w1': .* holds another unit"):
        import_sheet(f, tmp_path / "store")
    assert sorted(human_labels(tmp_path / "store")) == ["ann"]


def test_the_coder_named_at_import_is_read_as_a_cell_is(tmp_path, blank):
    """Before: --coder 'ann ' was stored with its space on rows with an empty cell, and
    differed from the cell 'ann' of the other rows."""
    res = import_sheet(_save(blank, tmp_path, "arg", ["none"] * 3, ["", "ann", ""]), tmp_path / "store", coder="ann ")
    assert {h.coder for h in res.labels} == {"ann"}


def test_an_export_never_replaces_a_filled_sheet_or_another_manifest(tmp_path, blank):
    """Before: export-sheet over a sheet a coder had filled in place replaced it (the
    labels gone), and a new sample replaced the manifest the sheets sent out need."""
    units = _units(["give me the slot", "=SUM(A1)", "fine, agreed\nsecond line"])
    again = export_sheet(units, TAX, blank.csv)  # the same export again: allowed, nothing changes
    assert again.csv.read_bytes() == blank.csv.read_bytes()
    filled = blank.csv  # filled in place
    filled.write_bytes(_save(blank, tmp_path, "ann", [ANCHOR, "none", BID], ["ann"] * 3).read_bytes())
    kept = filled.read_bytes()
    with pytest.raises(FileExistsError, match="blank.csv: exists and differs"):
        export_sheet(units, TAX, filled)
    assert filled.read_bytes() == kept
    other = tmp_path / "other.csv"
    export_sheet(units, TAX, other)
    other.unlink()  # the blank CSV gone, its manifest kept; a different sample would replace it
    with pytest.raises(FileExistsError, match="other.manifest.json: exists and differs"):
        export_sheet(units, TAX, other, sample=2, seed=3)
    assert export_sheet(units, TAX, other, sample=2, seed=3, overwrite=True).n_units == 2


def test_a_sheet_returned_unchanged_is_read_whatever_line_ends_the_talk_holds(tmp_path):
    """Before: talk holding '\\r\\n' (or a lone '\\r') was refused as edited when the sheet
    came back byte for byte (only the sheet's side was normalized)."""
    units = _units(["deal?\r\nyes", "old mac\rline", "plain"])
    blank = export_sheet(units, TAX, tmp_path / "b.csv")
    res = import_sheet(_save(blank, tmp_path, "same", ["none"] * 3, ["ann"] * 3, eol="\n"), tmp_path / "store")
    assert len(res.labels) == 3
    assert [h.unit.public_reasoning for h in res.labels] == ["deal?\r\nyes", "old mac\rline", "plain"]


def test_agreement_under_another_taxonomy_is_refused(tmp_path, blank):
    """Before: coder_agreement(DIR, casino) scored SCARCE labels against CaSiNo's ids:
    every label counted as never given, and the numbers came out as if meaningful."""
    for who in ("ann", "bo"):
        import_sheet(_save(blank, tmp_path, who, [ANCHOR, "none", BID], [who] * 3), tmp_path / "store")
    with pytest.raises(ValueError, match=r"taxonomy \['scarce'\], not 'casino'"):
        coder_agreement(tmp_path / "store", load_taxonomy("casino"), n_boot=20)
