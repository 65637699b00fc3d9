"""Majority arbitration of a judge panel's multi-label answers (pure functions).

Each judge answers a unit with a set of labels, or is *unparseable* (no valid answer
after the client's repair attempt, recorded as ``None``). A label is **accepted** when
at least ``min_votes`` valid judges gave it (default: a majority of the panel, i.e. 2
of 3). A **tie** is an even split among the valid judges (votes * 2 == valid judges,
e.g. 1-1 when one of three judges is unparseable); ties are recorded, and accepted only
when ``min_votes`` allows it. Unparseable judges never vote and are listed by name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def default_min_votes(n_judges: int) -> int:
    """Majority of the panel: ``n_judges // 2 + 1`` (2 of 3, 3 of 4, 3 of 5).

    Raises:
        ValueError: ``n_judges`` < 1.
    """
    if n_judges < 1:
        raise ValueError(f"n_judges must be >= 1, got {n_judges}")
    return n_judges // 2 + 1


@dataclass(frozen=True)
class Arbitration:
    """The panel's verdict on one unit.

    ``status``: ``"ok"`` (every judge valid), ``"partial"`` (some unparseable, but
    at least ``min_votes`` valid judges remain), ``"insufficient"`` (fewer valid judges
    than ``min_votes``: no label can be accepted).
    """

    accepted: tuple[str, ...]
    ties: tuple[str, ...]
    votes: dict[str, int] = field(default_factory=dict)
    n_judges: int = 0
    n_valid: int = 0
    unparseable: tuple[str, ...] = ()
    status: str = "ok"


def arbitrate(
    answers: Mapping[str, Sequence[str] | None],
    *,
    min_votes: int | None = None,
    label_order: Sequence[str] | None = None,
) -> Arbitration:
    """Arbitrate one unit.

    Args:
        answers: judge name -> the labels it gave (duplicates count once), or ``None``
            when its answer was unparseable.
        min_votes: votes a label needs; default :func:`default_min_votes` of the panel
            size (``len(answers)``).
        label_order: order of labels in the output (e.g. the taxonomy's); labels not in
            it follow alphabetically.

    Raises:
        ValueError: empty panel, or ``min_votes`` < 1.
    """
    if not answers:
        raise ValueError("arbitrate: no judges")
    n = len(answers)
    need = default_min_votes(n) if min_votes is None else min_votes
    if need < 1:
        raise ValueError(f"min_votes must be >= 1, got {need}")
    valid = {j: set(a) for j, a in answers.items() if a is not None}
    unparseable = tuple(j for j, a in answers.items() if a is None)
    votes = Counter(lab for labels in valid.values() for lab in labels)
    order = {lab: i for i, lab in enumerate(label_order or [])}
    ranked = sorted(votes, key=lambda lab: (order.get(lab, len(order)), lab))
    n_valid = len(valid)
    accepted = tuple(lab for lab in ranked if votes[lab] >= need)
    ties = tuple(lab for lab in ranked if n_valid and votes[lab] * 2 == n_valid)
    status = "insufficient" if n_valid < need else "partial" if unparseable else "ok"
    return Arbitration(
        accepted=accepted,
        ties=ties,
        votes={lab: votes[lab] for lab in ranked},
        n_judges=n,
        n_valid=n_valid,
        unparseable=unparseable,
        status=status,
    )
