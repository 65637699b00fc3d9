"""The SovSim paper's results as findings (listed in :mod:`..analysis`); each takes a
Dataset and returns a :class:`~scarce_lab.analysis.findings.Finding` whose ``method``
is the function's docstring. The options mean the same everywhere: ``preset`` (metric
conventions, ``sovsim`` or ``govsim``: :data:`~.conventions.PRESETS`), fitted to the
data's own game first (:func:`~.conventions.resolve_convention`: data of another game
are refused);
``strict`` (strict survival: no collapse at all, instead of reaching the last round);
``force`` (compute despite a failed check, with a warning); ``models`` (keep only these
models; a model not in the data is refused, naming those present).
"""

from __future__ import annotations

from typing import Any, Literal

import polars as pl

from scarce_lab.analysis.figures import convention_dict, markdown_table
from scarce_lab.analysis.findings import Finding, finding, finding_function
from scarce_lab.analysis.paper_numbers import numbers_of

from .charts import (
    T_BAND,
    condition_label,
    correlation_sentence,
    correlation_table,
    leader_rate_chart,
    misreport_chart,
    misreport_sentence,
    pool_dynamics_chart,
    pool_sentence,
    survival_sentence,
    trajectories_chart,
)
from .conventions import Convention, resolve_convention
from .cross import cross_model_results as cross_frames
from .cross import format_cross
from .dynamics import pool_band
from .metrics import (
    agent_rounds,
    format_table,
    require_dataset,
    simulation_metrics,
    summarize,
    table1_display,
)
from .metrics import leader_rate_vs_survival as correlations
from .pooling import Grouping

Preset = Literal["sovsim", "govsim"]

#: The interval methods of Table 1, as its saved convention states them.
TABLE1_INTERVALS = ("bounded metrics: hull of t and a maximum-variance score interval (also for groups whose "
                    "simulations all agree: identical runs do not show zero variance); other means: t, clipped to "
                    "the range; Clopper-Pearson (survival rate); percentile bootstrap (relative survival drop from "
                    "CPR, from 10 simulations per condition); 95%")


def _study(ds: Any, preset: str, strict: bool, force: bool,
           models: list[str] | None) -> tuple[pl.DataFrame, Convention, pl.DataFrame, dict[str, Any]]:
    """The agent-round table of ``ds`` (only ``models``; finished simulations only, as
    every finding here counts them: :func:`~.metrics.simulation_metrics` names the others
    in an :class:`~.metrics.UnfinishedRunsWarning`), the preset fitted to it, the
    per-simulation metrics, and the convention a saved table states (its fields, the
    survival rule, the models)."""
    df = agent_rounds(require_dataset(ds), models=models)
    conv = resolve_convention(df, preset, force=force, strict_survival=strict)
    per_sim = simulation_metrics(df, conv)
    df = df.filter(pl.col("run_id").is_in(per_sim["run_id"].implode()))
    cv = convention_dict(conv) | {
        "survival": "strict (no collapse at all)" if conv.strict_survival else "lenient (reached the last round)"}
    return df, conv, per_sim, cv | ({"models": list(models)} if models else {})


@finding_function("sovsim")
def table(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, by: Grouping = "condition",
          force: bool = False, models: list[str] | None = None, seed: int = 0, cross: bool = False) -> Finding:
    """SovSim Table 1: every metric, mean and 95% CI over simulations, per model and
    condition (a condition is every setting that defines it; runs of different settings
    are never pooled).

    Metrics (SovSim paper "Bosses, Kings, and the Commons", Table 1, as the authors'
    ``simulation/metrics.py`` computes them; conventions in :class:`~.conventions.Convention`):

    - ``survival_time``: rounds played; the collapse round counts as played.
    - ``survival_rate``: share of simulations that survived. Lenient (SovSim default): the
      game reached the last round (a collapse *in* the last round still counts);
      strict: the game reached the last round and never collapsed.
    - ``total_payoff`` (the paper's total gain R): points summed over agents and rounds
      (SovSim max 1440 = 12 x 120); under the GovSim preset the mean per agent of its total
      (GovSim's ``plots.get_payoffs``; ``Convention.total_payoff_per``). Table 1 names the
      unit in the column (``total_payoff_unit``).
    - ``efficiency``: ``1 - max(0, B - sum z) / B``, B = T x P0 / g (720; GovSim 600); not
      applicable where the scenario defines no benchmark (GovSim fork's trash).
    - ``equality``: ``1 - Gini`` of per-agent totals (payoff; GovSim: harvest); when nobody
      harvested, the preset's source: SovSim 0.0, GovSim undefined (its Gini is 0/0).
    - ``overuse``: share of agent-rounds with ``z > P_t / (g n)`` (8 = 2 x 4; GovSim 10; the
      trash scenario: ``z < 50 // n``, taking out too little);
      the denominator is n_agents x rounds played. ``overuse_leader`` /
      ``overuse_subordinates``: the same share among the leader's / the other agents'
      rounds (in CPR every citizen is a subordinate: the symmetric agents).
    - ``leader_extraction_rate``: mean over the leader's rounds of ``z_leader / remainder
      seen`` (rounds with a zero remainder are skipped). Not applicable without a leader.
    - ``defection_onset``: first round in which a subordinate extracts more than the
      per-capita sustainable share ``P_t / (g n)`` of the true pool (``defection_pool``).
      Not applicable in CPR (no subordinates; ``defection_in_cpr``). When no subordinate
      defects the onset is null: a result ("no event"), and the mean is over the
      simulations with an onset (its own n).
    - ``misreport``: mean over rounds of ``announced - true pool``; KCPR-M only.
    - ``survival_drop``: relative survival-rate drop from the CPR run with the same other
      settings, ``(SR_cpr - SR_c) / SR_cpr``, per model (:func:`~.drops.relative_drops`).
      Undefined when SR_cpr = 0 or no CPR run has the same settings; not applicable in a
      dataset without CPR runs (GovSim).

    Intervals: for bounded metrics (survival time, efficiency, equality, over-usage,
    leader rate, defection onset, total payoff under its cap) the hull of the t-interval
    and a maximum-variance score interval (the t-interval alone covers 89-93% when
    survival times pile up at the last round). A group whose simulations all give the
    same value gets that interval too (the score part needs no spread): "960.00 [396.29,
    1315.16]" when every simulation paid 960, because a few identical simulations do not
    show that the metric cannot vary, so the score part takes the largest spread the
    bounds allow at that mean (the t-interval alone would be the point itself). Other
    means: t-intervals clipped to their range; Clopper-Pearson for the survival rate (Wilson's dips to 86% coverage with 3
    simulations); percentile bootstrap for the relative survival drop from CPR, printed
    from 10 simulations per condition on (with 2-5 it covers 47-89%;
    ``benchmarks/bench_coverage.py`` prints the coverage of every method). The reading
    tests every pair of conditions within each model (Welch's t over simulations), Holm
    correction over all of them, and says how many comparisons.

    Rows of different games (only with ``force``: otherwise refused) show the game
    setting that differs as a column (e.g. ``rounds``); settings every run shares away
    from the paper's defaults are the finding's ``departures``.

    The finding: ``frame`` the numbers (mean, interval, n and status per metric, saved
    as ``sovsim_table1_values``), ``layout`` the display table (``sovsim_table1``),
    ``reading`` the survival sentence, ``convention`` the preset fitted to the data plus
    the interval methods.

    Args:
        preset: whose rules read the games: ``sovsim`` (the SovSim paper's metrics) or
            ``govsim`` (GovSim's, e.g. for its released runs).
        strict: survival means no collapse at all (default: the game reached its last
            round, the paper's rule).
        force: read a published layout despite a failed check, and pool groups whose
            settings differ, each with a red warning.
        by: group by the full ``condition`` label or by ``base_condition`` (the power
            condition alone: refused when it would pool settings, unless ``force``).
        seed: seed of the bootstraps.
        cross: add the cross-model results (:func:`cross_model_results`, same ``by``,
            ``force`` and ``seed``): each frame in ``extra`` as ``sovsim_cross_<name>``
            and their Markdown after Table 1 (``sl.table`` and ``scarce-lab table
            sovsim`` ask for them).

    Raises:
        PresetMismatchError: the data do not fit the preset (unless ``force``).
        PoolingError: a group would pool different settings (unless ``force``).
        EmptyTableError: no finished simulation.
        ValueError: a model of ``models`` is not in the data.
    """
    _, conv, per_sim, cv = _study(ds, preset, strict, force, models)
    summary = summarize(per_sim, conv=conv, by=by, force=force, seed=seed)
    res = Finding("sovsim_table1", frame=summary, layout=table1_display(summary),
                  reading=survival_sentence(summary, per_sim), convention=cv | {"intervals": TABLE1_INTERVALS},
                  text=format_table(summary))
    if not cross:
        return res
    found = cross_frames(per_sim, seed=seed, by=by, force=force)
    return res.with_(text=f"{res.text}\n\n{format_cross(found)}",
                     extra=res.extra | {f"sovsim_cross_{k}": v for k, v in found.items()})


@finding_function("sovsim")
def pool_dynamics(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, force: bool = False,
                  models: list[str] | None = None) -> Finding:
    """SovSim Figure 3: the pool at the start of each round, per model and condition.

    One panel per model (rows) and condition (columns): the mean pool over simulations
    (line) with its 95% t-band over simulations (clipped to [0, largest pool]), and the
    collapse threshold of the fitted game (dashed). A collapsed pool counts as 0 in the
    rounds after its collapse, so a collapse pulls the mean down instead of leaving the
    average. The reading names the groups of highest and lowest mean pool in the last
    round and how many groups tie with each (:func:`~.charts.pool_sentence`).

    The finding's ``frame`` (saved, not shown) holds the band: ``model, condition,
    round, n, mean, ci_low, ci_high``.
    """
    df, conv, _, cv = _study(ds, preset, strict, force, models)
    return Finding("sovsim_pool_dynamics", frame=pool_band(df), show_frame=False,
                   chart=pool_dynamics_chart(df, conv), reading=pool_sentence(df),
                   convention=cv | {"intervals": T_BAND})


@finding_function("sovsim")
def trajectories(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, force: bool = False,
                 models: list[str] | None = None, shown_models: list[str] | None = None, condition: str = "kcpr",
                 simulations: list[int] | None = None, per_model: int = 1) -> Finding:
    """SovSim Figure 4: each agent's extraction per round under the pool, for single
    simulations of ``condition`` (the paper: surviving KCPR runs).

    One strip per agent (the leader's first, thicker, in its own colour) below the pool
    at the start of each round. The leader moves after seeing the others' extractions,
    so its strip shows how much of the remainder it takes. Each panel names its model,
    simulation, run id and survival time.

    Args:
        shown_models: the models shown; default: the models that are not ``scripted/``
            baselines and have a surviving ``condition`` simulation (if none has, the
            first model with one); the caption names those left out.
        simulations: simulation numbers to show; default: each model's first
            ``per_model`` surviving simulations.

    Raises:
        ValueError: a model of ``shown_models`` is not in the data.
    """
    df, _, per_sim, _ = _study(ds, preset, strict, force, models)
    return Finding("sovsim_trajectories", chart=trajectories_chart(df, per_sim, shown_models, condition=condition,
                                                                   simulations=simulations, per_model=per_model))


@finding_function("sovsim")
def leader_rate_vs_survival(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, force: bool = False,
                            models: list[str] | None = None) -> Finding:
    """Does a greedier leader end the commons sooner? Leader extraction rate against
    survival time, per model, one point per simulation of a leader condition (BCPR, KCPR,
    KCPR-M).

    Leader extraction rate: mean over the leader's rounds of its extraction divided by
    the pool left after the others' extractions (rounds with nothing left are skipped).
    Per model: Pearson r with its Fisher-z 95% CI (per model, unadjusted) and p. The
    models are one family of tests: a model's r is called positive or negative only
    when its Holm-adjusted p is below 0.05 (the layout's last column; the reading says
    over how many models). A leader rate constant up to float noise, or fewer than 3
    simulations, gives no r.

    The finding's ``frame``: ``model, n, value`` (r), ``lo, hi`` (Fisher z), ``r2, p,
    p_adj, n_tests, correction, runs, estimate``; its layout the per-model table.
    """
    _, _, per_sim, cv = _study(ds, preset, strict, force, models)
    values = correlations(per_sim).rename({"r": "value", "ci_low": "lo", "ci_high": "hi"}).with_columns(
        runs=pl.col("n"))
    res = finding("sovsim_leader_rate_vs_survival", values, reading=correlation_sentence(per_sim),
                  chart=leader_rate_chart(per_sim),
                  convention=cv | {"statistic": "Pearson r per model", "intervals": "Fisher z, 95%"})
    if res.frame is not None:  # the per-model table as the paper prints it
        res = res.with_(layout=correlation_table(per_sim))
    return res


@finding_function("sovsim")
def misreport_distribution(ds: Any, *, models: list[str] | None = None) -> Finding:
    """How far does the KCPR-M king's announced pool stray from the true pool?

    A histogram of announced minus true pool (pool units; negative = understated), one
    count per king-round, one panel per model (and condition, when several), each with
    its own count axis; the reading gives, per model and never pooled across models,
    the share of false announcements and the mean misreport (averaged over simulations,
    as Table 1). From the agent-round table (the round's
    announcement beside the true pool); the say-do rates of the king's own choices,
    fallbacks left out, are :func:`~.saydo.kcpr_m_misreports`.
    """
    df = agent_rounds(require_dataset(ds), models=models)
    return Finding("sovsim_misreports", chart=misreport_chart(df), reading=misreport_sentence(df))


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _cross_sentence(found: dict[str, pl.DataFrame]) -> str:
    """One sentence: the mean drop in survival rate per condition, and r across models."""
    drops = found["relative_drop"].filter((pl.col("metric") == "survival_rate") & pl.col("mean").is_not_null())
    parts = [f"{condition_label(r['condition'])} {_pct(r['mean'])} over {r['n_models']} model(s)"
             for r in drops.iter_rows(named=True)]
    rs = [f"{r['r']:.2f} per {'model x condition cell' if r['unit'] == 'cells' else 'simulation'}"
          for r in found["leader_rate_vs_survival"].iter_rows(named=True) if r["r"] is not None]
    head = ("Mean relative drop in survival rate from CPR: " + "; ".join(parts)) if parts else \
        "No condition has a relative drop in survival rate from CPR in this data"
    return head + (f"; leader extraction rate vs survival across models: r = {', '.join(rs)}." if rs else ".")


@finding_function("sovsim")
def cross_model_results(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, force: bool = False,
                        models: list[str] | None = None, mean_over: list[str] | None = None,
                        by: Grouping = "condition", seed: int = 0) -> Finding:
    """What the paper reports across models, beside Table 1: how much do asymmetric
    conditions cost relative to the symmetric commons, and who over-uses?

    - The mean over models of the relative drop from CPR, of the survival rate and of
      the total gain (per model: (CPR mean - condition mean) / CPR mean, against the CPR
      runs of the same settings; models whose CPR mean is 0 have no drop and are
      listed, not counted).
    - Over-usage split by role: symmetric agents (every agent of CPR), subordinates and
      the leader of the asymmetric conditions (share of a role's agent-rounds above the
      sustainable share P/(g n)).
    - Pearson r and R^2 between leader extraction rate and survival pooled over models,
      for two stated units: model x condition cells (mean leader rate vs survival rate)
      and simulations (leader rate vs survival time).

    Means across models are over the models under study: scripted baselines
    (``scripted/...``) are rows of their own in Table 1, never members of the mean,
    unless ``mean_over`` names them. Models may differ only in their own settings
    (``llm.*``); anything else that differs is refused rather than pooled. Intervals: t
    over the models' drops and over-usage shares (each model counts once; with one
    model, a percentile bootstrap over its simulations), Fisher z for r, a bootstrap
    over models from 5 models on. ``scarce-lab table sovsim PATH --format json`` gives
    the same numbers.

    The finding's ``frame`` is the relative drop (saved as ``sovsim_cross_model_drop``);
    ``extra`` the over-usage by role across models (``sovsim_overuse_by_role``) and per
    model (``sovsim_overuse_by_role_per_model``) and the correlation across models
    (``sovsim_leader_rate_across_models``); the text shows all three with units.

    Args:
        mean_over: the models of the cross-model means (default: every model of the
            data except ``scripted/`` baselines).
        by, seed: as :func:`table`.

    Raises:
        PoolingError: runs of one condition differ in settings across models (unless
            ``force``).
        ValueError: a model of ``mean_over`` or ``models`` is not in the data.
    """
    _, _, per_sim, cv = _study(ds, preset, strict, force, models)
    found = cross_frames(per_sim, seed=seed, by=by, force=force, models=mean_over)
    conv = cv | {"intervals": "t over the models (each model counts once), Fisher z for r; 95%",
                 "bootstrap_seed": seed, "cross_models": mean_over or "all but scripted/ baselines"}
    return Finding("sovsim_cross_model_drop", frame=found["relative_drop"], text=format_cross(found),
                   reading=_cross_sentence(found), convention=conv,
                   extra={"sovsim_overuse_by_role": found["overuse_by_role"],
                          "sovsim_overuse_by_role_per_model": found["overuse_by_role_per_model"],
                          "sovsim_leader_rate_across_models": found["leader_rate_vs_survival"]})


#: The SovSim paper's headline numbers across its eleven models, as its published-numbers
#: file states them (``sovsim/paper_numbers.toml``, the one source of them).
PAPER_CLAIMS = {i: next(n.text for n in numbers_of("sovsim") if n.id == i)
                for i in ("survival_drop_kcpr_m", "leader_rate_r")}


@finding_function("sovsim")
def paper_claims(ds: Any, *, preset: Preset = "sovsim", strict: bool = False, force: bool = False,
                 mean_over: list[str] | None = None, seed: int = 0) -> Finding:
    """The SovSim paper's headline claims recomputed on ``ds`` (meant for the authors'
    released trajectories, ``agent_rationales/`` of github.com/abhilekhborah/sovsim):
    the drop in survival rate from CPR to KCPR-M (the paper: "up to an 87.3%
    degradation" over its eleven models) and the correlation between leader extraction
    rate and survival (the paper: r = -0.86, R^2 = 0.75 across its eleven models).

    On the release (six models, five simulations per condition) the mean drop in
    survival rate from CPR to KCPR-M is 86.7%: the drop reproduces. The correlation does
    not: the release holds six of the eleven models, and neither unit the paper could
    mean gives it (a check on the release found r = -0.58 per model x condition cell and
    -0.75 per simulation). Both units are computed, each named; neither is presented as
    the paper's number.

    The finding's ``frame``: one row per claim (``claim, paper, this_data, models``);
    its text adds Table 1 and the cross-model results of ``ds`` (:func:`table`,
    :func:`cross_model_results`).

    Raises:
        as :func:`cross_model_results`.
    """
    _, conv, per_sim, cv = _study(ds, preset, strict, force, None)
    summary = summarize(per_sim, conv=conv, force=force, seed=seed)
    found = cross_frames(per_sim, seed=seed, force=force, models=mean_over)
    km = found["relative_drop"].filter((pl.col("metric") == "survival_rate") & (pl.col("condition") == "kcpr_m"))
    rows = [{"claim": "mean drop in survival rate, CPR -> KCPR-M", "paper": PAPER_CLAIMS["survival_drop_kcpr_m"],
             "this_data": (_pct(km["mean"][0]) + (f" [{_pct(km['ci_low'][0])}, {_pct(km['ci_high'][0])}]"
                                                  if km["ci_low"][0] is not None else "")) if km.height else "n/a",
             "models": int(km["n_models"][0]) if km.height else 0}]
    for r in found["leader_rate_vs_survival"].iter_rows(named=True):
        unit = "model x condition cells" if r["unit"] == "cells" else "simulations"
        rows.append({"claim": f"leader extraction rate vs survival, r (R^2), unit: {unit}",
                     "paper": PAPER_CLAIMS["leader_rate_r"],
                     "this_data": "undefined" if r["r"] is None else f"r = {r['r']:.2f}, R^2 = {r['r2']:.2f}",
                     "models": r["n_models"]})
    frame = pl.DataFrame(rows, schema={"claim": pl.String, "paper": pl.String, "this_data": pl.String,
                                       "models": pl.Int64}, orient="row")
    drop = rows[0]["this_data"]
    reading = (f"Mean drop in survival rate from CPR to KCPR-M: {drop} over {rows[0]['models']} model(s) "
               f"(the paper: {PAPER_CLAIMS['survival_drop_kcpr_m']}); leader extraction rate vs survival: "
               + "; ".join(f"{r['this_data']} ({r['claim'].rsplit('unit: ', 1)[1]})" for r in rows[1:])
               + " (the paper: r = -0.86 over 11 models).")
    return Finding("sovsim_paper_claims", frame=frame, reading=reading,
                   text=f"{markdown_table(frame)}\n\n{format_table(summary)}\n{format_cross(found)}",
                   convention=cv | {"intervals": TABLE1_INTERVALS, "bootstrap_seed": seed})
