"""scarce_lab: LLM agents under economic rules.

Three environments (SCARCE slot auctions, Economy of Minds, SovSim commons), one typed
trajectory format, loaders that return polars frames, and paper tables with
confidence intervals. In a notebook::

    import scarce_lab as sl
    ds = sl.load("data/sovsim")          # our runs, a Parquet export, or a published layout (or a list)
    ds.sovsim.agent_rounds                # the environment's view: its tidy tables, each built once
    sl.table(ds)                          # the paper table, with 95% CIs
    sl.view("data/scarce/.../run_dir")    # one run as a timeline
    sl.run(sl.config.SovSimConfig(condition="kcpr", model="scripted/greedy"), out="runs/x")
    sl.export(ds, "exports/sovsim")       # Parquet, read back by sl.load
    plan = sl.crossplay(cfg, ["scripted/greedy", "embedded/smollm2"], focal_seats="king")  # a cross-play grid
    sl.fork("runs/x/<run>", at=5, intervene="rule:setting=misreport,value=false", seeds="0..4", out="forks")
    sl.effects("forks")                   # paired effects against the none forks, intervals over parents
    sl.selection.select(cfg, "scripted/greedy,embedded/smollm2", generations=5, rule="eom", chains=4, out="sel")
    sl.selection.share_finding("sel")     # the share of each model over generations, intervals over chains

One face per environment, with explicit keyword signatures (Shift+Tab in JupyterLab
shows ``preset``, ``strict``, ``by``, ``force``)::

    t1 = sl.sovsim.table(ds, preset="sovsim", strict=False, by="condition")
    t1.save("figures/01")                 # a Finding: frame, chart, reading; saves itself
    sl.scarce.win_rates(sl.load("data/scarce/scripted/models")).save("figures/02")  # a SCARCE finding
    sl.economy.learning_curve(sl.load("data/economy/blocksworld"), window=10)   # every finding takes the dataset

``sl.study("memory-horizon")`` is a notebook's declared experiment: ``.note(ds)`` says
what a dataset can show about it, ``.report(ds)`` is its replication report, ``.run(...)``
runs what a folder lacks of it. Charts render offline (no CDN) from the first chart
of a notebook on. ``sl.config`` holds the environments' config models; ``sl.figures`` the chart and
table writers; ``sl.human`` the front ends of human seats (``sl.run(config, out,
human=sl.human.WidgetDesk())`` in JupyterLab, ``TerminalDesk``); ``sl.say``/``sl.show`` display a sentence or a table; ``sl.path`` and
``sl.dataset_path`` resolve notebook paths from the project root. Everything else is
importable from its module.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("scarce-lab")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+source"

_FUNCTIONS = {"run", "view", "export", "crossplay"}
_MODULES = {"config": ".config", "figures": ".analysis.figures", "saydo": ".analysis.saydo",
            "human": ".agents.desks",
            "selection": ".runners.selection"}
#: Other names of the face: name -> (module, attribute).
_ATTRIBUTES = {"load": (".datasets", "load"), "table": (".datasets", "table"),
               "Finding": (".analysis.findings", "Finding"), "say": (".analysis.findings", "say"),
               "show": (".analysis.findings", "show"), "Dataset": (".data.loaders", "Dataset"),
               "path": (".datasets", "resolve_path"), "dataset_path": (".datasets", "dataset_path"),
               "study": (".studies", "get"), "fork": (".forks.launch", "fork"),
               "effects": (".forks.effects", "effects")}
__all__ = sorted(["__version__", *_FUNCTIONS, *_MODULES, *_ATTRIBUTES])


def __getattr__(name: str) -> Any:
    # Lazy: `import scarce_lab` stays fast (polars, litellm and the model load on use).
    if name in _FUNCTIONS:
        return getattr(import_module("._api", __name__), name)
    if name in _MODULES:
        return import_module(_MODULES[name], __name__)
    if name in _ATTRIBUTES:
        module, attr = _ATTRIBUTES[name]
        return getattr(import_module(module, __name__), attr)
    registry = import_module(".registry", __name__)  # (not `from . import`: hasattr would recurse here)
    if not name.startswith("_") and name in registry.names():  # an environment's face: sl.sovsim, ...
        return import_module(registry.get(name).face)
    raise AttributeError(f"module 'scarce_lab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, *import_module(".registry", __name__).names()])
