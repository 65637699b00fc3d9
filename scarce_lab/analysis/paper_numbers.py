"""The papers' published numbers as data: ``scarce_lab/environments/<env>/paper_numbers.toml``.

One ``[[number]]`` table per published number (keys: the fields of :class:`PaperNumber`;
a ``[defaults]`` table gives keys every entry shares, e.g. ``source`` and ``citation``).
A number the paper gives only as a range is ``kind = "range"`` (``low``, ``high``); a
claim it makes only in prose is ``kind = "statement"`` with its ``text`` and no value,
never a cell made up from it. Where a number appears only in a summary of the paper,
``citation`` says "paper summary" and names the summary file (docs/studies.md).

Errors: a file that does not validate raises :class:`PaperNumbersError` naming the
file, the entry (its index and ``id``) and the field. It lives with the analysis (not
with :mod:`scarce_lab.studies`) so that an environment's findings can cite these numbers
(SovSim's ``PAPER_CLAIMS``) while reading datasets only.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class PaperNumbersError(ValueError):
    """A published-numbers file that cannot be read (file, entry and field named)."""


NUMBERS_FILE = "paper_numbers.toml"
#: Units a published number may have; ``%`` is divided by 100 before it meets an
#: estimate (the metrics give shares as fractions), every other unit is compared as is.
Unit = Literal["%", "credits", "seconds", "ratio", "rounds", "points", "r", "EDP", "cost"]


class PaperNumber(BaseModel):
    """One published number.

    Attributes:
        id: a short name, unique in its file (for messages and for the report's rows).
        source: the paper (``SCARCE``, ``SovSim``, ``Economy of Minds``, ``GovSim``): a
            study's ``source``.
        citation: where the number is written (``paper summary
            (../shared/papers/002_ba057dac113db4b3.txt)``, a repository path).
        table: the paper's table or figure (``Table 2``, ``Figure 6``): a study
            replicates it when its ``replicates`` names it.
        model: the paper's model for this number (``GLM-5.3``), or a description for a
            number over several (``8 models``).
        arm: the study arm whose runs estimate it (``None``: a statement about no arm).
        metric: the name the environment's ``study_metrics`` computes (``None``: a
            statement).
        where: extra settings the runs must have (dotted key -> value, e.g. the task of
            an Economy of Minds number); a run without them is not counted.
        kind: ``value`` (``value``), ``range`` (``low`` .. ``high``) or ``statement``
            (``text`` only).
        unit: the unit of ``value``/``low``/``high`` as published.
        text: the paper's claim in a few words (required for a statement).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@%<>=+-]*$")
    source: str
    citation: str = Field(min_length=1)
    table: str = Field(min_length=1)
    model: str = Field(min_length=1)
    arm: str | None = None
    metric: str | None = None
    where: dict[str, str | int | float | bool] = Field(default_factory=dict)
    kind: Literal["value", "range", "statement"]
    # finite: TOML writes nan and inf, and either compares false with every bound
    value: float | None = Field(None, allow_inf_nan=False)
    low: float | None = Field(None, allow_inf_nan=False)
    high: float | None = Field(None, allow_inf_nan=False)
    unit: Unit | None = None
    text: str = ""

    @model_validator(mode="after")
    def _kind_fields(self) -> PaperNumber:
        if self.kind == "statement":
            if not self.text.strip():
                raise ValueError("a statement needs its text")
            if self.value is not None or self.low is not None or self.high is not None:
                raise ValueError("a statement has no value, low or high (its text says the claim)")
            return self
        if self.arm is None or self.metric is None or self.unit is None:
            raise ValueError(f"a {self.kind} needs arm, metric and unit")
        if self.kind == "value" and (self.value is None or self.low is not None or self.high is not None):
            raise ValueError("a value needs value and no low/high")
        if self.kind == "range" and (self.low is None or self.high is None or self.value is not None
                                     or not self.low <= self.high):
            raise ValueError("a range needs low <= high and no value")
        return self

    def scale(self, x: float | None) -> float | None:
        """``x`` in the metrics' units (a percentage as a fraction)."""
        return None if x is None else x / 100 if self.unit == "%" else x

    def shown(self) -> str:
        """The number as the report's ``paper`` cell writes it."""
        if self.kind == "statement":
            return self.text
        u = "%" if self.unit == "%" else f" {self.unit}"
        if self.kind == "range":
            return f"{self.low:g}-{self.high:g}{u}"
        return f"{self.value:g}{u}"


def read_numbers(text: str, origin: str) -> list[PaperNumber]:
    """The numbers of one ``paper_numbers.toml`` text (``origin`` names it in errors).

    Raises:
        PaperNumbersError: not TOML, an unknown top-level key, an entry that does not validate
            (file, entry index and id, field named), or an id used twice.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PaperNumbersError(f"{origin}: not valid TOML ({exc})") from None
    extra = sorted(set(data) - {"defaults", "number"})
    if extra:
        raise PaperNumbersError(f"{origin}: unknown top-level keys {extra} (only [defaults] and [[number]])")
    defaults = data.get("defaults", {})
    out: list[PaperNumber] = []
    for i, raw in enumerate(data.get("number", [])):
        try:
            out.append(PaperNumber.model_validate({**defaults, **raw}))
        except ValidationError as exc:
            errs = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(entry)'}: {e['msg']}" for e in exc.errors())
            raise PaperNumbersError(f"{origin}: number {i} ({raw.get('id', 'no id')!r}): {errs}") from None
    ids = [n.id for n in out]
    twice = sorted({x for x in ids if ids.count(x) > 1})
    if twice:
        raise PaperNumbersError(f"{origin}: ids used twice: {twice}")
    return out


@cache
def numbers_of(environment: str) -> tuple[PaperNumber, ...]:
    """Every published number an environment ships (empty when it ships no file).

    Raises:
        PaperNumbersError: as :func:`read_numbers`.
    """
    from ..registry import get

    face = get(environment).face or ""
    pkg = face.rsplit(".analysis", 1)[0] if face.endswith(".analysis") else face
    if not pkg:
        return ()
    res = resources.files(pkg) / NUMBERS_FILE
    if not res.is_file():
        return ()
    return tuple(read_numbers(res.read_text(encoding="utf-8"), f"{pkg}/{NUMBERS_FILE}"))
