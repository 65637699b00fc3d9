"""Taxonomies as data: one YAML file per taxonomy, loaded and validated with pydantic.

A taxonomy has *systems* (top level, e.g. "classical negotiation" vs "rules and
norms"), each with *groups*, and *categories* (the labels a judge may give), each
placed in one system and one group. Shipped files live in ``taxonomies/`` beside this
module (``scarce``: the SCARCE paper's 21 categories; ``commons``: SovSim talk;
``casino``: the 10 CaSiNo strategy labels); any YAML file with the same layout works.
Which one labels an environment's talk is the environment's to say
(``EnvironmentSpec.taxonomy``, read by :func:`taxonomy_for`).

Validation (:class:`Taxonomy`): ids unique, every category's system and group exist
and match, every group holds at least one category, every induced label exists.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .. import registry
from ..data.jsonl import read_text

TAXONOMY_DIR = Path(__file__).parent / "taxonomies"
#: The taxonomy that labels a units file when none is named: a units file carries no
#: environment, and its layout (:data:`scarce_lab.judge.units.FRAME_COLUMNS`, rounds as
#: ``contention``) is that of SCARCE's units, so the SCARCE negotiation taxonomy.
UNITS_FILE_TAXONOMY = "scarce"

_ID = r"^[a-z][a-z0-9_\-]*$"


class Group(BaseModel):
    """A group of categories inside a system (e.g. "Coalition building")."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)


class System(BaseModel):
    """A top-level system of categories (e.g. "Rules and spontaneous norms")."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    groups: list[Group] = Field(min_length=1)


class Category(BaseModel):
    """One label: id, name, definition, inclusion/exclusion notes, an example, flags.

    ``relational`` is true when the behaviour exists between particular agents (it
    names, answers or binds specific counterparts).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    system: str
    group: str
    definition: str = Field(min_length=1)
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    example: str = Field(min_length=1)
    relational: bool


class InducedLabel(BaseModel):
    """A label the environment's own instructions ask for (so it is not spontaneous)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    reason: str = ""


class Taxonomy(BaseModel):
    """A validated taxonomy (see module docstring for the checks).

    Raises (on construction):
        pydantic.ValidationError: a duplicate id, a category in an unknown system or
            group, a group in the wrong system, an empty group, an unknown induced label.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID)
    name: str
    version: int = 1
    description: str = ""
    unit: str = Field(min_length=1, description="what one labelled unit is, in words")
    induced_by_instructions: list[InducedLabel] = Field(default_factory=list)
    systems: list[System] = Field(min_length=1)
    categories: list[Category] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> Taxonomy:
        def dupes(ids: list[str]) -> list[str]:
            return sorted({i for i in ids if ids.count(i) > 1})

        cat_ids = [c.id for c in self.categories]
        if d := dupes(cat_ids):
            raise ValueError(f"taxonomy {self.id!r}: duplicate category ids {d}")
        if d := dupes([s.id for s in self.systems]):
            raise ValueError(f"taxonomy {self.id!r}: duplicate system ids {d}")
        group_system: dict[str, str] = {}
        for s in self.systems:
            for g in s.groups:
                if g.id in group_system:
                    raise ValueError(f"taxonomy {self.id!r}: duplicate group id {g.id!r}")
                group_system[g.id] = s.id
        for c in self.categories:
            if c.system not in {s.id for s in self.systems}:
                raise ValueError(
                    f"category {c.id!r}: system {c.system!r} is not one of "
                    f"{[s.id for s in self.systems]}"
                )
            if c.group not in group_system:
                raise ValueError(f"category {c.id!r}: group {c.group!r} is not defined")
            if group_system[c.group] != c.system:
                raise ValueError(
                    f"category {c.id!r}: group {c.group!r} belongs to system "
                    f"{group_system[c.group]!r}, not {c.system!r}"
                )
        used = {c.group for c in self.categories}
        if empty := sorted(set(group_system) - used):
            raise ValueError(f"taxonomy {self.id!r}: groups with no category {empty}")
        for ind in self.induced_by_instructions:
            if ind.id not in cat_ids:
                raise ValueError(f"induced_by_instructions: {ind.id!r} is not a category id")
        return self

    # -- convenient views ------------------------------------------------------------
    @cached_property
    def ids(self) -> list[str]:
        """Category ids in file order."""
        return [c.id for c in self.categories]

    @cached_property
    def relational_ids(self) -> set[str]:
        """Ids of the relational categories."""
        return {c.id for c in self.categories if c.relational}

    @cached_property
    def induced_ids(self) -> set[str]:
        """Ids of the labels the environment's instructions prompt for."""
        return {i.id for i in self.induced_by_instructions}


def taxonomy_for(environment: str) -> str:
    """The shipped taxonomy that labels ``environment``'s talk: its spec's ``taxonomy``
    (:class:`scarce_lab.registry.EnvironmentSpec`).

    Raises:
        ValueError: an environment without a talk taxonomy (names those with one).
        UnknownEnvironmentError: ``environment`` is not registered.
    """
    spec = registry.get(environment)
    if spec.taxonomy is None:
        known = sorted(s.name for s in registry.specs() if s.taxonomy is not None)
        raise ValueError(f"no judge taxonomy for environment {environment!r}; known: {known}")
    return spec.taxonomy


def available_taxonomies() -> list[str]:
    """Names of the shipped taxonomy files (without ``.yaml``)."""
    return sorted(p.stem for p in TAXONOMY_DIR.glob("*.yaml"))


def load_taxonomy(name_or_path: str | Path) -> Taxonomy:
    """Load a shipped taxonomy by name (``"scarce"``, ``"casino"``) or any YAML file.

    Raises:
        FileNotFoundError: not a shipped name and not an existing file.
        ValueError: the YAML does not hold a mapping, or the taxonomy does not validate
            (the message names the file and the failing field).
    """
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = TAXONOMY_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise FileNotFoundError(
                f"unknown taxonomy {str(name_or_path)!r}; shipped: {available_taxonomies()} "
                "(or pass a path to a YAML file)"
            )
    elif not path.exists():
        raise FileNotFoundError(f"taxonomy file does not exist: {path}")
    data: Any = yaml.safe_load(read_text(path))  # BOM accepted
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a taxonomy file must hold a mapping, got {type(data).__name__}")
    try:
        return Taxonomy.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: invalid taxonomy: {exc}") from exc
