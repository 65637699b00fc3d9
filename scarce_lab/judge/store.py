"""The panel's folder: ``judgements.jsonl``, ``llm_calls.jsonl`` and ``panel.json``, and
the labels people gave the same units, ``human_labels.jsonl`` (:class:`HumanLabelStore`,
filled by :func:`scarce_lab.judge.sheets.import_sheet`).

Writes follow :mod:`scarce_lab.data.jsonl` (the same rules as the run recorders): each judgement and its call records are appended with ``fsync``
after repairing a torn last line; ``panel.json`` is replaced atomically. Reading skips
a torn last line with a :class:`~scarce_lab.data.jsonl.TornLineWarning` naming file
and line; any other corrupt line is an error naming file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..data.jsonl import append_jsonl_durable, read_json, read_jsonl, write_json_atomic
from .judging import NO_ANSWER_STATUSES, Judgement
from .units import Unit

JUDGEMENTS_FILE = "judgements.jsonl"
CALLS_FILE = "llm_calls.jsonl"
PANEL_FILE = "panel.json"


class JudgementStore:
    """Append-only judgements (+ call records and panel metadata) in one folder.

    Raises:
        ValueError: (``check_meta``) the folder was started with another taxonomy or
            its ``panel.json`` is not a JSON object; (``load``) a line of
            ``judgements.jsonl`` other than a torn last one is corrupt (the message
            names file and line).
    """

    def __init__(self, out_dir: Path):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / JUDGEMENTS_FILE
        self.calls_path = self.dir / CALLS_FILE
        self.meta_path = self.dir / PANEL_FILE

    def check_taxonomy(self, taxonomy: str) -> dict[str, Any] | None:
        """The existing ``panel.json`` (``None`` if absent), checked to be a JSON object
        started with ``taxonomy``."""
        if not self.meta_path.exists():
            return None
        old = read_json(self.meta_path)
        if not isinstance(old, dict):
            raise ValueError(f"{self.meta_path}: expected a JSON object, got {type(old).__name__}")
        if old.get("taxonomy") != taxonomy:
            raise ValueError(
                f"{self.dir}: holds judgements for taxonomy {old.get('taxonomy')!r}, "
                f"not {taxonomy!r}; use another --out folder"
            )
        return old

    def check_meta(self, meta: dict[str, Any]) -> None:
        """Write ``panel.json``, or check that an existing one uses the same taxonomy
        (then the judges lists are merged)."""
        old = self.check_taxonomy(meta.get("taxonomy"))
        if old is not None:
            meta = {**old, **meta, "judges": _merge_judges(old.get("judges", []), meta["judges"])}
        write_json_atomic(self.meta_path, meta)

    def done(self, unit_ids: set[str], judge_keys: set[str]) -> dict[tuple[str, str], Judgement]:
        """(unit_id, judge_key) -> stored judgement, for the pairs of ``unit_ids`` x
        ``judge_keys`` that need no new call: a status in
        :data:`~scarce_lab.judge.judging.NO_ANSWER_STATUSES` is asked again on resume
        (locally and on Ray alike)."""
        return {
            (j.unit_id, j.judge_key): j
            for j in self.load()
            if j.status not in NO_ANSWER_STATUSES
            and j.unit_id in unit_ids
            and j.judge_key in judge_keys
        }

    def load(self) -> list[Judgement]:
        """Every stored judgement (the last one wins for a repeated (unit, judge) pair)."""
        if not self.path.exists():
            return []
        out: dict[tuple[str, str], Judgement] = {}
        for no, obj in read_jsonl(self.path):
            try:
                j = Judgement.model_validate(obj)
            except ValidationError as exc:
                raise ValueError(f"{self.path}:{no}: corrupt judgement line: {exc}") from exc
            out[(j.unit_id, j.judge_key)] = j
        return list(out.values())

    def append(self, judgement: Judgement, calls: list) -> None:
        """Append one judgement and its call records durably (fsynced).

        The call records go first: a judgement on disk always has its calls, and a
        crash between the two writes only leaves calls of a pair that is asked again.
        """
        append_jsonl_durable(self.calls_path, [c.model_dump_json() for c in calls])
        append_jsonl_durable(self.path, [judgement.model_dump_json()])


def _merge_judges(old: list[dict], new: list[dict]) -> list[dict]:
    keys = {json.dumps(j, sort_keys=True) for j in old}
    return old + [j for j in new if json.dumps(j, sort_keys=True) not in keys]


# -- human labels --------------------------------------------------------------------------
HUMAN_FILE = "human_labels.jsonl"
#: What a person marks for a unit with none of the taxonomy's categories (never a category id:
#: ids start with a letter and ``none`` is refused as one, :class:`HumanLabelStore`).
NO_CATEGORY = "none"


class HumanLabel(BaseModel):
    """One person's labels for one unit (one line of ``human_labels.jsonl``), beside the
    judges' judgements in a panel folder.

    ``kind`` is always ``"human"`` (the labeller kind; a judge's line is a
    :class:`~scarce_lab.judge.judging.Judgement`); ``coder`` the person's name;
    ``labels`` taxonomy ids (empty: the person marked ``none``); ``unit`` the unit as the
    sheet showed it (so validation needs no dataset); ``sheet`` and ``row`` where the
    label was read (file name, spreadsheet row with the header as row 1).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["human"] = "human"
    coder: str = Field(min_length=1)
    taxonomy: str
    labels: list[str]
    unit: Unit
    sheet: str
    row: int


class HumanLabelStore:
    """Append-only human labels in a panel folder (``human_labels.jsonl``), written like
    the judgements (fsynced appends); the last line of a (unit, coder) pair wins (a
    corrected sheet imported again replaces it).

    Raises:
        ValueError: (``check_taxonomy``) the folder's panel or earlier human labels use
            another taxonomy; (``load``) a corrupt line (file and line named).
    """

    def __init__(self, out_dir: Path):
        self.dir = Path(out_dir)
        self.path = self.dir / HUMAN_FILE

    def check_taxonomy(self, taxonomy: str) -> None:
        """Refuse ``taxonomy`` when the folder's ``panel.json`` or its human labels name another."""
        if self.dir.exists():
            meta = self.dir / PANEL_FILE
            if meta.exists():
                old = read_json(meta)
                if isinstance(old, dict) and old.get("taxonomy") != taxonomy:
                    raise ValueError(f"{self.dir}: its judges labelled with taxonomy {old.get('taxonomy')!r}, "
                                     f"not {taxonomy!r}; import into another folder")
        if other := sorted({h.taxonomy for h in self.load()} - {taxonomy}):
            raise ValueError(f"{self.path}: holds human labels for taxonomy {other}, not {taxonomy!r}")

    def load(self) -> list[HumanLabel]:
        """Every stored human label, the last one of each (unit, coder) pair, in file order."""
        if not self.path.exists():
            return []
        out: dict[tuple[str, str], HumanLabel] = {}
        for no, obj in read_jsonl(self.path):
            try:
                h = HumanLabel.model_validate(obj)
            except ValidationError as exc:
                raise ValueError(f"{self.path}:{no}: corrupt human label line: {exc}") from exc
            out.pop((h.unit.unit_id, h.coder), None)
            out[(h.unit.unit_id, h.coder)] = h
        return list(out.values())

    def append(self, labels: list[HumanLabel]) -> None:
        """Append ``labels`` durably (fsynced), in one write."""
        self.dir.mkdir(parents=True, exist_ok=True)
        append_jsonl_durable(self.path, [h.model_dump_json() for h in labels])

    def coders(self) -> list[str]:
        """The coders with stored labels, sorted."""
        return sorted({h.coder for h in self.load()})
