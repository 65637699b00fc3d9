"""The notebook face behind ``import scarce_lab as sl`` (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl


@dataclass(frozen=True)
class PublishedData:
    """A published trajectory layout read into our tidy table.

    Attributes:
        layout: ``sovsim_json`` (SovSim release) or ``govsim_log`` (GovSim runs).
        agent_rounds: one row per agent and round
            (:data:`scarce_lab.data.tables.sovsim.AGENT_ROUND_SCHEMA`).
    """

    layout: str
    agent_rounds: pl.DataFrame

    @property
    def environments(self) -> list[str]:
        """Published layouts are commons games: ``["sovsim"]``."""
        return ["sovsim"]


def load(path: str | Path) -> Any:
    """Load any supported trajectory data below ``path``.

    - our run folders or a Parquet export: a :class:`scarce_lab.data.loaders.Dataset`
      (typed frames: ``runs``, ``events``, ``payloads(kind)``, ``llm_calls``);
    - SovSim's released ``rationales.json`` tree or GovSim ``log_env.json`` runs: a
      :class:`PublishedData` holding the agent-round table.

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no supported file.
        ValueError: a folder mixes our runs with a published layout (load them separately).
        TrajectoryFileError: a corrupt file (its path and line are named).
    """
    from .data.loaders import EXPORT_MARKER, load_dataset
    from .data.tables.sovsim import detect_layouts, load_agent_rounds

    path = Path(path)
    if (path / EXPORT_MARKER).exists():
        return load_dataset(path)
    found = detect_layouts(path)
    published = [k for k in ("sovsim_json", "sovsim_run", "govsim_log") if found[k]]
    if found["runs"] and published:
        raise ValueError(f"{path} holds our runs and a published layout ({', '.join(published)}); load them separately")
    if found["runs"]:
        return load_dataset(path)
    if len(published) > 1:
        raise ValueError(f"{path} mixes published layouts {published}; load them separately")
    if published:
        return PublishedData(published[0], load_agent_rounds(path))
    raise FileNotFoundError(
        f"no trajectory data below {path}: expected run folders (manifest.json), a Parquet export, "
        "rationales.json or log_env.json files"
    )


def table(data: Any, environment: str | None = None, **options: Any) -> pl.DataFrame:
    """The paper table of a dataset (a path, a :class:`Dataset` or :class:`PublishedData`).

    - SovSim: Table 1 (every metric, mean and 95% CI per model x condition);
      ``options``: ``preset`` (``sovsim`` | ``govsim``), ``strict``, ``by``
      (``condition`` | ``base_condition``), ``force`` (see ``scarce-lab table sovsim``).
    - SCARCE: win rate, bids, durations, private-chat use, deadline misses, scores,
      with run-clustered CIs.
    - Economy: solve rate in the first and last fifth of training and in frozen
      evaluation, per task and condition.

    Raises:
        ValueError: ``environment`` omitted for a dataset of several environments, or
            an unknown environment.
    """
    if isinstance(data, str | Path):
        data = load(data)
    if isinstance(data, PublishedData):
        from .analysis.sovsim import sovsim_table

        return sovsim_table(data.agent_rounds, preset=options.get("preset", "sovsim"), strict=options.get("strict", False),
                            force=options.get("force", False), by=options.get("by", "condition"))
    envs = data.environments
    env = environment or (envs[0] if len(envs) == 1 else None)
    if env is None:
        raise ValueError(f"this dataset holds environments {envs}; pass environment=")
    if env == "sovsim":
        from .analysis.sovsim import sovsim_table
        from .data.tables.sovsim import from_dataset, label_conditions

        rounds = label_conditions(from_dataset(data), skip=("condition",))
        return sovsim_table(rounds, preset=options.get("preset", "sovsim"), strict=options.get("strict", False),
                            force=options.get("force", False), by=options.get("by", "condition"))
    if env == "scarce":
        from .analysis.scarce import summary
        from .data.tables.scarce import contentions_table, submissions_table

        return summary(contentions_table(data), submissions_table(data))
    if env == "economy":
        from .analysis.economy import ablation_table
        from .data.tables.economy import episodes

        return ablation_table(episodes(data))
    raise ValueError(f"unknown environment {env!r}")


def run(config: Any, out: str | Path = "runs", *, dry_run: bool = False, **options: Any) -> Any:
    """Run one configuration (a config object of :mod:`scarce_lab.config`) and return
    its run folders. ``options`` go to the environment's runner (``resume=True`` to
    continue an unfinished run, ``client=`` to share an LLM client).

    ``dry_run=True`` runs nothing and returns the plan instead
    (:class:`scarce_lab.runners.preview.Preview`: runs, model calls, prompt tokens of
    the first step, cost range per model; ``print(format_preview(plan))`` shows it).

    Example::

        import scarce_lab as sl
        from scarce_lab.config import SovSimConfig
        sl.run(SovSimConfig(condition="kcpr", model="scripted/greedy"), out="runs/demo")

    Raises:
        TypeError: ``config`` is not an environment config.
    """
    from .config import EconomyRunConfig, ScarceConfig, SovSimConfig

    out = Path(out)
    if dry_run:
        from .runners.preview import preview

        envs = {SovSimConfig: "sovsim", EconomyRunConfig: "economy", ScarceConfig: "scarce"}
        if type(config) not in envs:
            raise TypeError(f"sl.run needs a SovSimConfig, ScarceConfig or EconomyRunConfig, got "
                            f"{type(config).__name__}")
        return preview(envs[type(config)], [config])
    if isinstance(config, SovSimConfig):
        from .runners.sovsim import run_sweep

        res = run_sweep([config], out, progress=options.pop("progress", False), **options)
        return [out / r.run_id for r in res]
    if isinstance(config, EconomyRunConfig):
        from .runners.economy import run_economy

        return [run_economy(config, out, **options)]
    if isinstance(config, ScarceConfig):
        from .runners.scarce import run_scarce

        return [run_scarce(config, out, **options)]
    raise TypeError(f"sl.run needs a SovSimConfig, ScarceConfig or EconomyRunConfig, got {type(config).__name__}")


def view(run_dir: str | Path, **options: Any) -> Any:
    """One run as an interactive timeline in the notebook (see :mod:`scarce_lab.viewer`)."""
    from .viewer import view as _view

    return _view(run_dir, **options)


def export(data: Any, out: str | Path) -> Path:
    """Export a dataset (a path or a :class:`Dataset`) to Parquet; :func:`load` reads it back."""
    from .data.loaders import export_parquet, load_dataset

    if isinstance(data, str | Path):
        data = load_dataset(data)
    return export_parquet(data, out)
