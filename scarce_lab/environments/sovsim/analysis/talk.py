"""Talk in the commons: promise-keeping, who proposes quotas, and survival and equality
by talk condition (pure functions on a loaded SovSim dataset).

Inputs: a :class:`~scarce_lab.data.loaders.Dataset` of SovSim runs (its ``talk`` events
and agent-round table) or the frames themselves. The talk condition of a run is its
recorded ``talk`` setting (from the agent-round ``settings``; a run recorded before
talk existed had none: ``none``). Runs are the independent unit; groups are (model,
base condition, talk) and never pool runs whose condition settings differ
(:class:`~scarce_lab.environments.sovsim.analysis.pooling.PoolingError` names the settings).

Stated extractions come from two sources, kept apart in a ``source`` column:

- ``tag``: a scripted policy writes its commitment in the text,
  ``[promise extraction=N]`` (its own extraction) or ``[quota per_agent=N]`` (every
  agent's, its proposer's included); :func:`stated_extractions` parses them.
- ``judge``: commons-judge labels (``promise``, ``quota_proposal``; taxonomy
  ``judge/taxonomies/commons.yaml``) count messages by category; they carry no number,
  so promise-keeping (a number against a number) is measured on tags only.

Promise-keeping per agent-round: the agent's last stated extraction of the round
(promise or quota it proposed) against its actual extraction; **kept** when
``actual <= stated`` (taking less than promised is no breach). Rates: the share of kept
agent-rounds with (a) a t interval over run means (runs the unit,
:func:`~scarce_lab.analysis.stats.cluster_mean_ci`, ``ci_low``/``ci_high``) and (b) the
Clopper-Pearson interval over agent-rounds (:func:`~scarce_lab.analysis.stats.proportion_ci`,
``cp_low``/``cp_high``; it treats a run's rounds as independent, so it is narrower).
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from scarce_lab.analysis.stats import cluster_mean_ci, mean_ci_cells, proportion_ci

#: The tags scripted policies write (``scarce_lab.environments.sovsim.agents.scripted``: PROMISE_TAG,
#: QUOTA_TAG); one regular expression per kind. The number is 1 to 15 ASCII digits
#: (any pool's units fit; a longer one, or other scripts' digits, is no tag: it would
#: not fit the Int64 ``stated`` column and one agent's text must not end the analysis).
TAGS: dict[str, re.Pattern[str]] = {
    "promise": re.compile(r"\[promise extraction=([0-9]{1,15})\]"),
    "quota": re.compile(r"\[quota per_agent=([0-9]{1,15})\]"),
}
_GROUP = ("model", "base_condition", "talk")


def talk_setting(settings: str | None) -> str:
    """The ``talk`` setting recorded in a run's condition settings (JSON text); ``none``
    for a run recorded without it (before talk existed, its game had none).

    Raises:
        ValueError: ``settings`` is not JSON text of an object (names the value).
    """
    if settings is None:
        return "none"
    try:
        d = json.loads(settings)
    except json.JSONDecodeError:
        raise ValueError(f"settings is not JSON: {settings[:80]!r}") from None
    if not isinstance(d, dict):
        raise ValueError(f"settings is not a JSON object: {settings[:80]!r}")
    return str(d.get("talk", "none"))


def _with_talk(df: pl.DataFrame) -> pl.DataFrame:
    if "talk" in df.columns:
        return df
    return df.with_columns(pl.col("settings").map_elements(talk_setting, return_dtype=pl.String).alias("talk"))


def _talk_frame(data: Any) -> pl.DataFrame:
    if isinstance(data, pl.DataFrame):
        return data
    if hasattr(data, "payloads"):
        try:
            return data.payloads("talk", "sovsim").collect()
        except KeyError:  # a dataset of a version without talk events
            return pl.DataFrame(schema={"run_id": pl.String, "round": pl.Int64, "agent": pl.String,
                                        "turn": pl.Int64, "text": pl.String, "visibility": pl.String})
    raise TypeError(f"talk data must be a Dataset or a talk-event frame, got {type(data).__name__}")


def _agent_rounds(data: Any) -> pl.DataFrame:
    from . import agent_rounds

    return _with_talk(agent_rounds(data))


def stated_extractions(talk: Any) -> pl.DataFrame:
    """Every tagged commitment in the talk events: one row per tag found.

    Args:
        talk: a Dataset (its ``talk`` events) or a frame with ``run_id, round, agent,
            turn, text`` (the talk payloads).

    Returns:
        ``run_id, round, agent, turn, kind (promise | quota), stated`` (pool units),
        sorted by run, round, turn.
    """
    df = _talk_frame(talk)
    rows = []
    for r in df.select("run_id", "round", "agent", "turn", "text").iter_rows(named=True):
        for kind, pat in TAGS.items():
            for m in pat.finditer(r["text"] or ""):
                rows.append({**{k: r[k] for k in ("run_id", "round", "agent", "turn")},
                             "kind": kind, "stated": int(m.group(1))})
    schema = {"run_id": pl.String, "round": pl.Int64, "agent": pl.String, "turn": pl.Int64,
              "kind": pl.String, "stated": pl.Int64}
    return pl.DataFrame(rows, schema=schema).sort("run_id", "round", "turn")


def promise_rows(data: Any, talk: Any = None) -> pl.DataFrame:
    """One row per agent-round with a stated extraction: its last statement of the round
    against the actual extraction.

    Args:
        data: a Dataset (or an agent-round frame, then ``talk`` is required).
        talk: the talk events (default: ``data``'s).

    Returns:
        ``run_id, model, base_condition, talk, settings, round, agent, role, is_leader,
        kind, stated, extraction, kept (actual <= stated), excess (actual - stated)``.
    """
    ar = _agent_rounds(data)
    st = stated_extractions(talk if talk is not None else data)
    last = st.group_by("run_id", "round", "agent").agg(pl.col("kind").last(), pl.col("stated").last())
    cols = ["run_id", "model", "base_condition", "talk", "settings", "round", "agent", "role", "is_leader",
            "extraction"]
    out = ar.select(cols).join(last, on=["run_id", "round", "agent"], how="inner")
    return out.with_columns(
        (pl.col("extraction") <= pl.col("stated")).alias("kept"),
        (pl.col("extraction") - pl.col("stated")).alias("excess"),
    ).sort("run_id", "round", "agent")


def _check_one_setting(g: pl.DataFrame, key: tuple) -> None:
    from .pooling import PoolingError, differing_settings

    settings = g["settings"].unique().to_list()
    if len(settings) > 1:
        diff = differing_settings(settings)
        raise PoolingError(f"group {dict(zip(_GROUP, key, strict=True))} would pool runs whose settings differ: "
                           f"{diff}; compare them as separate conditions")


def promise_keeping(data: Any, talk: Any = None) -> pl.DataFrame:
    """Promise-keeping rate per (model, base condition, talk): see the module docstring.

    Returns:
        ``model, base_condition, talk, n_runs, n (agent-rounds with a statement), kept,
        rate, ci_low, ci_high`` (t over run means), ``cp_low, cp_high``
        (Clopper-Pearson over agent-rounds), ``mean_excess`` (units taken above the
        statement, mean over agent-rounds).

    Raises:
        PoolingError: a group holds runs with different condition settings.
    """
    rows = promise_rows(data, talk)
    out = []
    for key, g in rows.group_by(list(_GROUP), maintain_order=True):
        _check_one_setting(g, key)
        k, n = int(g["kept"].sum()), g.height
        rate, lo, hi = cluster_mean_ci(g.with_columns(pl.col("kept").cast(pl.Float64)), cluster="run_id",
                                       value="kept", bounds=(0.0, 1.0))
        _, cp_lo, cp_hi = proportion_ci(k, n)
        out.append(dict(zip(_GROUP, key, strict=True)) | {
            "n_runs": g["run_id"].n_unique(), "n": n, "kept": k, "rate": rate, "ci_low": lo, "ci_high": hi,
            "cp_low": cp_lo, "cp_high": cp_hi, "mean_excess": float(g["excess"].mean())})
    return pl.DataFrame(out, schema=_PK_SCHEMA).sort(*_GROUP)


_PK_SCHEMA = {"model": pl.String, "base_condition": pl.String, "talk": pl.String, "n_runs": pl.Int64,
              "n": pl.Int64, "kept": pl.Int64, "rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "cp_low": pl.Float64, "cp_high": pl.Float64, "mean_excess": pl.Float64}


def quota_proposers(data: Any, labels: pl.DataFrame | None = None) -> pl.DataFrame:
    """Who proposes quotas, by role: per (model, base condition, talk, role) the share of
    speaking agent-rounds (an agent's messages in one round's discussion, the commons
    judge's unit) that propose a quota.

    Args:
        data: a Dataset with talk events.
        labels: the commons-judge panel's arbitrated labels (``labels.parquet``: one row
            per unit with ``unit_id`` = ``"<run_id>:<round>:<agent>"`` and ``labels``, a
            list of category ids); an agent-round counts when it holds
            ``quota_proposal``. Agent-rounds the panel did not label are left out.
            Default: scripted ``[quota ...]`` tags in the text.

    Returns:
        ``model, base_condition, talk, role, source (tag | judge), n_speaking, n_quota,
        share, cp_low, cp_high`` (Clopper-Pearson over agent-rounds).
    """
    t = _talk_frame(data).filter(pl.col("text") != "")
    spoke = t.group_by("run_id", "round", "agent").agg(
        pl.col("text").str.contains(TAGS["quota"].pattern).any().alias("quota"))
    ar = _agent_rounds(data).select("run_id", "round", "agent", "model", "base_condition", "talk", "role")
    spoke = spoke.join(ar, on=["run_id", "round", "agent"], how="inner")
    source = "tag"
    out = []
    if labels is not None:
        source = "judge"
        lab = labels.select(
            pl.col("unit_id"), pl.col("labels").list.contains("quota_proposal").alias("judged"))
        spoke = spoke.with_columns(
            pl.format("{}:{}:{}", "run_id", "round", "agent").alias("unit_id")
        ).join(lab, on="unit_id", how="inner").drop("quota").rename({"judged": "quota"})
    for key, g in spoke.group_by([*_GROUP, "role"], maintain_order=True):
        k, n = int(g["quota"].sum()), g.height
        share, lo, hi = proportion_ci(k, n)
        out.append(dict(zip((*_GROUP, "role"), key, strict=True)) | {
            "source": source, "n_speaking": n, "n_quota": k, "share": share, "cp_low": lo, "cp_high": hi})
    schema = {**{c: pl.String for c in (*_GROUP, "role", "source")}, "n_speaking": pl.Int64, "n_quota": pl.Int64,
              "share": pl.Float64, "cp_low": pl.Float64, "cp_high": pl.Float64}
    return pl.DataFrame(out, schema=schema).sort(*_GROUP, "role")


def outcomes_by_talk(data: Any, *, preset: str = "sovsim") -> pl.DataFrame:
    """Survival and equality per (model, base condition, talk), mean and 95% t CI over
    simulations (:func:`~scarce_lab.analysis.stats.mean_ci_cells`); never pooled across
    condition settings.

    Returns:
        ``model, base_condition, talk, n_runs, survival_time, survival_time_low,
        survival_time_high, survival_rate, survival_rate_low, survival_rate_high``
        (Clopper-Pearson), ``equality, equality_low, equality_high`` (1 - Gini of the
        agents' total payoffs).

    Raises:
        PoolingError: a group holds runs with different condition settings.
    """
    from .conventions import resolve_convention
    from .metrics import simulation_metrics

    ar = _agent_rounds(data)
    per_sim = simulation_metrics(ar, resolve_convention(ar, preset, force=True))
    per_sim = per_sim.join(ar.select("run_id", "talk").unique(), on="run_id", how="left")
    out = []
    for key, g in per_sim.group_by(list(_GROUP), maintain_order=True):
        _check_one_setting(g, key)
        row = dict(zip(_GROUP, key, strict=True)) | {"n_runs": g.height}
        for m in ("survival_time", "equality"):
            row[m], row[f"{m}_low"], row[f"{m}_high"] = mean_ci_cells(g[m].cast(pl.Float64).to_list())
        row["survival_rate"], row["survival_rate_low"], row["survival_rate_high"] = proportion_ci(
            int(g["survived"].sum()), g.height)
        out.append(row)
    metrics = [f"{m}{e}" for m in ("survival_time", "equality", "survival_rate") for e in ("", "_low", "_high")]
    schema = {**{c: pl.String for c in _GROUP}, "n_runs": pl.Int64, **dict.fromkeys(metrics, pl.Float64)}
    return pl.DataFrame(out, schema=schema).sort(*_GROUP)
