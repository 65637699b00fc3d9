"""The environment registry: an environment is one registered :class:`EnvironmentSpec`.

Each environment declares, in one place, everything the shared layers need of it (its
hooks: :class:`EnvironmentSpec`). The shared layers (the notebook face, :mod:`scarce_lab.datasets`, the executors,
the conformance suite :mod:`scarce_lab.testing`, the viewer, ``scarce-lab migrate``,
the CLI) iterate this registry and name no environment; the trajectory format learns
an environment's payloads from :func:`register` (:mod:`scarce_lab.data.events.registry`),
so the data layer stays the bottom layer.

Where specs come from (:func:`load`, run before any lookup):

- the shipped environments: every module of the package :mod:`scarce_lab.environments`
  registers its spec on import (SovSim, SCARCE, Economy of Minds);
- a package of its own: an entry point in the group ``scarce_lab.environments``
  naming its :class:`EnvironmentSpec` (``"toy = toy_env.spec:SPEC"``) or the module
  that registers it;
- code (a test, a notebook): ``register(spec)``.

Adding an environment (``tests/toy_env`` is a complete one, a two-agent counter game):
a config model (:class:`scarce_lab.config.base.ExperimentConfig` with ``ENVIRONMENT``),
payload models (:class:`scarce_lab.data.events.Payload`), a ``run`` that records
through :func:`scarce_lab.runtime.open_run`, a tidy table, a paper table, a
conformance play returning :class:`scarce_lab.testing.Trace` and a renderer, gathered
in one :class:`EnvironmentSpec` and registered. ``sl.run``, ``sl.load``, ``sl.table``,
``sl.view``, the executors, the dry run, ``scarce-lab run NAME`` / ``table NAME``
(:mod:`scarce_lab.cli.environment`, with the spec's :class:`RunCommand`) and the
conformance suite then take it with no other edit.

The pattern is PettingZoo's environment registry and Inspect AI's ``@task`` registry:
one entry per environment, looked up by name.

Usage::

    from scarce_lab import registry
    registry.names()                      # ['economy', 'scarce', 'sovsim']
    registry.get("sovsim").paper_table    # the paper table builder
    registry.for_config(cfg).run(cfg, out)

Size: ~520 lines, the one contract between the core and an environment
(:class:`EnvironmentSpec` with :class:`RunCommand` and :class:`PublishedLayout`), each
hook documented and checked where it is declared.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .data.events.registry import (
    ENTRY_POINT_GROUP,
    UnknownEnvironmentError,
    _no_counts,
    load_entry_point,
    register_payloads,
    unregister_payloads,
)

#: The package whose modules are the shipped environments' specs.
BUILTIN_PACKAGE = "scarce_lab.environments"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

__all__ = [
    "ENTRY_POINT_GROUP",
    "EnvironmentSpec",
    "PublishedLayout",
    "RunCommand",
    "UnknownEnvironmentError",
    "for_config",
    "get",
    "lazy",
    "load",
    "names",
    "register",
    "specs",
    "unregister",
]


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A hook that imports ``module`` only when called (a spec is imported with every
    lookup; its runner, viewer, tables and conformance modules are not) and returns
    ``module.name(*args, **kwargs)``: e.g. ``render=lazy(f"{__name__}.viewer", "render")``."""

    def hook(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    hook.__name__ = name
    hook.__doc__ = f":func:`{module}.{name}`, imported when first called."
    return hook


@dataclass(frozen=True)
class PublishedLayout:
    """A released data layout an environment reads (files that scarce_lab did not
    write, e.g. SovSim's ``rationales.json`` trees): :func:`scarce_lab.datasets.load` asks every
    registered spec's :attr:`EnvironmentSpec.layouts` whether a path holds one.

    Attributes:
        name: the layout's name, unique over all environments (``[a-z][a-z0-9_]*``);
            it is the loaded dataset's ``layout``.
        marker: the file that marks it, as a person reads it (``rationales.json``,
            ``<condition>/sim_XX.json``), for the message of a path that holds nothing.
        detect: ``detect(path) -> list[Path]``, the layout's files at or below ``path``
            (a folder or one file; empty when none); raises ``FileNotFoundError`` for a
            path that does not exist.
        read: ``read(path, *, force=False) -> {table name: polars.DataFrame}``, the
            environment's tidy tables of every file of the layout below ``path`` (they
            become the dataset's ``published_tables``); raises what the environment's
            reader raises for a corrupt file (the file is named) or for a file that
            fails a check of the reader (e.g. a GovSim run without its configuration),
            which ``force`` reads anyway with a warning whose class has ``forced = True``.

    Raises (on construction):
        ValueError: a bad ``name`` or an empty ``marker``.
        TypeError: ``detect`` or ``read`` not callable.
    """

    name: str
    marker: str
    detect: Callable[[Path], list[Path]]
    read: Callable[..., Mapping[str, Any]]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"PublishedLayout.name {self.name!r} must match [a-z][a-z0-9_]*")
        if not isinstance(self.marker, str) or not self.marker.strip():
            raise ValueError(f"PublishedLayout {self.name!r}: marker must name the file that marks the layout")
        for f in ("detect", "read"):
            if not callable(getattr(self, f)):
                raise TypeError(f"PublishedLayout {self.name!r}: {f!r} must be callable, got {getattr(self, f)!r}")


@dataclass(frozen=True)
class RunCommand:
    """What ``scarce-lab run <name>`` needs of an environment beyond its config model
    (:mod:`scarce_lab.cli.environment` builds one command per registered spec: every
    config setting an option, plus ``--out``, ``--resume``, ``--progress``, the executor,
    the cost cap, cross-play and seats, written once for all).

    Attributes:
        help: what one invocation plays and records (the first paragraph of ``--help``),
            e.g. SovSim: "One game per model x condition x simulation ...".
        aliases: extra option names per dotted config path (``{"model": ("-m",)}``).
        exclude: dotted config paths that get no option (set with ``-S`` or derived).
        shorthands: a value standing for several, per sweep field
            (``{"condition": {"all": ("cpr", "bcpr", "kcpr", "kcpr_m")}}``): offered as a
            choice and expanded before the configs are built.
        default_sweep: values a sweep field takes when neither an option, ``-S`` nor
            ``--config`` sets it (SovSim: ``{"condition": ("all",)}``); ``--help`` shows
            them as the default.
        order: the sweep fields from the outermost loop to the innermost (and the
            config's ``REPLICATE_FIELD`` where ``replicates`` is set).
        replicates: option names of the number of replicates of the config's
            ``REPLICATE_FIELD`` (SovSim: ``("--simulations", "-n")``: simulations 0..n-1);
            empty: no such option.
        replicates_default: the number when the option is left out.
        replicates_help: the option's help.
        resume_unit: what a resumed run continues from ("round", "contention", "episode").
        preflight: ``preflight(configs)`` raises ``ValueError``/``OSError`` (named) for a
            sweep that cannot run, before any folder is made (Economy: the task file).
        run_many: ``run_many(configs, out, *, resume, progress) -> list[RunOutcome]``:
            plays the sweep in one process (SovSim: games concurrently in one event loop);
            default: one run after another through the spec's ``run_task``/``run``.
        run_processes: ``run_processes(configs, out, *, processes, resume, progress) ->
            list[RunOutcome]``: the sweep over several client processes (``--processes``,
            offered only where this is set).
    """

    help: str = ""
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    shorthands: Mapping[str, Mapping[str, tuple[Any, ...]]] = field(default_factory=dict)
    default_sweep: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    replicates: tuple[str, ...] = ()
    replicates_default: int = 1
    replicates_help: str = ""
    resume_unit: str = "step"
    preflight: Callable[[list[Any]], None] | None = None
    run_many: Callable[..., list[Any]] | None = None
    run_processes: Callable[..., list[Any]] | None = None

    def __post_init__(self) -> None:
        for f in ("preflight", "run_many", "run_processes"):
            if getattr(self, f) is not None and not callable(getattr(self, f)):
                raise TypeError(f"RunCommand.{f} must be callable or None, got {getattr(self, f)!r}")
        for f in ("aliases", "shorthands", "default_sweep"):
            if not isinstance(getattr(self, f), Mapping):
                raise TypeError(f"RunCommand.{f} must be a mapping, got {getattr(self, f)!r}")
        if not all(isinstance(n, str) and n.startswith("-") for n in self.replicates):
            raise TypeError(f"RunCommand.replicates must be option names, got {self.replicates!r}")
        if self.replicates_default < 1:
            raise ValueError(f"RunCommand.replicates_default must be at least 1, got {self.replicates_default}")
        object.__setattr__(self, "aliases", MappingProxyType({k: tuple(v) for k, v in self.aliases.items()}))
        object.__setattr__(self, "shorthands", MappingProxyType(
            {k: MappingProxyType({s: tuple(v) for s, v in m.items()}) for k, m in self.shorthands.items()}))
        object.__setattr__(self, "default_sweep", MappingProxyType(
            {k: tuple(v) for k, v in self.default_sweep.items()}))


@dataclass(frozen=True)
class EnvironmentSpec:
    """Everything the shared layers need of one environment.

    Required:
        name: what manifests carry in ``environment`` (``[a-z][a-z0-9_]*``).
        config: the environment's config model (a pydantic model with ``run_id``;
            :class:`scarce_lab.config.base.ExperimentConfig` for the shipped ones).
        run: ``run(config, out_dir, **options) -> list[Path]``: play one config into
            ``out_dir`` and return its run folders (``resume=True`` continues an
            unfinished run). Raises ``FileExistsError`` / ``RunMismatchError`` /
            ``RunInProgressError`` when the folder holds an unfinished run (without
            ``resume``), a run of other settings, or a run in progress; a run that
            raised says ``failed`` in its manifest.
        payloads: the payload models of its events (:class:`scarce_lab.data.events.Payload`
            subclasses, one ``kind`` each).
        round_meaning: what ``Event.round`` counts (one sentence).
        tables: ``table name -> builder(dataset) -> polars.DataFrame``, its tidy tables
            (``dataset``: :class:`scarce_lab.data.loaders.Dataset`).
        paper_table: ``paper_table(data, **options) -> polars.DataFrame``, what
            ``sl.table`` prints (``data``: a Dataset, or another object the environment
            loads, e.g. SovSim's published layouts).
        harness: ``harness(seed) -> scarce_lab.testing.Trace``, the conformance play.
        render: ``render(events, max_chars) -> str``, the viewer's HTML body of one
            run (``events``: the run's event dicts in order; every text escaped).

    Optional:
        table_options: ``option -> tuple of choices | type`` that ``paper_table`` takes
            (anything else is refused by ``sl.table``).
        run_task: ``run_task(config, out_dir, resume) -> RunOutcome`` for an executor
            (default: :func:`run`, the outcome read from the manifest).
        final_counts: ``manifest config -> {kind: count}`` a complete run holds.
        migrate_v1: rewrites a version-1 ``(event, payload)`` dict pair in place.
        config_v1: ``config_v1(manifest, call_params) -> config`` for a version-1 run
            (``scarce-lab migrate``); ``call_params``: the run's first recorded LLM
            call settings.
        cli: what ``scarce-lab run <name>`` needs beyond the config model (:class:`RunCommand`).
        outcome: ``outcome(run_dir) -> str``: one line saying what happened in a
            finished run (SovSim: "kcpr, simulation 0: collapsed in round 3"), printed
            by ``scarce-lab run`` for each run; default: the manifest's status.
        plan_calls: ``plan_calls(config, model) -> (low, high, per_unit)``, the
            model calls one run makes for ``model`` (:mod:`scarce_lab.runners.preview`;
            a dry run of an environment without it and with a model client is refused);
            ``per_unit``: calls per unit of play whose number depends on the play
            (SCARCE: the negotiators' calls per contention), named by ``plan_unit``.
        plan_unit: what ``per_unit`` counts, in the dry run's words (SCARCE:
            ``"negotiator calls per contention"``); a plan with a ``per_unit`` and no
            ``plan_unit`` is refused.
        plan_note: a sentence the dry run adds to every plan of this environment.
        plan_unit_calls: ``plan_unit_calls(config, model) -> int``, an upper bound of
            the calls one run makes for ``model`` per unit of play, over all its units
            (so a plan's high end prices every call; SCARCE: each contention answers at
            least one request and each request is a solver step, docstring of
            ``scarce.plan_unit_calls``); ``None``: the ``per_unit`` calls stay unbounded
            in the plan and it says so.
        plan_judge_units: ``plan_judge_units(config) -> int``, an upper bound of the
            judge units (``judge_units``) one run of ``config`` holds, for the plan of a
            study that labels its runs before they exist.
        check_policy: ``check_policy(config, model)`` raises ``ValueError`` (naming the
            policies it has) for a policy the environment cannot play, before any run
            folder is made (:func:`scarce_lab.runners.preflight.check_configs`).
        title: how a person names it (``SovSim``), for messages.
        seat_keys: ``seat_keys(config) -> {agent id: (alias, ...)}``, the run's seats in
            seat order with the roles that name them (SovSim: ``a3 -> ("king", "leader")``
            in ``kcpr``), the keys a ``seats`` map takes
            (:mod:`scarce_lab.config.seats`); the cross-play planner
            (:mod:`scarce_lab.runners.crossplay`) refuses an environment without it.
        seat_parts: the part names after a dot in a seat key, for environments whose
            agents are several models (SCARCE: ``("solver", "negotiator")``).
        face: the module that is ``sl.<name>`` in a notebook (its findings and
            ``load``); imported when first used.
        layouts: the published layouts the environment reads (:class:`PublishedLayout`,
            names unique over all environments); :func:`scarce_lab.load` of a path
            holding one returns a dataset of this environment with the layout's tables.
        view: ``view(dataset) -> object``, the environment's typed view of a
            :class:`scarce_lab.data.loaders.Dataset` (``ds.<name>``): built on the first
            ``ds.<name>`` of a dataset that holds the environment (runs or a published
            layout), then kept; its attributes are the environment's tidy tables,
            each computed when first read. ``None``: ``ds.<name>`` is an
            ``AttributeError``.
        demo: ``demo(model=, simulations=, seed=, out=, figures=, notebook=) -> int``,
            what ``scarce-lab demo`` plays (``model``: str, ``simulations``: games per
            condition, ``seed``: int, ``out`` / ``figures``: folders of the runs and of
            the figures, ``notebook``: execute the environment's notebook afterwards);
            prints its report and returns the exit code (0, or 1 when a game failed or
            none finished). At most one registered environment declares one.
        judge_units: ``judge_units(path, *, keep_empty, gold) -> list[Unit]``, the judge
            units (:class:`scarce_lab.judge.units.Unit`) of a folder of its runs, called
            by :func:`scarce_lab.judge.units.dataset_units` (``scarce-lab judge label`` /
            ``judge validate``) for a folder whose manifests name this environment;
            ``gold="intended"`` gives each unit the labels its scripted agents meant,
            another value raises ``ValueError``, as do runs without anything to label.
            ``None``: its runs hold no talk to label, and a folder of them is refused
            with its name.
        taxonomy: the shipped taxonomy that labels its talk by default
            (:func:`scarce_lab.judge.taxonomy.load_taxonomy`; SCARCE ``"scarce"``,
            SovSim ``"commons"``); set exactly when ``judge_units`` is.
        speaker_part: the part of ``seat_parts`` whose model says what its agents say
            (SCARCE: ``"negotiator"``): the say-do tables (:mod:`scarce_lab.analysis.saydo`)
            give every agent of a run that part's model from the manifest's ``models``
            (the other parts' model, in ``seat_parts`` order, when it names none);
            ``""``: each agent's model is under its own key.
        study_metrics: ``study_metrics(dataset, *, labels=None) -> polars.DataFrame``,
            the metrics a study report compares with the paper's numbers
            (:mod:`scarce_lab.studies.report`): one row per metric, model and condition
            (``metric, model, condition, estimate, ci_low, ci_high, n_runs, why``, and
            ``run_id``, one run of the condition whose manifest gives its settings, or
            ``settings``, the condition's dotted settings as JSON, for data without
            manifests), from the environment's own tables and their intervals;
            ``study_metrics(None)`` returns ``{metric: interval kind}`` for every metric it
            computes (its names; the kind of 95% interval its rows print, a key of
            :data:`scarce_lab.analysis.stats.INTERVAL_KINDS`, which says whether
            ``--target-width`` may watch it); each row states the kind it printed
            (``interval``).
        fork_steps: ``fork_steps(run_dir) -> list[int]``, the steps (SovSim rounds,
            SCARCE contentions, Economy episodes) a fork of that run may start at
            (:mod:`scarce_lab.forks`); ``None``: its runs cannot be forked (refused by name).
        fork_check: ``fork_check(config, parent_manifest, intervention, at) -> None``,
            raises :class:`scarce_lab.forks.ForkError` naming the step, seat, agent or rule
            the fork asks for and what the parent has, or the intervention kind the
            environment does not support; called before any fork runs. Its ``run``
            then takes ``replay=`` (:class:`scarce_lab.forks.replay.Replay`) for a config
            whose ``fork`` is set. Set exactly when ``fork_steps`` is.
        measured: ``event kind -> payload fields`` that are measurements (wall seconds),
            not play: left out wherever two runs' events are compared (a fork's prefix
            check, a fork beside its parent in the viewer). SCARCE: an ``execution``'s
            ``duration_s``.
        seat_payoffs: ``seat_payoffs(run_dir) -> {agent id: payoff}``, each agent's
            payoff in one complete run folder (what a selection chain,
            :mod:`scarce_lab.runners.selection`, selects on); raises ``ValueError``
            for a folder without a complete run. ``None``: selection over models is
            refused for the environment by name.
        payoff_meaning: what ``seat_payoffs`` gives, with its unit (SovSim: the total
            gain over the game in pool units); set exactly when ``seat_payoffs`` is.
        sealed_tables: ``table name -> builder(dataset)`` of tables written into a sweep's
            seal when the sweep ends (:mod:`scarce_lab.data.sweep_seal`), each as the
            environment's reader serves it for the whole sweep folder, which serves it
            from there while the runs are as sealed. SovSim: ``agent_rounds`` (labelled
            and ordered as ``load_agent_rounds`` returns it).

    Raises (on construction):
        ValueError: a bad name, an empty ``round_meaning`` or ``payloads``, a
            ``table_options`` rule that is not a tuple of choices or a type, two
            ``layouts`` of one name, a ``judge_units`` without a ``taxonomy`` (or the
            reverse), a ``speaker_part`` that is not one of ``seat_parts``, or
            ``sealed_tables`` that is not a mapping of names to builders.
        TypeError: a required field of the wrong kind (the field is named).
    """

    name: str
    config: type
    run: Callable[..., list[Path]]
    payloads: tuple[type, ...]
    round_meaning: str
    tables: Mapping[str, Callable[[Any], Any]]
    paper_table: Callable[..., Any]
    harness: Callable[[int], Any]
    render: Callable[[list[dict], int], str]
    table_options: Mapping[str, Any] = field(default_factory=dict)
    run_task: Callable[[Any, Path, bool], Any] | None = None
    final_counts: Callable[[dict], dict[str, int]] = _no_counts
    migrate_v1: Callable[[dict, dict], None] | None = None
    config_v1: Callable[[Any, dict], Any] | None = None
    cli: RunCommand = field(default_factory=RunCommand)
    outcome: Callable[[Path], str] | None = None
    plan_calls: Callable[[Any, str], tuple[int, int, int]] | None = None
    plan_note: str = ""
    plan_unit: str = ""
    plan_unit_calls: Callable[[Any, str], int] | None = None
    plan_judge_units: Callable[[Any], int] | None = None
    check_policy: Callable[[Any, str], None] | None = None
    title: str = ""
    seat_keys: Callable[[Any], Mapping[str, tuple[str, ...]]] | None = None
    seat_parts: tuple[str, ...] = ()
    face: str | None = None
    layouts: tuple[PublishedLayout, ...] = ()
    view: Callable[[Any], Any] | None = None
    demo: Callable[..., int] | None = None
    judge_units: Callable[..., list[Any]] | None = None
    taxonomy: str | None = None
    speaker_part: str = ""
    study_metrics: Callable[..., Any] | None = None
    fork_steps: Callable[[Path], list[int]] | None = None
    fork_check: Callable[..., None] | None = None
    measured: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    seat_payoffs: Callable[[Path], Mapping[str, float]] | None = None
    payoff_meaning: str = ""
    sealed_tables: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"EnvironmentSpec.name {self.name!r} must match [a-z][a-z0-9_]*")
        where = f"EnvironmentSpec {self.name!r}"
        if not inspect.isclass(self.config) or "run_id" not in dir(self.config):
            raise TypeError(f"{where}: field 'config' must be a config class with a run_id, got {self.config!r}")
        declared = getattr(self.config, "ENVIRONMENT", None)
        if declared and declared != self.name:
            raise ValueError(f"{where}: config {self.config.__name__} declares ENVIRONMENT={declared!r}")
        for f in ("run", "paper_table", "harness", "render", "final_counts"):
            if not callable(getattr(self, f)):
                raise TypeError(f"{where}: field {f!r} must be callable, got {getattr(self, f)!r}")
        for f in ("run_task", "migrate_v1", "config_v1", "plan_calls", "plan_unit_calls", "plan_judge_units",
                  "check_policy", "seat_keys", "view", "demo", "outcome", "judge_units", "study_metrics",
                  "fork_steps", "fork_check", "seat_payoffs"):
            if getattr(self, f) is not None and not callable(getattr(self, f)):
                raise TypeError(f"{where}: field {f!r} must be callable or None, got {getattr(self, f)!r}")
        if not isinstance(self.payloads, tuple) or not self.payloads:
            raise ValueError(f"{where}: field 'payloads' must be a non-empty tuple of payload models")
        if not isinstance(self.round_meaning, str) or not self.round_meaning.strip():
            raise ValueError(f"{where}: field 'round_meaning' must say what Event.round counts")
        if not isinstance(self.tables, Mapping) or not self.tables:
            raise TypeError(f"{where}: field 'tables' must map at least one table name to a builder")
        for k, v in self.tables.items():
            if not isinstance(k, str) or not callable(v):
                raise TypeError(f"{where}: tables[{k!r}] must be a builder function, got {v!r}")
        if not isinstance(self.sealed_tables, Mapping) or not all(
                isinstance(k, str) and callable(v) for k, v in self.sealed_tables.items()):
            raise TypeError(f"{where}: sealed_tables must map table names to builders, got {self.sealed_tables!r}")
        for k, rule in dict(self.table_options).items():
            if not (isinstance(rule, type) or (isinstance(rule, tuple) and rule)):
                raise ValueError(f"{where}: table_options[{k!r}] must be a tuple of choices or a type, got {rule!r}")
        if not isinstance(self.seat_parts, tuple) or not all(isinstance(p, str) and p for p in self.seat_parts):
            raise TypeError(f"{where}: field 'seat_parts' must be a tuple of part names, got {self.seat_parts!r}")
        if self.face is not None and not isinstance(self.face, str):
            raise TypeError(f"{where}: field 'face' must be a module name or None, got {self.face!r}")
        if not isinstance(self.cli, RunCommand):
            raise TypeError(f"{where}: field 'cli' must be a RunCommand, got {self.cli!r}")
        for f in ("plan_note", "plan_unit"):
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"{where}: field {f!r} must be a string, got {getattr(self, f)!r}")
        if not isinstance(self.layouts, tuple) or not all(isinstance(x, PublishedLayout) for x in self.layouts):
            raise TypeError(f"{where}: field 'layouts' must be a tuple of PublishedLayout, got {self.layouts!r}")
        if len({x.name for x in self.layouts}) < len(self.layouts):
            raise ValueError(f"{where}: two layouts share a name: {[x.name for x in self.layouts]}")
        if self.taxonomy is not None and not (isinstance(self.taxonomy, str) and self.taxonomy):
            raise TypeError(f"{where}: field 'taxonomy' must be a taxonomy name or None, got {self.taxonomy!r}")
        if (self.judge_units is None) != (self.taxonomy is None):
            raise ValueError(f"{where}: fields 'judge_units' and 'taxonomy' go together (units to label and the "
                             f"taxonomy that labels them), got judge_units={self.judge_units!r}, "
                             f"taxonomy={self.taxonomy!r}")
        if not isinstance(self.speaker_part, str):
            raise TypeError(f"{where}: field 'speaker_part' must be a part name or '', got {self.speaker_part!r}")
        if self.speaker_part and self.speaker_part not in self.seat_parts:
            raise ValueError(f"{where}: field 'speaker_part' must be '' or one of seat_parts {self.seat_parts}, "
                             f"got {self.speaker_part!r}")
        if (self.fork_steps is None) != (self.fork_check is None):
            raise ValueError(f"{where}: fields 'fork_steps' and 'fork_check' go together (where a fork may start "
                             f"and what it may change), got fork_steps={self.fork_steps!r}, "
                             f"fork_check={self.fork_check!r}")
        if (self.seat_payoffs is None) != (not self.payoff_meaning):
            raise ValueError(f"{where}: fields 'seat_payoffs' and 'payoff_meaning' go together (the payoffs and what "
                             f"they are), got seat_payoffs={self.seat_payoffs!r}, payoff_meaning={self.payoff_meaning!r}")
        object.__setattr__(self, "tables", MappingProxyType(dict(self.tables)))
        object.__setattr__(self, "table_options", MappingProxyType(dict(self.table_options)))
        if not self.title:
            object.__setattr__(self, "title", self.name)


_SPECS: dict[str, EnvironmentSpec] = {}
_loaded = False
_loading = False


def register(spec: EnvironmentSpec) -> EnvironmentSpec:
    """Add ``spec`` to the registry and its payload models to the trajectory format.

    Registering the same spec object again does nothing (a module imported twice).

    Raises:
        TypeError: ``spec`` is not an :class:`EnvironmentSpec`.
        ValueError: another spec has this name, or another spec's config class is this
            one's, a subclass or a base of it (both named), another spec reads a
            published layout of the same name, or the payloads conflict with ones
            registered under the name.
    """
    if not isinstance(spec, EnvironmentSpec):
        raise TypeError(f"register needs an EnvironmentSpec, got {type(spec).__name__}")
    old = _SPECS.get(spec.name)
    if old is spec:
        return spec
    if old is not None:
        raise ValueError(f"environment {spec.name!r} is already registered (config {old.config.__name__}); "
                         "names are unique: unregister it first or choose another name")
    for other in _SPECS.values():  # for_config must find one spec per config object
        if issubclass(spec.config, other.config) or issubclass(other.config, spec.config):
            raise ValueError(f"environments {other.name!r} and {spec.name!r} use configs {other.config.__name__} and "
                             f"{spec.config.__name__}, one an instance of the other: a config would name both")
        shared = {x.name for x in spec.layouts} & {x.name for x in other.layouts}
        if shared:
            raise ValueError(f"environments {other.name!r} and {spec.name!r} both read published layouts "
                             f"{sorted(shared)}: a layout name names one dataset's layout")
    register_payloads(spec.name, spec.payloads, round_meaning=spec.round_meaning, final_counts=spec.final_counts,
                      migrate_v1=spec.migrate_v1, view=spec.view)
    _SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove ``name`` and its payload registration (a test cleaning up its toy)."""
    if _SPECS.pop(name, None) is not None:
        unregister_payloads(name)


def load() -> None:
    """Register the shipped specs (modules of :data:`BUILTIN_PACKAGE`) and those of
    installed packages (entry-point group ``scarce_lab.environments``); once.

    Raises:
        TypeError: an entry point that loads neither an :class:`EnvironmentSpec` nor a
            module (its name and value are named).
        ImportError: an entry point that fails to load (named, with its error).
    """
    global _loaded, _loading
    if _loaded:
        return
    if _loading:
        raise RuntimeError("scarce_lab.registry.load() re-entered: a spec module looked the registry up while "
                           "it was being imported (register, do not look up, on import)")
    _loading = True
    try:
        pkg = importlib.import_module(BUILTIN_PACKAGE)
        for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            importlib.import_module(f"{BUILTIN_PACKAGE}.{m.name}")
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            obj = load_entry_point(ep)
            if isinstance(obj, EnvironmentSpec):
                register(obj)
            elif not inspect.ismodule(obj):
                raise TypeError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) loads "
                                f"{type(obj).__name__}, not an EnvironmentSpec or a module that registers one")
        _loaded = True  # only a load that finished: a failed one is retried (and fails again, loudly)
    finally:
        _loading = False


def get(name: str) -> EnvironmentSpec:
    """The spec of ``name``.

    Raises:
        UnknownEnvironmentError: no such environment (the registered names are listed).
    """
    load()
    try:
        return _SPECS[name]
    except KeyError:
        raise UnknownEnvironmentError(f"unknown environment {name!r} (registered: {sorted(_SPECS)})") from None


def names() -> list[str]:
    """The registered environment names, sorted."""
    load()
    return sorted(_SPECS)


def specs() -> list[EnvironmentSpec]:
    """The registered specs, by name."""
    return [_SPECS[n] for n in names()]


def for_config(config: Any) -> EnvironmentSpec:
    """The spec whose config class ``config`` is an instance of.

    Raises:
        TypeError: ``config`` is no registered environment's config (the config
            classes that are are named).
    """
    for spec in specs():
        if isinstance(config, spec.config):
            return spec
    known = ", ".join(s.config.__name__ for s in specs())
    raise TypeError(f"{type(config).__name__} is not the config of a registered environment (configs: {known})")
