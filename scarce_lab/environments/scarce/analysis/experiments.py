"""SCARCE experiment metrics behind notebooks 02-06 (pure functions on polars frames).

Inputs are the tidy tables of :mod:`scarce_lab.environments.scarce.tables` (``contentions``,
``submissions``, ``messages``), the runs frame of
:func:`scarce_lab.data.loaders.load_dataset` (for run settings) and the judge panel's
``labels`` table (:mod:`scarce_lab.judge.panel`: one row per ``(run_id, round, agent)``
with the accepted ``labels`` list; ``round`` is the contention index). This module never
imports environments or agents.

Statistics (docs/design.md): runs are the independent unit. Shares and means over
rounds, contentions or submissions are pooled over rows with a 95 % percentile
**cluster bootstrap** over runs (:func:`scarce_lab.analysis.stats.cluster_bootstrap_ci`;
medians use :func:`cluster_bootstrap_median`, the same resampling). Quantities with one
value per run (language drift per stage, growth factors, per-run collective outcomes)
get a Student-t interval over runs (:func:`scarce_lab.analysis.stats.mean_ci`). With a
single run there is no interval (``lo``/``hi`` null). Every result frame carries
``n`` (rows behind the estimate) and ``runs`` (clusters).

Never pooled: every metric first runs :func:`scarce_lab.analysis.pooling.check_no_pooling`
on its ``by`` groups and raises :class:`~scarce_lab.analysis.pooling.PoolingError` when a
group would mix runs whose condition settings (or solver model) differ in anything the
``by`` columns do not name; group by ``condition`` (with ``model``) to keep conditions
apart.

The metrics live in :mod:`.tactics` (from judge labels) and
:mod:`.dynamics` (communication, outcomes, budgets, auction dynamics), their
shared helpers in :mod:`.base`; this module names them all and loads datasets
(notebooks reach them through the package's face, ``sl.scarce``).

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

from collections.abc import Sequence

import polars as pl

from scarce_lab.analysis.pooling import PoolingError, check_no_pooling  # noqa: F401  (re-exported for notebooks)

from .base import (  # noqa: F401  (re-exported: notebooks use X.<name>)
    BUDGET_PHASES,
    MEMORY_BEHAVIOURS,
    RULE_INVOKING,
    RULE_MAKING,
    RUN_SETTINGS_SCHEMA,
    assign_stages,
    base_condition,
    cluster_bootstrap_median,
    cluster_ci,
    describe_change,
    describe_extremes,
    group_labels,
    mean_over_runs,
    run_settings,
    with_ci_text,
    with_settings,
)
from .dynamics import (  # noqa: F401  (re-exported: notebooks use X.<name>)
    OUTCOME_SCHEMA,
    budget_left,
    budget_phase_bids,
    collective_outcomes,
    compare_schedulers,
    language_drift,
    private_chat_use,
    requested_duration_by_subrun,
    richer_worker,
    stage_texts,
    task_outcomes,
    urgency_bids,
    win_continuity,
    win_rates,
    winning_bid_by_stage,
)
from .tactics import (  # noqa: F401  (re-exported: notebooks use X.<name>)
    behaviour_shares,
    bid_revision_share,
    label_distribution,
    labelled_rounds,
    labels_from_intent,
    relational_by_half,
    rule_shares_by_stage,
    tactic_shares,
)


# -- loading (datasets -> tidy tables with run settings) ---------------------------------
class ScarceTables:
    """The tidy SCARCE tables of one or more datasets, each joined with the run settings
    (:func:`run_settings`): ``contentions``, ``submissions``, ``messages``, ``settings``."""

    def __init__(self, contentions: pl.DataFrame, submissions: pl.DataFrame, messages: pl.DataFrame,
                 settings: pl.DataFrame):
        self.settings = settings
        self.contentions = with_settings(contentions, settings)
        self.submissions = with_settings(submissions, settings)
        self.messages = with_settings(messages, settings)

    def __repr__(self) -> str:
        return (f"ScarceTables({self.settings.height} runs, {self.contentions.height} participations, "
                f"{self.submissions.height} submissions)")


def load_scarce(paths: str | Sequence) -> ScarceTables:
    """Load SCARCE datasets (run directories or folders of them; several are
    concatenated, a run present twice is kept once, and the condition labels are made
    unique per settings over all of them) into :class:`ScarceTables`.

    Raises:
        FileNotFoundError: a path holds no run directory.
    """
    from pathlib import Path

    from scarce_lab.data.loaders import load_dataset

    from ..tables import contentions_table, messages_table, submissions_table

    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    parts: dict[str, list[pl.DataFrame]] = {"c": [], "s": [], "m": [], "r": []}
    for p in paths:
        ds = load_dataset(Path(p))
        parts["c"].append(contentions_table(ds))
        parts["s"].append(submissions_table(ds))
        parts["m"].append(messages_table(ds))
        parts["r"].append(run_settings(ds.runs))
    from scarce_lab.data.tables import label_conditions

    # condition labels are unique per settings within one table: relabel the concatenation
    # (each dataset alone may show no differing setting, so two could share a label)
    def cat(k):
        return label_conditions(pl.concat(parts[k]).unique(maintain_order=True), skip=("scheduler", "mechanism", "memory"))

    return ScarceTables(cat("c"), cat("s"), cat("m"), pl.concat(parts["r"]).unique(subset=["run_id"], maintain_order=True))

