"""A statistic's value with the reason it is undefined, and the reasons used.

Agreement and validation statistics are NaN when undefined (nothing to agree on, too
few raters...); :class:`Stat` and :class:`Interval` carry the reason next to the NaN so
that tables and reports can say why. The convention is the package's one
"undefined, because ...": an undefined ``value`` (and ``lo``/``hi``) is a
:class:`scarce_lab.undefined.Undefined`, the NaN with its reason that the analysis core
(:mod:`scarce_lab.analysis.stats`) returns too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..undefined import Undefined

# Why a statistic is undefined (``Stat.reason``; also the ``*_reason`` table columns).
NO_UNITS = "no units"
FEWER_THAN_2_RATERS = "fewer than 2 raters"
NO_PAIRABLE_UNITS = "no unit with 2 or more ratings"
NO_COMPLETE_UNITS = "no unit rated by every rater"
SINGLE_CATEGORY = "single category"
NO_DEFINED_LABEL = "no label with a defined value"
NO_LABELS = "no labels"


@dataclass(frozen=True)
class Stat:
    """A statistic's value, or NaN with the reason it is undefined.

    ``reason`` is ``None`` when ``value`` is defined, else one of :data:`NO_UNITS`,
    :data:`FEWER_THAN_2_RATERS`, :data:`NO_PAIRABLE_UNITS`, :data:`NO_COMPLETE_UNITS`,
    :data:`SINGLE_CATEGORY` (every rating in one category: nothing to agree on).
    ``n_units``: units the value is computed on (pairable units for alpha, complete
    units for Fleiss' kappa). ``float(stat)`` is the value.
    """

    value: float
    reason: str | None = None
    n_units: int = 0

    def __post_init__(self) -> None:
        if self.reason is not None and math.isnan(self.value):
            object.__setattr__(self, "value", Undefined(self.reason))

    def __float__(self) -> float:
        return float(self.value)

    @property
    def defined(self) -> bool:
        """True when the value is a number (not NaN)."""
        return self.reason is None


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``(lo, hi)``, or ``(NaN, NaN)`` with the reason.

    Unpacks as a pair: ``lo, hi = interval``.
    """

    lo: float
    hi: float
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.reason is not None:
            for end in ("lo", "hi"):
                if math.isnan(getattr(self, end)):
                    object.__setattr__(self, end, Undefined(self.reason))

    def __iter__(self):
        yield self.lo
        yield self.hi
