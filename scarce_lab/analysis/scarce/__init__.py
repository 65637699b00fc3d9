"""SCARCE analysis: the public face (``sl.scarce``) over the modules of this package.

- :mod:`.experiments`: the metrics behind notebooks 02-06 (with :mod:`.base`,
  :mod:`.dynamics`, :mod:`.tactics`), on the tables :func:`load` returns;
- :mod:`.metrics`: the per-model summary (``sl.table`` of a SCARCE dataset);
- :mod:`.charts`: interval charts; :mod:`.paper_tables`: the paper's wide layouts.

A notebook needs only ``import scarce_lab as sl``::

    T = sl.scarce.load(["data/scarce/scripted/models"])
    sl.scarce.win_rates(T.contentions, by=["model", "condition"])
    sl.scarce.table(T).save(OUT)           # the summary as a Result
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..result import Result
from .charts import ci_chart, pretty
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
from .metrics import format_summary, summary
from .paper_tables import (
    NoTable,
    blank_repeats,
    folded,
    nothing_to_show,
    relational_kind,
    setting_labels,
    settings_table,
    wide_table,
)
from .tenure import PERIODS, TENURE_INTERVALS, TENURE_METRICS, TENURES, tenure_metrics, with_tenure

#: The interval method of :func:`table`, as its saved convention states it.
SUMMARY_INTERVALS = "95% CIs clustered by run (runs are the independent unit); conditions never pooled"


def paper_result(res: Any, name: str, index: Sequence[str], columns: str, *, convention: dict[str, Any],
                 key: str = "group", reading: str = "", chart: Any = None, **wide: Any) -> Result:
    """A result frame (one row per group, ``value``/``lo``/``hi``) in the paper's layout
    as a :class:`~scarce_lab.analysis.result.Result` named ``name``: ``frame`` the wide
    table (:func:`wide_table` of ``index`` x ``columns``; ``wide`` goes to it), saved
    with the long form (``<name>_long``, :func:`with_ci_text`); displayed with repeated
    index cells blanked and, folded below, the full conditions behind the short labels
    of ``key`` (``group``: :func:`settings_table`), then ``reading`` and ``chart``.

    Raises:
        ValueError: as :func:`wide_table` (e.g. two rows for one cell).
    """
    from ..figures import markdown_table

    if (empty := nothing_to_show(res, name)) is not None:  # all zeros or no value: a sentence
        return Result(name, text=str(empty), reading="", chart=chart, convention=convention,
                      stale=(name, f"{name}_long"))
    w = wide_table(res, index, columns, **wide)
    text = markdown_table(blank_repeats(w, list(index)[:-1]), float_digits=2)
    if key in res.columns:
        tab = (settings_table(res, key) if key == "group"
               else res.select(key, columns, "condition").unique().sort(key, columns))
        text += "\n\n" + folded("Full conditions behind the labels", markdown_table(tab))
    return Result(name, frame=w, text=text, reading=reading, chart=chart, convention=convention,
                  extra={f"{name}_long": with_ci_text(res)})


def load(paths: str | Sequence[str], **options: Any) -> ScarceTables:
    """The SCARCE tables (contentions, submissions, messages, run settings) of the runs
    below ``paths`` (:func:`~scarce_lab.analysis.scarce.experiments.load_scarce`)."""
    return load_scarce([paths] if isinstance(paths, str) else list(paths), **options)


def table(data: ScarceTables, *, seed: int = 0, convention_extra: dict[str, Any] | None = None) -> Result:
    """The per-model summary (win rate, bids, durations, private chat, deadline misses,
    scores; mean and run-clustered 95% CI per model x condition) of ``data`` (from
    :func:`load`) as a :class:`~scarce_lab.analysis.result.Result`: ``frame`` the text
    table, ``extra["scarce_summary_values"]`` the numbers.

    Raises:
        PoolingError: a (model, condition) group mixes settings.
    """
    s = summary(data.contentions, data.submissions, seed=seed)
    return Result("scarce_summary", frame=format_summary(s), extra={"scarce_summary_values": s},
                  convention={"intervals": SUMMARY_INTERVALS, "seed": seed} | (convention_extra or {}))


__all__ = [
    "alliances", "crossplay_runs", "focal_payoff_matrix", "invader_advantage",
    "BUDGET_PHASES", "MEMORY_BEHAVIOURS", "RULE_INVOKING", "RULE_MAKING", "SUMMARY_INTERVALS", "PoolingError",
    "Result", "ScarceTables", "base_condition", "behaviour_shares", "bid_revision_share", "blank_repeats",
    "budget_phase_bids", "ci_chart", "collective_outcomes", "compare_schedulers", "describe_change",
    "describe_extremes", "folded", "format_summary", "group_labels", "label_distribution", "labelled_rounds",
    "labels_from_intent", "language_drift", "load", "load_scarce", "paper_result", "pretty", "private_chat_use",
    "relational_by_half", "relational_kind", "requested_duration_by_subrun", "rule_shares_by_stage", "run_settings",
    "setting_labels", "settings_table", "summary", "table", "tactic_shares", "task_outcomes", "urgency_bids",
    "NoTable", "nothing_to_show", "wide_table", "win_continuity", "win_rates", "winning_bid_by_stage", "with_ci_text", "with_settings",
    "PERIODS", "TENURES", "TENURE_INTERVALS", "TENURE_METRICS", "tenure_metrics", "with_tenure",
]


def __getattr__(name: str) -> Any:
    """Names of the old single-module ``scarce_lab.analysis.scarce`` that the face does not
    export (``from scarce_lab.analysis.scarce import <metric>`` kept working when the module
    became this package): looked up in :mod:`.metrics`."""
    from . import metrics

    try:
        return getattr(metrics, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
