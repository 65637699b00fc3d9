"""Metrics and statistics on polars frames. Never imports environments or agents:
it reads datasets only, so it works on other people's runs too.

Layout: one core and one package per environment.

- core: :mod:`.stats` (every interval method, with the coverage that justifies it;
  undefined values are :class:`scarce_lab.undefined.Undefined`, a NaN with its reason),
  :mod:`.pooling` (the never-pool check and the one :class:`~.pooling.PoolingError`),
  :mod:`.figures` (charts and table writers), :mod:`.charts` (interval charts of
  result frames), :mod:`.saydo` (say against do: what every environment's comparisons
  share), :mod:`.labels` (condition labels),
  :mod:`.comparisons` (multiple-comparison families), :mod:`.llm_outcomes` (what
  became of the model's decisions, any environment), :mod:`.result` (a finding that
  shows and saves itself);
- :mod:`.sovsim`, :mod:`.scarce`, :mod:`.economy`: each environment's metrics, charts
  and sentences; each package's ``__init__`` is its public face (``sl.sovsim``,
  ``sl.scarce``, ``sl.economy``), the names a notebook uses.
"""

from importlib import import_module as _import_module
from typing import Any as _Any

#: Modules moved into the environment packages: old name -> new module (relative). The
#: old names still import (``from scarce_lab.analysis import scarce_experiments as X``,
#: the pattern earlier notebooks used), with a DeprecationWarning naming the new path.
_MOVED = {
    "condition_labels": ".labels", "paper_tables": ".scarce.paper_tables",
    "scarce_base": ".scarce.base", "scarce_charts": ".scarce.charts", "scarce_dynamics": ".scarce.dynamics",
    "scarce_experiments": ".scarce.experiments", "scarce_tactics": ".scarce.tactics",
    "sovsim_charts": ".sovsim.charts", "sovsim_conventions": ".sovsim.conventions", "sovsim_cross": ".sovsim.cross",
    "sovsim_drops": ".sovsim.drops", "sovsim_dynamics": ".sovsim.dynamics", "sovsim_pooling": ".sovsim.pooling",
    "economy_compare": ".economy.compare",
}


def __getattr__(name: str) -> _Any:
    if name in _MOVED:
        import warnings

        new = "scarce_lab.analysis" + _MOVED[name]
        warnings.warn(f"scarce_lab.analysis.{name} moved to {new} (or use the face: import scarce_lab as sl)",
                      DeprecationWarning, stacklevel=2)
        return _import_module(_MOVED[name], __name__)
    raise AttributeError(f"module 'scarce_lab.analysis' has no attribute {name!r}")

