"""SCARCE analysis: the public face (``sl.scarce``), its findings and :func:`load`.

Every finding takes the loaded dataset and its parameters and returns a
:class:`~scarce_lab.analysis.findings.Finding` (the numbers, the paper's layout, a
chart, one reading sentence, the convention; ``.save(out)``; ``.method`` says how the
numbers are computed)::

    ds = sl.load(["data/scarce/scripted/models"])      # ds.scarce: the tidy tables
    sl.scarce.win_rates(ds).save(OUT)
    sl.scarce.tactic_shares(ds, "data/scarce/labels/embedded/labels.parquet").save(OUT)

The findings are in :mod:`.findings` (notebooks 02-06, the summary, institutions,
tenure), :mod:`.crossplay` (notebook 08) and :mod:`.saydo` (notebook 09); the frame
metrics behind them in :mod:`.tactics`, :mod:`.dynamics`, :mod:`.institutions`,
:mod:`.tenure` and :mod:`.metrics`, the definitions in :mod:`.base`.
"""

from __future__ import annotations

from .crossplay import (
    alliances,
    crossplay_ratings,
    focal_payoff_matrix,
    invader_advantage,
)
from .findings import (
    bid_drift,
    bid_revisions,
    budget_phases,
    collective_output,
    durations,
    effort_tactics,
    institution_behaviour,
    judge_validation,
    language_drift,
    load,
    memory_behaviours,
    memory_unlabelled,
    private_chat_use,
    relational_by_half,
    rule_shares,
    scheduler_comparison,
    spontaneous_institutions,
    table,
    tactic_shares,
    task_outcomes,
    tenure_outcomes,
    urgency_bids,
    win_continuity,
    win_rates,
)
from .saydo import interview_gaps, scarce_declaration_gaps, scarce_payment_gaps

__all__ = [
    "load", "table",
    # notebook 02
    "tactic_shares", "judge_validation", "win_rates", "private_chat_use", "task_outcomes", "language_drift",
    # notebook 03
    "memory_behaviours", "relational_by_half", "memory_unlabelled", "spontaneous_institutions",
    # notebook 04
    "budget_phases", "urgency_bids",
    # notebook 05
    "bid_revisions", "rule_shares", "effort_tactics",
    # notebook 06
    "win_continuity", "bid_drift", "durations", "scheduler_comparison",
    # institutions, tenure, cross-play, say-do
    "institution_behaviour", "collective_output", "tenure_outcomes",
    "focal_payoff_matrix", "invader_advantage", "alliances", "crossplay_ratings",
    "scarce_declaration_gaps", "scarce_payment_gaps", "interview_gaps",
]
