"""Validation of a judge panel against expert labels (CaSiNo's, or people's labels of
any environment's talk imported from label sheets) and agreement between people.

:func:`validate_panel` runs the panel on units that carry ``gold`` labels and scores
the arbitrated labels and each judge alone with
:func:`scarce_lab.judge.scores.score_against_gold`. A judge's missing rating (any status
but ok/repaired) is its ``None`` prediction there (no label, counted in ``n_no_answer``).
The gold is CaSiNo's (:func:`scarce_lab.judge.casino.load_casino`), what scripted agents
meant (:func:`scarce_lab.judge.units.dataset_units` with ``gold="intended"``) or one
coder's labels (:func:`scarce_lab.judge.sheets.human_units`).

:func:`coder_agreement` measures how far the coders of a folder agree with each other,
with the same statistics: Krippendorff's alpha and Fleiss' kappa per label across all
coders (:func:`scarce_lab.judge.agreement.label_agreement`, bootstrap intervals only from
:data:`~scarce_lab.judge.agreement.MIN_UNITS_INTERVAL` units), and per pair of coders the
per-label Cohen's kappa, F1 and exact match on the units both labelled
(:func:`~scarce_lab.judge.scores.score_against_gold`, the first coder as reference; no
interval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .agreement import label_agreement
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


@dataclass
class CoderAgreement:
    """Agreement between the coders of a folder (:func:`coder_agreement`).

    ``coders``: their names, sorted; ``n_units``: units labelled by at least one;
    ``agreement``: :func:`~scarce_lab.judge.agreement.label_agreement`'s table over them;
    ``pairs``: ``(a, b)`` -> ``(per_label, summary)`` of
    :func:`~scarce_lab.judge.scores.score_against_gold` with ``a`` as reference on the
    units both labelled (``summary["n_units"]`` of them).
    """

    taxonomy: str
    coders: list[str]
    n_units: int
    agreement: pl.DataFrame
    pairs: dict[tuple[str, str], tuple[pl.DataFrame, dict[str, Any]]]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (NaN -> None)."""

        def clean(v):
            return None if isinstance(v, float) and math.isnan(v) else v

        return {
            "taxonomy": self.taxonomy, "coders": self.coders, "n_units": self.n_units,
            "agreement": [{k: clean(v) for k, v in r.items()} for r in self.agreement.iter_rows(named=True)],
            "pairs": [{"reference": a, "other": b,
                       "summary": {k: clean(v) for k, v in summary.items()},
                       "per_label": [{k: clean(v) for k, v in r.items()} for r in per.iter_rows(named=True)]}
                      for (a, b), (per, summary) in self.pairs.items()],
        }


def coder_agreement(out_dir, taxonomy: Taxonomy, *, n_boot: int = 1000, seed: int = 0) -> CoderAgreement:
    """Agreement between the coders whose labels ``out_dir`` holds (module docstring).
    A coder's unlabelled unit is a missing rating (alpha allows it; Fleiss' kappa uses
    the units every coder labelled).

    Raises:
        ValueError: fewer than two coders in ``out_dir``, or its labels are of another
            taxonomy than ``taxonomy`` (their ids would count as never given).
    """
    from .sheets import human_labels
    from .store import HumanLabelStore

    if other := sorted({h.taxonomy for h in HumanLabelStore(out_dir).load()} - {taxonomy.id}):
        raise ValueError(f"{out_dir}: its human labels use taxonomy {other}, not {taxonomy.id!r}")
    by_coder = human_labels(out_dir)
    coders = sorted(by_coder)
    if len(coders) < 2:
        raise ValueError(f"{out_dir}: inter-coder agreement needs two coders; has {coders}")
    unit_ids = sorted({u for labels in by_coder.values() for u in labels})
    table = label_agreement({c: by_coder[c] for c in coders}, taxonomy.ids, unit_ids, n_boot=n_boot, seed=seed)
    pairs = {}
    for i, a in enumerate(coders):
        for b in coders[i + 1:]:
            both = [u for u in unit_ids if u in by_coder[a] and u in by_coder[b]]
            pairs[(a, b)] = score_against_gold([by_coder[a][u] for u in both], [by_coder[b][u] for u in both],
                                               taxonomy.ids)
    return CoderAgreement(taxonomy.id, coders, len(unit_ids), table, pairs)
