"""Economy of Minds findings: the public face ``sl.economy``. Each takes a dataset
(``ds = sl.load(path)``; its tables are the view ``ds.economy.episodes``,
``.population``, ``.wins``, ...) and returns a
:class:`~scarce_lab.analysis.findings.Finding` (numbers, the paper's layout, chart,
one-sentence reading, convention; ``.save(out)``; ``.method`` says how it is computed)::

    ds = sl.economy.load("data/economy/blocksworld")
    sl.economy.table(ds).save(OUT)              # the ablation table (the paper table)
    sl.economy.learning_curve(ds, window=10).save(OUT)

The metrics and charts behind them stay in :mod:`.metrics` (solve rates, population,
bids, specialisation), :mod:`.compare` (economies side by side) and :mod:`.tenure` (a
newcomer against the incumbents); their one-sentence readings in :mod:`.readings`.

Common to every finding: runs (seeds) are the independent unit (intervals are 95%
intervals over per-run values: the bounded interval for rates and indices in [0, 1],
Student-t for the others; episodes inside a run are never treated as
independent), and every group is one (task, condition): runs whose settings or model
differ are refused (:class:`~scarce_lab.analysis.pooling.PoolingError`), never pooled.
Each finding names the settings every run shares that depart from the paper's defaults
(:func:`scarce_lab.analysis.labels.departures`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import polars as pl

from scarce_lab.analysis.figures import markdown_table
from scarce_lab.analysis.findings import Finding, finding, finding_function

from . import compare, metrics, readings
from . import tenure as _tenure

#: What every saved table of this face was computed under.
_UNIT = {"unit": "run (seed); conditions never pooled"}
_T_SEEDS = "95% t-interval over seeds"
_RATE_SEEDS = "95% bounded interval over seeds (rates in [0, 1]: hull of the t and the score interval)"


def _economies(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` without the baselines' runs (base condition ``baseline-...``: no economy,
    nothing to follow over training)."""
    return df.filter(~pl.col("base_condition").str.starts_with("baseline-"))


def _complete_episodes(ds: Any) -> pl.DataFrame:
    """``ds.economy.episodes`` of the runs that completed (the rule: :func:`table`).

    Raises:
        ValueError: no Economy of Minds episode, or no complete run, in ``ds``.
    """
    eps = ds.economy.episodes
    if eps.is_empty():
        raise ValueError("no Economy of Minds episode in this dataset")
    runs = ds.runs.filter(pl.col("environment") == "economy").select("run_id", "status", "run_dir").collect()
    unfinished = runs.filter(pl.col("status") != "complete")
    if unfinished.height:
        warnings.warn(f"left out {unfinished.height} unfinished run(s): " + ", ".join(
            f"{r['run_dir']} ({r['status']})" for r in unfinished.iter_rows(named=True)), stacklevel=3)
        eps = eps.filter(~pl.col("run_id").is_in(unfinished["run_id"].to_list()))
        if eps.is_empty():
            raise ValueError("no complete Economy of Minds run in this dataset")
    return eps


@finding_function("economy")
def table(ds: Any) -> Finding:
    """The ablation table: does the economy learn, and which of its parts does it need?

    The economy (a Hayek machine; Qi et al. 2026, *Economy of Minds*; Baum & Durdanovic
    2000, *Hayek*; its rules and their sources: :mod:`scarce_lab.environments.economy.world.core`):
    agents bid for each step, pay the previous actor, reproduce when rich (exploitation)
    and are replaced when bankrupt, with newcomers joining (exploration). Ablations:
    ``no-auction`` (a random eligible agent acts), ``no-exploration`` (no replacement,
    no newcomers), ``no-exploitation`` (no reproduction); baselines: ``full`` (one
    agent with every capability: a ceiling) and ``round-robin`` (the founders in a fixed
    order, no economy).

    Per task and condition: the solve rate over the first fifth and the last fifth of
    training episodes and in frozen evaluation (the population fixed: no reproduction,
    removal or newcomer), per run first, then the mean over runs with a 95% bounded
    interval (:func:`~scarce_lab.analysis.stats.bounded_mean_ci`; none from one run) (:func:`.metrics.ablation_table`).
    Runs that did not complete are left out, with a warning naming them (their fifths
    are not comparable). The reading gives the full economy's rates against each other
    condition's frozen-evaluation rate and, for runs driven by a model, how many model
    calls fell back (no usable reply). ``sl.table(ds)`` gives the same finding.

    Raises:
        ValueError: no Economy of Minds episode, or no complete run, in ``ds``.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    eps = _complete_episodes(ds)
    t = metrics.ablation_table(eps)
    reading = readings.ablation_sentence(t)
    calls = ds.llm_calls.filter(pl.col("run_id").is_in(eps["run_id"].unique().to_list())).collect()
    if calls.height:
        reading = (f"{reading[:-1]}; {calls.height} model calls, {int(calls['fallback_used'].sum())} fell back "
                   "(no usable reply).")
    layout = metrics.format_table(t)
    text = markdown_table(layout, float_digits=2) + "\n\n" + metrics.conditions_key(t["condition"].to_list())
    return Finding("economy_ablation", frame=t, layout=layout, text=text,
                           chart=metrics.ablation_chart(t), reading=reading,
                           convention=_UNIT | {"intervals": metrics.CI_METHOD,
                                               "fifths": "first and last fifth of training episodes"})


@finding_function("economy")
def learning_curve(ds: Any, *, window: int = 10) -> Finding:
    """The learning curve: does the training solve rate rise, and in which condition?

    Training episodes in windows of ``window`` (window ``w`` holds episodes ``w .. w +
    window - 1``): the solve rate per run and window, then per (task, condition,
    window) the mean over runs and a 95% bounded band (rates in [0, 1])
    (:func:`.metrics.solve_curve`). One panel per condition, so bands never overlap.
    Baselines are left out (no economy to follow over training). The frame (one
    row per window: ``solve_rate``, ``solve_rate_lo``/``_hi``, ``n_runs``) is saved, not
    shown; the reading gives each condition's first and last window.

    Raises:
        ValueError: ``ds`` holds no Economy of Minds run.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    curve = metrics.solve_curve(_economies(ds.economy.episodes), window=window)
    tasks = sorted(set(curve["task"].to_list()))
    what = metrics.TASK_TITLES.get(tasks[0], tasks[0]) + " solve rate" if len(tasks) == 1 else "Solve rate"
    return Finding("economy_learning_curves", frame=curve, show_frame=False,
                           chart=metrics.learning_curve_chart(curve, title=f"{what} per {window} training episodes"),
                           reading=readings.learning_sentence(curve),
                           convention=_UNIT | {"intervals": _RATE_SEEDS,
                                               "window": f"{window} training episodes"})


@finding_function("economy")
def population_dynamics(ds: Any) -> Finding:
    """Population and wealth inequality over training: how many agents live, and how
    unequal is their wealth?

    At each training snapshot of a run (one every ``snapshot_every`` episodes): the
    living agents and the Gini coefficient of their wealth (negative wealth counted as
    0; none when no agent holds any wealth: :func:`.metrics.wealth_gini`); then per
    (task, condition, snapshot) the mean over runs with a 95% Student-t interval
    (:func:`.metrics.population_dynamics`). The chart draws the means (no interval);
    above 1,000 snapshots per condition, means over windows of episodes (the caption
    says how many). Baselines are left out. The frame is saved, not shown; the reading
    gives each condition's size and Gini at the end of training.

    Raises:
        ValueError: ``ds`` holds no Economy of Minds run.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    dyn = metrics.population_dynamics(_economies(ds.economy.population))
    return Finding("economy_population_dynamics", frame=dyn, show_frame=False,
                           chart=metrics.population_chart(dyn), reading=readings.population_sentence(dyn),
                           convention=_UNIT | {"intervals": _T_SEEDS,
                                               "snapshot": "one per training episode (snapshot_every)",
                                               "gini": "wealth, negative counted as 0"})


@finding_function("economy")
def bid_convergence(ds: Any, *, window: int = 20) -> Finding:
    """Bids against value: does what an agent pays for a step approach what the step
    brings back?

    Per agent and training episode in which it won steps: the bid paid, the value
    realised (the payment received from the next winner plus the task's reward) and the
    absolute gap ``|paid - realised| / wins``. Per run and window of ``window`` training
    episodes: bid paid per win and value realised per win (sums over wins) and the mean
    gap over agent-episodes; then per (task, condition, window) the mean over runs with
    a 95% Student-t interval (:func:`.metrics.bid_convergence`; none from one run). The
    chart draws the mean gap with its interval, one panel per condition (the bid and
    value per win are in the frame: their means can nearly coincide while the gap is
    large, since gaps of opposite sign cancel in them). Baselines are left out. The
    frame is saved, not shown; the reading gives the full economy's gap, with its
    interval, in its first and last window.

    Raises:
        ValueError: ``ds`` holds no Economy of Minds run.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    conv = metrics.bid_convergence(_economies(ds.economy.agent_episodes), window=window)
    return Finding("economy_bid_convergence", frame=conv, show_frame=False,
                           chart=metrics.bid_convergence_chart(conv), reading=readings.bid_sentence(conv),
                           convention=_UNIT | {"intervals": _T_SEEDS, "window": window})


@finding_function("economy")
def specialisation(ds: Any, *, run: str | None = None, top: int = 10) -> Finding:
    """Specialisation: does the economy divide the work, each agent winning one kind of
    step?

    The index, per run: for each agent, the share of its training wins that fall in its
    most frequent kind of step, averaged over agents weighted by their wins (1 = every
    agent wins one kind only); then per (task, condition) the mean over runs with a 95%
    bounded interval (an index in [0, 1]) (:func:`.metrics.specialisation_index`). The
    reading names the conditions with the highest and lowest index, with Welch tests
    over run means corrected for the number of comparisons
    (:func:`~scarce_lab.analysis.readings.describe_extremes`). The heat map shows one
    run, ``run`` (default: seed 0 of the full economy, else the first run): for each of
    its ``top`` agents by wins (labelled with their rule), the share of the agent's wins
    in each kind of step (rows sum to 1; a dark single cell is a specialist;
    :func:`.metrics.specialisation`).

    Raises:
        ValueError: ``ds`` holds no Economy of Minds run.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    from scarce_lab.analysis.readings import describe_extremes

    v = ds.economy
    values = metrics.specialisation_values(v.wins)
    if run is None:
        full0 = v.runs.filter((pl.col("condition") == metrics._full_economy(v.runs["condition"].to_list()))
                              & (pl.col("seed") == 0))["run_id"]
        run = full0[0] if full0.len() else v.runs.sort("run_id")["run_id"][0]
    chart = metrics.specialisation_heatmap(metrics.specialisation(v.wins, v.births, top=top), run)
    names = metrics.short_names(values["condition"].to_list())
    group = pl.col("condition").replace_strict(names, return_dtype=pl.String)
    if values["task"].n_unique() > 1:  # a label per task and condition
        group = pl.col("task") + ": " + group
    values = values.with_columns(group.alias("group"))
    reading = describe_extremes(values, ["group"], "the specialisation index") if values.height else ""
    res = finding("economy_specialisation", values, shown=["task", "group", "estimate", "runs"],
                           reading=reading, chart=chart,
                           convention=_UNIT | {"intervals": _RATE_SEEDS,
                                               "index": "win-weighted share of an agent's wins in its main step kind",
                                               "heatmap_run": run})
    if res.layout is None:  # nothing to show: the sentence that says so
        return res
    layout = res.layout.rename({"group": "condition"})
    return res.with_(layout=layout, text=markdown_table(layout, float_digits=2) + "\n\n"
                     + metrics.conditions_key(values["condition"].to_list()))


@finding_function("economy")
def dynamics(ds: Any) -> Finding:
    """Economies side by side: does the reference implementation's economy (an
    ``eom-reference`` preset) live and learn like our default one?

    Per (task, economy, condition), the economy being the run's ``preset`` setting
    (``default`` without one): living agents at the last training snapshot and over
    training; births by origin (children, replacements, newcomers; founders left out)
    and removals, per 10 training episodes; the wealth Gini at the last training
    snapshot; the solve rates in training and in frozen evaluation. Per run first, then
    the mean over runs with a 95% Student-t interval clipped to the value's range (none
    from one run) (:func:`.compare.dynamics_table`). Runs that did not complete are
    left out, with a warning naming them. The reading gives each economy's full economy
    (condition ``none``) at the end of training. ``sl.table(ds, dynamics=True)`` gives
    the same finding.

    Where our rules depart from the public reference implementation (``hayekmas``), and
    why: ``data/economy/README.md``, "Comparison with the reference implementation".

    Raises:
        ValueError: no Economy of Minds episode, or no complete run, in ``ds``.
        PoolingError: a (task, economy, condition) group mixes settings or models.
    """
    v = ds.economy
    values = compare.dynamics_table(_complete_episodes(ds), v.population, v.births, v.deaths)
    return Finding("economy_dynamics", frame=values, layout=compare.format_dynamics(values),
                           reading=readings.dynamics_sentence(values),
                           convention={"unit": "run", "intervals": "95% t-interval over runs, clipped to the range; "
                                                                   "none from one run"})


@finding_function("economy")
def tenure(ds: Any) -> Finding:
    """Tenure: does a newcomer that joins a running economy fare as well as the founders
    it meets?

    The run's newcomer (the agent that joined at training episode k with its own seat;
    its offspring not counted) against the incumbents (the founders not removed before
    the join), over training after the join (snapshots of rounds ``k .. episodes-1``):
    mean wealth (credits) over the snapshots in which the agent is alive (incumbents: the
    mean over incumbents of each one's mean), steps won per training episode (from
    ``episode_agents``) and survival (never removed for bankruptcy). Per run first, then
    per task, condition and tenure over runs, never pooled across conditions: wealth and
    wins with a 95% Student-t interval; the newcomer's survival as a share of runs with
    a Clopper-Pearson interval; the incumbents' as the mean share alive with the bounded
    t/score hull (:func:`~scarce_lab.analysis.stats.bounded_mean_ci`) (:mod:`.tenure`).
    Extras saved beside the table: the per-run rows (``economy_tenure_per_run``) and the
    mean wealth per episode since the join (``economy_tenure_wealth``).

    Raises:
        ValueError: ``ds`` has no run with a newcomer, or a run with several.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    v = ds.economy
    if v.joins.is_empty():
        raise ValueError("sl.economy.tenure: no run in this dataset has a newcomer (newcomer.episode)")
    per_run = _tenure.tenure_per_run(v.joins, v.births, v.deaths, v.agent_wealth, v.agent_episodes)
    t = _tenure.tenure_table(per_run)
    return Finding("economy_tenure", frame=t, table_name="economy_tenure_table",
                           reading=readings.tenure_sentence(t),
                           extra={"economy_tenure_per_run": per_run,
                                  "economy_tenure_wealth": _tenure.tenure_wealth_curve(v.joins, v.births,
                                                                                       v.agent_wealth)},
                           convention={"intervals": _tenure.CI_METHOD,
                                       "newcomer": "the agent that joined (its offspring not counted)",
                                       "incumbents": "founders not removed before the join"})


def load(paths: str | Path | list[str | Path], *, force: bool = False) -> Any:
    """``sl.load(paths)`` checked to hold Economy of Minds runs
    (:func:`scarce_lab.datasets.load`: one path or a list, relative to the project root):
    the dataset every finding here takes. Raises as ``sl.load`` does (``ValueError``: no
    Economy run)."""
    from scarce_lab.datasets import load as load_any

    return load_any(paths, force=force, environment="economy")


__all__ = ["bid_convergence", "dynamics", "learning_curve", "load", "population_dynamics", "specialisation", "table",
           "tenure"]
