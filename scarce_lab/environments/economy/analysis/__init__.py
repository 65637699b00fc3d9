"""Economy of Minds analysis: the public face (``sl.economy``) over :mod:`.metrics`
(solve rates, ablation table, population, bids, specialisation; charts and sentences)
and :mod:`.compare` (population dynamics side by side).

A notebook needs only ``import scarce_lab as sl``::

    ds = sl.economy.load("data/economy/blocksworld")
    sl.economy.table(sl.economy.episodes(ds)).save(OUT)   # the ablation table as a Finding
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from scarce_lab.analysis.findings import Finding

from ..tables import (
    agent_episodes,
    agent_wealth,
    births,
    deaths,
    episodes,
    joins,
    population,
    runs,
    wins,
)
from .compare import dynamics_table, format_dynamics
from .metrics import (
    CI_METHOD,
    CONDITION_LABELS,
    ablation_chart,
    ablation_sentence,
    ablation_table,
    bid_convergence,
    bid_convergence_chart,
    condition_label,
    format_table,
    learning_curve_chart,
    learning_sentence,
    per_run_rates,
    population_chart,
    population_dynamics,
    population_sentence,
    solve_curve,
    specialisation,
    specialisation_heatmap,
    specialisation_index,
    wealth_gini,
)
from .metrics import _full_economy as full_economy
from .tenure import tenure_per_run, tenure_table, tenure_wealth_curve


def load(data: Any) -> Any:
    """The :class:`~scarce_lab.data.loaders.Dataset` of ``data`` (a path to our run
    folders or a Parquet export, or a loaded dataset), checked to hold Economy of Minds
    runs; its tables: :func:`episodes`, :func:`runs`, :func:`population`, :func:`wins`,
    :func:`births`, :func:`agent_episodes`.

    Raises:
        ValueError: the dataset holds no Economy of Minds run (the message names what it holds).
    """
    from scarce_lab.data.loaders import load_dataset

    ds = load_dataset(data) if isinstance(data, str | Path) else data
    if "economy" not in ds.environments:
        raise ValueError(f"sl.economy.load: no Economy of Minds run in this dataset (environments: {ds.environments})")
    return ds


def table(episodes: pl.DataFrame, *, convention_extra: dict[str, Any] | None = None) -> Finding:
    """The ablation table (solve rate in the first and last fifth of training and in
    frozen evaluation, mean over seeds with a 95% t-interval, per task and condition) as a
    :class:`~scarce_lab.analysis.findings.Finding`, with the ablation chart and sentence.

    Raises:
        PoolingError: a (task, condition) group mixes settings or models.
    """
    t = ablation_table(episodes)
    return Finding("economy_ablation", frame=t, layout=format_table(t),
                  chart=ablation_chart(t), reading=ablation_sentence(t),
                  convention={"intervals": CI_METHOD, "fifths": "first and last fifth of training episodes"}
                  | (convention_extra or {}))


def tenure(ds: Any) -> Finding:
    """The newcomer against the incumbent founders after it joined (wealth, wins per
    episode, survival; per task and condition over runs, never pooled across
    conditions: :mod:`.tenure`) as a :class:`~scarce_lab.analysis.findings.Finding` whose
    extras hold the per-run rows and the wealth curve after the join.

    Raises:
        ValueError: the dataset has no run with a newcomer.
        PoolingError: a (task, condition) group mixes settings or models.
    """
    from .tenure import CI_METHOD as TENURE_CI

    j = joins(ds)
    if j.is_empty():
        raise ValueError("sl.economy.tenure: no run in this dataset has a newcomer (newcomer.episode)")
    per_run = tenure_per_run(j, births(ds), deaths(ds), agent_wealth(ds), agent_episodes(ds))
    t = tenure_table(per_run)
    return Finding("economy_tenure", frame=t, table_name="economy_tenure_table",
                  extra={"economy_tenure_per_run": per_run,
                         "economy_tenure_wealth": tenure_wealth_curve(j, births(ds), agent_wealth(ds))},
                  convention={"intervals": TENURE_CI, "newcomer": "the agent that joined (its offspring not counted)",
                              "incumbents": "founders not removed before the join"})


__all__ = [
    "CI_METHOD", "agent_wealth", "deaths", "joins", "tenure", "tenure_per_run", "tenure_table", "tenure_wealth_curve", "CONDITION_LABELS", "Finding", "agent_episodes", "births", "episodes", "population", "runs", "wins", "ablation_chart", "ablation_sentence",
    "ablation_table", "bid_convergence", "bid_convergence_chart", "condition_label", "dynamics_table",
    "format_dynamics", "format_table", "full_economy", "learning_curve_chart", "learning_sentence", "load",
    "per_run_rates", "population_chart", "population_dynamics", "population_sentence", "solve_curve",
    "specialisation", "specialisation_heatmap", "specialisation_index", "table", "wealth_gini",
]

