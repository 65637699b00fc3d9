"""The notebook face behind ``import scarce_lab as sl`` (see the package docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run(config: Any, out: str | Path = "runs", *, dry_run: bool = False, human: Any = None, **options: Any) -> Any:
    """Run one configuration (a config object of :mod:`scarce_lab.config`) and return
    its run folders. ``options`` go to the environment's runner (``resume=True`` to
    continue an unfinished run, ``client=`` to share an LLM client). A relative ``out``
    is resolved by :func:`scarce_lab.datasets.resolve_path` (the project root).

    ``human``: the front end (a :class:`scarce_lab.llm.human.HumanDesk`, e.g.
    ``TerminalDesk()`` or the notebook widget) that asks the person of every
    ``human/<name>`` seat; a config with such a seat and no ``human`` is refused before
    anything is written (docs/running.md, "Human seats").

    Before anything is written, every model of the config is checked
    (:func:`scarce_lab.runners.preflight.check_configs`): a scripted policy the
    environment does not have, an unknown ``embedded/`` model or a provider key missing
    from the environment is refused. After the run, a run whose manifest does not say
    ``complete`` is raised as an error with the manifest's reason.

    ``dry_run=True`` runs nothing and returns the plan instead
    (:class:`scarce_lab.runners.preview.Preview`: runs, model calls, prompt tokens of
    the first step, cost range per model; ``print(format_preview(plan))`` shows it).

    Example::

        import scarce_lab as sl
        from scarce_lab.config import SovSimConfig
        sl.run(SovSimConfig(condition="kcpr", model="scripted/greedy"), out="runs/demo")

    The environment is the registered one whose config class ``config`` is
    (:func:`scarce_lab.registry.for_config`); its spec's ``run`` plays it.

    Raises:
        TypeError: ``config`` is not a registered environment's config.
        ModelUnavailableError: a model that cannot be used (field, model, reason named).
        RunFailedError: the run failed (``run_dir``, ``status`` and the manifest's
            ``reason`` are attributes); the failed run folder stays for ``resume=True``.
        FileExistsError, RunMismatchError: the folder holds an unfinished run (without
            ``resume``) or a run of other settings.
    """
    from . import registry as environments
    from .datasets import resolve_path
    from .runners.preflight import check_configs, check_finished

    spec = environments.for_config(config)  # TypeError: not a registered environment's config
    out = resolve_path(out)
    if dry_run:  # the plan only: nothing is checked against keys, nothing runs
        from .runners.preview import preview

        return preview(spec.name, [config])
    from contextlib import nullcontext

    from .llm.human import use_desk

    with use_desk(human) if human is not None else nullcontext():
        check_configs([config])
        dirs = spec.run(config, out, **options)
    check_finished(dirs)
    return dirs


def crossplay(config: Any, population: str | list[str], *, background: str | list[str] | None = None,
              focal_seats: int | str | list[str] = 1, part: str | None = None) -> Any:
    """Plan a cross-play grid (Melting Pot's focal/background protocol): every member
    of ``population`` in the focal seats against every ``background`` member (default:
    the population) in the others, over the base ``config`` (one config, or a list:
    seeds/simulations). Nothing runs.

    Returns a :class:`scarce_lab.runners.crossplay.CrossPlayPlan`: ``print(plan)`` shows
    the compositions and runs, ``print(plan.describe())`` adds the model calls per
    model, ``plan.configs`` are the runs::

        base = [sl.config.SovSimConfig(condition="kcpr", simulation=i) for i in range(3)]
        plan = sl.crossplay(base, ["scripted/greedy", "embedded/smollm2"], focal_seats="king")
        for cfg in plan.configs:
            sl.run(cfg, out="runs/crossplay")

    Args:
        focal_seats: a count (the first N seats in seat order) or seat keys (agent ids
            or roles, e.g. ``"king"``, ``["a0", "a1"]``).
        part: the part of each seat the population plays (SCARCE: ``"negotiator"``).

    Raises:
        scarce_lab.runners.crossplay.CrossPlayError: a setting that cannot be planned
            (named), e.g. a seat this environment has not, a policy a seat cannot play.
        TypeError: ``config`` is not a registered environment's config.
    """
    from . import registry as environments
    from .runners.crossplay import PopulationSettings, plan_crossplay

    configs = list(config) if isinstance(config, list | tuple) else [config]
    spec = environments.for_config(configs[0])
    settings = PopulationSettings.parse(population, background, focal_seats, part)
    return plan_crossplay(configs, settings, environment=spec.name)


def view(run_dir: str | Path, **options: Any) -> Any:
    """One run as an interactive timeline in the notebook (see :mod:`scarce_lab.viewer`);
    a relative ``run_dir`` is resolved as :func:`scarce_lab.datasets.load` does."""
    from .datasets import resolve_path
    from .viewer import view as _view

    return _view(resolve_path(run_dir), **options)


def export(data: Any, out: str | Path) -> Path:
    """Export a dataset (a path or a :class:`Dataset`) to Parquet; ``sl.load`` reads it
    back. Relative paths are resolved as :func:`scarce_lab.datasets.load` does."""
    from .data.loaders import export_parquet, load_dataset
    from .datasets import resolve_path

    if isinstance(data, str | Path):
        data = load_dataset(resolve_path(data))
    return export_parquet(data, resolve_path(out))
