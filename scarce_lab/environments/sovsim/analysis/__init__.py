"""SovSim analysis: the public face (``sl.sovsim``) over the modules of this package.

- :mod:`.metrics`: per-simulation metrics and Table 1 (``summarize``, ``sovsim_table``);
- :mod:`.conventions`: metric presets (``sovsim``, ``govsim``) and the check that data
  fit them; :mod:`.pooling`: the never-pool check; :mod:`.drops`, :mod:`.dynamics`;
- :mod:`.cross`: results across models; :mod:`.charts`: charts and reading sentences;
- :mod:`.tenure`: metrics before/after a newcomer joins, incumbents vs newcomer.
- :mod:`.talk`: talk in the commons (promise-keeping, quota proposers by role,
  survival and equality by talk condition).
- :mod:`.saydo`: what agents said against what they did (the KCPR-M king's
  announcements, promises in talk, interviews against extractions).

A notebook needs only ``import scarce_lab as sl`` and the names exported here::

    rounds = sl.sovsim.agent_rounds(sl.load("data/sovsim"))
    t1 = sl.sovsim.table(rounds, preset="sovsim", strict=False)   # a Finding
    t1.save(OUT)                                                  # CSV/MD/TeX + convention
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import polars as pl

from scarce_lab.analysis.findings import Finding

from .charts import (
    CONDITION_LABELS,
    condition_label,
    correlation_sentence,
    correlation_table,
    leader_rate_chart,
    misreport_chart,
    misreport_sentence,
    pool_dynamics_chart,
    pool_sentence,
    survival_sentence,
    table1_display,
    trajectories_chart,
)
from .conventions import (
    PRESETS,
    Convention,
    PresetMismatchError,
    convention,
    convention_dict,
    resolve_convention,
)
from .cross import cross_model_results, format_cross, sovsim_report
from .crossplay import crossplay_runs, focal_payoff_matrix, invader_advantage
from .metrics import (
    AgentRoundError,
    EmptyTableError,
    UnfinishedRunsWarning,
    format_table,
    simulation_metrics,
    sovsim_table,
    summarize,
)
from .pooling import Grouping, PoolingError
from .saydo import interview_gaps, kcpr_m_misreports, promise_gaps
from .talk import (
    outcomes_by_talk,
    promise_keeping,
    promise_rows,
    quota_proposers,
    stated_extractions,
)
from .tenure import TENURE_INTERVALS, join_rounds, tenure_metrics

#: The interval methods of Table 1, as its saved convention states them.
TABLE1_INTERVALS = ("bounded metrics: hull of t and a maximum-variance score interval; other means: t, clipped to "
                    "the range; Clopper-Pearson (survival rate); percentile bootstrap (relative survival drop from "
                    "CPR, from 10 simulations per condition); 95%")


def agent_rounds(data: Any, *, models: list[str] | None = None) -> pl.DataFrame:
    """The agent-round table (one row per agent and round) of ``data``: a path (any
    layout, read by :func:`scarce_lab.environments.sovsim.tables.load_agent_rounds`), a
    :class:`~scarce_lab.data.loaders.Dataset` (our runs or a published layout: its view's
    ``ds.sovsim.agent_rounds``) or an agent-round frame (returned as is). ``models``:
    keep only these models.

    Raises:
        ValueError: a model of ``models`` is not in the data (a misspelt model would
            silently give a table of nothing; the message lists the models present), or
            a Dataset that holds no SovSim data (it names what it holds).
        TypeError: ``data`` is none of the above.
    """
    from scarce_lab.data.loaders import Dataset

    from ..tables import load_agent_rounds

    if isinstance(data, str | Path):
        df = load_agent_rounds(data)
    elif isinstance(data, pl.DataFrame):
        df = data
    elif isinstance(data, Dataset):
        df = data.sovsim.agent_rounds
    else:
        raise TypeError(f"sl.sovsim: data must be a path, a Dataset or an agent-round frame, got {type(data).__name__}")
    if models:
        present = sorted(df["model"].unique().to_list())
        absent = sorted(set(models) - set(present))
        if absent:
            raise ValueError(f"models: {absent} not in the data; its models: {present}")
        df = df.filter(pl.col("model").is_in(models))
    return df


def table(data: Any, *, preset: Literal["sovsim", "govsim"] = "sovsim", strict: bool = False, by: Grouping = "condition",
          force: bool = False, models: list[str] | None = None, seed: int = 0,
          convention_extra: dict[str, Any] | None = None, cross: bool = False) -> Finding:
    """SovSim Table 1 (every metric, mean and 95% CI per model x condition) as a
    :class:`~scarce_lab.analysis.findings.Finding`: ``frame`` the numbers (mean, interval,
    n and status per metric), ``layout`` the display table (one text column per
    metric), ``reading`` the
    survival sentence (pairwise Welch tests, Holm-corrected), ``convention`` the preset
    fitted to the data plus the interval methods.

    Args:
        data: as :func:`agent_rounds`.
        preset: metric conventions, ``"sovsim"`` or ``"govsim"`` (:data:`PRESETS`).
        strict: strict survival (no collapse at all) instead of reaching the last round.
        by: group by the full ``condition`` label or by ``base_condition``.
        force: compute even when the data do not fit the preset or a group mixes
            settings (with a warning naming them) instead of refusing.
        models: only these models (:func:`agent_rounds`).
        seed: seed of the bootstraps.
        convention_extra: more to record in the saved convention (e.g. the dataset).
        cross: add the cross-model results (:func:`cross_model_results`, same ``by``,
            ``force`` and ``seed``): each frame in ``extra`` as ``sovsim_cross_<name>``
            and their Markdown (:func:`format_cross`) after Table 1 (``sl.table`` and
            ``scarce-lab table sovsim`` ask for them).

    Raises:
        PresetMismatchError: the data do not fit the preset (unless ``force``).
        PoolingError: a group would pool different settings (unless ``force``).
        EmptyTableError: no finished simulation.
    """
    df = agent_rounds(data, models=models)
    conv = resolve_convention(df, preset, force=force, strict_survival=strict)
    per_sim = simulation_metrics(df, conv)
    summary = summarize(per_sim, conv=conv, by=by, force=force, seed=seed)
    cv = convention_dict(conv) | {
        "survival": "strict (no collapse at all)" if conv.strict_survival else "lenient (reached the last round)"}
    res = table1(summary, per_sim, cv | (convention_extra or {}))
    if not cross:
        return res
    found = cross_model_results(per_sim, seed=seed, by=by, force=force)
    return res.with_(text=f"{res.markdown()}\n\n{format_cross(found)}",
                     extra=res.extra | {f"sovsim_cross_{k}": v for k, v in found.items()})


def table1(summary: pl.DataFrame, per_sim: pl.DataFrame | None, convention: dict[str, Any]) -> Finding:
    """Table 1 of a computed ``summary`` (:func:`summarize`) as a
    :class:`~scarce_lab.analysis.findings.Finding` named ``sovsim_table1``: the values
    (``frame``, saved as ``sovsim_table1_values``), the display table (``layout``,
    :func:`table1_display`), the survival
    sentence over ``per_sim`` and ``convention`` plus :data:`TABLE1_INTERVALS`."""
    return Finding("sovsim_table1", frame=summary, layout=table1_display(summary),
                  reading=survival_sentence(summary, per_sim), convention=convention | {"intervals": TABLE1_INTERVALS},
                  text=format_table(summary))


__all__ = [
    "crossplay_runs", "focal_payoff_matrix", "invader_advantage",
    "CONDITION_LABELS", "PRESETS", "TABLE1_INTERVALS", "TENURE_INTERVALS", "join_rounds", "tenure_metrics", "AgentRoundError", "Convention", "EmptyTableError",
    "PoolingError", "PresetMismatchError", "Finding", "UnfinishedRunsWarning", "agent_rounds", "condition_label",
    "convention", "convention_dict", "correlation_sentence", "correlation_table", "cross_model_results",
    "format_cross", "format_table", "leader_rate_chart", "misreport_chart", "misreport_sentence",
    "outcomes_by_talk", "pool_dynamics_chart", "pool_sentence", "promise_keeping", "promise_rows", "quota_proposers",
    "stated_extractions", "resolve_convention", "simulation_metrics", "sovsim_report",
    "interview_gaps", "kcpr_m_misreports", "promise_gaps",
    "sovsim_table", "summarize", "survival_sentence", "table", "table1", "table1_display", "trajectories_chart",
]

