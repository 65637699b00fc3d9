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
report lists (:meth:`Study.departures`).

Errors: a declaration that does not validate raises :class:`StudyError` naming the file,
the study and the field; an arm or profile setting the environment's config refuses is
raised when the configs are built, naming the study, the arm and the setting.
"""

from __future__ import annotations

import tomllib
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


class Profile(BaseModel):
    """A named way of running a study other than the paper's: the shipped data's
    scripted or embedded runs (``models`` per model field, ``settings``, ``seeds``,
    ``arms`` a subset), with the folder it writes when run without ``--out``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    seeds: list[int] | None = None
    arms: list[str] | None = None
    out: str | None = None
    note: str = ""


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
        departures: setting -> why the study departs from the paper there.
        arms: the arms (at least one).
        seeds: seeds per arm (0..seeds-1) when the user gives none.
        model_roles: the config fields ``--model`` sets (SCARCE: solver and
            negotiator); the first is the model a run is named by.
        labels: the judge labels it needs (``None``: none).
        headline: the metrics whose intervals ``--target-width`` watches.
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
        for name, p in self.profiles.items():
            unknown = sorted(set(p.arms or ()) - {a.name for a in self.arms})
            if unknown:
                raise ValueError(f"profile {name!r} names arms the study has not: {unknown}")
            fields = sorted(set(p.models) - set(self.model_roles))
            if fields:
                raise ValueError(f"profile {name!r} sets models of fields not in model_roles: {fields}")
        return self

    # -- turning a study into run configs ------------------------------------------------
    def arm(self, name: str) -> Arm:
        """The arm called ``name``.

        Raises:
            StudyError: no such arm (the study's arms named).
        """
        for a in self.arms:
            if a.name == name:
                return a
        raise StudyError(f"study {self.name!r} has no arm {name!r}; its arms: {[a.name for a in self.arms]}")

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
        for origin, values in ((f"profile {profile}", prof.settings), ("-S", overrides or {})):
            for key, value in values.items():
                paper = self.paper.get(key, self.settings.get(key, "(default)"))
                if paper != value:
                    out.append({"setting": key, "paper": paper, "here": value, "why": f"set by {origin}"})
        paper_models = self.paper.get("models")
        for model in models or []:
            out.append({"setting": "model", "paper": paper_models or "(the paper's models)", "here": model,
                        "why": "the model run here"})
        return out

    def configs(self, models: dict[str, str] | list[dict[str, str]], *, seeds: list[int] | None = None,
                arms: list[str] | None = None, profile: str | None = None,
                overrides: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
        """Every run of the study as ``(arm name, config)``, arm-major then model then
        seed.

        Args:
            models: ``{model field: model}`` (one model set) or a list of them (one arm
                set per model set); a field of ``model_roles`` left out takes the first
                field's model; a profile's ``models`` fill fields the caller leaves out.
            seeds: the seeds (default: the profile's, else ``0..self.seeds-1``).
            arms: a subset of the arms by name (default: the profile's, else all).
            profile: a profile name (:meth:`profile`).
            overrides: the user's settings (dotted keys), over the study's and under the
                arm's; an override of a setting an arm varies is refused.

        Raises:
            StudyError: an unknown arm or profile, an override of an arm's setting, or a
                config the environment refuses (study, arm, field and value named).
        """
        from ..config.base import ConfigError, build_config
        from ..registry import get

        prof = self.profile(profile)
        cls = get(self.environment).config
        model_sets = [models] if isinstance(models, dict) else list(models)
        if not model_sets:
            raise StudyError(f"study {self.name!r}: no model given (--model)")
        chosen = [self.arm(a) for a in (arms or prof.arms or [a.name for a in self.arms])]
        varied = sorted({k for a in self.arms for k in a.settings} & set(overrides or {}))
        if varied:
            raise StudyError(f"study {self.name!r}: {varied} are what its arms vary; leave them to the arms "
                             f"(or run a subset with --arm)")
        seed_list = list(seeds) if seeds is not None else (list(prof.seeds) if prof.seeds is not None
                                                             else list(range(self.seeds)))
        base = self.base_settings(profile, overrides)
        base.pop("models", None)  # the paper's model names: documentation, not a setting
        out: list[tuple[str, Any]] = []
        for arm in chosen:
            for mset in model_sets:
                given = {**prof.models, **mset}
                first = given.get(self.model_roles[0]) or next(iter(given.values()), None)
                if first is None:
                    raise StudyError(f"study {self.name!r}: no model for {self.model_roles[0]!r}")
                fields = {f: given.get(f, first) for f in self.model_roles}
                for seed in seed_list:
                    values = {**base, **arm.settings, **fields, self.seed_field: seed}
                    try:
                        out.append((arm.name, build_config(cls, values=values)))
                    except ConfigError as exc:
                        raise StudyError(f"study {self.name!r}, arm {arm.name!r}: {exc}") from None
        return out

    def arm_of(self, settings: dict[str, Any]) -> str | None:
        """The arm a run belongs to, from its condition settings (dotted keys -> values,
        e.g. a manifest's config flattened): the arm every one of whose settings the run
        has; ``None`` when no arm matches, or more than one does (an ambiguous run is
        never counted in an arm)."""
        hits = [a.name for a in self.arms if all(_same(settings.get(k), v) for k, v in a.settings.items())]
        return hits[0] if len(hits) == 1 else None

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

        if "labels" not in options and isinstance(out_or_dataset, str | Path):
            found = Path(out_or_dataset) / "labels" / "labels.parquet"
            options["labels"] = found if found.exists() else None
        return report(self, out_or_dataset, **options)

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
        if self.headline:
            lines.append(f"  headline metrics (--target-width): {', '.join(self.headline)}")
        deps = self.departures_of()
        lines.append("  departures from the paper: " + ("none" if not deps else ""))
        lines += [f"    {d['setting']}: paper {d['paper']}, here {d['here']} ({d['why']})" for d in deps]
        for name, p in self.profiles.items():
            bits = [f"models {p.models}" if p.models else "", f"settings {p.settings}" if p.settings else "",
                    f"seeds {p.seeds}" if p.seeds is not None else "", f"arms {p.arms}" if p.arms else "",
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

