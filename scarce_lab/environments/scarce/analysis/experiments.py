"""The SCARCE view of a dataset (``ds.scarce``, :class:`ScarceTables`) and the definitions
the experiment metrics behind notebooks 02-06 use (pure functions on polars frames).

Inputs are the tidy tables of :mod:`scarce_lab.environments.scarce.tables` (``contentions``,
``submissions``, ``messages``), the runs frame of
:func:`scarce_lab.data.loaders.load_dataset` (for run settings) and the judge panel's
``labels`` table (:mod:`scarce_lab.judge.panel`: one row per ``(run_id, round, agent)``
with the accepted ``labels`` list; ``round`` is the contention index). This module never
imports environments or agents.

Statistics (docs/design.md): runs are the independent unit; a share or mean over
rounds, contentions or submissions is the mean over runs of each run's value with a t
interval over the run means (:func:`~.base.cluster_ci`), medians a cluster bootstrap
over runs (:func:`~.base.cluster_bootstrap_median`), one value per run a t interval
(:func:`~.base.mean_over_runs`); with a single run there is no interval (``lo``/``hi``
null). Every result frame carries ``n`` (rows behind the estimate) and ``runs``
(clusters); :data:`~.findings.STATISTICS` says it for the findings.

Never pooled: every metric first runs :func:`scarce_lab.analysis.pooling.check_no_pooling`
on its ``by`` groups and raises :class:`~scarce_lab.analysis.pooling.PoolingError` when a
group would mix runs whose condition settings (or solver model) differ in anything the
``by`` columns do not name; group by ``condition`` (with ``model``) to keep conditions
apart.

The metrics live in :mod:`.tactics` (from judge labels) and
:mod:`.dynamics` (communication, outcomes, budgets, auction dynamics), their
shared helpers in :mod:`.base`; notebooks reach them as findings
(:mod:`.findings`, the package's face ``sl.scarce``).

Definitions used here (the SCARCE paper, sections on Tables 1-10, where it gives them):

- **stage**: within a run, its contentions in order are cut into ``n_stages`` equal
  blocks (:func:`assign_stages`); stage 1 is the earliest. ``n_stages=2`` gives the
  first and second half of a run.
- **contested**: a contention with at least two participants (only those can be won
  or lost against someone).
- **win rate**: the share of rounds (participations) in which the worker is first in the
  queue, over *all* its rounds (the paper's definition); the share over contested rounds
  only is given beside it where useful.
- **Table 1 and Figure 14** (tactic shares and private-chat use per model) are computed
  on a single subrun, the first, as in the paper (``subrun=0``; ``None`` for all).
- **Table 8** (bid drift): median winning bid by stage with 4 stages (stages 1 to 4).
- **relational round**: an agent-round with at least one relational label (taxonomy
  flag ``relational``).
- **rule-making / rule-invoking** (Table 10), from the taxonomy's "rules and
  spontaneous norms" system: *rule-making* = proposing how the group should decide, a
  label of its *process and governance norms* group (:data:`RULE_MAKING`:
  iterative bargaining, negotiation neutrality rules, issue reduction); *rule-invoking*
  = appealing to an ordering criterion to claim or concede a place, a label of its
  *time-urgency* or *classical scheduling norms* groups (:data:`RULE_INVOKING`). The
  paper's Table 10 reports their combination (``kind="rules"``: a round with either);
  the split is kept beside it.
- **budget phase** (Tables 5, 7): share of the subrun budget left before the
  contention: ``> 2/3`` -> ``">66%"``, ``1/3 .. 2/3`` -> ``"33-66%"``, ``< 1/3`` ->
  ``"<33%"``; budget left = initial budget minus payments in earlier contentions of the
  same subrun (:func:`budget_left`).
- **richer worker**: in each run, the worker whose initial budget is strictly larger
  than every other worker's (none when budgets are equal); the paper's asymmetry gives
  it 1,500 credits against 1,000. Table 7 reports its overall win rate (all phases,
  ``budget_phase="all"``) beside the rate per phase.
- **reference condition** (:func:`base_condition`): negotiated ballots, fixed bids, the
  paper's cross-subrun memory, equal budgets and deadlines, no reasoning effort.
- **urgent worker** (Table 4): deadline strictly below the run's median deadline,
  or below ``urgent_below_s`` when given.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import polars as pl

from .base import run_settings, with_settings


class ScarceTables:
    """The SCARCE view of a dataset (``ds.scarce``, :class:`~scarce_lab.data.loaders.Dataset`):
    its tidy tables, each computed when first read and joined with the run settings.

    Attributes:
        settings: one row per run (:func:`run_settings`).
        contentions, submissions, messages: the tables of
            :mod:`scarce_lab.environments.scarce.tables`, with condition labels unique
            per settings over the whole dataset (the scheduler, mechanism and memory
            are in the base condition) and the ``settings`` columns beside them.
    """

    def __init__(self, ds: Any) -> None:
        self.dataset = ds

    @cached_property
    def settings(self) -> pl.DataFrame:
        return run_settings(self.dataset.runs).unique(subset=["run_id"], maintain_order=True)

    @cached_property
    def contentions(self) -> pl.DataFrame:
        from ..tables import contentions_table

        return self._labelled(contentions_table(self.dataset))

    @cached_property
    def submissions(self) -> pl.DataFrame:
        from ..tables import submissions_table

        return self._labelled(submissions_table(self.dataset))

    @cached_property
    def messages(self) -> pl.DataFrame:
        from ..tables import messages_table

        return self._labelled(messages_table(self.dataset))

    def _labelled(self, df: pl.DataFrame) -> pl.DataFrame:
        from scarce_lab.data.tables import label_conditions

        labelled = label_conditions(df.unique(maintain_order=True), skip=("scheduler", "mechanism", "memory"))
        return with_settings(labelled, self.settings)

    def __repr__(self) -> str:
        return (f"ScarceTables({self.settings.height} runs, {self.contentions.height} participations, "
                f"{self.submissions.height} submissions)")
