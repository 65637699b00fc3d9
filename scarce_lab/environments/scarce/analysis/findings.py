"""SCARCE findings (``sl.scarce``; what a finding is and how a notebook calls it: the
docstring of :mod:`scarce_lab.environments.scarce.analysis`).

The metrics behind them are frame functions of :mod:`.tactics` (judge labels),
:mod:`.dynamics` (communication, outcomes, budgets, auction dynamics),
:mod:`.institutions`, :mod:`.tenure` and :mod:`.crossplay`; the definitions they use
(stage, contested, win rate, budget phase, richer worker, urgent worker, the reference
condition) are in :mod:`.base`.

The parameters they share: ``by`` (the rows: negotiator model and condition, with a
setting beside them where a table compares it; model and condition always among them,
conditions are never pooled), ``base_only`` (only runs of the reference condition:
negotiated ballots, fixed bids, cross-subrun memory, equal budgets and deadlines, no
reasoning effort), ``except_`` (the settings the reference condition leaves free, e.g.
``("memory",)``; implies ``base_only``), ``labels`` (the judge panel's labels table or the
path of its ``labels.parquet``; ``None``: the finding says there are none) and
``metric`` (what the reading, and the chart where it shows one measure, is about; the
table has every measure). Each finding's ``method`` is its docstring followed by
:data:`STATISTICS` (how values and intervals are computed); its convention holds its
parameters.

Size: one short function per table of notebooks 02-06 and 09 (about 25), each with the
methods paragraph its notebook used to carry as its docstring; they share the pieces at
the top (selection, labels, the finding builder), which a split would scatter.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl

from scarce_lab.analysis.charts import ci_chart, pretty
from scarce_lab.analysis.figures import markdown_table
from scarce_lab.analysis.findings import Finding, finding, finding_function
from scarce_lab.analysis.layout import (
    blank_repeats,
    folded,
    group_labels,
    setting_labels,
    settings_table,
    with_ci_text,
)
from scarce_lab.analysis.readings import describe_change, describe_contrast, describe_extremes
from scarce_lab.analysis.stats import MIN_RUNS_MEDIAN

from ..tables import with_settings
from . import dynamics, tactics
from .base import BUDGET_PHASES, MEMORY_BEHAVIOURS, base_condition, relational_kind

#: Rows of a finding: one per negotiator model and condition (conditions are never pooled).
BY: tuple[str, ...] = ("model", "condition")
#: ... and the memory horizon beside them (notebook 03).
BY_MEMORY: tuple[str, ...] = ("model", "condition", "memory")
#: ... and the bid mechanism beside them (notebook 05).
BY_MECHANISM: tuple[str, ...] = ("model", "mechanism", "condition")
UNIT = "run; conditions never pooled"
INTERVALS = ("95% t over run means (each run counts once), clipped to the range; none from one run "
             "or identical runs; medians: cluster bootstrap from 30 runs")
#: The statistics paragraph every finding's ``method`` ends with.
STATISTICS = (
    "Each value is the mean over runs of each run's share or mean (runs are the independent unit: every run "
    "counts once); intervals are 95% t intervals over the run means, clipped to the measure's range, and none is "
    "printed from one run or when every run gives the same value (a percentile cluster bootstrap covered 58-84% "
    "with 2-5 runs; benchmarks/bench_coverage.py prints the coverage of every method). Medians get a "
    "cluster-bootstrap interval only from 30 runs on. A reading that names the highest and lowest group tests "
    "every pair of groups (Welch t over run means) with Holm's correction and says how many comparisons; a win "
    "rate that is 1/(contenders) because every contender is the same policy is named as such, not as a finding. "
    "Tables are in the paper's layout (columns name only what differs between the groups; the full conditions "
    "are folded under each table) and saved long as <name>_values (CSV, Markdown, LaTeX).")
#: Table 1's row groups, in the paper's order.
KINDS = ["relational", "non-relational", "any relational"]
MEMORIES = ["none", "subrun", "cross"]
DURATIONS = {"requested_duration_s": "Requested slot duration", "desired_duration_s": "Declared (desired) slot duration"}
NO_LABELS = "No judge labels for these runs: run `scarce-lab judge label` (and pass its labels.parquet) to get {what}."


# -- the pieces every finding shares ---------------------------------------------------------
#: Every public finding below: method (its docstring, then :data:`STATISTICS`), the
#: settings its runs share away from the paper's defaults, its parameters in the convention.
_finding = finding_function("scarce", textwrap.fill(STATISTICS, 88))


def _make(name: str, res: pl.DataFrame, *, convention: dict[str, Any] | None = None, extra: dict | None = None,
          folds: Sequence[tuple[str, pl.DataFrame]] = (), **kw: Any) -> Finding:
    """:func:`~scarce_lab.analysis.findings.finding` with the SCARCE convention, the
    ``extra`` frames saved beside it and the ``folds`` (title, frame) shown folded below
    the table."""
    f = finding(name, res, convention={"unit": UNIT, "intervals": INTERVALS} | (convention or {}), **kw)
    if extra:
        f = f.with_(extra=dict(extra))
    if folds and f.layout is not None:
        body = f.text if f.text is not None else markdown_table(f.layout, float_digits=2)
        f = f.with_(text=body + "".join("\n\n" + folded(t, markdown_table(d, float_digits=2)) for t, d in folds))
    return f


def _none(name: str, why: str) -> Finding:
    """A finding with nothing to compute: the sentence ``why``; saving it removes an
    earlier run's table of that name."""
    return Finding(name, text=f"*{why}*", convention={"unit": UNIT}, stale=(name, f"{name}_values"))


def _select(df: pl.DataFrame, base_only: bool, except_: Sequence[str], memory: str = "cross") -> pl.DataFrame:
    """``df`` restricted to the reference condition
    (:func:`~scarce_lab.environments.scarce.analysis.base.base_condition`) when
    ``base_only`` or ``except_`` (the settings left free) asks for it."""
    return base_condition(df, except_=tuple(except_), memory=memory) if base_only or except_ else df


def _rounds(ds: Any, labels: str | Path | pl.DataFrame) -> pl.DataFrame:
    """The judge panel's ``labels`` (a table or the path of its ``labels.parquet``) as
    labelled agent-rounds joined with the contentions of ``ds`` (labels of other runs
    left out).

    Raises:
        FileNotFoundError: no such labels file.
    """
    if not isinstance(labels, pl.DataFrame):
        from scarce_lab.datasets import resolve_path

        path = resolve_path(labels)
        if not path.exists():
            raise FileNotFoundError(f"no judge label table at {path} (scarce-lab judge label writes labels.parquet)")
        labels = pl.read_parquet(path)
    return tactics.labelled_rounds(labels, ds.scarce.contentions).filter(pl.col("model").is_not_null())


def _taxonomy(name: str) -> Any:
    from scarce_lab.judge.taxonomy import load_taxonomy

    return load_taxonomy(name)


def _kinds(shares: pl.DataFrame, relational: set[str]) -> pl.DataFrame:
    """``shares`` with ``kind``: the paper's Table 1 grouping of each category."""
    return shares.with_columns(kind=pl.col("category").map_elements(lambda c: relational_kind(c, relational),
                                                                    return_dtype=pl.String))


def _subrun_text(subrun: int | None) -> str:
    return "all subruns" if subrun is None else "first subrun" if subrun == 0 else f"subrun {subrun + 1}"


# -- notebook 02: tactics, win rates, private chat, outcomes, drift ----------------------------
@_finding
def tactic_shares(ds: Any, labels: str | Path | pl.DataFrame | None, *, taxonomy: str = "scarce",
                  by: Sequence[str] = BY, subrun: int | None = 0, base_only: bool = False,
                  except_: Sequence[str] = ()) -> Finding:
    """Table 1 of the SCARCE paper: the share of labelled agent-rounds (one agent's public
    reasoning and private messages in one contention) in which each taxonomy category was
    accepted, per negotiator model and condition (columns), grouped relational /
    non-relational (relational = reciprocity, alliance formation, alliance loyalty,
    reputation; the row ``relational``: rounds with any of them), on the first subrun as
    in the paper.

    ``labels``: the judge panel's labels (``labels.parquet`` of ``scarce-lab judge label``,
    or its table; only runs of ``ds`` count), or ``"intent"``: the tactics the strategic
    scripted negotiators recorded they meant (researcher-only ``tactic_intent`` events, the
    ground truth): what the policies were written to do, and so what a judge should find
    in their texts; nothing about language models. ``None``: no labels (a sentence says so).

    Args:
        taxonomy: the taxonomy the labels use (its ids and relational flags).
        subrun: 0 = the first (the paper's Table 1), ``None`` = every subrun.
        base_only, except_ (and ``by``): as every finding's (module docstring).

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a group mixes conditions.
    """
    intent = isinstance(labels, str) and labels == "intent"
    name = "scarce_table1_scripted_intent" if intent else "scarce_table1_judge"
    if labels is None:
        return _none(name, NO_LABELS.format(what="tactic shares"))
    if intent:
        if ds.scarce.messages.filter(pl.col("intended_tactics").is_not_null()).height == 0:
            return _none(name, "No run records intended tactics (only the strategic scripted negotiators do).")
        labels = tactics.labels_from_intent(ds.scarce.messages)
    tax = _taxonomy(taxonomy)
    rounds = _select(_rounds(ds, labels), base_only, except_)
    shares = _kinds(group_labels(tactics.tactic_shares(rounds, tax.ids, tax.relational_ids, by=by, subrun=subrun)),
                    tax.relational_ids)
    what = ("the intended relational share (scripted intent, not a judge's reading)" if intent
            else "the relational share (rounds with any relational label)")
    title = ("Which tactics were the scripted negotiators written to use?" if intent
             else "Which tactics does the judge panel see?")
    chart = ci_chart(shares.filter(pl.col("value") > 0), "category", color="group", x_sort=[*tax.ids, "relational"],
                     y_title="share of rounds", title=f"{title} (Table 1, {_subrun_text(subrun)})", width=560)
    return _make(name, shares, index=["kind", "category"], columns="group",
                 index_order={"kind": KINDS, "category": [*tax.ids, "relational"]},
                 convention={"subrun": subrun, "labels": ("scripted intent (ground truth), not a judge" if intent
                                                          else "judge panel")},
                 reading=describe_extremes(shares.filter(pl.col("category") == "relational"), ["group"], what),
                 chart=chart)


@_finding
def judge_validation(report: str | Path | None) -> Finding:
    """How right the judge panel is: its validation report (``scarce-lab judge validate``:
    ``validation.json``) against a ground truth (the scripted negotiators' recorded intent,
    taxonomy ``scarce``, or expert-labelled CaSiNo utterances, taxonomy ``casino``). Per
    category: support (units whose ground truth has it), predicted (units the arbitrated
    panel gave it), precision, recall, F1 and Cohen's kappa of the panel; categories with
    no support and no prediction are left out. Precision of a category never predicted
    and recall of a category without support are 0/0: undefined, shown ``n/a`` (null in
    the saved table), never 0. The reading gives the panel's micro F1, macro F1 (the
    mean over the categories where F1 is defined: support or predictions, so an
    undefined score never pulls it down), macro kappa and exact match. See ``data/scarce/README.md`` for how the
    shipped reports were made.

    Raises:
        FileNotFoundError: no report at ``report``.
    """
    if report is None:
        return _none("judge_validation", "No validation report given.")
    from scarce_lab.datasets import resolve_path

    path = resolve_path(report)
    if not path.exists():
        raise FileNotFoundError(f"no judge validation report at {path} (scarce-lab judge validate writes it)")
    rep = json.loads(path.read_text())
    scores = rep["scores"]["panel"]
    s = scores["summary"]
    # 0/0 is undefined (null), not 0: precision without predictions, recall without support;
    # reports written before scores.py said so stored 0.0 there (scikit-learn's zero_division=0)
    num = lambda c: pl.col(c).cast(pl.Float64).fill_nan(None)  # noqa: E731
    tab = (pl.DataFrame(scores["per_label"]).filter((pl.col("support") > 0) | (pl.col("predicted") > 0))
           .select("label", "support", "predicted",
                   pl.when(pl.col("predicted") > 0).then(num("precision")).alias("precision"),
                   pl.when(pl.col("support") > 0).then(num("recall")).alias("recall"),
                   num("f1").alias("F1"), num("cohen_kappa").alias("kappa")))
    defined = tab["F1"].drop_nulls()
    macro_f1 = float(defined.mean()) if defined.len() else None
    tax = rep.get("taxonomy", "")
    title = {"scarce": "Scripted intent (SCARCE taxonomy)", "casino": "CaSiNo experts (CaSiNo taxonomy)"}.get(
        tax, f"{tax} taxonomy")
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
    shown = tab.with_columns(pl.col(c).map_elements(fmt, return_dtype=pl.String, skip_nulls=False)
                             for c in ("precision", "recall", "F1", "kappa"))
    reading = (f"**{title}**: {rep['n_units']} units; panel micro F1 {fmt(s['micro_f1'])}, macro F1 "
               f"{fmt(macro_f1)} (over the {defined.len()} categories with support or predictions), "
               f"Cohen's kappa (macro) {fmt(s['kappa_macro'])}, exact match "
               f"{fmt(s['exact_match'])}; {s['n_no_answer']} units without a valid answer. "
               "n/a: undefined (precision of a category never predicted, recall of one without support).")
    return Finding("judge_validation_" + {"scarce": "scripted"}.get(tax, tax), frame=tab, reading=reading,
                   text=markdown_table(shown, float_digits=2),
                   convention={"source": str(report), "judges": rep["note"], "units": rep["n_units"],
                               "undefined": "precision of a category never predicted and recall of a category "
                                            "without support are null (0/0), never 0",
                               "macro_f1": "mean F1 over the categories where it is defined (support or "
                                           "predictions); an undefined precision or recall never counts as 0"})


@_finding
def win_rates(ds: Any, *, by: Sequence[str] = BY, base_only: bool = False, except_: Sequence[str] = ()) -> Finding:
    """Win rate per negotiator model and condition: ``win_rate``, the share of all the
    worker's rounds (contentions it took part in) in which it was first in the queue
    (the paper's definition), and ``win_rate_contested``, the same over contentions with
    two or more participants (chance is 1/n there). The reading is about ``win_rate``.

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.win_rates(_select(ds.scarce.contentions, base_only, except_), by=by))
    chart = ci_chart(res, "group", column="metric", y_title="share of rounds first in the queue",
                     title="Which negotiator wins the slot? Win rate per model", width=330)
    return _make("scarce_win_rates", res, index=["group"], columns="metric", chart=chart,
                 reading=describe_extremes(res.filter(pl.col("metric") == "win_rate"), ["model"], "the win rate"))


@_finding
def private_chat_use(ds: Any, *, by: Sequence[str] = BY, subrun: int | None = 0, base_only: bool = False,
                     except_: Sequence[str] = ()) -> Finding:
    """Figure 6 of the SCARCE paper: the share of contested participations (two or more
    workers in the contention) in which the worker sent at least one private message, in
    the first subrun (``subrun``; ``None``: every subrun).

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.private_chat_use(_select(ds.scarce.contentions, base_only, except_), by=by,
                                                 subrun=subrun))
    chart = ci_chart(res, "group", y_title="share with a private message", width=420,
                     title=f"Figure 6. Who talks in private? Private-chat use, {_subrun_text(subrun)}")
    return _make("scarce_private_chat_first_subrun" if subrun == 0 else "scarce_private_chat", res,
                 shown=["group", "estimate", "n", "runs"], chart=chart, convention={"subrun": subrun},
                 reading=describe_extremes(res, ["model"], f"private-chat use in the {_subrun_text(subrun)}"))


@_finding
def task_outcomes(ds: Any, *, by: Sequence[str] = BY, base_only: bool = False, except_: Sequence[str] = (),
                  by_urgency: bool = False,
                  metric: Literal["full_resolution_rate", "mean_partial_score", "deadline_miss_rate"] = "deadline_miss_rate",
                  ) -> Finding:
    """Task outcomes over (worker, subrun) submissions: full resolution (every hidden test
    passed), mean partial score (passed / total; 0 for a missed deadline) and deadline
    misses; the reading is about ``metric``.

    ``by_urgency``: only runs whose workers do not all share one deadline (mixed
    deadlines), urgent workers (deadline below the run's median) against the others.

    Raises:
        PoolingError: a group mixes conditions.
    """
    s = _select(ds.scarce.submissions, base_only, except_)
    if by_urgency:
        spread = s.group_by("run_id").agg(pl.col("deadline_s").median().alias("_med"),
                                          pl.col("deadline_s").n_unique().alias("_k"))
        s = (s.join(spread, on="run_id").filter(pl.col("_k") > 1)
             .with_columns((pl.col("deadline_s") < pl.col("_med")).alias("urgent")))
        by = (*by, "urgent")
    res = group_labels(dynamics.task_outcomes(s, by=by))
    keys = ["model", "urgent"] if by_urgency else ["model"]
    reading = describe_extremes(res.filter(pl.col("metric") == metric), keys, pretty(metric).lower())
    if by_urgency:
        return _make("scarce_deadline_misses_by_urgency", res, index=["group", "urgent"], columns="metric",
                     reading=reading)
    chart = ci_chart(res, "group", column="metric", title="Do the tasks get solved? Task outcomes per model", width=240)
    return _make("scarce_task_outcomes", res, index=["group"], columns="metric", reading=reading, chart=chart)


@_finding
def language_drift(ds: Any, *, n_stages: int = 3, by: Sequence[str] = BY, base_only: bool = False,
                   except_: Sequence[str] = (),
                   metric: Literal["cosine_prev", "trigram_repetition", "new_word_share"] = "cosine_prev") -> Finding:
    """Language drift over the stages of a run: each run's contentions are cut into
    ``n_stages`` equal blocks; per stage, the text of every agent's reasoning and private
    messages gives the cosine similarity of bag-of-words vectors with the previous stage
    (``cosine_prev``), trigram repetition and the share of new words
    (:mod:`scarce_lab.judge.drift`). Mean over runs with a t interval (clipped to [0, 1]).
    Scripted negotiators repeat templates, so they show the floor of drift. The chart and
    the reading (groups in the last stage) are about ``metric``; the table has every
    measure.

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.language_drift(_select(ds.scarce.messages, base_only, except_), n_stages=n_stages,
                                               by=by))
    one = res.filter(pl.col("measure") == metric)
    chart = ci_chart(one, "stage", color="group", kind="line", y_title=pretty(metric).lower(), width=160,
                     title=f"Does the negotiators' language drift? {pretty(metric)} by stage",
                     ci="95% t-interval over runs", y_domain=(0.0, 1.0))  # a share: one scale for every panel
    reading = describe_extremes(one.filter(pl.col("stage") == res["stage"].max()), ["model"],
                                f"{metric} in the last stage")
    return _make("scarce_language_drift", res, index=["measure", "group"], columns="stage", chart=chart,
                 reading=reading, convention={"n_stages": n_stages})


# -- notebook 03: memory horizon ---------------------------------------------------------------
@_finding
def memory_behaviours(ds: Any, labels: str | Path | pl.DataFrame | None, *, by: Sequence[str] = BY_MEMORY,
                      except_: Sequence[str] = ("memory",), behaviour: str = "reciprocity") -> Finding:
    """Table 2 of the SCARCE paper: the share of labelled agent-rounds showing reciprocity,
    alliance formation (explicit or exclusive coalition), alliance loyalty (coalition
    loyalty) and reputation (reputation maintenance)
    (:data:`~scarce_lab.environments.scarce.analysis.base.MEMORY_BEHAVIOURS`) by memory
    horizon: ``cross`` (the paper's baseline: public history, own negotiations and saved
    notes carried across subruns), ``subrun`` (history within a subrun only) and ``none``
    (each negotiation fresh). Rows: behaviours per model (and what differs apart from the
    memory); columns: the memory horizon. Runs of the reference condition with the
    ``except_`` settings (the memory) free. The reading is about ``behaviour``.

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a group mixes conditions.
        ValueError: ``behaviour`` is not a key of ``MEMORY_BEHAVIOURS``.
    """
    if behaviour not in MEMORY_BEHAVIOURS:
        raise ValueError(f"memory_behaviours: behaviour={behaviour!r} is not one of {list(MEMORY_BEHAVIOURS)}")
    if labels is None:
        return _none("scarce_table2_memory", NO_LABELS.format(what="behaviour shares"))
    rounds = _select(_rounds(ds, labels), True, except_)
    res = setting_labels(group_labels(tactics.behaviour_shares(rounds, by=by)), "memory")
    chart = ci_chart(res, "memory", color="group", column="behaviour", x_sort=MEMORIES, y_title="share of rounds",
                     title="Does a longer memory bring more relational behaviour? (Table 2)", width=150)
    reading = describe_extremes(res.filter(pl.col("behaviour") == behaviour), ["model", "memory"],
                                f"the {behaviour.replace('_', ' ')} share")
    return _make("scarce_table2_memory", res, index=["setting", "behaviour"], columns="memory", key="setting",
                 column_order=MEMORIES, index_order={"behaviour": list(MEMORY_BEHAVIOURS)}, chart=chart,
                 reading=reading)


@_finding
def relational_by_half(ds: Any, labels: str | Path | pl.DataFrame | None, *, taxonomy: str = "scarce",
                       by: Sequence[str] = BY_MEMORY, except_: Sequence[str] = ("memory",)) -> Finding:
    """Relational behaviour in the first against the second half of each run (its decay):
    the share of labelled agent-rounds with at least one relational label (the taxonomy's
    relational flag), halves cut over each run's labelled contentions. Runs of the
    reference condition with the ``except_`` settings (the memory) free.

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a group mixes conditions.
    """
    if labels is None:
        return _none("scarce_relational_by_half", NO_LABELS.format(what="the relational share by half"))
    rounds = _select(_rounds(ds, labels), True, except_)
    res = group_labels(tactics.relational_by_half(rounds, _taxonomy(taxonomy).relational_ids, by=by))
    chart = ci_chart(res, "half", color="group", kind="line", y_title="relational share", width=320,
                     title="Does relational behaviour decay within a run? First vs second half")
    rest = [b for b in by if b not in ("model", "condition")]
    return _make("scarce_relational_by_half", res, index=["group", *rest], columns="half",
                 column_order=["first", "second"], chart=chart,
                 reading=describe_extremes(res, ["model", *rest, "half"], "the relational share"))


@_finding
def memory_unlabelled(ds: Any, *, models: Sequence[str] | None = None, by: Sequence[str] = BY_MEMORY,
                      except_: Sequence[str] = ("memory",)) -> Finding:
    """What the negotiators did under each memory horizon, without judge labels: for any
    negotiator model (the scripted strategic policy returns or asks for a favour only when
    its memory shows the history, and its solver asks for longer slots after failures it
    remembers; a language model's runs show whatever it did). Runs of the reference
    condition with the ``except_`` settings (the memory) free; rows per model (and what
    its condition says apart from the memory), columns the memory horizon:
    private-chat use over all contested participations, and the requested slot duration
    per subrun (chart) with its growth factor (a run's mean in its last subrun / its mean
    in its first, t interval over runs with two or more subruns; the reading). Saved
    beside it: ``scarce_memory_private_chat``, ``scarce_memory_requested_duration`` (per
    subrun) and ``scarce_memory_duration_growth``.

    Args:
        models: negotiator models to show (``None``: every one in the data).

    Raises:
        PoolingError: runs of one row and memory horizon differ in another setting.
    """
    c = _select(ds.scarce.contentions, True, except_)
    if models is not None:
        c = c.filter(pl.col("model").is_in(list(models)))
    chat = dynamics.private_chat_use(c, by=by, subrun=None)
    per, growth = dynamics.requested_duration_by_subrun(c, by=by)
    res = pl.concat([chat.with_columns(metric=pl.lit("private_chat_use")),
                     growth.with_columns(metric=pl.lit("requested_duration_growth"))], how="diagonal_relaxed")
    # row labels; a dataset without contested participations has none to label
    res, per = ((setting_labels(f, "memory") if f.height else f.with_columns(setting=pl.lit(None, pl.String)))
                for f in (res, per))
    chart = ci_chart(per, "subrun", color="memory", column="setting", kind="line", y_title="requested slot (s)",
                     width=220, title="Do remembered failures lengthen requested slots? Duration per subrun by memory")
    return _make("scarce_memory_unlabelled", res, index=["setting", "metric"], columns="memory", key="setting",
                 column_order=MEMORIES, chart=chart,
                 reading=describe_extremes(growth, ["model", "memory"], "the growth factor of requested durations"),
                 extra={"scarce_memory_private_chat": with_ci_text(chat),
                        "scarce_memory_requested_duration": with_ci_text(per),
                        "scarce_memory_duration_growth": with_ci_text(growth)})


@_finding
def spontaneous_institutions(ds: Any, labels: str | Path | None) -> Finding:
    """Institutional behaviour found by the judge panel (its ``institutions.parquet``,
    beside ``labels``): a labelled behaviour is institutional when spontaneous (not asked
    for by the instructions) and persistent (it recurs in a later round for the same
    agent or pair). Counts of behaviours and institutional ones per condition (memory
    beside it), split relational / non-relational
    (:func:`scarce_lab.judge.institutional_summary`).
    """
    name = "scarce_memory_institutions"
    if labels is None:
        return _none(name, NO_LABELS.format(what="institutional behaviours"))
    from scarce_lab.datasets import resolve_path
    from scarce_lab.judge.institutions import institutional_summary

    path = resolve_path(labels).parent / "institutions.parquet"
    if not path.exists():
        return _none(name, f"No institutions table beside the labels ({path}).")
    cond = ds.scarce.contentions.select("run_id", "model", "condition").unique()
    inst = with_settings(pl.read_parquet(path), ds.scarce.settings, ["memory"]).join(cond, on="run_id", how="inner")
    summ = institutional_summary(inst.filter(pl.col("memory").is_not_null()),
                                 by=("model", "condition", "memory", "relational"))
    reading = (f"In this dataset, {summ['institutional'].sum()} of {summ['behaviours'].sum()} labelled (run, agent "
               "or pair, label) behaviours are institutional (spontaneous and persistent).")
    return Finding(name, frame=summ, text=folded("Institutional behaviours per condition", markdown_table(summ)),
                   reading=reading, convention={"unit": "labelled behaviour (run, agent or pair, label); "
                                                        "conditions never pooled"})


# -- notebook 04: budgets and deadlines ---------------------------------------------------------
@_finding
def budget_phases(ds: Any, *, by: Sequence[str] = BY, base_only: bool = False, except_: Sequence[str] = (),
                  metric: Literal["win_rate", "mean_bid"] = "win_rate") -> Finding:
    """Tables 5 and 7 of the SCARCE paper: the richer worker (the paper's asymmetry: 1,500
    credits against 1,000) against the others, in runs that have one: its win rate (share
    of rounds first in the queue, all rounds; contested rounds beside) and mean declared
    bid (credits) by budget phase (share of its subrun budget left before the contention:
    > 66%, 33-66%, < 33%), and overall over every phase (``all``: Table 7's overall win
    rate). A phase is missing when no worker spent that much of its subrun budget before
    a contention. The reading answers whether the richer worker's ``metric`` changes as
    its budget drains (``win_rate``: Table 5's question; ``mean_bid``).

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.budget_phase_bids(_select(ds.scarce.contentions, base_only, except_), by=by))
    phases = [*BUDGET_PHASES, "all"]
    question = {"win_rate": "Table 5's question: does the richer worker's win rate fall as its budget drains?",
                "mean_bid": "Does the richer worker bid less as its budget drains?"}.get(
        metric, f"Does the richer worker's {pretty(metric).lower()} change as its budget drains?")
    reading = describe_change(res.filter((pl.col("who") == "richer") & (pl.col("metric") == metric)),
                              "budget_phase", list(BUDGET_PHASES), ["group"], question)
    chart = ci_chart(res.filter(pl.col("metric").is_in(["win_rate", "mean_bid"])), "budget_phase", color="who",
                     column="metric", row="group", x_sort=phases, y_title="value", width=220, height=130,
                     title="Does the richer worker win less, and bid less, as its budget drains? (Tables 5 and 7)")
    return _make("scarce_tables5_7_budget_phases", res, index=["group", "metric", "who"], columns="budget_phase",
                 column_order=phases, index_order={"metric": ["win_rate", "mean_bid"], "who": ["richer", "others"]},
                 chart=chart, reading=reading)


@_finding
def urgency_bids(ds: Any, *, n_stages: int = 3, by: Sequence[str] = BY, urgent_below_s: float | None = None,
                 base_only: bool = False, except_: Sequence[str] = ()) -> Finding:
    """Table 4 of the SCARCE paper: the mean declared bid (credits) of urgent against
    non-urgent workers by stage, in runs with mixed deadlines (the paper's 10-25 minutes):
    urgent = deadline below the run's median (or below ``urgent_below_s`` seconds).

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.urgency_bids(_select(ds.scarce.contentions, base_only, except_), n_stages=n_stages,
                                             by=by, urgent_below_s=urgent_below_s))
    res = res.with_columns(worker=pl.when(pl.col("urgent")).then(pl.lit("urgent")).otherwise(pl.lit("not urgent")))
    chart = ci_chart(res, "stage", color="worker", column="group", kind="line", y_title="mean bid (credits)",
                     title="Do urgent workers bid more as the run goes on? (Table 4)", width=160)
    return _make("scarce_table4_urgency_bids", res, index=["group", "worker"], columns="stage",
                 index_order={"worker": ["urgent", "not urgent"]}, chart=chart,
                 reading=describe_contrast(res, "urgent", True, False, ["group"], "stage",
                                           "Do urgent workers bid more? Mean declared bid, urgent vs not urgent, "
                                           "per model and stage:", labels=("urgent", "not urgent")))


# -- notebook 05: revisable bids, rules, reasoning effort ---------------------------------------
@_finding
def bid_revisions(ds: Any, *, by: Sequence[str] = BY_MECHANISM, except_: Sequence[str] = ("mechanism",)) -> Finding:
    """Bid revision under the two mechanisms (no labels needed): the share of
    participations whose final bid differs from the declared one (only possible under
    ``revisable`` bids), for runs that differ only in the mechanism (the reference
    condition with the ``except_`` settings free): one row per model and what differs
    apart from the mechanism, one column per mechanism; folded below, the mean payment
    per participation (credits) under each, for the same negotiators and seeds.

    Raises:
        PoolingError: a group mixes conditions.
    """
    c = _select(ds.scarce.contentions, True, except_)
    res = setting_labels(tactics.bid_revision_share(c, by=by), "mechanism")
    pay = setting_labels(c.with_columns(pl.col("payment").cast(pl.Float64)).group_by(*by)
                         .agg(pl.col("payment").mean().alias("mean_payment"), pl.len().alias("n"),
                              pl.col("run_id").n_unique().alias("runs")).sort(*by), "mechanism")
    return _make("scarce_bid_revision", res, index=["setting"], columns="mechanism", key="setting",
                 column_order=["fixed", "revisable"],
                 reading=describe_extremes(res, ["setting", "mechanism"], "the share of revised bids"),
                 folds=[("Mean payment per participation (credits)",
                         pay.select("setting", "mechanism", "mean_payment", "n", "runs"))])


@_finding
def rule_shares(ds: Any, labels: str | Path | pl.DataFrame | None, *, n_stages: int = 3,
                by: Sequence[str] = BY_MECHANISM, except_: Sequence[str] = ("mechanism",), memory: str = "cross",
                kind: Literal["rules", "rule_making", "rule_invoking"] = "rules") -> Finding:
    """Table 10 of the SCARCE paper: the rule-making plus rule-invoking share of labelled
    agent-rounds by stage, fixed against revisable bids (the combined share ``rules``,
    with the split beside it). From the taxonomy's *rules and spontaneous norms* system
    (:data:`~scarce_lab.environments.scarce.analysis.base.RULE_MAKING` /
    ``RULE_INVOKING``): a round is rule-making when the panel accepted a process and
    governance norm (iterative bargaining, negotiation neutrality rules, issue reduction:
    proposing how the group should decide) and rule-invoking when it accepted a
    time-urgency or classical scheduling norm (earliest deadline first, sunk-cost urgency,
    first come first served, shortest job first, risk/variance first: appealing to an
    ordering criterion). Runs of the reference condition with memory ``memory`` and the
    ``except_`` settings (the mechanism) free. The reading is about ``kind``.

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a group mixes conditions.
    """
    if labels is None:
        return _none("scarce_table10_rules", NO_LABELS.format(what="rule shares"))
    rounds = _select(_rounds(ds, labels), True, except_, memory)
    res = setting_labels(group_labels(tactics.rule_shares_by_stage(rounds, n_stages=n_stages, by=by)), "mechanism")
    chart = ci_chart(res, "stage", color="group", column="kind", kind="line", y_title="share of rounds", width=180,
                     title="Do revisable bids bring more rule-making? Rules by stage (Table 10)")
    reading = describe_extremes(res.filter(pl.col("kind") == kind), ["model", "mechanism", "stage"],
                                f"the {kind.replace('_', '-')} share")
    return _make("scarce_table10_rules", res, index=["setting", "kind", "stage"], columns="mechanism",
                 column_order=["fixed", "revisable"], key="setting",
                 index_order={"kind": ["rules", "rule_making", "rule_invoking"]}, chart=chart, reading=reading,
                 convention={"memory": memory})


@_finding
def effort_tactics(ds: Any, labels: str | Path | pl.DataFrame | None, *, taxonomy: str = "scarce",
                   efforts: Sequence[str] | None = None, memory: str = "cross") -> Finding:
    """Table 9 of the SCARCE paper: the tactic shares (every subrun) under the two highest
    reasoning efforts a model accepts (``efforts``, e.g. ``high`` and ``xhigh``; ``None``:
    the two strongest levels present in the labelled runs,
    :func:`~scarce_lab.environments.scarce.efforts.strongest_efforts`), in runs of the
    reference condition with memory ``memory`` and the effort free. Reasoning effort is
    passed through to litellm (``llm.reasoning_effort``, checked against the levels
    litellm lists for the model); the embedded model ignores it. Saved beside it: the
    distribution of accepted labels over categories (``scarce_effort_distribution``) and
    the shares long (``scarce_effort_tactic_shares``).

    Raises:
        FileNotFoundError: no labels file at ``labels``.
        PoolingError: a group mixes conditions.
    """
    name = "scarce_table9_effort"
    if labels is None:
        return _none(name, NO_LABELS.format(what="tactic shares by reasoning effort"))
    from ..efforts import strongest_efforts

    tax = _taxonomy(taxonomy)
    rounds = _rounds(ds, labels)
    present = [e for e in rounds["reasoning_effort"].unique().to_list() if e != "default"]
    efforts = list(efforts or strongest_efforts(present))
    r = base_condition(rounds, except_=("reasoning_effort",), memory=memory).filter(
        pl.col("reasoning_effort").is_in(efforts))
    by = ("model", "reasoning_effort")
    dist = tactics.label_distribution(r, tax.ids, by=by)
    shares = tactics.tactic_shares(r, tax.ids, tax.relational_ids, by=by, subrun=None)
    long = with_ci_text(shares)
    shares = _kinds(shares, tax.relational_ids).with_columns(column=pl.col("model") + " · " + pl.col("reasoning_effort"))
    chart = ci_chart(shares, "category", color="reasoning_effort", row="model", x_sort=[*tax.ids, "relational"],
                     y_title="share of rounds", title="Does more reasoning effort change the tactics? (Table 9)",
                     width=560)
    reading = describe_extremes(shares.filter(pl.col("category") == "relational"), ["model", "reasoning_effort"],
                                "the relational share")
    return _make(name, shares, index=["kind", "category"], columns="column", chart=chart, reading=reading,
                 index_order={"kind": KINDS, "category": [*tax.ids, "relational"]},
                 convention={"efforts": efforts, "efforts_present": sorted(present), "subrun": "all"},
                 extra={"scarce_effort_distribution": dist, "scarce_effort_tactic_shares": long})


# -- notebook 06: auction dynamics and schedulers -------------------------------------------------
@_finding
def win_continuity(ds: Any, *, by: Sequence[str] = BY, base_only: bool = False, except_: Sequence[str] = (),
                   given: Literal["won", "lost"] = "won") -> Finding:
    """Win continuity (Table 8 of the SCARCE paper): P(win next | won this one) against
    P(win next | lost this one), over each worker's consecutive contested participations
    within one run and subrun. The reading is about the pairs whose first was ``given``
    (``won`` or ``lost``).

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.win_continuity(_select(ds.scarce.contentions, base_only, except_), by=by))
    chart = ci_chart(res, "group", color="given", y_title="P(win next)", width=520,
                     title="Does a win bring the next win? Win continuity (Table 8)")
    return _make("scarce_table8_win_continuity", res, index=["group"], columns="given", column_order=["won", "lost"],
                 chart=chart, reading=describe_extremes(res.filter(pl.col("given") == given), ["group"],
                                                        f"P(win next | {given} this one)"))


@_finding
def bid_drift(ds: Any, *, n_stages: int = 4, by: Sequence[str] = BY, base_only: bool = False,
              except_: Sequence[str] = ()) -> Finding:
    """Bid drift (Table 8 of the SCARCE paper): the median winning bid (credits; the final
    bid, the declared one under fixed bids) per stage, stages 1 to ``n_stages`` (the
    paper's 4), over contested contentions, with a cluster-bootstrap interval for the
    median. The reading: does it rise from the first stage to the last?

    Raises:
        PoolingError: a group mixes conditions.
    """
    res = group_labels(dynamics.winning_bid_by_stage(_select(ds.scarce.contentions, base_only, except_),
                                                     n_stages=n_stages, by=by))
    drawn = res.filter(pl.col("lo").is_not_null() & pl.col("hi").is_not_null()).height
    ci = (f"95% cluster-bootstrap interval of the median (runs resampled; none below {MIN_RUNS_MEDIAN} runs)"
          if drawn else f"none drawn: every group has fewer than {MIN_RUNS_MEDIAN} runs, too few for the "
          "cluster-bootstrap interval of the median")
    chart = ci_chart(res, "stage", color="group", kind="line", y_title="median winning bid (credits)", width=200,
                     title="Does the winning bid rise over the run? Median winning bid by stage (Table 8)", ci=ci)
    reading = describe_change(res, "stage", list(range(1, n_stages + 1)), ["group"],
                              f"Table 8's question: does the median winning bid rise from stage 1 to {n_stages}?")
    return _make("scarce_table8_bid_drift", res, index=["group"], columns="stage", chart=chart, reading=reading,
                 convention={"n_stages": n_stages})


@_finding
def durations(ds: Any, *, col: str = "requested_duration_s", by: Sequence[str] = BY, base_only: bool = False,
              except_: Sequence[str] = ()) -> Finding:
    """The slot duration per subrun (seconds) and its growth factor: ``col`` is
    ``requested_duration_s`` (what the solver requested, capped at the slot cap) or
    ``desired_duration_s`` (what the negotiator declared). Growth factor = a run's mean
    in its last subrun / its mean in its first subrun, averaged over runs with two or
    more subruns (t interval; folded below the table and the reading). The scripted
    skilled solver asks for longer slots after failed attempts it remembers, so it grows
    under cross-subrun memory.

    Raises:
        ValueError: ``col`` is not one of the two durations.
        PoolingError: a group mixes conditions.
    """
    if col not in DURATIONS:
        raise ValueError(f"durations: col must be one of {list(DURATIONS)}, got {col!r}")
    per, growth = dynamics.requested_duration_by_subrun(_select(ds.scarce.contentions, base_only, except_), by=by,
                                                        col=col)
    per, growth = group_labels(per), group_labels(growth)
    what = DURATIONS[col]
    chart = ci_chart(per, "subrun", color="group", kind="line", y_title=f"{what} (s)", title=f"{what} per subrun",
                     width=320)
    g = with_ci_text(growth)
    return _make(f"scarce_{col}_per_subrun", per, index=["group"], columns="subrun", chart=chart,
                 reading=describe_extremes(growth, ["group"], f"the growth factor of the {what.lower()}"),
                 extra={f"scarce_{col}_growth": g},
                 folds=[(f"Growth factor of the {what.lower()} (last subrun / first)",
                         g.select("group", "estimate", "runs"))])


@_finding
def scheduler_comparison(ds: Any, *, negotiator: str = "scripted/strategic", reference: str = "ballots",
                         subruns: int = 1,
                         metric: Literal["deadline_misses", "mean_partial_score", "total_queue_wait_s"] = "deadline_misses",
                         ) -> Finding:
    """The negotiated schedule against centralised schedulers, a comparison the SCARCE
    paper leaves open: ballots against FIFO, SJF, EDF and highest-bid on collective
    outcomes per run (deadline misses, mean partial score, total queue wait: seconds from
    a slot's request to its start, summed), on the same tasks, deadlines and seeds. Runs
    of the reference condition with the scheduler free, negotiator model ``negotiator``
    and ``subruns`` subruns. ``diff``: the mean over paired seeds of (scheduler minus
    ``reference``), t interval over the pairs; a negative difference in deadline misses or
    queue wait, or a positive one in partial score, favours the centralised scheduler.
    Per-run outcomes get t intervals over runs. The reading is about ``metric``; the
    per-run outcomes are saved beside it (``scarce_scheduler_outcomes_per_run``).

    Raises:
        PoolingError: runs of one scheduler differ in another setting.
    """
    t = ds.scarce
    runs = base_condition(t.settings, except_=("scheduler",)).filter(
        (pl.col("negotiator") == negotiator) & (pl.col("subruns") == subruns))
    keep = pl.col("run_id").is_in(runs["run_id"].to_list())
    out = dynamics.collective_outcomes(t.contentions.filter(keep), t.submissions.filter(keep))
    out = with_settings(out, t.settings, ["scheduler", "seed"])
    cmp = dynamics.compare_schedulers(out, by=("scheduler",), reference=reference)
    chart = ci_chart(cmp, "scheduler", column="metric", x_sort=["ballots", "fifo", "sjf", "edf", "highest-bid"],
                     title=f"Collective outcomes per run (negotiator {negotiator})", width=170,
                     ci="95% t-interval over runs")
    return _make("scarce_scheduler_comparison", cmp,
                 shown=["scheduler", "metric", "estimate", "runs", "diff", "diff_lo", "diff_hi", "pairs"],
                 chart=chart, reading=describe_extremes(cmp.filter(pl.col("metric") == metric), ["scheduler"],
                                                        metric.replace("_", " ") + " per run"),
                 convention={"intervals": "95% t-interval over runs, clipped to the metric range; differences "
                                          "paired on seeds"},
                 extra={"scarce_scheduler_outcomes_per_run": out})


# -- the dataset, the summary -------------------------------------------------------------------
def load(paths: str | Path | Sequence[str | Path], *, force: bool = False) -> Any:
    """``sl.load(paths)`` checked to hold SCARCE runs (:func:`scarce_lab.datasets.load`:
    one path or a list, relative to the project root; a run reached from two paths counts
    once); its tables are ``ds.scarce`` (contentions, submissions, messages, settings).
    Raises as ``sl.load`` does (``ValueError``: no SCARCE run)."""
    from scarce_lab.datasets import load as load_any

    return load_any(paths, force=force, environment="scarce")


#: The interval method of :func:`table`, as its saved convention states it.
SUMMARY_INTERVALS = "95% CIs clustered by run (runs are the independent unit); conditions never pooled"


def table(ds: Any, *, convention_extra: dict[str, Any] | None = None) -> Finding:
    """The per-model summary (``sl.table`` of a SCARCE dataset): win rate, bids,
    requested durations, private chat, deadline misses, scores and stuck solvers, mean
    and run-clustered 95% CI per negotiator model x solver model x condition
    (:func:`~scarce_lab.environments.scarce.analysis.metrics.summary`): ``frame`` the
    numbers, ``layout`` the text table; shown with a short label per model and
    condition (:func:`~scarce_lab.analysis.layout.group_labels`), the full conditions
    folded under it.

    Raises:
        PoolingError: a (model, condition) group mixes settings.
        ValueError: the data hold no SCARCE contention or submission.
    """
    from ..tables import contentions_table, submissions_table
    from .metrics import format_summary, summary

    contentions, submissions = contentions_table(ds), submissions_table(ds)
    if contentions.is_empty() and submissions.is_empty():
        raise ValueError("no SCARCE contention or submission in these data")
    s = summary(contentions, submissions)
    layout = format_summary(s)
    return Finding("scarce_summary", frame=s, layout=layout, text=_summary_text(layout),
                   convention={"intervals": SUMMARY_INTERVALS} | (convention_extra or {}))


def _summary_text(layout: pl.DataFrame) -> str:
    """The summary's layout as displayed: ``group`` (the model and what differs in its
    condition) for the model and condition columns (the solver model beside it when
    the rows have several), the full settings folded below."""
    shown = group_labels(layout)
    solvers = layout["solver_model"].n_unique() > 1
    key = ("model", "condition") if solvers else ("model", "solver_model", "condition")
    body = shown.select("group", *(["solver_model"] if solvers else []),
                        pl.exclude("group", "model", "solver_model", "condition"))
    return (markdown_table(body, float_digits=2) + "\n\n"
            + folded("Full conditions behind the labels", markdown_table(settings_table(shown, "group", key))))


# -- institutions, tenure -------------------------------------------------------------------------
#: The interval methods of :func:`institution_behaviour` and :func:`collective_output`.
INSTITUTION_INTERVALS = ("mean over runs; shares and scores: the bounded t/score hull (stats.bounded_mean_ci, "
                         "bounds [0, 1]); breaches per contention and waits: t over runs; differences: t over the "
                         "per-seed paired differences; no interval from one run or one pair")


@_finding
def institution_behaviour(ds: Any) -> Finding:
    """Institutional behaviour per arm (the scheduler and the institutions that are on,
    :func:`~scarce_lab.environments.scarce.analysis.institutions.institution_settings`):
    per run, from the institution events (``promise_judged``, ``breach``, ``sanction``,
    ``contract_offer``, ``contract_answer``, ``contract_settlement``), promise keeping
    (kept / judged promises), breaches per contention, the share of sanction ballots that
    fined, the share of contract offers signed and the share of signed contracts whose
    condition held; then the mean over runs per arm (:data:`INSTITUTION_INTERVALS`). A
    rate a run has nothing to rate for (its module off, no promise judged, no offer) is
    left out of that run, never counted as 0: ``runs`` says how many runs gave a value.
    Also ``extra["institution_counts"]``: the event counts per arm behind the rates.

    Raises:
        PoolingError: an arm mixes conditions.
    """
    from . import institutions as inst

    settings = inst.institution_settings(ds.runs)
    frames = inst.institution_frames(ds)
    res = with_ci_text(inst.institution_behaviour(inst.institution_run_rates(frames, settings), settings))

    def cell(arm: str, metric: str) -> str:
        r = res.filter((pl.col("arm") == arm) & (pl.col("metric") == metric))
        return r["estimate"][0] if r.height and r["runs"][0] else "n/a"

    rated = sorted(set(res.filter(pl.col("runs") > 0)["arm"]))
    reading = ("; ".join(f"{a}: promise keeping {cell(a, 'promise_keeping')}, breaches per contention "
                         f"{cell(a, 'breaches_per_contention')}, fined {cell(a, 'fined_share')}, signed "
                         f"{cell(a, 'signed_share')}" for a in rated) or "no arm has an institution on") + \
        ". Arms without a module judge no promise and rate nothing (n/a, not 0)."
    chart = ci_chart(res.filter(pl.col("runs") > 0), "arm", column="metric", title="institutional behaviour by arm",
                     y_title="mean over runs")
    shown = blank_repeats(res.select("arm", "metric", "estimate", "runs"), ["arm"])
    return Finding("institution_behaviour", frame=res.select("arm", "metric", "estimate", "value", "lo", "hi", "runs"),
                   text=markdown_table(shown), chart=chart, reading=reading, extra={"institution_counts": _institution_counts(frames, settings)},
                   convention={"unit": "run", "intervals": INSTITUTION_INTERVALS,
                               "rates": "per run: kept/judged promises, breaches/contentions, passed/held sanctions, "
                                        "signed/offered contracts, held/settled contracts"})


def _institution_counts(frames: dict, settings: pl.DataFrame) -> pl.DataFrame:
    """Event counts per arm behind :func:`institution_behaviour` (sums over its runs)."""
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


@_finding
def collective_output(ds: Any, *, reference: str = "fifo") -> Finding:
    """Collective output per arm, the SCARCE paper's open question "do institutions help
    or hurt collective output?": per run, the deadline-miss rate (share of its
    submissions that missed), the mean partial score and the total queue wait (seconds
    from a slot's request to its start, summed over started slots); per arm the mean over
    runs with a 95% interval (:data:`INSTITUTION_INTERVALS`), and ``diff``: the mean
    paired difference to the ``reference`` arm (default the centralised FIFO scheduler;
    ``ballots|none`` for the negotiated auction without institutions) on the same seed
    (same tasks, deadlines and solver draws), t interval over the per-seed differences
    (``pairs``); the reference's own row is 0 by construction. An interval that spans 0 is
    no evidence of a difference. Also ``extra["collective_outcomes_per_run"]``.

    Raises:
        ValueError: ``reference`` is not an arm of the data (naming the arms), or a run
            has neither a contention nor a submission.
        PoolingError: an arm mixes conditions.
    """
    from . import institutions as inst

    settings = inst.institution_settings(ds.runs)
    arms = sorted(settings["arm"].unique().to_list())
    if reference not in arms:
        raise ValueError(f"collective_output: reference arm {reference!r} is not in the data (arms: {arms})")
    out = dynamics.collective_outcomes(ds.scarce.contentions, ds.scarce.submissions)
    have, want = set(out["run_id"].to_list()), set(settings["run_id"].to_list())
    if have != want:
        raise ValueError(f"collective_output: {len(want - have)} run(s) without a contention or a submission and "
                         f"{len(have - want)} without a manifest (e.g. {sorted(want ^ have)[:3]})")
    res = with_ci_text(inst.collective_by_arm(out.join(settings, on="run_id"), reference=reference))
    r2 = lambda c: pl.col(c).round(2).cast(pl.String).str.replace(r"^-0\.0$", "0.0")  # noqa: E731  (no '-0.0')
    cf = res.with_columns(diff_ci=pl.when(pl.col("arm") == reference).then(pl.lit("reference"))
                          .when(pl.col("diff_lo").is_not_null()).then(pl.format("{} [{}, {}]", r2("diff"), r2("diff_lo"),
                                                                                 r2("diff_hi")))
                          .when(pl.col("pairs") >= 2).then(pl.format("{} (the same on all {} seeds: no interval)",
                                                                     r2("diff"), pl.col("pairs")))
                          .otherwise(pl.format("{} (one pair: no interval)", r2("diff"))))
    ref = pretty(reference)

    def versus(metric: str) -> str:
        rows = cf.filter((pl.col("metric") == metric) & (pl.col("arm") != reference))
        return "; ".join(f"{a} {e} (vs {ref} {d})" for a, e, d in rows.select("arm", "estimate", "diff_ci").iter_rows())

    own = {m: cf.filter((pl.col("arm") == reference) & (pl.col("metric") == m))["estimate"][0]
           for m in inst.COLLECTIVE_METRICS}
    reading = (f"{ref}: deadline-miss rate {own['deadline_miss_rate']}, mean partial score "
               f"{own['mean_partial_score']}, total queue wait {own['total_queue_wait_s']} s. Deadline-miss rate by "
               f"arm: {versus('deadline_miss_rate')}. Mean partial score: {versus('mean_partial_score')}. Total queue "
               f"wait (s): {versus('total_queue_wait_s')}.")
    chart = ci_chart(cf, "arm", column="metric", title=f"collective output by arm ({ref}: the reference)",
                     y_title="mean over runs")
    shown = blank_repeats(cf.select("arm", "metric", "estimate", "runs", "diff_ci", "pairs"), ["arm"])
    return Finding("collective_output", frame=cf.select("arm", "metric", "estimate", "runs", "diff_ci", "pairs", "value",
                                                        "lo", "hi", "diff", "diff_lo", "diff_hi"),
                   text=markdown_table(shown), chart=chart, reading=reading, extra={"collective_outcomes_per_run": out},
                   convention={"unit": "run", "reference": reference, "paired_on": "seed",
                               "intervals": INSTITUTION_INTERVALS})


@_finding
def tenure_outcomes(ds: Any, *, by: Sequence[str] = BY, per_worker: bool = False,
           metric: str = "deadline_miss_rate") -> Finding:
    """Newcomers against incumbents, before and after a join, in runs with ``joins``
    (config and condition setting: worker -> the 0-based subrun it joins at). A run's
    *newcomers* are the workers in ``joins``, its *incumbents* the others; its subruns
    before its first join are the ``before_join`` period, the others ``after_join`` (a
    newcomer has only these); a run without joins is ``no_join``. Per tenure and period
    (:func:`~scarce_lab.environments.scarce.analysis.tenure.tenure_metrics`), one row per
    group of ``by`` (and worker with ``per_worker``): the deadline-miss rate (share of
    worker-subruns whose deadline passed before a submission), the mean partial score
    (passed / total hidden tests, 0 for a missed deadline under the default rule), the
    mean wait for a slot (seconds from a slot request to its start, over contentions
    whose slot started) and the payment per subrun (credits a worker paid in a subrun; 0
    for a subrun without a contention). The reading is about ``metric``.

    Raises:
        PoolingError: a group mixes conditions or models.
    """
    from .tenure import TENURE_INTERVALS, tenure_metrics

    res = group_labels(tenure_metrics(ds.scarce.submissions, ds.scarce.contentions, by=by, per_worker=per_worker))
    keys = [*by, *(["worker"] if per_worker else []), "tenure", "period"]
    several = res["group"].n_unique() > 1
    chart = ci_chart(res, "period", color="tenure", column="metric", row="group" if several else None,
                     x_sort=["before_join", "after_join", "no_join"], title="Do newcomers fare worse than incumbents?")
    return _make("scarce_tenure", res, shown=[*keys, "metric", "estimate", "n", "runs"], chart=chart,
                 reading=describe_extremes(res.filter(pl.col("metric") == metric), keys, pretty(metric).lower()),
                 convention={"intervals": TENURE_INTERVALS})
