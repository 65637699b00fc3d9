"""The notebook face behind ``import scarce_lab as sl`` (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .data.loaders import Dataset


def load(paths: str | Path | Sequence[str | Path], *, force: bool = False) -> Dataset:
    """Load any supported trajectory data below ``paths`` (one path, or a list of them).

    A relative path is resolved by the one rule of notebook parameters
    (:func:`scarce_lab.reporting.resolve_path`): from the project root (the nearest
    folder at or above the working directory with ``pyproject.toml`` and
    ``scarce_lab/``), else from the working directory; so ``sl.load("data/sovsim")``
    reads the same folder from ``notebooks/`` as from the repository root.

    One type for every layout, a :class:`scarce_lab.data.loaders.Dataset`:

    - our run folders or a Parquet export: typed frames (``runs``, ``events``,
      ``payloads(kind)``, ``llm_calls``); ``layout`` ``runs`` or ``parquet``;
    - a published layout that a registered environment reads
      (:attr:`scarce_lab.registry.EnvironmentSpec.layouts`, e.g. SovSim's released
      ``rationales.json`` tree or GovSim ``log_env.json`` runs): the layout's tables in
      ``published_tables``, ``layout`` naming it, ``environments`` its environment.

    ``ds.<environment>`` is that environment's typed view (``ds.sovsim.agent_rounds``).

    ``force``: read a published layout despite a failed check of its reader (e.g.
    GovSim runs without their configuration, read as condition ``unknown``), with a
    warning that says so (:attr:`scarce_lab.registry.PublishedLayout.read`).

    A list of paths (a notebook's ``DATASETS``) is one dataset of our runs
    (:func:`scarce_lab.data.loaders.combine`): a run reached from two paths counts
    once; two run directories holding one run id keep the complete one (a warning
    names the other), as in one folder.

    Raises:
        FileNotFoundError: a path is empty (``""`` would read every run below the
            project root), does not exist or holds no supported file (the message lists
            what was looked for); an empty list.
        ValueError: a folder mixes our runs with a published layout, or two published
            layouts (load them separately); a published layout in a list of paths.
        TrajectoryFileError: a corrupt file (its path and line are named).
    """
    from .data.loaders import combine

    if isinstance(paths, str | Path):
        return _load_one(paths, force=force)
    if not paths:
        raise FileNotFoundError("sl.load: an empty list of paths is no dataset")
    return combine([_load_one(p, force=force) for p in paths])


def _load_one(path: str | Path, *, force: bool = False) -> Dataset:
    """One path of :func:`load`: an export, our run folders, or one published layout
    (asked of every registered spec's ``layouts``)."""
    from . import registry
    from .data.loaders import EXPORT_MARKER, Dataset, find_run_dirs, load_dataset
    from .reporting import dataset_path

    path = dataset_path(path, "sl.load")  # an empty path ('' from an unset parameter) is no dataset
    if (path / EXPORT_MARKER).exists():
        return load_dataset(path)
    runs = find_run_dirs(path) if path.is_dir() else []
    known = [(spec, layout) for spec in registry.specs() for layout in spec.layouts]
    published = [(spec, layout) for spec, layout in known if layout.detect(path)]
    names = [layout.name for _, layout in published]
    if runs and published:
        raise ValueError(f"{path} holds our runs and a published layout ({', '.join(names)}); load them separately")
    if runs:
        return load_dataset(path)
    if len(published) > 1:
        raise ValueError(f"{path} mixes published layouts {names}; load them separately")
    if published:
        spec, layout = published[0]
        return Dataset.published(spec.name, layout.name, layout.read(path, force=force))
    looked_for = "".join(f", {layout.marker} ({spec.title} {layout.name})" for spec, layout in known)
    raise FileNotFoundError(f"no trajectory data below {path}: expected run folders (manifest.json), "
                            f"a Parquet export{looked_for}")


def _table_options(spec: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against the environment's ``table_options``
    (:class:`scarce_lab.registry.EnvironmentSpec`: a tuple of choices or a type each).

    Raises:
        TypeError: an option the environment's table does not take (with the nearest
            name and the list of those it takes).
        ValueError: a value outside the option's choices or of another type (a string
            ``'false'`` is not a boolean).
    """
    import difflib

    allowed = spec.table_options
    for k, v in options.items():
        if k not in allowed:
            near = difflib.get_close_matches(k, list(allowed), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"sl.table: unknown option {k!r} for a {spec.name} table{hint}; "
                            f"options: {', '.join(allowed) or 'none'}")
        rule = allowed[k]
        if isinstance(rule, tuple) and v not in rule:
            raise ValueError(f"sl.table: {k}={v!r} is not one of {list(rule)}")
        if isinstance(rule, type) and type(v) is not rule:
            raise ValueError(f"sl.table: {k}={v!r} must be a {rule.__name__}, got {type(v).__name__}")
    return options


def table(data: Any, environment: str | None = None, **options: Any) -> Any:
    """The paper table of a dataset (a path or a :class:`~scarce_lab.data.loaders.Dataset`)
    as a finding (:class:`~scarce_lab.analysis.findings.Finding`: the table, its values and
    every other frame under ``extra``, the reading, the convention; ``.save(out)``),
    made by the environment's spec (``paper_table``; options checked against its
    ``table_options``):

    - SovSim: Table 1 (every metric, mean and 95% CI per model x condition) and the
      cross-model results; ``options``: ``preset`` (``sovsim`` | ``govsim``), ``strict``
      (bool), ``by`` (``condition`` | ``base_condition``), ``force`` (bool), ``seed``.
    - SCARCE: win rate, bids, durations, private-chat use, deadline misses, scores,
      with run-clustered CIs; ``seed``.
    - Economy: solve rate in the first and last fifth of training and in frozen
      evaluation, per task and condition; ``dynamics`` (bool): population dynamics.

    The finding also names the settings every run shares that depart from the paper's
    defaults (``departures``: :func:`scarce_lab.analysis.labels.departures`), which no
    column shows when all runs share them. A relative path is resolved as :func:`load`
    does.

    Raises:
        ValueError: ``environment`` omitted for a dataset of several environments, an
            unknown environment, or an option value outside its choices/type.
        TypeError: an option the table does not take (e.g. ``presett=``).
        EmptyTableError: no finished simulation (SovSim).
    """
    from dataclasses import replace

    from . import registry
    from .analysis.labels import departures

    if isinstance(data, str | Path):
        data = load(data)
    envs = data.environments
    env = environment or (envs[0] if len(envs) == 1 else None)
    if env is None:
        raise ValueError(f"this dataset holds environments {envs}; pass environment=")
    spec = registry.get(env)  # UnknownEnvironmentError is a ValueError
    if env not in envs:
        raise ValueError(f"no {spec.title} runs in this dataset (it holds {', '.join(envs) or 'no run'})")
    found = spec.paper_table(data, **_table_options(spec, options))
    shared = departures(data, env)
    return replace(found, departures=shared) if shared else found


def run(config: Any, out: str | Path = "runs", *, dry_run: bool = False, **options: Any) -> Any:
    """Run one configuration (a config object of :mod:`scarce_lab.config`) and return
    its run folders. ``options`` go to the environment's runner (``resume=True`` to
    continue an unfinished run, ``client=`` to share an LLM client). A relative ``out``
    is resolved by :func:`scarce_lab.reporting.resolve_path` (the project root).

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
    from .reporting import resolve_path
    from .runners.preflight import check_configs, check_finished

    spec = environments.for_config(config)  # TypeError: not a registered environment's config
    out = resolve_path(out)
    if dry_run:  # the plan only: nothing is checked against keys, nothing runs
        from .runners.preview import preview

        return preview(spec.name, [config])
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
    a relative ``run_dir`` is resolved as :func:`load` does."""
    from .reporting import resolve_path
    from .viewer import view as _view

    return _view(resolve_path(run_dir), **options)


def export(data: Any, out: str | Path) -> Path:
    """Export a dataset (a path or a :class:`Dataset`) to Parquet; :func:`load` reads it
    back. Relative paths are resolved as :func:`load` does."""
    from .data.loaders import export_parquet, load_dataset
    from .reporting import resolve_path

    if isinstance(data, str | Path):
        data = load_dataset(resolve_path(data))
    return export_parquet(data, resolve_path(out))
