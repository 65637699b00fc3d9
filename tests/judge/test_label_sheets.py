"""Label sheets (scarce_lab/judge/sheets.py): export -> a research assistant fills the CSV
(a script here, hostile cells included) -> import -> human labels beside the judges';
each import error; agreement numbers against a hand-computed example."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.data import limits
from scarce_lab.data.csvsafe import frame_to_csv, read_csv_cells
from scarce_lab.data.jsonl import FileLimitError, write_json_atomic
from scarce_lab.judge.sheets import (
    SheetError,
    export_sheet,
    human_labels,
    human_units,
    import_sheet,
    sample_units,
)
from scarce_lab.judge.store import HUMAN_FILE, HumanLabelStore
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.units import units_from_frame
from scarce_lab.judge.validation import coder_agreement
from tests.cli.test_judge_cli import RuleClient

REPO = Path(__file__).resolve().parents[2]
TAX = load_taxonomy("scarce")
EDF, SJF, RECIP = "earliest_deadline_first", "shortest_job_first", "reciprocity"

#: Negotiator talk as an attacker would write it (each begins like a formula).
HOSTILE = ["=cmd|' /C calc'!A0", "+HYPERLINK(\"http://x\")", "-1+1", "@SUM(A1:A9)", "\t=1", "\r=2", "'=kept"]


def _units(texts: list[str], runs: int = 1):
    rows = [{"run_id": f"game{r}", "contention": i, "agent": f"w{i % 2}", "public_reasoning": t,
             "private_messages": json.dumps([{"to": "w9", "text": t}]), "context": f"=contention {i}"}
            for r in range(runs) for i, t in enumerate(texts)]
    return units_from_frame(pl.DataFrame(rows))


def _fill(sheet, out, labels, *, coder: str | None = "ann", edit=None):
    """The research assistant: opens the sheet, fills ``labels`` (one per row, in order)
    and ``coder``, writes a hostile note, saves it as CSV (through the gate, as a careful
    tool would; the importer must undo exactly its quote)."""
    f = read_csv_cells(sheet)
    f = f.with_columns(labels=pl.Series(labels, dtype=pl.String), coder=pl.lit(coder, dtype=pl.String),
                       notes=pl.lit("=HYPERLINK(\"http://evil\")"))
    if edit:
        f = edit(f)
    frame_to_csv(f, out)
    write_json_atomic(out.with_suffix(".manifest.json"), json.loads(sheet.with_suffix(".manifest.json").read_text()))
    return out


def test_round_trip_keeps_hostile_text_and_stores_human_labels(tmp_path):
    units = _units(HOSTILE + ["my deadline is near"])
    files = export_sheet(units, TAX, tmp_path / "s.csv", source="test")
    raw = list(csv.reader(io.StringIO(files.csv.read_bytes().decode("utf-8"), newline="")))
    assert raw[0] == ["unit_id", "run_id", "round", "speaker", "text", "context", "labels", "coder", "notes"]
    for row in raw[1:]:  # no cell a spreadsheet would evaluate
        assert not any(c[:1] in "=+-@\t\r" and c for c in row), row
    assert "`earliest_deadline_first`: Earliest deadline first" in files.codebook.read_text()
    labels = ["none"] * (len(units) - 1) + [f"{EDF}; {RECIP}"]
    filled = _fill(files.csv, tmp_path / "ann.csv", labels)
    res = import_sheet(filled, tmp_path / "labels")
    assert len(res.labels) == len(units) and not res.missing and not res.replaced
    stored = HumanLabelStore(tmp_path / "labels").load()
    assert {h.kind for h in stored} == {"human"} and {h.coder for h in stored} == {"ann"}
    by_id = {h.unit.unit_id: h for h in stored}
    assert by_id["game0:7:w1"].labels == [EDF, RECIP] and by_id["game0:0:w0"].labels == []
    # the unit came back exactly, hostile text included
    assert [by_id[u.unit_id].unit for u in units] == units
    gold = {u.unit_id: u.gold for u in human_units(tmp_path / "labels", "ann")}
    assert gold["game0:7:w1"] == [EDF, RECIP] and gold["game0:3:w1"] == []


def test_sample_is_stratified_by_run_seeded_and_recorded(tmp_path):
    units = _units([f"t{i}" for i in range(6)], runs=3)  # 18 units, 6 per run
    a, rec = sample_units(units, 7, seed=5)
    b, _ = sample_units(units, 7, seed=5)
    assert [u.unit_id for u in a] == [u.unit_id for u in b] and len(a) == 7
    assert sorted(rec["per_run"].values()) == [2, 2, 3] and rec["seed"] == 5
    assert [u.unit_id for u in sample_units(units, 7, seed=6)[0]] != [u.unit_id for u in a]
    files = export_sheet(units, TAX, tmp_path / "s.csv", sample=7, seed=5)
    man = json.loads(files.manifest.read_text())
    assert man["sample"]["n"] == 7 and man["sample"]["seed"] == 5 and man["units_available"] == 18
    assert read_csv_cells(files.csv)["unit_id"].to_list() == [u.unit_id for u in a]


@pytest.fixture
def sheet(tmp_path):
    return export_sheet(_units(["alpha", "beta", "gamma"]), TAX, tmp_path / "s.csv").csv


def _err(tmp_path, sheet, labels, **kw) -> str:
    edit = kw.pop("edit", None)
    filled = _fill(sheet, tmp_path / "f.csv", labels, edit=edit, coder=kw.pop("cell_coder", "ann"))
    with pytest.raises(SheetError) as exc:
        import_sheet(filled, tmp_path / "labels", **kw)
    assert not (tmp_path / "labels" / HUMAN_FILE).exists()  # nothing stored
    return str(exc.value)


def test_unknown_unit_id(tmp_path, sheet):
    msg = _err(tmp_path, sheet, ["none"] * 3,
               edit=lambda f: f.with_columns(unit_id=pl.Series(["game0:0:w0", "game9:1:w1", "game0:2:w0"])))
    assert "row 3, column 'unit_id', value 'game9:1:w1': not a unit of this sheet" in msg


def test_category_not_in_taxonomy(tmp_path, sheet):
    msg = _err(tmp_path, sheet, ["none", f"{SJF};=bribe", SJF])
    assert "row 3, column 'labels', value 'shortest_job_first;=bribe': ['=bribe'] not categories" in msg


def test_empty_label_none_with_ids_and_repeated_id(tmp_path, sheet):
    msg = _err(tmp_path, sheet, [None, f"none;{SJF}", f"{SJF};{SJF}"])
    assert "row 2, column 'labels', value None: empty label" in msg
    assert "row 3, column 'labels', value 'none;shortest_job_first': 'none' together with categories" in msg
    assert "row 4, column 'labels'" in msg and "a category repeated" in msg


def test_duplicate_unit_for_one_coder(tmp_path, sheet):
    msg = _err(tmp_path, sheet, ["none"] * 3, edit=lambda f: pl.concat([f, f.head(1)]))
    assert "row 5, column 'unit_id', value 'game0:0:w0': coder 'ann' already labelled this unit in row 2" in msg


def test_edited_text_and_moved_rows(tmp_path, sheet):
    def edit(f):
        text = f["text"].to_list()
        text[1] = text[1] + " (fixed a typo)"
        return f.with_columns(text=pl.Series(text), speaker=pl.Series(["w0", "w0", "w0"]))

    msg = _err(tmp_path, sheet, ["none"] * 3, edit=edit)
    assert "row 3, column 'text'" in msg and "not what the sheet showed for unit 'game0:1:w1'" in msg
    assert "row 3, column 'speaker', value 'w0'" in msg and "row 2, column 'speaker'" not in msg


def test_coder_missing_or_conflicting(tmp_path, sheet):
    assert "row 2, column 'coder', value None: no coder" in _err(tmp_path, sheet, ["none"] * 3, cell_coder=None)
    msg = _err(tmp_path, sheet, ["none"] * 3, coder="bo")
    assert "row 4, column 'coder', value 'ann': differs from the coder named at import ('bo')" in msg


def test_file_level_refusals(tmp_path, sheet, monkeypatch):
    filled = _fill(sheet, tmp_path / "f.csv", ["none"] * 3, edit=lambda f: f.drop("labels"))
    with pytest.raises(ValueError, match=r"lacks the sheet's columns \['labels'\]"):
        import_sheet(filled, tmp_path / "labels")
    filled = _fill(sheet, tmp_path / "f.csv", ["none"] * 3)
    with pytest.raises(FileNotFoundError, match="no sheet manifest"):
        import_sheet(filled, tmp_path / "labels", manifest=tmp_path / "nope.json")
    monkeypatch.setattr(limits, "LIMITS", limits.Limits(csv_file_bytes=64))
    with pytest.raises(FileLimitError, match="LIMITS.csv_file_bytes"):
        import_sheet(filled, tmp_path / "labels")
    monkeypatch.undo()
    (tmp_path / "other").mkdir()
    write_json_atomic(tmp_path / "other" / "panel.json", {"taxonomy": "casino", "judges": []})
    with pytest.raises(ValueError, match="taxonomy 'casino', not 'scarce'"):
        import_sheet(filled, tmp_path / "other")


def test_reimport_replaces_and_partial_sheet_reports_missing(tmp_path, sheet):
    import_sheet(_fill(sheet, tmp_path / "f.csv", ["none"] * 3), tmp_path / "labels")
    res = import_sheet(_fill(sheet, tmp_path / "g.csv", [SJF, SJF, "none"], edit=lambda f: f.head(2)), tmp_path / "labels")
    assert res.missing == ["game0:2:w0"] and len(res.replaced) == 2
    assert human_labels(tmp_path / "labels")["ann"] == {"game0:0:w0": [SJF], "game0:1:w1": [SJF], "game0:2:w0": []}


def test_inter_coder_agreement_matches_a_hand_computation(tmp_path):
    """Two coders on four units; label A = bid_priority, B = anchoring.
    ann: {A}, {A}, {}, {B}; bo: {A}, {}, {}, {B}.
    A: ann 1100, bo 1000 -> p_o = 3/4, p_e = .5*.25 + .5*.75 = 1/2, Cohen 1/2;
       Krippendorff: n = 8 values, n1 = 3, n0 = 5, one disagreeing unit (D = 2),
       alpha = 1 - 7 * 2 / (2 * 5 * 3) = 8/15; Fleiss: P = 3/4, P_e = (9 + 25) / 64,
       kappa = (3/4 - 34/64) / (1 - 34/64) = 7/15.
    B: identical -> Cohen 1. Pooled Cohen over 21 x 4 decisions: 83 of 84 agree,
       ann gives 3 ones, bo 2: p_e = (3*2 + 81*82) / 84^2, kappa = 324/408."""
    sheet = export_sheet(_units(["a", "b", "c", "d"]), TAX, tmp_path / "s.csv").csv
    A, B = "bid_priority", "anchoring"
    import_sheet(_fill(sheet, tmp_path / "ann.csv", [A, A, "none", B], coder="ann"), tmp_path / "labels")
    import_sheet(_fill(sheet, tmp_path / "bo.csv", [A, "none", "none", B], coder="bo"), tmp_path / "labels")
    ca = coder_agreement(tmp_path / "labels", TAX, n_boot=50)
    assert ca.coders == ["ann", "bo"] and ca.n_units == 4
    per, summary = ca.pairs[("ann", "bo")]
    kappa = dict(zip(per["label"], per["cohen_kappa"], strict=True))
    assert kappa[A] == pytest.approx(0.5) and kappa[B] == pytest.approx(1.0) and math.isnan(kappa[RECIP])
    assert summary["kappa_pooled"] == pytest.approx(324 / 408) and summary["exact_match"] == pytest.approx(0.75)
    assert summary["kappa_macro"] == pytest.approx(0.75) and summary["kappa_labels_defined"] == 2
    row = ca.agreement.filter(pl.col("label") == A).row(0, named=True)
    assert row["alpha"] == pytest.approx(8 / 15) and row["fleiss_kappa"] == pytest.approx(7 / 15)
    assert math.isnan(row["alpha_lo"]) and row["alpha_reason"].startswith("interval: fewer than 30 units")


def test_cli_export_import_validate_against_people(tmp_path, monkeypatch):
    """The panel (keyword judges) against two coders on SCARCE-layout units, through the CLI."""
    import scarce_lab.cli.judge as cli

    monkeypatch.setattr(cli, "_client", lambda *a, **k: RuleClient(cli_settings()))
    units_file = tmp_path / "units.jsonl"
    texts = ["my deadline is close", "shortest job first please", "hi all"]
    units_file.write_text("".join(json.dumps({"run_id": "g", "contention": i, "agent": "w0", "public_reasoning": t,
                                              "private_messages": None, "context": ""}) + "\n"
                                  for i, t in enumerate(texts)))
    run = CliRunner().invoke
    r = run(app, ["judge", "export-sheet", str(units_file), "--out", str(tmp_path / "s.csv")])
    assert r.exit_code == 0 and "3 of 3 units (scarce)" in r.output, r.output
    _fill(tmp_path / "s.csv", tmp_path / "ann.csv", [EDF, f"{SJF};{RECIP}", "none"], coder=None)
    _fill(tmp_path / "s.csv", tmp_path / "bo.csv", [EDF, SJF, "none"], coder="bo")
    r = run(app, ["judge", "import-sheet", str(tmp_path / "ann.csv"), "--coder", "ann", "--out", str(tmp_path / "h")])
    assert r.exit_code == 0 and "3 rows by ann" in r.output, r.output
    r = run(app, ["judge", "import-sheet", str(tmp_path / "bo.csv"), "--out", str(tmp_path / "h")])
    assert r.exit_code == 0, r.output
    bad = run(app, ["judge", "import-sheet", str(tmp_path / "ann.csv"), "--out", str(tmp_path / "h")])
    assert bad.exit_code == 1 and "row 2, column 'coder', value None: no coder" in bad.output
    r = run(app, ["judge", "validate", "--data", str(tmp_path / "h"), "--judges", "openai/a", "--format", "json",
                  "--no-progress", "--n-boot", "20"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["taxonomy"] == "scarce" and out["inter_coder"]["coders"] == ["ann", "bo"]
    # judge: {EDF}, {SJF}, {} against ann {EDF}, {SJF, RECIP}, {}: tp 2, fp 0, fn 1
    ann = out["coders"]["ann"]["scores"]["j1"]["summary"]
    assert ann["micro_precision"] == 1.0 and ann["micro_recall"] == pytest.approx(2 / 3)
    assert out["coders"]["bo"]["scores"]["j1"]["summary"]["exact_match"] == 1.0
    pair = out["inter_coder"]["pairs"][0]
    assert pair["reference"] == "ann" and pair["summary"]["exact_match"] == pytest.approx(2 / 3)
    r = run(app, ["judge", "validate", "--data", str(tmp_path / "h"), "--judges", "openai/a", "--coder", "bo",
                  "--no-progress", "--n-boot", "20"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "ann vs bo on 3 units" in r.output and "labelled by coder bo" in r.output
    r = run(app, ["judge", "validate", "--data", str(tmp_path / "h"), "--limit", "2", "--no-progress"])
    assert r.exit_code == 2 and "--limit is not for human labels" in r.output


def cli_settings():
    from scarce_lab.llm import LLMSettings

    return LLMSettings(cache=False, max_retries=0)


def test_shipped_blank_sheet_is_what_export_sheet_writes(tmp_path):
    """data/scarce/labels/human_sheet is remade byte for byte by its make_data.sh command
    (and holds no labels: none have been collected)."""
    from scarce_lab.judge.units import units_from_path

    shipped = REPO / "data/scarce/labels/human_sheet"
    export_sheet(units_from_path(REPO / "data/scarce/embedded"), TAX, tmp_path / "embedded.csv",
                 source="data/scarce/embedded")
    for name in ("embedded.csv", "embedded.codebook.md", "embedded.manifest.json"):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    cells = read_csv_cells(shipped / "embedded.csv")
    assert cells.height == 28 and cells["labels"].null_count() == 28 and cells["coder"].null_count() == 28
