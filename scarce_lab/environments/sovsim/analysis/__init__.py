"""SovSim analysis: the public face (``sl.sovsim``), :func:`load` and the findings.

Every finding takes a Dataset (``sl.load``: our runs or a published layout, whose
agent-round table is ``ds.sovsim.agent_rounds``) and returns a
:class:`~scarce_lab.analysis.findings.Finding` (the numbers, the paper's layout, a chart,
a one-sentence reading, the convention, ``departures`` from the paper's settings and
the ``method``; ``.save(out)`` writes it)::

    ds = sl.sovsim.load("data/sovsim")
    sl.sovsim.table(ds, preset="sovsim").save(OUT)   # Table 1
    print(sl.sovsim.table(ds).method)                 # how it is computed

- the paper (:mod:`.paper`): :func:`table` (Table 1), :func:`pool_dynamics` (Figure 3),
  :func:`trajectories` (Figure 4), :func:`leader_rate_vs_survival`,
  :func:`misreport_distribution`, :func:`cross_model_results`, :func:`paper_claims`;
- talk in the commons (:mod:`.talk`): :func:`promise_keeping`, :func:`quota_proposers`,
  :func:`talk_outcomes`; institutions (:mod:`.institutions`): :func:`institution_outcomes`; a newcomer (:mod:`.newcomer`): :func:`tenure`;
- cross-play (:mod:`.crossplay`): :func:`focal_payoff_matrix`, :func:`invader_advantage`,
  :func:`crossplay_ratings`;
- say-do (:mod:`.saydo`): :func:`kcpr_m_misreports`, :func:`promise_gaps`,
  :func:`interview_gaps`.

The helpers behind them stay in their modules: per-simulation metrics and Table 1's
frame (:mod:`.metrics`), metric conventions (:mod:`.conventions`), the never-pool check
(:mod:`.pooling`), relative drops (:mod:`.drops`), pool dynamics (:mod:`.dynamics`),
the cross-model frames (:mod:`.cross`), charts and sentences (:mod:`.charts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .crossplay import crossplay_ratings, focal_payoff_matrix, invader_advantage
from .institutions import institution_outcomes
from .newcomer import tenure
from .paper import (
    cross_model_results,
    leader_rate_vs_survival,
    misreport_distribution,
    paper_claims,
    pool_dynamics,
    table,
    trajectories,
)
from .saydo import interview_gaps, kcpr_m_misreports, promise_gaps
from .talk import promise_keeping, quota_proposers, talk_outcomes


def load(paths: str | Path | list[str | Path], *, force: bool = False) -> Any:
    """``sl.load(paths, force=force)`` checked to hold SovSim runs
    (:func:`scarce_lab.datasets.load`: our run folders, a Parquet export or the published
    SovSim/GovSim layouts; a relative path from the project root): the dataset every
    finding here takes. Raises as ``sl.load`` does (``ValueError``: no SovSim run)."""
    from scarce_lab.datasets import load as load_any

    return load_any(paths, force=force, environment="sovsim")


__all__ = [
    "cross_model_results", "crossplay_ratings", "focal_payoff_matrix", "institution_outcomes", "interview_gaps",
    "invader_advantage", "kcpr_m_misreports", "leader_rate_vs_survival", "load", "misreport_distribution",
    "paper_claims", "pool_dynamics", "promise_gaps", "promise_keeping", "quota_proposers",
    "table", "talk_outcomes", "tenure", "trajectories",
]
