"""Tidy tables of Economy of Minds runs, derived from events (see
:mod:`scarce_lab.environments.economy.runner.play` for the event kinds and payloads).

All money columns are integer credits. ``round`` is the run-wide episode index
(training first, then frozen evaluation); ``episode`` is the index within its
``phase`` (``train`` | ``eval``).

The tables are the functions of :data:`TABLES` (each docstring says what a row is);
:class:`EconomyTables` (``ds.economy``) holds them all, each built once.
"""

from __future__ import annotations

import polars as pl

from ...data.loaders import Dataset
from ...data.tables import label_conditions, settings_json

_RUN_KEYS = ["run_id", "task", "condition", "base_condition", "settings", "ablation", "baseline", "model", "seed"]


def _p(ds: Dataset, kind: str) -> pl.DataFrame:
    df = ds.payloads(kind, "economy").collect()
    return df if "economy" in ds.environments else df.clear()


def runs(ds: Dataset) -> pl.DataFrame:
    """One row per economy run: ``task`` (blocksworld | arithmetic | jsonl), the
    condition columns of :mod:`scarce_lab.data.tables` (``base_condition`` is the
    ablation, or ``baseline-<name>``), ablation, baseline, model, seed, status."""
    rows = []
    for m in ds.manifests:
        if m.environment != "economy":
            continue
        cfg = m.config
        task = str(cfg.get("task", ""))
        ablation, baseline = cfg.get("ablation", "none"), cfg.get("baseline", "none")
        rows.append({
            "run_id": m.run_id, "task": "jsonl" if task.startswith("jsonl:") else task, "condition": m.condition,
            "base_condition": ablation if baseline == "none" else f"baseline-{baseline}",
            "settings": settings_json(m.condition_settings) if m.condition_settings else None,
            "ablation": ablation, "baseline": baseline,
            "model": cfg.get("model", ""), "seed": m.seed, "status": m.status.value,
        })
    schema = {k: pl.String for k in _RUN_KEYS} | {"seed": pl.Int64, "status": pl.String}
    df = pl.DataFrame(rows, schema=schema, orient="row")
    return label_conditions(df, skip=("ablation", "baseline"))


def _with_runs(ds: Dataset, df: pl.DataFrame) -> pl.DataFrame:
    return runs(ds).select(_RUN_KEYS).join(df, on="run_id", how="inner")


def episodes(ds: Dataset) -> pl.DataFrame:
    """One row per episode: run keys, phase, episode, round, solved, steps, reward,
    end, n_blocks (Blocks World; null otherwise)."""
    starts = _p(ds, "episode_start").select("run_id", "round", start_blocks=pl.col("task").struct.field("n_blocks"))
    ends = _p(ds, "episode_end").select(
        "run_id", "phase", "episode", "round", "solved", "steps", "reward", "end",
        end_blocks=pl.col("task").struct.field("n_blocks"),
    )
    df = (
        ends.join(starts, on=["run_id", "round"], how="left")
        .with_columns(n_blocks=pl.coalesce("start_blocks", "end_blocks").cast(pl.Int64))
        .drop("start_blocks", "end_blocks")
    )
    return _with_runs(ds, df).sort("run_id", "round")


def population(ds: Dataset) -> pl.DataFrame:
    """One row per snapshot: size, wealth (list of agent wealths), bids (list), bank,
    rent_sink, total (the ledger sum, always 0)."""
    df = _p(ds, "population").select(
        "run_id", "phase", "round",
        size=pl.col("agents").list.len().cast(pl.Int64),
        wealth=pl.col("agents").list.eval(pl.element().struct.field("wealth")),
        bids=pl.col("agents").list.eval(pl.element().struct.field("bid")),
        bank="bank", rent_sink="rent_sink", total="total",
    )
    return _with_runs(ds, df).sort("run_id", "round")


def _agent_rows(ds: Dataset, kind: str = "episode_agents") -> pl.DataFrame:
    """One row per entry of the ``agents`` list of each ``kind`` event, its fields as columns."""
    return (
        _p(ds, kind).select("run_id", "phase", "round", "agents")
        .explode("agents").drop_nulls("agents").unnest("agents")
    )


def agent_episodes(ds: Dataset) -> pl.DataFrame:
    """One row per (episode, agent that won a step): n_wins, paid, received, reward,
    realised (= received + reward), bid (the agent's own bid, from its birth)."""
    bids = _p(ds, "birth").select("run_id", "agent", "bid").unique(["run_id", "agent"], keep="first")
    df = (
        _agent_rows(ds)
        .with_columns(n_wins=pl.col("wins").list.eval(pl.element().struct.field("wins")).list.sum().cast(pl.Int64),
                      realised=pl.col("received") + pl.col("reward"))
        .join(bids, on=["run_id", "agent"], how="left")
        .select("run_id", "phase", "round", "agent", "n_wins", "paid", "received", "reward", "realised", "bid")
    )
    return _with_runs(ds, df)


def wins(ds: Dataset) -> pl.DataFrame:
    """One row per (episode, agent, step kind): wins (steps the agent won)."""
    df = (
        _agent_rows(ds).select("run_id", "phase", "round", "agent", "wins")
        .explode("wins").drop_nulls("wins").unnest("wins")
        .select("run_id", "phase", "round", "agent", "step_kind", "wins")
    )
    return _with_runs(ds, df)


def steps(ds: Dataset) -> pl.DataFrame:
    """One row per step (runs recorded with ``detail="steps"``): winner, price, number
    of bidders, step kind, reward, done, solved, action (a struct: src, dst for Blocks
    World; capability, text, answer for question-answer tasks)."""
    auctions = _p(ds, "auction").select("run_id", "round", "step", "price",
                                        n_bidders=pl.col("bids").list.len().cast(pl.Int64))
    df = (
        _p(ds, "step").select("run_id", "phase", "round", "step", "agent", "step_kind", "reward", "done", "solved",
                              "action")
        .join(auctions, on=["run_id", "round", "step"], how="left")
        .select("run_id", "phase", "round", "step", "agent", "step_kind", "price", "n_bidders", "reward", "done",
                "solved", "action")
    )
    return _with_runs(ds, df).sort("run_id", "round", "step")


def births(ds: Dataset) -> pl.DataFrame:
    """One row per birth: agent, origin (founder | child | newcomer | replacement),
    parent, bid, endowment, funder, genome (struct), genome_text (short description)."""
    df = _p(ds, "birth").select(
        "run_id", "round", "agent", "origin", "parent", "bid", "endowment", "funder", "genome",
        genome_text=pl.coalesce(
            pl.col("genome").struct.field("text"),
            pl.col("genome").struct.field("capability") + pl.lit(" on ")
            + pl.col("genome").struct.field("wake_on").list.join(","),
        ),
    )
    return _with_runs(ds, df)


def deaths(ds: Dataset) -> pl.DataFrame:
    """One row per removal: agent, cause (bankruptcy), wealth at removal, age (episodes)."""
    df = _p(ds, "death").select("run_id", "round", "agent", "cause", "wealth", "age")
    return _with_runs(ds, df)


def agent_wealth(ds: Dataset) -> pl.DataFrame:
    """One row per living agent and population snapshot: phase, round (the episode the
    snapshot closes), agent, wealth, bid (credits), novice."""
    df = _agent_rows(ds, "population").select("run_id", "phase", "round", "agent", "wealth", "bid", "novice")
    return _with_runs(ds, df).sort("run_id", "round", "agent")


def joins(ds: Dataset) -> pl.DataFrame:
    """One row per agent that joined mid-run (``agent_joined``): agent, episode (the
    training episode at whose start it joined), seat, episodes (its run's training
    episodes, from the manifest)."""
    train = pl.DataFrame([{"run_id": m.run_id, "episodes": m.config.get("episodes")} for m in ds.manifests
                          if m.environment == "economy"], schema={"run_id": pl.String, "episodes": pl.Int64})
    df = _p(ds, "agent_joined").select("run_id", "agent", "episode", "seat").join(train, on="run_id", how="left")
    return _with_runs(ds, df)


#: The tables of :class:`EconomyTables`.
TABLES = ("runs", "episodes", "population", "agent_episodes", "wins", "steps", "births", "deaths", "agent_wealth",
          "joins")


class EconomyTables:
    """The Economy of Minds view of a dataset (``ds.economy``,
    :class:`~scarce_lab.data.loaders.Dataset`): each function of :data:`TABLES` as an
    attribute (``ds.economy.episodes`` is :func:`episodes` of the dataset), computed
    when first read (its docstring says what a row is)."""

    def __init__(self, ds: Dataset) -> None:
        self.dataset = ds

    def __getattr__(self, name: str) -> pl.DataFrame:
        if name not in TABLES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        table = self.__dict__[name] = globals()[name](self.dataset)
        return table

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *TABLES]
