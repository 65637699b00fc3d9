"""Panel tables: judgements as a frame, and the arbitration of every unit.

Glue between the stored :class:`~scarce_lab.judge.judging.Judgement` records and the
pure :func:`~scarce_lab.judge.arbitration.arbitrate`; frames keyed to the labelled
rounds ``(run_id, round, agent)``: ``judgements`` (one row per unit and judge),
``labels`` (one row per unit: accepted labels, ties, judges without a rating) and
``votes`` (one row per unit and label that got at least one vote).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl

from .arbitration import arbitrate, default_min_votes
from .judges import JudgeSpec
from .judging import NO_ANSWER_STATUSES, Judgement
from .taxonomy import Taxonomy
from .units import Unit

#: The columns that key every frame to the labelled round.
KEY_SCHEMA = {
    "unit_id": pl.String,
    "run_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
}
JUDGEMENT_SCHEMA = {
    **KEY_SCHEMA,
    "judge": pl.String,
    "model": pl.String,
    "status": pl.String,
    "labels": pl.List(pl.String),
    "invalid_labels": pl.List(pl.String),
    "evidence": pl.String,
    "call_outcomes": pl.List(pl.String),
    "n_calls": pl.Int64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,
    "cost_usd": pl.Float64,
    "cache_hit": pl.Boolean,
}


def judgements_frame(judgements: Sequence[Judgement]) -> pl.DataFrame:
    """One row per (unit, judge): ``status`` (the judgement's outcome, see
    :mod:`scarce_lab.judge.judging`), valid ``labels``, ``invalid_labels``,
    ``call_outcomes``; ``evidence`` as JSON text ``{label: quote}``. Units:
    ``latency_s`` seconds, ``cost_usd`` US dollars."""
    rows = []
    for j in judgements:
        row = j.model_dump()
        row["evidence"] = json.dumps(j.evidence, ensure_ascii=False)
        rows.append({k: row.get(k) for k in JUDGEMENT_SCHEMA})
    return pl.DataFrame(rows, schema=JUDGEMENT_SCHEMA, orient="row").sort(["unit_id", "judge"])


LABELS_SCHEMA = {
    **KEY_SCHEMA,
    "labels": pl.List(pl.String),
    "ties": pl.List(pl.String),
    "n_judges": pl.Int64,
    "n_valid": pl.Int64,
    "unparseable": pl.List(pl.String),
    "missing": pl.List(pl.String),
    "status": pl.String,
}
VOTES_SCHEMA = {
    **KEY_SCHEMA,
    "label": pl.String,
    "votes": pl.Int64,
    "n_valid": pl.Int64,
    "accepted": pl.Boolean,
    "tie": pl.Boolean,
    "relational": pl.Boolean,
    "evidence": pl.String,
    "evidence_found": pl.Float64,
}


def arbitrate_judgements(
    units: Sequence[Unit],
    judgements: Sequence[Judgement],
    judges: Sequence[JudgeSpec],
    taxonomy: Taxonomy,
    *,
    min_votes: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Arbitrate every unit; returns ``(labels, votes)`` frames (see module docstring).

    A judge with no judgement for a unit (not run yet) or one without an answer
    (:data:`~scarce_lab.judge.judging.NO_ANSWER_STATUSES`) is listed in ``missing``; one
    that answered without a rating (any status but ``ok`` and ``repaired``: invalid,
    ambiguous, truncated, refusal, invalid_label...) is listed in ``unparseable`` (the ``judgements`` frame says which outcome). Neither
    votes; both count in the panel size for the default ``min_votes``.
    """
    by_pair = {(j.unit_id, j.judge_key): j for j in judgements}
    need = default_min_votes(len(judges)) if min_votes is None else min_votes
    label_rows, vote_rows = [], []
    for u in units:
        answers: dict[str, list[str] | None] = {}
        missing = []
        got: dict[str, Judgement] = {}
        for spec in judges:
            j = by_pair.get((u.unit_id, spec.key))
            if j is None or j.status in NO_ANSWER_STATUSES:
                missing.append(spec.name)
                answers[spec.name] = None
            else:
                got[spec.name] = j
                answers[spec.name] = j.labels if j.votes else None
        arb = arbitrate(answers, min_votes=need, label_order=taxonomy.ids)
        key = {"unit_id": u.unit_id, "run_id": u.run_id, "round": u.round, "agent": u.agent}
        label_rows.append(
            key
            | {
                "labels": list(arb.accepted),
                "ties": list(arb.ties),
                "n_judges": arb.n_judges,
                "n_valid": arb.n_valid,
                "unparseable": [n for n in arb.unparseable if n not in missing],
                "missing": missing,
                "status": arb.status,
            }
        )
        for lab, v in arb.votes.items():
            voters = [j for j in got.values() if j.votes and lab in j.labels]
            found = [j.evidence_found.get(lab, False) for j in voters]
            vote_rows.append(
                key
                | {
                    "label": lab,
                    "votes": v,
                    "n_valid": arb.n_valid,
                    "accepted": lab in arb.accepted,
                    "tie": lab in arb.ties,
                    "relational": lab in taxonomy.relational_ids,
                    "evidence": voters[0].evidence.get(lab, "") if voters else "",
                    "evidence_found": sum(found) / len(found) if found else None,
                }
            )
    labels = pl.DataFrame(label_rows, schema=LABELS_SCHEMA, orient="row")
    votes = pl.DataFrame(vote_rows, schema=VOTES_SCHEMA, orient="row")
    return labels, votes
