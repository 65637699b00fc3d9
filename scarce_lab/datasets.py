"""Datasets: where a path points, and the one door that loads what lies there.

- Relative paths (:func:`resolve_path`): one rule for notebook parameters and the Python
  face (``sl.load``, ``sl.table``, ``sl.view``, ``sl.export``, ``sl.run``'s ``out``): from
  the project root, the nearest folder at or above the working directory holding
  ``pyproject.toml`` and ``scarce_lab/``, else from the working directory. Path
  arguments of the CLI commands other than ``report`` are the shell's.
- :func:`load` (``sl.load``, and each environment's ``sl.<env>.load``): our run folders,
  a Parquet export or a published layout a registered environment reads, as one
  :class:`~scarce_lab.data.loaders.Dataset`.
- :func:`table` (``sl.table``): a dataset's paper table, made by its environment's spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .data.loaders import Dataset

REPO_ROOT = Path(__file__).resolve().parents[1]


def project_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) that
    holds ``pyproject.toml`` and ``scarce_lab/``; notebooks use it so that ``data/...``
    and ``figures/`` resolve the same in JupyterLab, under nbmake and from the CLI.

    Raises:
        FileNotFoundError: no such folder above ``start``.
    """
    here = Path(start or Path.cwd()).resolve()
    for p in [here, *here.parents]:
        if (p / "pyproject.toml").exists() and (p / "scarce_lab").is_dir():
            return p
    raise FileNotFoundError(f"no scarce_lab project root (pyproject.toml) at or above {here}")


def checkout_root(start: str | Path | None = None) -> Path:
    """The checkout of :func:`project_root` when there is one, else the folder that holds
    this package (an installed copy's notebooks)."""
    try:
        return project_root(start)
    except FileNotFoundError:
        return REPO_ROOT


def resolve_path(p: str | Path, start: str | Path | None = None) -> Path:
    """``p`` as an absolute path: as given when absolute; else relative to the project
    root above ``start`` (default: working directory) when there is one, else to
    ``start`` itself (a notebook copied out of the checkout)."""
    path = Path(p).expanduser()
    if path.is_absolute():
        return path
    try:
        base = project_root(start)
    except FileNotFoundError:
        base = Path(start or Path.cwd()).resolve()
    return (base / path).resolve()


def dataset_path(p: str | Path, name: str = "DATASET", start: str | Path | None = None) -> Path:
    """:func:`resolve_path` of a dataset that must exist and, when a folder, hold something.

    Raises:
        FileNotFoundError: one line naming the parameter and the resolved path (missing,
            or an empty folder), or an empty path (``-p DATASET=`` resolved to the
            checkout itself and analysed whatever runs lie below it).
    """
    if not str(p).strip():
        raise FileNotFoundError(f"{name}: an empty path {str(p)!r} is not a dataset")
    path = resolve_path(p, start)
    if not path.exists():
        here = Path(start or Path.cwd()) / Path(p).expanduser()
        hint = (f" ({here.resolve()} exists: a relative path is read from the project root; give that "
                "path)") if here.exists() else ""
        raise FileNotFoundError(f"{name}: dataset path {path} does not exist{hint}")
    if path.is_dir() and not any(path.iterdir()):
        raise FileNotFoundError(f"{name}: dataset folder {path} is empty (no runs to analyse: did the run "
                                "command write somewhere else?)")
    return path


def load(paths: str | Path | Sequence[str | Path], *, force: bool = False, environment: str | None = None) -> Dataset:
    """Load any supported trajectory data below ``paths`` (one path, or a list of them).

    A relative path is resolved by :func:`resolve_path`, so ``sl.load("data/sovsim")``
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

    ``environment``: the dataset must hold runs of this registered environment (each
    environment's face, ``sl.sovsim.load``, passes its own name).

    Raises:
        FileNotFoundError: a path is empty (``""`` would read every run below the
            project root), does not exist or holds no supported file (the message lists
            what was looked for); an empty list.
        ValueError: a folder mixes our runs with a published layout or an export, or
            holds two published layouts or exports, or an export below it (load each
            by its own path); a published layout in a list of paths; no
            run of ``environment`` (the message names what the dataset holds; an unknown
            ``environment`` is :class:`~scarce_lab.registry.UnknownEnvironmentError`).
        TrajectoryFileError: a corrupt file (its path and line are named).
        TypeError: ``paths`` neither a path nor a list of paths (e.g. bytes).

    A symbolic link to a folder is not followed; one that leads to a run or an export
    is named in a warning (:func:`scarce_lab.data.loaders.scan_folder`).
    """
    from . import registry
    from .data.loaders import combine

    door = f"sl.{environment}.load" if environment else "sl.load"
    if not isinstance(paths, str | Path | Sequence) or isinstance(paths, bytes):
        raise TypeError(f"{door}: paths must be a path or a list of paths, got {type(paths).__name__}")
    if isinstance(paths, str | Path):
        ds = _load_one(paths, force=force)
    elif not paths:
        raise FileNotFoundError(f"{door}: an empty list of paths is no dataset")
    else:
        ds = combine([_load_one(p, force=force) for p in paths])
    if environment is not None and environment not in ds.environments:
        raise ValueError(f"{door}: no {registry.get(environment).title} run in this dataset "
                         f"(environments: {ds.environments})")
    return ds


def _load_one(path: str | Path, *, force: bool = False) -> Dataset:
    """One path of :func:`load`: an export, our run folders, or one published layout
    (asked of every registered spec's ``layouts``); the folder tree is walked once for
    all of them (:func:`scarce_lab.data.loaders.one_walk`)."""
    from .data.loaders import one_walk

    with one_walk():
        return _detect_and_read(path, force=force)


def _detect_and_read(path: str | Path, *, force: bool) -> Dataset:
    from . import registry
    from .data.loaders import Dataset, links_note, load_dataset, scan_folder

    path = dataset_path(path, "sl.load")  # an empty path ('' from an unset parameter) is no dataset
    runs, exports, links = scan_folder(path) if path.is_dir() else ([], [], [])
    if exports and (runs or exports != [path]):  # an export beside runs, or several: one dataset of what?
        raise ValueError(f"{path} holds {len(exports)} Parquet export(s) ({', '.join(map(str, exports[:3]))}) "
                         f"and {len(runs)} run folder(s); load each export by its own path (a list of paths "
                         "combines our run folders)")
    if exports:
        return load_dataset(path)
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
                            f"a Parquet export{looked_for}" + (f"; {links_note(links)}" if links else ""))


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
    """The paper table of a dataset (a path, a list of paths or a
    :class:`~scarce_lab.data.loaders.Dataset`)
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
        TypeError: an option the table does not take (e.g. ``presett=``); ``data`` of
            another type.
        EmptyTableError: no finished simulation (SovSim).
    """
    from dataclasses import replace

    from . import registry
    from .analysis.labels import departures

    if isinstance(data, str | Path | list | tuple):  # read as the CLI reads it: a forced table forces the read
        data = load(data, force=options.get("force") is True)
    if not hasattr(data, "environments"):
        raise TypeError(f"sl.table: data must be a path, a list of paths or a Dataset, got {type(data).__name__}")
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
