"""SCARCE analysis: the public face (``sl.scarce``) over the modules of this package.

- :mod:`.experiments`: the metrics behind notebooks 02-06 (with :mod:`.base`,
  :mod:`.dynamics`, :mod:`.tactics`), on the tables :func:`load` returns;
- :mod:`.metrics`: the per-model summary (``sl.table`` of a SCARCE dataset);
- :mod:`.paper_tables`: the paper's wide layouts; the interval charts (``ci_chart``)
  are the core's :mod:`scarce_lab.analysis.charts`;
- :mod:`.saydo`: what workers said against what they did (declarations against
  messages and ballots, bids against payments, interviews against ballots).

A notebook needs only ``import scarce_lab as sl``::

    T = sl.scarce.load(["data/scarce/scripted/models"])
    sl.scarce.win_rates(T.contentions, by=["model", "condition"])
    sl.scarce.table(T).save(OUT)           # the summary as a Finding
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scarce_lab.analysis.charts import ci_chart, pretty
from scarce_lab.analysis.findings import Finding, finding
from scarce_lab.analysis.layout import (
    NoTable,
    blank_repeats,
    folded,
    nothing_to_show,
    setting_labels,
    settings_table,
    wide_table,
)

from .base import relational_kind
from .crossplay import alliances, crossplay_runs, focal_payoff_matrix, invader_advantage
from .experiments import (
    BUDGET_PHASES,
    MEMORY_BEHAVIOURS,
    RULE_INVOKING,
    RULE_MAKING,
    PoolingError,
    ScarceTables,
    base_condition,
    behaviour_shares,
    bid_revision_share,
    budget_phase_bids,
    collective_outcomes,
    compare_schedulers,
    describe_change,
    describe_extremes,
    group_labels,
    label_distribution,
    labelled_rounds,
    labels_from_intent,
    language_drift,
    load_scarce,
    private_chat_use,
    relational_by_half,
    requested_duration_by_subrun,
    rule_shares_by_stage,
    run_settings,
    tactic_shares,
    task_outcomes,
    urgency_bids,
    win_continuity,
    win_rates,
    winning_bid_by_stage,
    with_ci_text,
    with_settings,
)
from .institutions import (
    BEHAVIOUR_METRICS,
    COLLECTIVE_METRICS,
    collective_by_arm,
    institution_behaviour,
    institution_frames,
    institution_run_rates,
    institution_settings,
    institutions_label,
    relational_share,
)
from .metrics import format_summary, summary
from .saydo import (
    BID_PRICED_RULES,
    FIRST_RE,
    SECONDS_RE,
    interview_gaps,
    scarce_declaration_gaps,
    scarce_payment_gaps,
)
from .tenure import PERIODS, TENURE_INTERVALS, TENURE_METRICS, TENURES, tenure_metrics, with_tenure

#: The interval method of :func:`table`, as its saved convention states it.
SUMMARY_INTERVALS = "95% CIs clustered by run (runs are the independent unit); conditions never pooled"


def paper_result(res: Any, name: str, index: Sequence[str], columns: str, *, convention: dict[str, Any],
                 key: str = "group", reading: str = "", chart: Any = None, **wide: Any) -> Finding:
    """A result frame in the paper's layout (:func:`scarce_lab.analysis.findings.finding`)."""
    return finding(name, res, index=index, columns=columns, convention=convention, key=key, reading=reading,
                   chart=chart, **wide)


def load(paths: str | Sequence[str], **options: Any) -> ScarceTables:
    """The SCARCE tables (contentions, submissions, messages, run settings) of the runs
    below ``paths`` (:func:`~scarce_lab.environments.scarce.analysis.experiments.load_scarce`)."""
    return load_scarce([paths] if isinstance(paths, str) else list(paths), **options)


def table(data: Any, *, seed: int = 0, convention_extra: dict[str, Any] | None = None) -> Finding:
    """The per-model summary (win rate, bids, durations, private chat, deadline misses,
    scores; mean and run-clustered 95% CI per model x condition) of ``data`` (the
    tables of :func:`load`, or a dataset: ``sl.load(...)``) as a
    :class:`~scarce_lab.analysis.findings.Finding`: ``frame`` the numbers, ``layout``
    the text table.

    Raises:
        PoolingError: a (model, condition) group mixes settings.
        ValueError: the data hold no SCARCE contention or submission.
    """
    if isinstance(data, ScarceTables):
        contentions, submissions = data.contentions, data.submissions
    else:
        from ..tables import contentions_table, submissions_table

        contentions, submissions = contentions_table(data), submissions_table(data)
    if contentions.is_empty() and submissions.is_empty():
        raise ValueError("no SCARCE contention or submission in these data")
    s = summary(contentions, submissions, seed=seed)
    return Finding("scarce_summary", frame=s, layout=format_summary(s),
                  convention={"intervals": SUMMARY_INTERVALS, "seed": seed} | (convention_extra or {}))


__all__ = [
    "alliances", "crossplay_runs", "focal_payoff_matrix", "invader_advantage",
    "BUDGET_PHASES", "MEMORY_BEHAVIOURS", "RULE_INVOKING", "RULE_MAKING", "SUMMARY_INTERVALS", "PoolingError",
    "Finding", "ScarceTables", "base_condition", "behaviour_shares", "bid_revision_share", "blank_repeats",
    "budget_phase_bids", "ci_chart", "collective_outcomes", "compare_schedulers", "describe_change",
    "describe_extremes", "folded", "format_summary", "group_labels", "label_distribution", "labelled_rounds",
    "labels_from_intent", "language_drift", "load", "load_scarce", "paper_result", "pretty", "private_chat_use",
    "relational_by_half", "relational_kind", "requested_duration_by_subrun", "rule_shares_by_stage", "run_settings",
    "setting_labels", "settings_table", "summary", "table", "tactic_shares", "task_outcomes", "urgency_bids",
    "NoTable", "nothing_to_show", "wide_table", "win_continuity", "win_rates", "winning_bid_by_stage", "with_ci_text", "with_settings",
    "PERIODS", "TENURES", "TENURE_INTERVALS", "TENURE_METRICS", "tenure_metrics", "with_tenure",
    "BEHAVIOUR_METRICS", "COLLECTIVE_METRICS", "INSTITUTION_INTERVALS", "collective_by_arm", "collective_table",
    "institution_behaviour", "institution_frames", "institution_run_rates", "institution_settings",
    "institution_table", "institutions_label", "relational_share",
    "BID_PRICED_RULES", "FIRST_RE", "SECONDS_RE", "interview_gaps", "scarce_declaration_gaps", "scarce_payment_gaps",
]


#: The interval methods of :func:`institution_table` and :func:`collective_table`.
INSTITUTION_INTERVALS = ("mean over runs; shares and scores: the bounded t/score hull (stats.bounded_mean_ci, "
                         "bounds [0, 1]); breaches per contention and waits: t over runs; differences: t over the "
                         "per-seed paired differences; no interval from one run or one pair")


def institution_table(dataset: Any) -> Finding:
    """Institutional behaviour per arm (:func:`~.institutions.institution_settings`: the
    scheduler and the institutions that are on) of the SCARCE runs of ``dataset``
    (``sl.load(...)``): promise keeping, breaches per contention, share of breaches
    fined, share of contract offers signed, share of signed contracts whose condition
    held (:data:`~.institutions.BEHAVIOUR_METRICS`), mean over runs with an interval
    (:data:`INSTITUTION_INTERVALS`). A rate a run has nothing to rate for (its module
    off, no promise judged, no offer) is left out of that run, never counted as 0;
    ``runs`` says how many runs gave a value. Also: ``extra["institution_counts"]``, the
    event counts per arm (promises judged, kept, breaches, sanction events: one per
    breach, mode ``off`` when sanctions are off; fines passed, contract offers, signed,
    settled as held).

    Raises:
        PoolingError: an arm mixes conditions.
    """
    settings = institution_settings(dataset.runs)
    frames = institution_frames(dataset)
    rates = institution_run_rates(frames, settings)
    res = with_ci_text(institution_behaviour(rates, settings))
    counts = _institution_counts(frames, settings)
    return Finding("institution_behaviour", frame=res, extra={"institution_counts": counts},
                  convention={"unit": "run", "intervals": INSTITUTION_INTERVALS,
                              "rates": "per run: kept/judged promises, breaches/contentions, passed/held sanctions, "
                                       "signed/offered contracts, held/settled contracts"})


def _institution_counts(frames: dict, settings: Any) -> Any:
    """Event counts per arm behind :func:`institution_table` (sums over its runs)."""
    import polars as pl

    def per_run(kind: str, name: str, col: str | None = None) -> pl.DataFrame:
        d = frames[kind]
        if d.height == 0:
            return pl.DataFrame(schema={"run_id": pl.String, name: pl.Int64})
        agg = pl.len() if col is None else pl.col(col).cast(pl.Int64).sum()
        return d.group_by("run_id").agg(agg.cast(pl.Int64).alias(name))

    out = settings.select("run_id", "arm")
    for kind, name, col in (("contention_start", "contentions", None), ("promise_judged", "promises_judged", None),
                            ("promise_judged", "promises_kept", "kept"), ("breach", "breaches", None),
                            ("sanction", "sanction_events", None), ("sanction", "fines_passed", "passed"),
                            ("contract_offer", "contract_offers", None), ("contract_answer", "contracts_signed", "signed"),
                            ("contract_settlement", "contracts_held", "held")):
        out = out.join(per_run(kind, name, col), on="run_id", how="left")
    nums = [c for c in out.columns if c not in ("run_id", "arm")]
    return (out.with_columns(pl.col(nums).fill_null(0)).group_by("arm")
            .agg(pl.len().alias("runs"), *[pl.col(c).sum() for c in nums]).sort("arm"))


def collective_table(dataset: Any, data: ScarceTables, *, reference: str = "fifo") -> Finding:
    """Collective output per arm (:func:`~.institutions.collective_by_arm`): per run the
    deadline-miss rate (share of its submissions that missed), mean partial score and
    total queue wait (s; request to slot start, summed over started slots), mean over
    runs per arm with an interval, and the mean paired difference to the ``reference``
    arm on the same seed (same tasks and deadlines), t interval over the pairs
    (:data:`INSTITUTION_INTERVALS`).

    Args:
        dataset: ``sl.load(...)`` of the runs (their conditions).
        data: :func:`load` of the same runs (contentions and submissions).
        reference: the arm the differences are taken to (default the centralised FIFO
            scheduler; ``ballots|none`` for the negotiated auction without institutions).

    Raises:
        ValueError: ``reference`` is not an arm of the data (naming the arms), or the
            two inputs hold different runs.
        PoolingError: an arm mixes conditions.
    """
    settings = institution_settings(dataset.runs)
    arms = sorted(settings["arm"].unique().to_list())
    if reference not in arms:
        raise ValueError(f"collective_table: reference arm {reference!r} is not in the data (arms: {arms})")
    out = collective_outcomes(data.contentions, data.submissions)
    have, want = set(out["run_id"].to_list()), set(settings["run_id"].to_list())
    if have != want:
        raise ValueError(f"collective_table: the tables and the dataset hold different runs "
                         f"({len(have - want)} only in the tables, {len(want - have)} only in the dataset)")
    res = collective_by_arm(out.join(settings, on="run_id"),
                            reference=reference)
    return Finding("collective_output", frame=with_ci_text(res), extra={"collective_outcomes_per_run": out},
                  convention={"unit": "run", "reference": reference, "paired_on": "seed",
                              "intervals": INSTITUTION_INTERVALS})

