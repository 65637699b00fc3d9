"""The panel's folder: ``judgements.jsonl``, ``llm_calls.jsonl`` and ``panel.json``.

Writes follow :mod:`scarce_lab.data.jsonl` (the same rules as the run recorders): each judgement and its call records are appended with ``fsync``
after repairing a torn last line; ``panel.json`` is replaced atomically. Reading skips
a torn last line with a :class:`~scarce_lab.data.jsonl.TornLineWarning` naming file
and line; any other corrupt line is an error naming file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..data.jsonl import append_jsonl_durable, read_json, read_jsonl, write_json_atomic
from .judging import NO_ANSWER_STATUSES, Judgement

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
