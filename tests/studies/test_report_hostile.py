"""The replication report against numbers that are not numbers: a published value
written as ``nan``/``inf`` in a paper_numbers.toml, and an estimate or interval bound
that is NaN or infinite. Neither may turn into an "inside" or "outside" verdict."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from scarce_lab.analysis.paper_numbers import PaperNumber
from scarce_lab.studies.report import _verdict

BASE = {"id": "x1", "source": "SovSim", "citation": "a summary", "table": "Table 3", "model": "M-7",
        "arm": "kcpr", "metric": "survival_rounds", "unit": "rounds"}


@pytest.mark.parametrize("fields", [{"kind": "value", "value": math.nan}, {"kind": "value", "value": -math.inf},
                                    {"kind": "range", "low": 1.0, "high": math.inf},
                                    {"kind": "range", "low": math.nan, "high": 2.0}])
def test_a_published_number_that_is_not_finite_is_refused_when_read(fields):
    with pytest.raises(ValidationError, match="finite"):
        PaperNumber(**BASE, **fields)


@pytest.mark.parametrize(("est", "lo", "hi"), [(4.0, math.nan, 6.0), (4.0, 3.0, math.nan), (math.inf, 3.0, 6.0),
                                               (4.0, -math.inf, math.inf), (4.0, 7.0, 3.0)])
def test_an_estimate_or_interval_that_is_not_a_finite_ordered_interval_gets_no_inside_or_outside(est, lo, hi):
    n = PaperNumber(**BASE, kind="value", value=5.0)
    verdict, why = _verdict(n, est, lo, hi, "")
    assert verdict == "not comparable" and "interval" in why
