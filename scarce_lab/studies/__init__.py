"""Studies: a paper experiment declared as data, run for any model, reported against
the paper's numbers.

A :class:`Study` is one notebook's experiment: the environment, the paper's fixed
settings, the arms it varies, the seeds, the judge labels it needs, the notebook that
reads it and the published numbers it replicates. Studies are declared next to their
environment, in ``scarce_lab/environments/<env>/studies.toml`` (one ``[[study]]`` table
each; the file's keys are the fields of :class:`Study`), and found through the
environment registry, so an environment registered by a plug-in brings its own.

A study turns into run configs (:meth:`Study.configs`): every model x arm x seed, each
built from (lowest to highest precedence) the config's defaults, the paper's settings
(``paper``), the study's own settings (``settings``: departures from the paper, each
with a reason in ``departures``), a profile's settings (``profiles``: e.g. the shipped
data's scripted runs), the user's ``-S`` overrides, the arm's settings, the model and
the seed. Anything the user or a profile sets away from the paper is a departure the
report lists (:meth:`Study.departures_of`).

A profile rebuilds a shipped dataset from one command: besides models, settings, seeds
and an arm subset it may name several model sets (one arm set each), arms of its own
(``extra_arms``: a variant only the shipped data hold), settings pinned on one arm
(``arm_settings``: e.g. the baselines' shorter training) and cross-play populations
(``populations``: :mod:`scarce_lab.runners.crossplay` grids over its runs). A study may
declare populations too (a focal/background study; members default to its models).

Size: the declaration model in one module (Study, Arm, Profile, Population, Labels, their
validators and the building of run configs from them); the engine (:mod:`.run`), the
report (:mod:`.report`) and the notebooks' note (:mod:`.notebook`) are their own modules.

Errors: a declaration that does not validate raises :class:`StudyError` naming the file,
the study and the field; an arm or profile setting the environment's config refuses is
raised when the configs are built, naming the study, the arm and the setting.

Size: the declaration's model, its validation and the config building every study path
(plan, run, report, notebook note) goes through live in one module.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class StudyError(ValueError):
    """A study that cannot be declared, planned or run as asked (the message names the
    study, the field and the value)."""


class Arm(BaseModel):
    """One arm of a study: a name and the config settings (dotted keys) that make it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")
    settings: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


class Population(BaseModel):
    """A cross-play grid over a study's runs (:mod:`scarce_lab.runners.crossplay`):
    every ``members`` model in the focal seats against every ``background`` model in
    the others; ``members`` left out: the models the study is run with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    members: list[str] | None = None
    background: list[str] | None = None
    focal_seats: int | list[str] = 1
    part: str | None = None


class Profile(BaseModel):
    """A named way of running a study other than the paper's: the shipped data's
    scripted or embedded runs (``models``: one model set per model field, or several,
    each an arm set), ``settings``, ``seeds``, ``arms`` a subset, ``extra_arms`` (arms
    only this profile runs, e.g. a variant the shipped data hold), ``arm_settings``
    (arm -> settings the profile pins over that arm's), ``populations`` (cross-play
    grids, over the study's own), ``judges`` (the panel that labels its runs; ``[]``:
    none, e.g. when the shipped labels are made over a whole folder by their own
    command), with the folder it writes when run without ``--out``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, str] | list[dict[str, str]] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    seeds: list[int] | None = None
    arms: list[str] | None = None
    extra_arms: list[Arm] = Field(default_factory=list)
    arm_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    populations: list[Population] | None = None
    judges: list[str] | None = None
    out: str | None = None
    note: str = ""

    @property
    def model_sets(self) -> list[dict[str, str]]:
        """``models`` as a list of model sets (``[{}]`` when none is named)."""
        return [self.models] if isinstance(self.models, dict) else list(self.models) or [{}]


class Labels(BaseModel):
    """The judge labels a study needs: the taxonomy and how many judges (the panel is
    ``--judges``; by default the study's model this many times)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    taxonomy: str
    judges: int = Field(default=3, ge=1)


class Study(BaseModel):
    """One declared experiment (see the module docstring).

    Attributes:
        name: the study's name (``memory-horizon``), unique over all environments.
        environment: the registered environment that plays it.
        title: a line naming the paper's experiment.
        question: what the experiment asks, in one sentence.
        notebook: the notebook that reads it (file name under ``notebooks/``).
        source: the paper (``SCARCE``, ``SovSim``, ``Economy of Minds``, ``GovSim``).
        replicates: the paper's tables and figures the study replicates.
        paper: the paper's fixed settings (dotted config keys), with ``paper_source``.
        settings: the study's own settings where they depart from the paper's (each
            key needs a reason in ``departures``).
        departures: setting -> why the study departs from the paper there; a key
            that is not in ``settings`` names a paper setting the config cannot
            express (e.g. the paper's task suite).
        arms: the arms (at least one).
        seeds: seeds per arm (0..seeds-1) when the user gives none.
        model_roles: the config fields ``--model`` sets (SCARCE: solver and
            negotiator); the first is the model a run is named by.
        labels: the judge labels it needs (``None``: none).
        headline: the metrics whose intervals ``--target-width`` watches.
        populations: cross-play grids every run of the study is crossed with (a
            focal/background study; members left out: the models it is run with).
        profiles: other ways of running it (the shipped data).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    environment: str
    title: str
    question: str = ""
    notebook: str
    source: str
    replicates: list[str] = Field(default_factory=list)
    paper: dict[str, Any] = Field(default_factory=dict)
    paper_source: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)
    departures: dict[str, str] = Field(default_factory=dict)
    arms: list[Arm] = Field(min_length=1)
    seeds: int = Field(default=5, ge=1)
    seed_field: str = "seed"
    model_roles: list[str] = Field(default_factory=lambda: ["model"], min_length=1)
    labels: Labels | None = None
    headline: list[str] = Field(default_factory=list)
    populations: list[Population] = Field(default_factory=list)
    profiles: dict[str, Profile] = Field(default_factory=dict)

    @field_validator("arms")
    @classmethod
    def _arm_names_unique(cls, arms: list[Arm]) -> list[Arm]:
        names = [a.name for a in arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names repeat: {names}")
        return arms

    @model_validator(mode="after")
    def _departures_explained(self) -> Study:
        missing = sorted(k for k in self.settings if k not in self.departures)
        if missing:
            raise ValueError(f"settings {missing} depart from the paper without a reason in 'departures'")
        own = {a.name for a in self.arms}
        for name, p in self.profiles.items():
            extra = [a.name for a in p.extra_arms]
            if set(extra) & own or len(set(extra)) != len(extra):
                raise ValueError(f"profile {name!r}: extra_arms {extra} repeat a name (the study's arms: {sorted(own)})")
            unknown = sorted((set(p.arms or ()) | set(p.arm_settings)) - own - set(extra))
            if unknown:
                raise ValueError(f"profile {name!r} names arms the study has not: {unknown}")
            fields = sorted({f for m in p.model_sets for f in m} - set(self.model_roles))
            if fields:
                raise ValueError(f"profile {name!r} sets models of fields not in model_roles: {fields}")
        return self

    # -- turning a study into run configs ------------------------------------------------
    def arm(self, name: str, profile: str | None = None) -> Arm:
        """The arm called ``name`` (with ``profile``: its extra arms too, and the
        settings it pins over the arm's).

        Raises:
            StudyError: no such arm (the study's arms named).
        """
        prof = self.profile(profile)
        for a in [*self.arms, *prof.extra_arms]:
            if a.name == name:
                pinned = prof.arm_settings.get(name)
                return a.model_copy(update={"settings": {**a.settings, **pinned}}) if pinned else a
        raise StudyError(f"study {self.name!r} has no arm {name!r}; its arms: "
                         f"{[a.name for a in [*self.arms, *prof.extra_arms]]}")

    def profile(self, name: str | None) -> Profile:
        """The profile called ``name`` (``None``: the paper's design, an empty profile).

        Raises:
            StudyError: no such profile (the study's profiles named).
        """
        if name is None:
            return Profile()
        if name not in self.profiles:
            raise StudyError(f"study {self.name!r} has no profile {name!r}; its profiles: {sorted(self.profiles)}")
        return self.profiles[name]

    def base_settings(self, profile: str | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """The settings every run of the study shares (dotted keys): the paper's, then the
        study's departures, the profile's and ``overrides`` (the user's ``-S``)."""
        return {**self.paper, **self.settings, **self.profile(profile).settings, **(overrides or {})}

    def departures_of(self, profile: str | None = None, overrides: dict[str, Any] | None = None,
                      models: list[str] | None = None) -> list[dict[str, Any]]:
        """Every setting in which runs of this study depart from the paper:
        ``[{"setting", "paper", "here", "why"}]``: the study's own departures (with their
        reasons), a profile's and the user's settings, and the models when the paper
        names them in ``paper`` (a model that is not the paper's is always listed)."""
        out: list[dict[str, Any]] = []
        prof = self.profile(profile)
        for key, value in self.settings.items():
            out.append({"setting": key, "paper": self.paper.get(key, "(not set)"), "here": value,
                        "why": self.departures[key]})
        for key in [k for k in self.departures if k not in self.settings]:  # a paper setting the config cannot express
            out.append({"setting": key, "paper": "(the paper's)", "here": "(not a config setting)",
                        "why": self.departures[key]})
        for origin, values in ((f"profile {profile}", prof.settings), ("-S", overrides or {})):
            for key, value in values.items():
                paper = self.paper.get(key, self.settings.get(key, "(default)"))
                if paper != value:
                    out.append({"setting": key, "paper": paper, "here": value, "why": f"set by {origin}"})
        for arm, values in prof.arm_settings.items():
            for key, value in values.items():
                out.append({"setting": f"{key} (arm {arm})", "paper": self.paper.get(key, "(default)"), "here": value,
                            "why": f"set by profile {profile} on arm {arm}"})
        for arm in prof.extra_arms:
            out.append({"setting": f"arm {arm.name}", "paper": "(not an arm of the paper's)", "here": arm.settings,
                        "why": f"added by profile {profile}" + (f": {arm.note}" if arm.note else "")})
        paper_models = self.paper.get("models")
        for model in models or []:
            out.append({"setting": "model", "paper": paper_models or "(the paper's models)", "here": model,
                        "why": "the model run here"})
        return out

    def configs(self, models: dict[str, str] | list[dict[str, str]] | None = None, *,
                seeds: list[int] | None = None, arms: list[str] | None = None, profile: str | None = None,
                overrides: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
        """Every run of the study as ``(arm name, config)``, arm-major then model then
        seed (then, for a cross-play study, composition inside each).

        Args:
            models: ``{model field: model}`` (one model set) or a list of them (one arm
                set per model set); a field of ``model_roles`` left out takes the first
                field's model. A profile's model sets fill the fields the caller leaves
                out (every caller set over every profile set); none given: the
                profile's model sets.
            seeds: the seeds (default: the profile's, else ``0..self.seeds-1``).
            arms: a subset of the arms by name (default: the profile's, else all).
            profile: a profile name (:meth:`profile`).
            overrides: the user's settings (dotted keys), over the study's and under the
                arm's; an override of a setting an arm varies is refused.

        Raises:
            StudyError: an unknown arm or profile, no model, an override of an arm's
                setting, a cross-play grid that cannot be planned, a run named twice, or a config the
                environment refuses (study, arm, field and value named).
        """
        from ..config.base import ConfigError, build_config
        from ..registry import get

        prof = self.profile(profile)
        cls = get(self.environment).config
        given = [models] if isinstance(models, dict) else list(models or [])
        model_sets = [{**p, **g} for g in given or [{}] for p in prof.model_sets]
        model_sets = [m for i, m in enumerate(model_sets) if m not in model_sets[:i]]
        chosen = [self.arm(a, profile) for a in (arms or prof.arms or [a.name for a in self.arms])]
        varied = sorted({k for a in self.arms for k in a.settings} & set(overrides or {}))
        if varied:
            raise StudyError(f"study {self.name!r}: {varied} are what its arms vary; leave them to the arms "
                             f"(or run a subset with --arm)")
        seed_list = list(seeds) if seeds is not None else (list(prof.seeds) if prof.seeds is not None
                                                             else list(range(self.seeds)))
        base = self.base_settings(profile, overrides)
        base.pop("models", None)  # the paper's model names: documentation, not a setting
        populations = self.populations if prof.populations is None else prof.populations
        out: list[tuple[str, Any]] = []
        for arm in chosen:
            for mset in model_sets:
                first = mset.get(self.model_roles[0]) or next(iter(mset.values()), None)
                if first is None:
                    raise StudyError(f"study {self.name!r}: no model for {self.model_roles[0]!r} (--model)")
                fields = {f: mset.get(f, first) for f in self.model_roles}
                runs = []
                for seed in seed_list:
                    values = {**base, **arm.settings, **fields, self.seed_field: seed}
                    try:
                        runs.append(build_config(cls, values=values))
                    except ConfigError as exc:
                        raise StudyError(f"study {self.name!r}, arm {arm.name!r}: {exc}") from None
                if not populations:
                    out += [(arm.name, cfg) for cfg in runs]
                    continue
                if mset is not model_sets[0]:
                    continue  # a grid's members are the models: one grid per arm
                members = [m.get(self.model_roles[0]) or next(iter(m.values())) for m in model_sets]
                out += [(arm.name, cfg) for cfg in self._crossed(runs, populations, members, arm.name)]
        ids = [c.run_id for _, c in out]  # one folder per run: a repeated seed or arm would run it twice
        if twice := sorted({(a, i) for a, c in out if ids.count(i := c.run_id) > 1}):
            raise StudyError(f"study {self.name!r}: runs named twice {twice[:4]} (seeds {seed_list}): "
                             "give each seed, arm and model set once")
        return out

    def _crossed(self, runs: list[Any], populations: list[Population], members: list[str], arm: str) -> list[Any]:
        """``runs`` crossed with each population (members left out: ``members``)."""
        from ..runners.crossplay import CrossPlayError, PopulationSettings, plan_crossplay

        out = []
        for pop in populations:
            try:
                settings = PopulationSettings.parse(pop.members or members, pop.background, pop.focal_seats, pop.part)
                out += plan_crossplay(runs, settings, environment=self.environment).configs
            except CrossPlayError as exc:
                raise StudyError(f"study {self.name!r}, arm {arm!r}: {exc}") from None
        return out

    def arm_of(self, settings: dict[str, Any]) -> str | None:
        """The arm a run belongs to, from its condition settings (dotted keys -> values,
        e.g. a manifest's config flattened): the arm every one of whose settings the run
        has. When several do, the one with the most settings that depart from the paper's
        (``budget-asymmetry``: a run of arm ``rich``, one worker at 1,500 credits, also has
        arm ``equal``'s ``memory = "cross"``, the paper's own value); ``None`` when no arm
        matches, or that still leaves a tie (an ambiguous run is never counted in an arm)."""
        hits = [a for a in self.arms if all(_same(settings.get(k), v) for k, v in a.settings.items())]
        if len(hits) > 1:
            own = [sum(not (k in self.paper and _same(self.paper[k], v)) for k, v in a.settings.items()) for a in hits]
            hits = [a for a, n in zip(hits, own, strict=True) if n == max(own)]
        return hits[0].name if len(hits) == 1 else None

    # -- running and reporting (scarce_lab.studies.run, scarce_lab.studies.report) ----
    def plan(self, models: Any = None, *, out: Any, model: Any = None, **options: Any) -> Any:
        """:func:`scarce_lab.studies.run.plan` of this study (``model``: an alias of
        ``models``); nothing is sent."""
        from .run import plan

        return plan(self, models if models is not None else model, out=out, **options)

    def run(self, models: Any = None, *, out: Any, model: Any = None, **options: Any) -> Any:
        """:func:`scarce_lab.studies.run.run` of this study: runs what is missing in
        ``out``, labels it, returns its :class:`~scarce_lab.studies.run.StudyStatus`."""
        from .run import run

        return run(self, models if models is not None else model, out=out, **options)

    def status(self, out: Any) -> Any:
        """:func:`scarce_lab.studies.run.status` of ``out`` (a folder of this study).

        Raises:
            StudyError: ``out`` holds another study's runs.
        """
        from .run import read_state, status

        state = read_state(out)
        if state is not None and state["study"] != self.name:
            raise StudyError(f"{out} holds study {state['study']!r}, not {self.name!r}")
        return status(out)

    def report(self, out_or_dataset: Any, **options: Any) -> Any:
        """:func:`scarce_lab.studies.report.report` of this study on ``out_or_dataset``
        (labels from ``OUT/labels/labels.parquet`` when ``labels`` is not given)."""
        from pathlib import Path

        from .report import report

        if "labels" not in options and isinstance(out_or_dataset, str | Path) and Path(out_or_dataset).is_dir():
            options["labels"] = self.labels_in(out_or_dataset)
        return report(self, out_or_dataset, **options)

    def labels_in(self, out: Any) -> str | None:
        """The judge labels a run of this study wrote into ``out``
        (``labels/labels.parquet``; a relative ``out`` resolved from the project root as
        every notebook path), or ``None`` when it wrote none.

        Raises:
            FileNotFoundError: ``out`` does not exist (the run wrote nothing there).
        """
        from .notebook import study_labels

        return study_labels(out)

    def note(self, data: Any, **options: Any) -> Any:
        """What ``data`` (a Dataset or a list of them) can and cannot show about this
        study: :func:`scarce_lab.studies.notebook.data_note` (``labels``, ``model``,
        ``run_dir`` as there)."""
        from .notebook import data_note

        return data_note(self, data, **options)

    def headline_intervals(self) -> dict[str, str]:
        """``{headline metric: interval kind}`` as the environment's ``study_metrics(None)``
        declares them (:data:`scarce_lab.analysis.stats.INTERVAL_KINDS`: what each prints,
        and whether ``--target-width`` may watch it).

        Raises:
            StudyError: the environment declares no ``study_metrics`` or not as
                ``{metric: kind}``, a headline metric it does not compute (named, with
                those it computes), or a kind that is not known.
        """
        from ..analysis.stats import interval_kind
        from ..registry import get

        hook = get(self.environment).study_metrics
        declared = hook(None) if hook is not None else {}
        if not isinstance(declared, Mapping):
            raise StudyError(f"{self.environment}'s study_metrics(None) must give {{metric: interval kind}}, "
                             f"got {type(declared).__name__} (EnvironmentSpec.study_metrics)")
        unknown = sorted(set(self.headline) - set(declared))
        if unknown:
            raise StudyError(f"study {self.name!r}: headline metrics {unknown} are not computed by "
                             f"{self.environment}'s study_metrics (it computes: {', '.join(declared)})")
        for m in self.headline:
            try:
                interval_kind(declared[m])
            except ValueError as exc:
                raise StudyError(f"{self.environment}'s study_metrics declares for {m}: {exc}") from None
        return {m: declared[m] for m in self.headline}

    def _headline_kinds(self) -> str:
        """Each headline metric with its interval's kind and whether ``--target-width``
        may watch it (:meth:`headline_intervals`)."""
        from ..analysis.stats import interval_kind

        try:
            kinds = self.headline_intervals()
        except StudyError as exc:
            return f"{', '.join(self.headline)} ({exc})"
        return ", ".join(f"{m} ({k}; " + ("--target-width may watch it" if interval_kind(k).under_stopping
                                          else "not under --target-width") + ")" for m, k in kinds.items())

    def show(self) -> str:
        """The design as text: the question, the paper's settings, the arms, the seeds,
        the labels, the profiles, and every departure from the paper with its reason."""
        lines = [f"{self.name}: {self.title} ({self.environment}; notebook {self.notebook})"]
        if self.question:
            lines.append(f"  question: {self.question}")
        if self.replicates:
            lines.append(f"  replicates: {self.source} {', '.join(self.replicates)}")
        paper = {k: v for k, v in self.paper.items()}
        lines.append("  the paper's settings" + (f" ({self.paper_source})" if self.paper_source else "") + ": "
                     + (", ".join(f"{k}={v}" for k, v in paper.items()) or "(the config's defaults)"))
        lines.append(f"  arms ({len(self.arms)}): " + "; ".join(
            f"{a.name} [{', '.join(f'{k}={v}' for k, v in a.settings.items()) or 'the paper baseline'}]"
            for a in self.arms))
        lines.append(f"  seeds per arm: {self.seeds}; models set: {', '.join(self.model_roles)}")
        if self.labels:
            lines.append(f"  labels: {self.labels.taxonomy} taxonomy, a panel of {self.labels.judges} judges")
        if self.populations:
            lines.append("  cross-play: " + "; ".join(str(q.model_dump(exclude_none=True)) for q in self.populations))
        if self.headline:
            lines.append(f"  headline metrics and their intervals: {self._headline_kinds()}")
        deps = self.departures_of()
        lines.append("  departures from the paper: " + ("none" if not deps else ""))
        lines += [f"    {d['setting']}: paper {d['paper']}, here {d['here']} ({d['why']})" for d in deps]
        for name, p in self.profiles.items():
            bits = [f"models {p.models}" if p.models else "", f"settings {p.settings}" if p.settings else "",
                    f"seeds {p.seeds}" if p.seeds is not None else "", f"arms {p.arms}" if p.arms else "",
                    f"extra arms {[(a.name, a.settings) for a in p.extra_arms]}" if p.extra_arms else "",
                    f"arm settings {p.arm_settings}" if p.arm_settings else "",
                    f"populations {[q.model_dump(exclude_none=True) for q in p.populations]}" if p.populations else "",
                    f"judges {p.judges or 'none'}" if p.judges is not None else "",
                    f"out {p.out}" if p.out else ""]
            lines.append(f"  profile {name}: " + "; ".join(b for b in bits if b) + (f" ({p.note})" if p.note else ""))
        return "\n".join(lines)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


# -- the declared studies ------------------------------------------------------------------
STUDIES_FILE = "studies.toml"


def _package_of(environment: str) -> str:
    from ..registry import get

    face = get(environment).face or ""
    return face.rsplit(".analysis", 1)[0] if face.endswith(".analysis") else face


def read_studies(text: str, origin: str, environment: str) -> list[Study]:
    """The studies of one ``studies.toml`` text (``origin`` names it in errors).

    Raises:
        StudyError: not TOML, or a study that does not validate (file, study, field named).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{origin}: not valid TOML ({exc})") from None
    out = []
    for i, raw in enumerate(data.get("study", [])):
        raw = {"environment": environment, **raw}
        try:
            out.append(Study.model_validate(raw))
        except ValidationError as exc:
            from ..config.base import describe_validation_error

            raise StudyError(f"{origin}: study {raw.get('name', i)!r}: "
                             f"{describe_validation_error(exc, 'Study')}") from None
        if out[-1].environment != environment:
            raise StudyError(f"{origin}: study {out[-1].name!r} names environment {out[-1].environment!r}, "
                             f"declared under {environment!r}")
    return out


@cache
def _all() -> dict[str, Study]:
    from ..registry import names

    found: dict[str, Study] = {}
    for env in names():
        pkg = _package_of(env)
        if not pkg:
            continue
        try:
            res = resources.files(pkg) / STUDIES_FILE
        except ModuleNotFoundError:
            continue
        if not res.is_file():
            continue
        for st in read_studies(res.read_text(encoding="utf-8"), f"{pkg}/{STUDIES_FILE}", env):
            if st.name in found:
                raise StudyError(f"study {st.name!r} is declared twice ({found[st.name].environment} and {env})")
            found[st.name] = st
    return found


def names() -> list[str]:
    """The declared studies' names, sorted."""
    return sorted(_all())


def studies() -> list[Study]:
    """Every declared study, by name."""
    return [_all()[n] for n in names()]


def get(name: str) -> Study:
    """The study called ``name``.

    Raises:
        StudyError: no such study (the declared ones named).
    """
    found = _all()
    if name not in found:
        raise StudyError(f"no study {name!r}; declared: {', '.join(sorted(found))}")
    return found[name]

