"""Validation of a judge panel against expert labels (e.g. CaSiNo).

:func:`validate_panel` runs the panel on units that carry ``gold`` labels and scores
the arbitrated labels and each judge alone with
:func:`scarce_lab.judge.scores.score_against_gold`. A judge's missing rating (any status
but ok/repaired) is its ``None`` prediction there (no label, counted in ``n_no_answer``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .judges import JudgeSpec
from .panel import PanelResult, run_panel
from .scores import score_against_gold
from .taxonomy import Taxonomy
from .units import Unit


@dataclass
class ValidationReport:
    """Scores of the panel (key ``"panel"``) and of each judge (key = judge name).

    ``per_label[key]`` is a frame of per-label scores; ``summary[key]`` a dict of
    overall scores; ``result`` the underlying panel run.
    """

    taxonomy: str
    judges: list[JudgeSpec]
    note: str
    per_label: dict[str, pl.DataFrame]
    summary: dict[str, dict[str, Any]]
    result: PanelResult

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (NaN -> None)."""

        def clean(v):
            return None if isinstance(v, float) and math.isnan(v) else v

        return {
            "taxonomy": self.taxonomy,
            "n_units": len(self.result.units),
            "min_votes": self.result.min_votes,
            "note": self.note,
            "judges": [j.model_dump() for j in self.judges],
            "scores": {
                key: {
                    "summary": {k: clean(v) for k, v in self.summary[key].items()},
                    "per_label": [
                        {k: clean(v) for k, v in row.items()}
                        for row in self.per_label[key].iter_rows(named=True)
                    ],
                }
                for key in self.summary
            },
        }


async def avalidate_panel(
    units: Sequence[Unit], taxonomy: Taxonomy, judges: Sequence[JudgeSpec], **panel_kwargs
) -> ValidationReport:
    """Run the panel on gold-labelled units and score it (see module docstring).

    ``panel_kwargs`` go to :func:`scarce_lab.judge.panel.run_panel`.

    Raises:
        ValueError: a unit has no ``gold`` labels (``None``).
    """
    if bad := [u.unit_id for u in units if u.gold is None][:3]:
        raise ValueError(f"validation needs expert labels; units without gold: {bad}")
    result = await run_panel(units, taxonomy, judges, **panel_kwargs)
    gold = [u.gold or [] for u in units]
    by_unit = {r["unit_id"]: r for r in result.labels.iter_rows(named=True)}
    panel_pred = [
        None if by_unit[u.unit_id]["status"] == "insufficient" else by_unit[u.unit_id]["labels"]
        for u in units
    ]
    per_label, summary = {}, {}
    per_label["panel"], summary["panel"] = score_against_gold(gold, panel_pred, taxonomy.ids)
    for j in judges:
        answers = result.answers(j.name)
        pred = [answers[u.unit_id] for u in units]
        per_label[j.name], summary[j.name] = score_against_gold(gold, pred, taxonomy.ids)
    return ValidationReport(
        taxonomy=taxonomy.id,
        judges=list(judges),
        note=result.note,
        per_label=per_label,
        summary=summary,
        result=result,
    )


def validate_panel(units, taxonomy, judges, **panel_kwargs) -> ValidationReport:
    """Synchronous :func:`avalidate_panel` (also inside Jupyter's running loop)."""
    from ..llm.client import run_sync

    return run_sync(avalidate_panel(units, taxonomy, judges, **panel_kwargs))
