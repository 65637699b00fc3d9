"""Label sheets: the units a judge labels, as a CSV a research assistant fills, and the
filled sheet read back as human labels beside the judges' (so judges can be validated
against people on any environment's talk, not only on CaSiNo).

:func:`export_sheet` writes three files from units (:func:`scarce_lab.judge.units.units_from_path`):

- ``NAME.csv``: one row per unit, columns :data:`SHEET_COLUMNS`: ``unit_id`` (the
  stable key ``run_id:round:agent``), ``run_id``, ``round``, ``speaker``, ``text`` (the
  speaker's public reasoning and the messages it sent, clipped as a judge sees them),
  ``context`` (the round as the speaker saw it, as the judge sees it), and the columns
  the coder fills: ``labels`` (category ids separated by ``;``, or ``none``),
  ``coder`` (the coder's name) and ``notes`` (free text, not read). Every cell is
  written through the CSV gate (:mod:`scarce_lab.data.csvsafe`): agent talk is
  attacker-controlled and never reaches a spreadsheet as a formula.
- ``NAME.codebook.md``: how to fill the sheet and every category of the taxonomy
  (definition, what it includes and excludes, an example).
- ``NAME.manifest.json``: what the sheet holds (taxonomy and its category ids, the
  source, the sample with its seed, the clipping, and every unit as shown), the
  reference the import checks a filled sheet against. Keep it; the coder needs only
  the CSV and the codebook.

:func:`import_sheet` reads a filled sheet through the read gate
(:func:`scarce_lab.data.csvsafe.read_csv_cells`: size-bounded, the formula prefix undone),
checks every row and stores the labels in a panel folder's ``human_labels.jsonl``
(:class:`scarce_lab.judge.store.HumanLabelStore`, labeller kind ``human``). Every problem
of every row is reported at once (:class:`SheetError`: row, column, value); nothing is
stored unless every row is good, so a bad row is never dropped silently.

:func:`human_units` gives the stored units with one coder's labels as ``gold``: what
:func:`scarce_lab.judge.validation.validate_panel` scores a panel against, as it does
CaSiNo's expert labels; :func:`scarce_lab.judge.validation.coder_agreement` measures
agreement between coders.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..data.csvsafe import frame_to_csv, read_csv_cells
from ..data.jsonl import read_json, write_atomic, write_json_atomic
from .judging import _clip
from .store import NO_CATEGORY, HumanLabel, HumanLabelStore
from .taxonomy import Taxonomy, load_taxonomy
from .units import Unit

#: The sheet's columns, in order: what the sheet shows, then what the coder fills.
SHOWN_COLUMNS = ("unit_id", "run_id", "round", "speaker", "text", "context")
FILLED_COLUMNS = ("labels", "coder", "notes")
SHEET_COLUMNS = SHOWN_COLUMNS + FILLED_COLUMNS
#: Separator of several category ids in one ``labels`` cell (a comma would need quoting).
LABEL_SEPARATOR = ";"
SHEET_FORMAT = "scarce_lab label sheet"
SHEET_VERSION = 1
#: Characters of each text a sheet shows, as :func:`scarce_lab.judge.judging.render_messages` clips them.
DEFAULT_MAX_CHARS = 1200


class SheetError(ValueError):
    """A filled sheet that cannot be imported: ``problems`` lists every one (row,
    column, value, what is wrong); the message holds them all, one per line."""

    def __init__(self, path: Path, problems: list[str]):
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s); nothing imported:\n" + "\n".join(problems))


@dataclass(frozen=True)
class SheetFiles:
    """What :func:`export_sheet` wrote: the CSV, the codebook, the manifest, and how
    many units (rows) the sheet holds."""

    csv: Path
    codebook: Path
    manifest: Path
    n_units: int


@dataclass
class ImportResult:
    """What :func:`import_sheet` stored: ``labels`` (one per row), ``replaced`` ((unit,
    coder) pairs that an earlier import had labelled: the new label wins), ``missing``
    (unit ids of the sheet's manifest with no row in the file), ``ignored_columns``
    (columns the file has beyond :data:`SHEET_COLUMNS`, not read) and ``blank_rows``
    (rows with no cell filled, which spreadsheets save after the data: skipped)."""

    store: Path
    labels: list[HumanLabel]
    replaced: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)
    blank_rows: int = 0


# -- export ------------------------------------------------------------------------------------
def unit_text(unit: Unit, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The speaker's own words as a sheet shows them: its public reasoning, then each
    message it sent (``Message to w1: ...``), each text clipped to ``max_chars`` as the
    judge's prompt clips it; lines joined with ``\\n``."""
    parts = []
    if reasoning := _clip(unit.public_reasoning, max_chars):
        parts.append(f"Public reasoning: {reasoning}")
    for m in unit.private_messages:
        parts.append(f"Message to {m.to or 'the others'}: {_clip(m.text, max_chars)}")
    return "\n".join(parts)


def sample_units(units: Sequence[Unit], n: int | None, seed: int) -> tuple[list[Unit], dict[str, Any]]:
    """``n`` of ``units`` drawn at random without replacement, stratified by run: each
    run gets ``n`` times its share of the units (largest remainders round, ties to the
    earlier run id), drawn with ``random.Random(seed)``; every unit when ``n`` is
    ``None`` or at least their number. Returns the sample in ``(run_id, round, agent)``
    order and its record (``n``, ``seed``, ``strata``, ``per_run``: units drawn per run).

    Raises:
        ValueError: ``n`` < 1.
    """
    by_run: dict[str, list[Unit]] = {}
    for u in sorted(units, key=lambda u: (u.run_id, u.round, u.agent)):
        by_run.setdefault(u.run_id, []).append(u)
    if n is None or n >= len(units):
        return [u for r in sorted(by_run) for u in by_run[r]], {
            "n": len(units), "seed": None, "strata": "run_id", "per_run": {r: len(by_run[r]) for r in sorted(by_run)},
            "rule": "every unit"}
    if n < 1:
        raise ValueError(f"--sample must be at least 1, got {n}")
    total = len(units)
    quota = {r: n * len(us) / total for r, us in by_run.items()}
    take = {r: int(q) for r, q in quota.items()}
    for r in sorted(by_run, key=lambda r: (-(quota[r] - take[r]), r))[: n - sum(take.values())]:
        take[r] += 1
    rng = random.Random(seed)
    chosen = {u.unit_id for r in sorted(by_run) for u in rng.sample(by_run[r], take[r])}
    picked = [u for r in sorted(by_run) for u in by_run[r] if u.unit_id in chosen]
    return picked, {"n": n, "seed": seed, "strata": "run_id", "per_run": {r: take[r] for r in sorted(by_run)},
                    "rule": "stratified by run: each run's share of n (largest remainders), drawn by "
                            "random.Random(seed).sample within the run"}


def sheet_frame(units: Sequence[Unit], *, max_chars: int = DEFAULT_MAX_CHARS) -> pl.DataFrame:
    """The sheet's rows (:data:`SHEET_COLUMNS`; the filled columns empty)."""
    rows = [(u.unit_id, u.run_id, u.round, u.agent, unit_text(u, max_chars=max_chars),
             _clip(u.context, max_chars), None, None, None) for u in units]
    schema = dict.fromkeys(SHEET_COLUMNS, pl.String) | {"round": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def codebook(taxonomy: Taxonomy, *, n_units: int, sheet: str) -> str:
    """The coder's instructions and the taxonomy's categories, as Markdown."""
    lines = [f"# Codebook: {taxonomy.name} (`{taxonomy.id}`, version {taxonomy.version})", "",
             f"Sheet `{sheet}`: {n_units} units. One unit is {taxonomy.unit.strip()}.", "",
             "## How to fill the sheet", "",
             "- Read `text` (the speaker's own words: its public reasoning and the messages it sent) with "
             "`context` (what the speaker saw). Label only what the speaker's own words show.",
             f"- `labels`: every category id below that the text shows, separated by `{LABEL_SEPARATOR}` "
             f"(e.g. `{taxonomy.ids[0]}{LABEL_SEPARATOR}{taxonomy.ids[-1]}`), or `{NO_CATEGORY}` when it shows "
             "none. Never leave it empty: an empty cell is refused at import.",
             "- `coder`: your name (the same in every row), or leave it empty and the researcher names you at "
             "import. `notes`: anything you want to say; it is not read.",
             "- Do not edit `unit_id`, `run_id`, `round`, `speaker`, `text` or `context`, and do not add or "
             "copy rows: the import checks them against the sheet it sent you. A cell that begins with `'` "
             "was written so (agent text that begins with `=`, `+`, `-`, `@` must not run as a formula); "
             "leave it.",
             "", "## Categories", ""]
    systems = {s.id: s for s in taxonomy.systems}
    groups = {g.id: g.name for s in taxonomy.systems for g in s.groups}
    for c in taxonomy.categories:
        lines += [f"### `{c.id}`: {c.name}", "",
                  f"*{systems[c.system].name} / {groups[c.group]}*", "", c.definition.strip(), ""]
        if c.include:
            lines += ["Includes:", *(f"- {x}" for x in c.include), ""]
        if c.exclude:
            lines += ["Excludes:", *(f"- {x}" for x in c.exclude), ""]
        lines += [f"Example: {c.example.strip()}", ""]
    return "\n".join(lines)


def manifest_path(csv_path: Path) -> Path:
    """The manifest beside a sheet: ``NAME.manifest.json`` for ``NAME.csv``."""
    return Path(csv_path).with_suffix(".manifest.json")


def export_sheet(units: Sequence[Unit], taxonomy: Taxonomy, out: Path, *, sample: int | None = None,
                 seed: int = 0, source: str = "", max_chars: int = DEFAULT_MAX_CHARS,
                 overwrite: bool = False) -> SheetFiles:
    """Write a blank label sheet for ``units`` (or a sample of them,
    :func:`sample_units`) under ``taxonomy``: ``out`` (the CSV), its codebook and its
    manifest (module docstring). ``source`` is recorded (where the units came from).

    An existing sheet or manifest at ``out`` is replaced only when ``overwrite`` (or when
    this export writes exactly what it holds): a coder may have filled that CSV in place,
    and the filled sheets sent out are checked against that manifest.

    Raises:
        ValueError: no units, ``out`` not ending in ``.csv``, ``sample`` < 1, or a repeated unit id.
        FileExistsError: ``out`` or its manifest exists and differs from this export
            (without ``overwrite``); nothing is written then.
    """
    out = Path(out)
    if out.suffix.lower() != ".csv":
        raise ValueError(f"{out}: a label sheet is a .csv file")
    if not units:
        raise ValueError("no units to put in a sheet")
    if len({u.unit_id for u in units}) != len(units):
        raise ValueError("units hold a repeated unit id; a sheet row must map back to one unit")
    picked, drawn = sample_units(units, sample, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    book, man = out.with_suffix(".codebook.md"), manifest_path(out)
    text = frame_to_csv(sheet_frame(picked, max_chars=max_chars))
    record = {
        "format": SHEET_FORMAT, "version": SHEET_VERSION, "sheet": out.name, "taxonomy": taxonomy.id,
        "taxonomy_version": taxonomy.version, "categories": taxonomy.ids, "source": str(source),
        "units_available": len(units), "sample": drawn, "max_chars": max_chars,
        "units": [u.model_dump(mode="json", exclude={"gold"}) for u in picked]}
    for old, same in ((out, lambda: out.read_text(encoding="utf-8") == text), (man, lambda: read_json(man) == record)):
        if not overwrite and old.exists() and not same():
            raise FileExistsError(f"{old}: exists and differs from this export (a sheet a coder filled in place, or "
                                  "the manifest the sheets sent out are checked against); choose another --out, "
                                  "or replace it (--force)")
    write_atomic(out, text)
    write_atomic(book, codebook(taxonomy, n_units=len(picked), sheet=out.name))
    write_json_atomic(man, record)
    return SheetFiles(out, book, man, len(picked))


# -- import ------------------------------------------------------------------------------------
def read_manifest(path: Path) -> dict[str, Any]:
    """A sheet's manifest, checked to be one (format, version, units).

    Raises:
        FileNotFoundError: no manifest at ``path``.
        ValueError: not a sheet manifest (the message names the file and the field).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no sheet manifest here (export-sheet writes NAME.manifest.json beside "
                                "NAME.csv; pass the path of the one written with the blank sheet)")
    man = read_json(path)
    if not isinstance(man, dict) or man.get("format") != SHEET_FORMAT:
        raise ValueError(f"{path}: not a label sheet manifest (field 'format' is not {SHEET_FORMAT!r})")
    if man.get("version") != SHEET_VERSION:
        raise ValueError(f"{path}: sheet manifest version {man.get('version')!r}; this package reads {SHEET_VERSION}")
    if not isinstance(man.get("units"), list) or not isinstance(man.get("categories"), list):
        raise ValueError(f"{path}: sheet manifest without 'units' and 'categories' lists")
    return man


def _same(cell: str | None, want: str) -> bool:
    """A shown cell equals what the sheet wrote, line ends aside: a spreadsheet may save
    ``\\r\\n`` or ``\\r`` for ``\\n`` (and agent talk may hold any of them)."""
    def lines(text: str) -> str:
        return text.replace("\r\n", "\n").replace("\r", "\n")

    return lines(cell or "") == lines(want)


def _labels(cell: str | None, ids: set[str]) -> tuple[list[str] | None, str | None]:
    """``(labels, None)`` from a ``labels`` cell, or ``(None, problem)``."""
    if cell is None or not cell.strip():
        return None, f"empty label: write category ids separated by '{LABEL_SEPARATOR}', or '{NO_CATEGORY}'"
    items = [x.strip() for x in cell.split(LABEL_SEPARATOR)]
    if any(not x for x in items):
        return None, f"an empty item between '{LABEL_SEPARATOR}' separators"
    if NO_CATEGORY in items:
        return ([], None) if items == [NO_CATEGORY] else (None, f"'{NO_CATEGORY}' together with categories")
    if unknown := [x for x in items if x not in ids]:
        return None, f"{unknown} not categories of the taxonomy (see the codebook)"
    if len(set(items)) < len(items):
        return None, "a category repeated"
    return items, None


def coder_key(name: str) -> str:
    """What makes two spellings of a coder's name one person: Unicode NFKC form, case
    folded, invisible format characters (zero-width space, joiners, BOM) dropped, runs of
    spaces as one. ``"José "``, ``"JOSE\u0301"`` and ``"jos\u00e9"`` share a key."""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
    return " ".join(text.casefold().split())


def _spellings(names: Sequence[str]) -> list[list[str]]:
    """Groups of two or more different spellings of one :func:`coder_key`."""
    groups: dict[str, set[str]] = {}
    for n in names:
        groups.setdefault(coder_key(n), set()).add(n)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def import_sheet(path: Path, out_dir: Path, *, coder: str | None = None,
                 manifest: Path | None = None) -> ImportResult:
    """Check a filled sheet against its manifest and store its labels in ``out_dir``
    (``human_labels.jsonl``; a panel folder of the same taxonomy, or a new folder).

    Every row is checked (each problem names the row as a spreadsheet numbers it, the
    header being row 1, the column and the value): a unit id that is not in the
    manifest; ``run_id``/``round``/``speaker``/``text``/``context`` not as the sheet
    showed them (edited, or a row moved to another unit); an empty ``labels`` cell, an
    id not in the taxonomy, ``none`` with ids, a repeated id; no coder (neither the
    ``coder`` cell nor ``coder``), or a ``coder`` cell that differs from ``coder``; the
    same unit twice for one coder; a coder's name spelled two ways (:func:`coder_key`:
    case, Unicode form, spaces, invisible characters) in the sheet or against a coder the
    folder holds (it would count one person as two coders); a unit whose id the folder
    holds for another unit (other text: coders would be compared on different talk). Rows with no cell filled are
    skipped (counted). Also refused: a file without the sheet's columns, a taxonomy whose
    ids or version changed since the export, a folder of another taxonomy.

    Args:
        coder: the coder's name for rows whose ``coder`` cell is empty (and the name
            every filled ``coder`` cell must match).
        manifest: the export's manifest (default: ``NAME.manifest.json`` beside ``path``).

    Raises:
        SheetError: problems in rows (all listed; nothing stored).
        FileNotFoundError: the sheet or the manifest is missing.
        FileLimitError: the sheet is not a regular file or over ``LIMITS.csv_file_bytes``.
        ValueError: not a CSV, the sheet's columns missing, a changed taxonomy, a folder
            of another taxonomy.
    """
    path = Path(path)
    coder = (coder or "").strip() or None  # read as a cell is
    man = read_manifest(manifest or manifest_path(path))
    tax = load_taxonomy(man["taxonomy"])
    if tax.ids != man["categories"]:
        raise ValueError(f"taxonomy {tax.id!r} now has categories {tax.ids}, the sheet was made with "
                         f"{man['categories']}: export a new sheet")
    if man.get("taxonomy_version") != tax.version:
        raise ValueError(f"taxonomy {tax.id!r} is now version {tax.version!r}, the sheet was made with version "
                         f"{man.get('taxonomy_version')!r} (its definitions may differ): export a new sheet")
    store = HumanLabelStore(out_dir)
    store.check_taxonomy(tax.id)
    frame = read_csv_cells(path)
    if missing := [c for c in SHOWN_COLUMNS + ("labels", "coder") if c not in frame.columns]:
        raise ValueError(f"{path}: lacks the sheet's columns {missing}; has {frame.columns}")
    units = {u["unit_id"]: Unit.model_validate(u) for u in man["units"]}
    max_chars = int(man.get("max_chars", DEFAULT_MAX_CHARS))
    ids, problems, labels, seen, blank = set(tax.ids), [], [], {}, 0
    for i, row in enumerate(frame.iter_rows(named=True)):
        where = f"row {i + 2}"
        if not any((v or "").strip() for v in row.values()):
            blank += 1
            continue
        bad = len(problems)

        def problem(col: str, msg: str, _where=where, _row=row) -> None:
            problems.append(f"{_where}, column {col!r}, value {_row.get(col)!r}: {msg}")

        unit = units.get(row["unit_id"] or "")
        if unit is None:
            problem("unit_id", "not a unit of this sheet (its manifest)")
        else:
            shown = {"run_id": unit.run_id, "round": str(unit.round), "speaker": unit.agent,
                     "text": unit_text(unit, max_chars=max_chars), "context": _clip(unit.context, max_chars)}
            for col, want in shown.items():
                if not _same(row[col], want):
                    problem(col, f"not what the sheet showed for unit {unit.unit_id!r} (edited, or rows moved)")
        got, why = _labels(row["labels"], ids)
        if why:
            problem("labels", why)
        cell = (row["coder"] or "").strip()
        if cell and coder and cell != coder:
            problem("coder", f"differs from the coder named at import ({coder!r})")
        who = cell or (coder or "")
        if not who:
            problem("coder", "no coder: fill the column or name one at import")
        if unit is not None and who and (unit.unit_id, who) in seen:
            problem("unit_id", f"coder {who!r} already labelled this unit in {seen[(unit.unit_id, who)]}")
        if unit is not None and who:
            seen.setdefault((unit.unit_id, who), where)
        if len(problems) == bad:
            labels.append(HumanLabel(coder=who, taxonomy=tax.id, labels=got, unit=unit, sheet=path.name, row=i + 2))
    if frame.height == blank:
        problems.append("no rows")
    held = {h.unit.unit_id: h.unit for h in store.load()}
    for h in labels:
        if h.unit.unit_id in held and held[h.unit.unit_id] != h.unit:
            problems.append(f"row {h.row}, column 'unit_id', value {h.unit.unit_id!r}: {store.path} holds another unit "
                            "of this id (other text or context: another dataset or run under the same run id); "
                            "import into another folder")
    stored = store.coders()
    for group in _spellings(sorted({h.coder for h in labels} | set(stored))):
        old = [n for n in group if n in stored]
        problems.append(f"column 'coder': {group} are one name spelled differently (case, Unicode form, spaces or "
                        "invisible characters), which would count one person as several coders; "
                        + (f"{store.path} already holds {old}: use that spelling" if old else "write it one way"))
    if problems:
        raise SheetError(path, problems)
    before = {(h.unit.unit_id, h.coder) for h in store.load()}
    store.append(labels)
    coded = {h.unit.unit_id for h in labels}
    return ImportResult(store=store.path, labels=labels,
                        replaced=sorted({(h.unit.unit_id, h.coder) for h in labels} & before),
                        missing=[u for u in units if u not in coded],
                        ignored_columns=[c for c in frame.columns if c not in SHEET_COLUMNS], blank_rows=blank)


# -- reading back ------------------------------------------------------------------------------
def human_labels(out_dir: Path) -> dict[str, dict[str, list[str]]]:
    """coder -> unit id -> labels, from ``out_dir``'s ``human_labels.jsonl``."""
    out: dict[str, dict[str, list[str]]] = {}
    for h in HumanLabelStore(out_dir).load():
        out.setdefault(h.coder, {})[h.unit.unit_id] = h.labels
    return out


def human_units(out_dir: Path, coder: str) -> list[Unit]:
    """The units ``coder`` labelled in ``out_dir``, each with those labels as ``gold``,
    in ``(run_id, round, agent)`` order: what
    :func:`scarce_lab.judge.validation.validate_panel` scores a panel against.

    Raises:
        ValueError: ``coder`` has no labels there (the message names those who have).
    """
    mine = [h for h in HumanLabelStore(out_dir).load() if h.coder == coder]
    if not mine:
        raise ValueError(f"{out_dir}: no human labels by coder {coder!r}; coders: {HumanLabelStore(out_dir).coders()}")
    units = [h.unit.model_copy(update={"gold": list(h.labels)}) for h in mine]
    return sorted(units, key=lambda u: (u.run_id, u.round, u.agent))
