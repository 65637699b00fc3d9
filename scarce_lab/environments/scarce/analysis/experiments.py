"""The SCARCE view of a dataset (``ds.scarce``, :class:`ScarceTables`) and the definitions
the experiment metrics behind notebooks 02-06 use (pure functions on polars frames).

Inputs are the tidy tables of :mod:`scarce_lab.environments.scarce.tables` (``contentions``,
``submissions``, ``messages``), the runs frame of
:func:`scarce_lab.data.loaders.load_dataset` (for run settings) and the judge panel's
``labels`` table (:mod:`scarce_lab.judge.panel`: one row per ``(run_id, round, agent)``
with the accepted ``labels`` list; ``round`` is the contention index). This module never
imports environments or agents.

Statistics (docs/design.md): as :data:`~.findings.STATISTICS` states them (runs are the
independent unit; :func:`~.base.cluster_ci`, :func:`~.base.cluster_bootstrap_median`,
:func:`~.base.mean_over_runs`). Every result frame carries ``n`` (rows behind the
estimate) and ``runs`` (clusters).

Never pooled: every metric first runs :func:`scarce_lab.analysis.pooling.check_no_pooling`
on its ``by`` groups and raises :class:`~scarce_lab.analysis.pooling.PoolingError` when a
group would mix runs whose condition settings (or solver model) differ in anything the
``by`` columns do not name; group by ``condition`` (with ``model``) to keep conditions
apart.

The metrics live in :mod:`.tactics` (from judge labels) and
:mod:`.dynamics` (communication, outcomes, budgets, auction dynamics), their
shared helpers in :mod:`.base`; notebooks reach them as findings
(:mod:`.findings`, the package's face ``sl.scarce``).

Definitions (the SCARCE paper's, sections on Tables 1-10, where it gives them) are
stated once, where they are computed, and in the method of each finding
(:mod:`.findings`): a *stage* (:func:`~.base.assign_stages`), a *contested* contention
(two or more participants), the *win rate* (:func:`~.dynamics.win_rates`: over all
rounds), *rule-making* and *rule-invoking* (:data:`~.base.RULE_MAKING`,
:data:`~.base.RULE_INVOKING`, :func:`~.findings.rule_shares`), the *budget phase*
(:func:`~.dynamics.budget_left`), the *richer worker* (:func:`~.dynamics.richer_worker`),
an *urgent worker* (:func:`~.dynamics.urgency_bids`) and the *reference condition*
(:func:`~.base.base_condition`).
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
