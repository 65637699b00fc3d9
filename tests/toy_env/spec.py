"""The counter game as one ``EnvironmentSpec`` (registered by the tests, not on import)."""

from __future__ import annotations

import html
import json
import random
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field

from scarce_lab.analysis.findings import Finding
from scarce_lab.config.base import ExperimentConfig
from scarce_lab.data.events import Payload, Visibility
from scarce_lab.data.schema import RunManifest, RunStatus
from scarce_lab.registry import EnvironmentSpec, PublishedLayout
from scarce_lab.runtime import open_run
from scarce_lab.testing import Observation, Trace

from .world import AGENTS, TARGETS, CounterGame, scripted_move


class ToyConfig(ExperimentConfig):
    """Settings of one counter game."""

    ENVIRONMENT: ClassVar[str] = "toy"
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ("rounds", "model")
    LABEL_FIELD: ClassVar[str | None] = "model"

    rounds: int = Field(4, ge=1, le=50, description="rounds per game")
    seed: int = Field(0, ge=0, description="the run's seed")
    model: str = Field("scripted/counter", description="the policy (scripted only)")

    def scripted_names(self, field: str) -> tuple[str, ...]:
        return ("counter",)

    @property
    def run_id(self) -> str:
        return f"toy-r{self.rounds}-s{self.seed}"


class Move(Payload):
    """One agent's increment in one round (private to the agent, with its target)."""

    kind: Literal["move"] = "move"
    default_visibility: ClassVar[Visibility] = Visibility.private
    increment: int
    counter_after: int
    target: int


def run(config: ToyConfig, out: Path, *, resume: bool = False) -> list[Path]:
    """Play one game into ``out/<run_id>`` (resumable from its last committed round)."""
    manifest = RunManifest(run_id=config.run_id, environment="toy", condition=config.condition_label(),
                           condition_settings=config.condition_settings(), config=config.model_dump(mode="json"),
                           models=dict.fromkeys(AGENTS, config.model), seed=config.seed, package_version="test")
    handle = open_run(Path(out) / config.run_id, manifest, resume=resume)
    if handle.skipped:
        return [handle.run_dir]
    rec = handle.recorder
    game, rng = handle.state if handle.state is not None else (CounterGame(config.rounds), random.Random(config.seed))
    try:
        while not game.over:
            moves = {a: scripted_move(game.observe(a), rng) for a in AGENTS}
            r, _, counter = game.act(moves)
            for a in AGENTS:
                rec.emit(Move(increment=moves[a], counter_after=counter, target=TARGETS[a]), round=r, phase="move",
                         agent=a)
            rec.commit_round(r, state=(game, rng))
        rec.finish(RunStatus.complete)
    except BaseException as exc:
        rec.finish(RunStatus.failed, error=f"{type(exc).__name__}: {exc}")
        raise
    return [handle.run_dir]


def moves_table(ds: Any) -> pl.DataFrame:
    """One row per agent and round: run, condition, round, agent, increment, counter."""
    moves = ds.payloads("move", environment="toy").collect()
    runs = ds.runs.collect().select("run_id", "condition")
    return (moves.join(runs, on="run_id").select("run_id", "condition", "round", "agent", "increment", "counter_after")
            .sort("run_id", "round", "agent"))


class ToyTables:
    """``ds.toy``: the moves table of our runs, or of a published ``counts.csv``."""

    def __init__(self, ds: Any) -> None:
        self.dataset = ds

    @cached_property
    def moves(self) -> pl.DataFrame:
        tables = self.dataset.published_tables
        return tables["moves"] if "moves" in tables else moves_table(self.dataset)


def detect_counts(path: Path) -> list[Path]:
    """The published layout ``toy_counts``: ``counts.csv`` files (one table of moves each)."""
    if path.is_file():
        return [path] if path.name == "counts.csv" else []
    return sorted(path.rglob("counts.csv"))


def read_counts(path: Path, *, force: bool = False) -> dict[str, pl.DataFrame]:
    return {"moves": pl.concat([pl.read_csv(p) for p in detect_counts(path)])}


def paper_table(data: Any, *, by: str = "condition") -> Finding:
    """Final counter per ``by`` group: runs and mean final counter, as a finding."""
    final = data.toy.moves.group_by(*dict.fromkeys(["run_id", by])).agg(pl.col("counter_after").max().alias("final"))
    frame = final.group_by(by).agg(pl.len().alias("runs"), pl.col("final").mean().alias("final_mean")).sort(by)
    return Finding("toy_final_counter", frame=frame, convention={"unit": "run", "intervals": "none"})


def harness(seed: int) -> Trace:
    """The conformance play: every observation, with the other agent's target as canary."""
    game, rng, trace = CounterGame(5), random.Random(seed), Trace()
    while not game.over:
        moves = {}
        for a in AGENTS:
            obs = game.observe(a)
            text = json.dumps(obs)
            leaks = tuple(f"{o}'s target" for o in AGENTS if o != a and str(TARGETS[o]) in text)
            trace.observations.append(Observation(a, text, leaks, own=str(TARGETS[a]) in text))
            moves[a] = scripted_move(obs, rng)
        trace.outcomes.append(list(game.act(moves)))
    return trace


def render(events: list[dict], max_chars: int) -> str:
    """One line per round: each agent's increment and the counter after it."""
    rows = {}
    for e in events:
        if e["kind"] == "move":
            rows.setdefault(e["round"], []).append(f"{e['agent']} +{e['payload']['increment']}")
            rows[e["round"]].append(f"-> {e['payload']['counter_after']}")
    return "".join(f'<div class="toy-round" data-round="{r}">Round {r}: {html.escape(" ".join(v))}</div>'
                   for r, v in sorted(rows.items()))


SPEC = EnvironmentSpec(
    name="toy",
    title="Counter game (test toy)",
    config=ToyConfig,
    run=run,
    payloads=(Move,),
    round_meaning="game round, 1-based",
    final_counts=lambda config: {"move": 2 * config["rounds"]} if isinstance(config.get("rounds"), int) else {},
    tables={"moves": moves_table},
    paper_table=paper_table,
    table_options={"by": ("condition", "run_id")},
    harness=harness,
    render=render,
    layouts=(PublishedLayout("toy_counts", "counts.csv", detect_counts, read_counts),),
    view=ToyTables,
)
