"""Undefined, because ...: the one convention for a statistic that has no value.

A statistic that cannot be computed (no runs, one run, no spread, a single category,
fewer than two raters...) is :class:`Undefined`: a ``float`` NaN that carries the
reason. It is a float, so arithmetic, numpy and polars treat it as NaN exactly as
before (no number changes), and code that wants to say *why* reads ``.reason`` (or
:func:`reason_of`). Frames store it as null at their boundary (:func:`or_none`), so a
table has one missing-value convention too: null, with the reason in a ``*_reason``
column where the table has one.

Used by :mod:`scarce_lab.analysis.stats` (intervals, Gini, correlations) and
:mod:`scarce_lab.judge.stat` (agreement statistics). A leaf module: it imports nothing
of the package, so every layer may use it.
"""

from __future__ import annotations

import math

# Reasons shared by the analysis core (the judge's own are in scarce_lab.judge.stat).
NO_VALUES = "no values"
ONE_VALUE = "one value: no interval"
NO_SPREAD = "values without spread: a zero-width interval would overstate certainty"
TOO_FEW = "too few values for this method"


class Undefined(float):
    """NaN with the reason it is undefined: ``Undefined("one value: no interval")``.

    Behaves as ``float("nan")`` in every computation (``math.isnan`` is true, it
    compares unequal to itself, arithmetic gives NaN); ``.reason`` says why.
    """

    __slots__ = ("reason",)

    def __new__(cls, reason: str) -> Undefined:
        if not isinstance(reason, str) or not reason:
            raise ValueError(f"Undefined: reason must be a non-empty string, got {reason!r}")
        obj = super().__new__(cls, math.nan)
        obj.reason = reason
        return obj

    def __repr__(self) -> str:
        return f"Undefined({self.reason!r})"

    def __reduce__(self):
        return (Undefined, (self.reason,))


def is_undefined(x: object) -> bool:
    """True for :class:`Undefined`, ``None`` and any float NaN (a bare NaN is undefined
    for an unstated reason)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def reason_of(x: object) -> str | None:
    """Why ``x`` is undefined: its reason, ``"not stated"`` for a bare NaN or ``None``,
    ``None`` when ``x`` is a value."""
    if isinstance(x, Undefined):
        return x.reason
    return "not stated" if is_undefined(x) else None


def or_none(x: float | None) -> float | None:
    """``x`` as a frame cell: ``None`` (null) when undefined or not finite, else
    ``float(x)``."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None
