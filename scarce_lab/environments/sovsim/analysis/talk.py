"""Talk in the commons as findings: promise-keeping (:func:`promise_keeping`), who
proposes quotas (:func:`quota_proposers`) and survival and equality by talk condition
(:func:`talk_outcomes`), from the ``talk`` events and agent-round table of a
:class:`~scarce_lab.data.loaders.Dataset`; the methods are in each function's docstring.

The talk condition of a run is its recorded ``talk`` setting (:func:`talk_setting`).
Groups are (model, base condition, talk).
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any, Literal

import polars as pl

from scarce_lab.analysis.findings import Finding, finding, finding_function
from scarce_lab.analysis.readings import describe_extremes
from scarce_lab.analysis.stats import bounded_mean_ci, cluster_mean_ci, mean_ci_cells, proportion_ci
from scarce_lab.undefined import or_none

from .conventions import SovSimDataWarning, differing_games, resolve_convention
from .metrics import agent_rounds, require_dataset, simulation_metrics
from .pooling import PoolingError, differing_settings

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
    return "none" if settings is None else str(settings_object(settings).get("talk", "none"))


def settings_object(settings: str) -> dict:
    """A run's condition settings (JSON text) as a dict.

    Raises:
        ValueError: ``settings`` is not JSON text of an object (names the value).
    """
    try:
        d = json.loads(settings)
    except json.JSONDecodeError:
        raise ValueError(f"settings is not JSON: {settings[:80]!r}") from None
    if not isinstance(d, dict):
        raise ValueError(f"settings is not a JSON object: {settings[:80]!r}")
    return d


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
    """The agent-round table of ``data`` with the run's ``talk`` setting."""
    df = agent_rounds(data)
    if "talk" in df.columns:
        return df
    return df.with_columns(pl.col("settings").map_elements(talk_setting, return_dtype=pl.String).alias("talk"))


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


def promise_rows(ds: Any) -> pl.DataFrame:
    """One row per agent-round of the Dataset ``ds`` with a stated extraction, its last
    statement of the round against the actual extraction: ``run_id, model,
    base_condition, talk, settings, round, agent, role, is_leader, kind, stated,
    extraction, kept (actual <= stated), excess (actual - stated)``."""
    ar = _agent_rounds(ds)
    st = stated_extractions(ds)
    last = st.group_by("run_id", "round", "agent").agg(pl.col("kind").last(), pl.col("stated").last())
    cols = ["run_id", "model", "base_condition", "talk", "settings", "round", "agent", "role", "is_leader",
            "extraction"]
    out = ar.select(cols).join(last, on=["run_id", "round", "agent"], how="inner")
    return out.with_columns(
        (pl.col("extraction") <= pl.col("stated")).alias("kept"),
        (pl.col("extraction") - pl.col("stated")).alias("excess"),
    ).sort("run_id", "round", "agent")


def _check_one_setting(g: pl.DataFrame, key: tuple) -> None:
    settings = g["settings"].unique().to_list()
    if len(settings) > 1:
        diff = differing_settings(settings)
        raise PoolingError(f"group {dict(zip(_GROUP, key, strict=True))} would pool runs whose settings differ: "
                           f"{diff}; compare them as separate conditions")


def _se(values: list[float]) -> float | None:
    """Standard error of the mean of ``values`` (sample sd / sqrt(n)); None below 2 values."""
    vals = [float(v) for v in values if v is not None]
    if len(vals) < 2:
        return None
    m = sum(vals) / len(vals)
    return (sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 / len(vals) ** 0.5


def _with_games(rows: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """``rows`` (with ``settings``) with the game settings that differ between them as
    columns (:func:`~.conventions.differing_games`), and those columns' names."""
    games = differing_games(rows)
    return pl.concat([rows, games], how="horizontal") if games.width else rows, games.columns


def _convention(what: str, intervals: str) -> dict[str, str]:
    return {"unit": "run (groups: model x base condition x talk, never pooled across settings)",
            "measure": what, "intervals": intervals}


@finding_function("sovsim")
def promise_keeping(ds: Any) -> Finding:
    """Do agents take no more than they said they would?

    Per agent-round with a stated extraction: its last statement of the round (a
    promise of its own extraction, or a quota it proposed, which binds its proposer too)
    against its actual extraction; **kept** when ``actual <= stated`` (taking less than
    promised is no breach). Stated extractions are the scripted policies' tags
    (``[promise extraction=N]``, ``[quota per_agent=N]``); a model's free-text promises
    carry no number and need the commons judge's labels, so they are not measured here.

    Per (model, base condition, talk): the share of kept agent-rounds, with (a) the
    bounded t/score hull over run means (runs the unit, ``lo``/``hi``;
    :func:`~scarce_lab.analysis.stats.cluster_mean_ci`) and (b) the Clopper-Pearson
    interval over agent-rounds (``cp_low``/``cp_high``; it treats a run's rounds as
    independent, so it is narrower); ``mean_excess``: units taken above the statement,
    mean over agent-rounds. Groups never pool runs whose condition settings differ;
    rows of different games show the game setting that differs (e.g. ``rounds``).

    The finding's ``frame``: ``model, base_condition, talk, [game settings], settings,
    runs, n (agent-rounds with a statement), kept, value (the rate), lo, hi, se,
    cp_low, cp_high, mean_excess, estimate``.

    Raises:
        PoolingError: a group holds runs with different condition settings.
    """
    rows = promise_rows(require_dataset(ds))
    out = []
    for key, g in rows.group_by(list(_GROUP), maintain_order=True):
        _check_one_setting(g, key)
        k, n = int(g["kept"].sum()), g.height
        kept = g.with_columns(pl.col("kept").cast(pl.Float64))
        rate, lo, hi = cluster_mean_ci(kept, cluster="run_id", value="kept", bounds=(0.0, 1.0))
        _, cp_lo, cp_hi = proportion_ci(k, n)
        per_run = kept.group_by("run_id").agg(pl.col("kept").mean())["kept"].to_list()
        out.append(dict(zip(_GROUP, key, strict=True)) | {
            "settings": g["settings"][0], "runs": g["run_id"].n_unique(), "n": n, "kept": k, "value": or_none(rate),
            "lo": or_none(lo), "hi": or_none(hi), "se": _se(per_run), "cp_low": or_none(cp_lo),
            "cp_high": or_none(cp_hi), "mean_excess": float(g["excess"].mean())})
    schema = {**{c: pl.String for c in _GROUP}, "settings": pl.String, "runs": pl.Int64, "n": pl.Int64,
              "kept": pl.Int64, **dict.fromkeys(("value", "lo", "hi", "se", "cp_low", "cp_high", "mean_excess"),
                                                pl.Float64)}
    values, games = _with_games(pl.DataFrame(out, schema=schema).sort(*_GROUP))
    keys = [*_GROUP, *games]
    # one interval shown, the 95% CI over runs (the unit); Clopper-Pearson over agent-rounds
    # stays in the frame (cp_low, cp_high): two brackets beside one estimate read as two CIs
    note = (" Brackets: 95% CI, bounded t/score hull over run means (runs the unit). The frame's cp_low/cp_high "
            "hold the Clopper-Pearson interval over agent-rounds, which treats a run's rounds as independent "
            "and so is narrower; it is not shown.")
    return finding("promise_keeping", values, shown=[*keys, "estimate", "n", "runs", "mean_excess"],
                   reading=describe_extremes(values, keys, "the promise-keeping rate") + note if values.height else "",
                   convention=_convention("promise kept: actual <= stated extraction (scripted tags)",
                                          "shown: 95% bounded t/score hull over run means; in the frame only: "
                                          "Clopper-Pearson over agent-rounds (cp_low, cp_high)"))


@finding_function("sovsim")
def quota_proposers(ds: Any, *, labels: pl.DataFrame | None = None) -> Finding:
    """Who proposes quotas, by role: per (model, base condition, talk, role) the share
    of speaking agent-rounds (an agent's messages in one round's discussion, the
    commons judge's unit) that propose a quota, with its Clopper-Pearson interval over
    agent-rounds.

    A quota proposal is a scripted ``[quota per_agent=N]`` tag in the text, or, with
    ``labels`` (the commons-judge panel's arbitrated labels, ``labels.parquet``: one row
    per unit with ``unit_id`` = ``"<run_id>:<round>:<agent>"`` and ``labels``, a list of
    category ids), a unit labelled ``quota_proposal``; agent-rounds the panel did not
    label are then left out. The ``source`` column says which.

    The finding's ``frame``: ``model, base_condition, talk, role, [game settings],
    settings, source, n (speaking agent-rounds), n_quota, runs, value (the share), lo,
    hi, estimate``.
    """
    t = _talk_frame(require_dataset(ds)).filter(pl.col("text") != "")
    spoke = t.group_by("run_id", "round", "agent").agg(
        pl.col("text").str.contains(TAGS["quota"].pattern).any().alias("quota"))
    ar = _agent_rounds(ds).select("run_id", "round", "agent", "model", "base_condition", "talk", "role", "settings")
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
            "settings": g["settings"][0], "source": source, "n": n, "n_quota": k, "runs": g["run_id"].n_unique(),
            "value": or_none(share), "lo": or_none(lo), "hi": or_none(hi)})
    schema = {**{c: pl.String for c in (*_GROUP, "role", "settings", "source")}, "n": pl.Int64,
              "n_quota": pl.Int64, "runs": pl.Int64, "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64}
    values, games = _with_games(pl.DataFrame(out, schema=schema).sort(*_GROUP, "role"))
    keys = [*_GROUP, "role", *games]
    return finding("quota_proposers", values, shown=[*keys, "estimate", "n_quota", "n", "runs", "source"],
                   reading=describe_extremes(values, keys, "the share of speaking agent-rounds that propose a quota")
                   if values.height else "",
                   convention=_convention(f"quota proposal ({source})", "Clopper-Pearson over agent-rounds"))


#: The outcomes of :func:`talk_outcomes`, in the layout's column order.
OUTCOMES = ("survival_time", "survival_rate", "equality")


@finding_function("sovsim")
def talk_outcomes(ds: Any, *, preset: Literal["sovsim", "govsim"] = "sovsim") -> Finding:
    """Does talk change how long the commons lasts and how equally it is shared?

    Per (model, base condition, talk): survival time (rounds played) and equality
    (1 - Gini of the agents' total payoffs), mean and 95% interval over simulations (the
    bounded t/score hull of :func:`~scarce_lab.analysis.stats.bounded_mean_ci` on ``[1,
    rounds]`` and ``[0, 1]``, as Table 1: the t interval undercovers there);
    the survival rate (the game reached its last round) with its Clopper-Pearson
    interval. ``talk=none`` is the paper's game (the ablation). Groups never pool runs
    whose condition settings differ, and each group is scored by its own game (the
    ``preset`` fitted to its runs: a 2-round game survives when it plays its 2 rounds);
    rows of different games show the game setting that differs (e.g. ``rounds``).

    The finding's ``frame``: one row per group and ``metric`` (``survival_time``,
    ``survival_rate``, ``equality``): ``value, lo, hi, se, n, runs, estimate``; its
    layout one column per metric.

    Raises:
        PoolingError: a group holds runs with different condition settings.
    """
    ar = _agent_rounds(require_dataset(ds))
    sims = []
    for _, g in ar.group_by("settings", maintain_order=True):  # each game by its own convention
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SovSimDataWarning)  # runs of one setting play one game
            conv = resolve_convention(g, preset, force=True)
        sims.append(simulation_metrics(g, conv).with_columns(game_rounds=pl.lit(float(conv.rounds))))
    per_sim = pl.concat(sims) if sims else simulation_metrics(ar)
    per_sim = per_sim.join(ar.select("run_id", "talk").unique(), on="run_id", how="left")
    out = []
    for key, g in per_sim.sort("run_id").group_by(list(_GROUP), maintain_order=True):
        _check_one_setting(g, key)
        group = dict(zip(_GROUP, key, strict=True)) | {"settings": g["settings"][0], "n": g.height, "runs": g.height}
        for m, bounds in (("survival_time", (1.0, g["game_rounds"].max())), ("equality", (0.0, 1.0))):
            vals = g[m].cast(pl.Float64).to_list()
            if bounds[1] is not None and bounds[0] < bounds[1] and any(v is not None for v in vals):
                # bounded and piled at a bound (survival at the last round): the t interval undercovers
                mean, lo, hi = (or_none(v) for v in bounded_mean_ci([v for v in vals if v is not None], *bounds))
            else:
                mean, lo, hi = mean_ci_cells(vals)
            out.append(group | {"metric": m, "value": mean, "lo": lo, "hi": hi,
                                "se": _se([v for v in vals if v is not None])})
        rate, lo, hi = proportion_ci(int(g["survived"].sum()), g.height)
        out.append(group | {"metric": "survival_rate", "value": or_none(rate), "lo": or_none(lo), "hi": or_none(hi),
                            "se": _se(g["survived"].cast(pl.Float64).to_list())})
    schema = {**{c: pl.String for c in _GROUP}, "settings": pl.String, "n": pl.Int64, "runs": pl.Int64,
              "metric": pl.String, **dict.fromkeys(("value", "lo", "hi", "se"), pl.Float64)}
    values, games = _with_games(pl.DataFrame(out, schema=schema).sort(*_GROUP))
    keys = [*_GROUP, *games]
    time = values.filter(pl.col("metric") == "survival_time")
    return finding("talk_outcomes", values, index=keys, columns="metric", column_order=OUTCOMES,
                   reading=_per_game(time, keys, games, "the survival time (rounds)") if time.height else "",
                   convention=_convention("survival time, survival rate, equality (1 - Gini of total payoffs)",
                                          "bounded t/score hull over simulations; Clopper-Pearson for the survival rate"))


def _per_game(values: pl.DataFrame, keys: list[str], games: list[str], what: str) -> str:
    """:func:`describe_extremes` within each game (one value of the differing game
    settings ``games``, e.g. ``rounds``): a 12-round game's survival is never set beside
    a 3-round one's in one sentence."""
    if not games:
        return describe_extremes(values, keys, what)
    out = []
    for game, part in values.sort(games).group_by(games, maintain_order=True):
        where = ", ".join(f"{g}={v}" for g, v in zip(games, game, strict=True))
        out.append(describe_extremes(part, keys, what, scope=f"In the games with {where}"))
    return (" ".join(out) + f" Games that differ in {', '.join(games)} are different games: each sentence compares "
            "groups of one game only.")
