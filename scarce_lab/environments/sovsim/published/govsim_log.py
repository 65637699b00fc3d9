"""Adapter: GovSim runs (``log_env.json`` + the run's Hydra configuration) -> the
agent-round table, each scenario by its own rules.

Layout, as GovSim's ``simulation/main.py`` writes it:
``results/<experiment.name>/<run name>/`` with ``log_env.json`` and the run's Hydra
folder ``.hydra/`` (``config.yaml``: the composed configuration; ``overrides.yaml``:
the command-line overrides; ``hydra.yaml``). ``experiment.name`` is
``<scenario>_<code_version>/<group_name>``: runs sit in ``<group>/<run>/``, or directly
in ``<scenario>_<code_version>/<run>/`` when ``group_name`` is ``''`` (GovSim's default:
a flat folder of runs of many models). Some published copies (e.g. the shared
``govsim_fishing_v7``) keep the configuration as ``config.yaml`` beside
``log_env.json``; both places are read (``.hydra/`` first).

``log_env.json`` is a list of event records (pandas ``orient="records"``); harvest rows
have ``action == "harvesting"``, ``agent_id`` (``persona_k``), ``round`` counted from 0,
``resource_in_pool_before_harvesting``, ``resource_in_pool_after_harvesting`` (after
all agents), ``resource_collected``. Values may be strings: every number is parsed
with ``float(str(v))``.

Scenario (``experiment.scenario`` of the run's configuration; :data:`SCENARIOS`):
``fishing``, ``fishing_japanese``, ``sheep`` (pasture) and ``pollution`` share GovSim's
environment (``scenarios/common/environment/concurrent_env.py``): the pool regrows
to ``min(P0, 2 x remaining)`` (``poupulation_change_after_round: double_100_cap``, the
only rule that code implements; another value is refused) and the run ends when fewer
than 5 units remain. ``trash`` (the pedrocurvo/GovSim fork, ``scenarios/trash/
environment/env.py``): agents take trash *out* of a house that gains 50 units a month
(capped at P0) and the run ends when more than 95 units remain (its configuration still
says ``double_100_cap``, which that code ignores); taking out less than ``50 // n`` a
month is the unsustainable side. A run of any other scenario, or without one, is refused
(:class:`GovSimConfigError`): never scored by another scenario's rules.

Condition (never pooled across settings): ``base_condition`` is the environment name
``experiment.env.name`` (e.g. ``fish_baseline_concurrent``; from ``overrides.yaml``'s
``experiment=...`` when the config lacks it); ``settings`` is every other setting of the
flattened configuration except :data:`NOT_CONDITION` (replicate seed, bookkeeping names,
model identity and serving).

Model (:func:`run_model`): the run's own ``llm.path``; a run whose agents use different
models (``mix_llm``, or a list in ``llm.path``) is labelled ``mixed: 4x a + 1x b``. In a
flat layout (the run sits directly in the ``<scenario>_<code_version>`` folder of its
``experiment.name``: GovSim's ``group_name: ''``) the model is the run's own. Under a
group folder the model is the folder name while every run of the folder has the same
model; a folder whose runs differ labels each run ``<folder> [<model>]`` (never pooled
under the folder's name, and a warning says so).

Nothing is left out silently (:class:`GovSimNotReadWarning`): run folders beside the
runs that have no ``log_env.json``, logs without a harvest record and runs whose
configuration names no model are listed with the reason. Runs without a configuration
are all named in the error (or, with ``force``, in the warning).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from scarce_lab.data.jsonl import read_json_file, read_text
from scarce_lab.data.tables import settings_json

from ..agent_rounds import agent_round_frame
from . import ForcedDataWarning

#: Collapse threshold of GovSim's common environment (fewer than 5 units left ends the run).
COLLAPSE_BELOW = 5.0


@dataclass(frozen=True)
class ScenarioRules:
    """How one GovSim scenario's game works, from the code that runs it.

    ``role``: what the agents are called; ``regrowth``: ``"double_cap"``
    (``min(P0, 2 x remaining)``) or ``"plus_50_cap"`` (``min(P0, remaining + 50)``);
    ``ends_below`` / ``ends_above``: the run ends when fewer / more units than this
    remain after the round; ``unsustainable_below_total``: trash only, the monthly
    amount all agents together must take out (``50``), so an agent taking out less than
    ``total // n`` is on the unsustainable side (None: the usual
    ``extraction > P / (2 n)``); ``source``: the file the rules come from."""

    role: str
    regrowth: str
    ends_below: float | None
    ends_above: float | None
    unsustainable_below_total: float | None
    source: str


_COMMON = "GovSim simulation/scenarios/common/environment/concurrent_env.py (step)"
#: Every scenario the adapter reads, with its rules. Others are refused.
SCENARIOS: dict[str, ScenarioRules] = {
    "fishing": ScenarioRules("fisher", "double_cap", COLLAPSE_BELOW, None, None, _COMMON),
    "fishing_japanese": ScenarioRules("fisher", "double_cap", COLLAPSE_BELOW, None, None,
                                      "pedrocurvo/GovSim fork, fishing environment with Japanese prompts; " + _COMMON),
    "sheep": ScenarioRules("shepherd", "double_cap", COLLAPSE_BELOW, None, None, _COMMON),
    "pollution": ScenarioRules("factory_owner", "double_cap", COLLAPSE_BELOW, None, None, _COMMON),
    "trash": ScenarioRules("roommate", "plus_50_cap", None, 95.0, 50.0,
                           "pedrocurvo/GovSim fork, simulation/scenarios/trash/environment/env.py (step)"),
}
#: ``experiment.env.poupulation_change_after_round`` values the double-cap scenarios implement.
KNOWN_REGROWTH = ("double_100_cap",)


def scenario_convention(scenario: str, n_agents: int) -> dict:
    """Convention fields (:class:`~scarce_lab.environments.sovsim.analysis.conventions.Convention`)
    that score ``scenario`` by its own rules.

    Raises:
        GovSimConfigError: unknown scenario.
    """
    rules = SCENARIOS.get(scenario)
    if rules is None:
        raise GovSimConfigError(f"unknown GovSim scenario {scenario!r}: known {sorted(SCENARIOS)}; "
                                "it is refused rather than scored by another scenario's rules")
    if rules.ends_above is not None:
        return {"scenario": scenario, "collapse_threshold": rules.ends_above, "collapse_above": True,
                "unsustainable_below": float(rules.unsustainable_below_total // n_agents),
                "efficiency_benchmark": None}
    return {"scenario": scenario, "collapse_threshold": rules.ends_below, "collapse_above": False,
            "unsustainable_below": None}


#: Flattened configuration keys that do not define a condition: the replicate seed,
#: names used only to store and log the run (GovSim's own analysis drops
#: ``experiment.agent.name`` too), the model identity (the ``model`` column) and how
#: the model was served. Prefix match on dotted keys.
NOT_CONDITION = (
    "seed", "debug", "group_name", "experiment.name", "experiment.agent.name",
    "llm.path", "llm.backend", "llm.is_api", "llm.render", "llm.gpu_list",
    "weak_model", "strong_model", "mix_llm", "framework_model",
)


class GovSimNotReadWarning(UserWarning):
    """Parts of a GovSim results folder were not read; the message lists each with the
    reason."""


class GovSimConfigError(ValueError):
    """A GovSim run lacks the configuration that defines its condition, or its
    configuration contradicts its folder (the message names the run folder)."""


def flatten(cfg: dict, prefix: str = "") -> dict:
    """Nested mapping -> ``{"a.b.c": value}`` (lists kept as values)."""
    out: dict = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out |= flatten(v, key + ".")
        else:
            out[key] = v
    return out


def _is_condition_key(key: str) -> bool:
    return not any(key == p or key.startswith(p + ".") for p in NOT_CONDITION)


def read_run_config(run_dir: Path) -> tuple[dict, list[str], Path] | None:
    """``(config, overrides, path)`` of a GovSim run folder, or None without any.

    Raises:
        GovSimConfigError: a configuration file is not valid YAML or not a mapping.
    """
    import yaml

    safe = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader: ten times PyYAML's
    for cfg in (run_dir / ".hydra" / "config.yaml", run_dir / "config.yaml"):
        if not cfg.exists():
            continue
        try:
            data = yaml.load(read_text(cfg), Loader=safe)  # noqa: S506 (a safe loader)
            ov_path = cfg.parent / "overrides.yaml"
            overrides = yaml.load(read_text(ov_path), Loader=safe) if ov_path.exists() else []  # noqa: S506
        except yaml.YAMLError as exc:
            raise GovSimConfigError(f"{cfg}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise GovSimConfigError(f"{cfg}: expected a mapping, got {type(data).__name__}")
        return data, [str(o) for o in (overrides or [])], cfg
    return None


def _resolve(value, cfg: dict):
    """A Hydra interpolation ``${a.b}`` of the unresolved ``config.yaml`` -> the value at
    ``a.b`` of ``cfg`` (other values unchanged)."""
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        node = cfg
        for part in value[2:-1].split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node
    return value


def run_model(cfg: dict) -> str | None:
    """The model of a run from its configuration: ``llm.path``, or, when the agents use
    different models (``mix_llm`` entries or a list in ``llm.path``), ``mixed: 4x a + 1x
    b`` (counts per model, in first-seen order); one model in every entry gives that
    model. None when no model is named."""
    paths: list[str] = []
    for entry in cfg.get("mix_llm") or []:
        llm = _resolve(entry.get("llm") if isinstance(entry, dict) else None, cfg)
        llm = llm if isinstance(llm, dict) else {}
        paths.append(str(_resolve(llm.get("path"), cfg) or ""))
    if not paths:
        path = (cfg.get("llm") or {}).get("path")
        paths = [str(p or "") for p in path] if isinstance(path, list) else [str(path or "")]
    if not all(paths):
        return None
    counts = Counter(paths)  # first-seen order
    if len(counts) == 1:
        return paths[0]
    return "mixed: " + " + ".join(f"{k}x {m}" for m, k in counts.items())


@dataclass(frozen=True)
class RunInfo:
    """What the configuration of one run says: condition, model, scenario, group."""

    base_condition: str
    settings: str | None
    model: str | None
    scenario: str | None
    layout_folder: str | None

    def group(self, run_dir: Path) -> str | None:
        """The group folder of ``run_dir`` (its parent), or None in a flat layout: the
        parent is the ``<scenario>_<code_version>`` folder of ``experiment.name``
        (GovSim's ``group_name: ''``). A folder someone else arranged (runs of a flat
        layout moved into a folder per model) is a group folder."""
        parent = Path(run_dir).parent.name
        return None if self.layout_folder is not None and parent == self.layout_folder else parent


def run_info(run_dir: Path) -> RunInfo:
    """The run's condition, model (:func:`run_model`), scenario and group from its
    configuration (a run without one is :func:`read_govsim_logs`'s to name or force).

    Raises:
        GovSimConfigError: no configuration or no environment name in it; a scenario
            missing or not in :data:`SCENARIOS`, or a double-cap scenario whose
            ``poupulation_change_after_round`` is not in :data:`KNOWN_REGROWTH`.
    """
    found = read_run_config(run_dir)
    name = None
    if found is not None:
        cfg, overrides, path = found
        name = (cfg.get("experiment") or {}).get("env", {}).get("name")
        if not name:
            name = next((o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")), None)
    if not name:
        where = "no .hydra/config.yaml or config.yaml" if found is None else f"no experiment.env.name in {found[2]}"
        raise GovSimConfigError(f"{run_dir}: {where}: the run's condition (environment name and settings) is "
                                "unknown (pass force=True / --force to load it as condition 'unknown')")
    exp = cfg.get("experiment") or {}
    scenario = exp.get("scenario")
    if scenario not in SCENARIOS:
        raise GovSimConfigError(
            f"{path}: experiment.scenario = {scenario!r} is not a scenario this adapter knows the rules of "
            f"({sorted(SCENARIOS)}); refused rather than scored by another scenario's rules")
    regrowth = (exp.get("env") or {}).get("poupulation_change_after_round")
    if SCENARIOS[scenario].regrowth == "double_cap" and regrowth not in KNOWN_REGROWTH:
        raise GovSimConfigError(
            f"{path}: experiment.env.poupulation_change_after_round = {regrowth!r}: GovSim's environment "
            f"implements only {KNOWN_REGROWTH}; refused rather than scored by the wrong regrowth")
    flat = flatten(cfg)
    settings = {k: v for k, v in flat.items() if _is_condition_key(k) and k != "experiment.env.name"}
    layout = exp.get("name")
    layout = (str(layout).split("/")[0].replace("${code_version}", str(cfg.get("code_version", "")))
              if layout else None)
    return RunInfo(str(name), settings_json(settings), run_model(cfg), str(scenario), layout)


def _num(v, field: str, path: Path, k: int) -> float:
    try:
        return float(str(v))
    except (TypeError, ValueError):
        raise ValueError(f"{path}: record {k} field {field!r} is not a number: {v!r}") from None


def _rows(path: Path, info: RunInfo, model: str, simulation: int) -> pl.DataFrame:
    """One ``log_env.json`` as agent-round rows, scored by its scenario's rules
    (:data:`SCENARIOS`).

    Raises:
        ValueError: not a JSON list, or a harvest record with a non-numeric field.
    """
    run_dir = path.parent
    records = read_json_file(path)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    rules = SCENARIOS.get(info.scenario or "fishing", SCENARIOS["fishing"])
    harvest = [(k, r) for k, r in enumerate(records) if isinstance(r, dict) and r.get("action") == "harvesting"]
    agents = sorted({str(r["agent_id"]) for _, r in harvest}, key=lambda a: (len(a), a))
    n = len(agents)
    # unique across result folders: <scenario>_<code_version>/<model>/<run>
    run_id = f"govsim:{info.layout_folder or run_dir.parent.parent.name}/{model}/{run_dir.name}"
    rows: list[dict] = []
    for k, r in harvest:
        rnd = int(_num(r["round"], "round", path, k)) + 1
        after, before, got = (_num(r[f], f, path, k) for f in (
            "resource_in_pool_after_harvesting", "resource_in_pool_before_harvesting", "resource_collected"))
        a = str(r["agent_id"])
        ended = after > rules.ends_above if rules.ends_above is not None else after < rules.ends_below
        rows.append(
            {
                "source": "govsim_log", "run_id": run_id, "model": model,
                "condition": info.base_condition, "base_condition": info.base_condition, "settings": info.settings,
                "simulation": simulation, "round": rnd, "agent": a, "agent_index": agents.index(a),
                "role": rules.role, "is_leader": False, "n_agents": n, "pool_before": before, "pool_seen": before,
                "extraction": got, "payoff": got, "remaining": after, "collapsed": ended,
            }
        )
    return agent_round_frame(rows)


def unread_run_folders(logs: Iterable[Path | str]) -> list[tuple[Path, str]]:
    """Folders beside the runs of ``logs`` (siblings of their run folders) that hold no
    ``log_env.json``: ``(folder, reason)``, sorted. A results folder of GovSim keeps
    interrupted runs this way (persona memories, no log)."""
    runs = {Path(p).parent for p in logs}
    out = []
    for parent in sorted({r.parent for r in runs}):
        for d in sorted(parent.iterdir()):
            if d.is_dir() and d not in runs and not d.name.startswith(".") and not (d / "log_env.json").exists() \
                    and not any(d.rglob("log_env.json")):
                has_cfg = (d / ".hydra" / "config.yaml").exists() or (d / "config.yaml").exists()
                out.append((d, "no log_env.json" + (" (a configuration but no log)" if has_cfg else "")))
    return out


def read_govsim_logs(paths: Iterable[Path | str], *, force: bool = False) -> pl.DataFrame:
    """Several logs; ``simulation`` numbers runs 0.. within each model (sorted by path).

    The model of each run is as the module docstring says (Model). Everything not read
    is named in one :class:`GovSimNotReadWarning` with its reason.

    Raises:
        GovSimConfigError: runs without a configuration (all named; unless ``force``),
            or a run of an unknown scenario or regrowth rule (see :func:`run_info`).
    """
    paths = sorted(Path(x) for x in paths)
    infos: dict[Path, RunInfo] = {}
    missing: list[str] = []
    for p in paths:
        if not any(c.exists() for c in (p.parent / ".hydra" / "config.yaml", p.parent / "config.yaml")):
            missing.append(str(p.parent))  # as read_run_config finds none (parsed once, by run_info)
            continue
        infos[p] = run_info(p.parent)
    if missing:
        msg = (f"{len(missing)} GovSim run(s) have no .hydra/config.yaml or config.yaml, so their condition "
               f"(environment name and settings) is unknown: {'; '.join(missing)}")
        if not force:
            raise GovSimConfigError(msg + " (pass force=True / --force to load them as condition 'unknown')")
        warnings.warn(ForcedDataWarning(f"FORCED: {msg}; loaded as condition 'unknown' and scored by GovSim's "
                                        "fishing rules (their scenario is unknown too)"), stacklevel=2)
        for p in paths:
            if p not in infos:
                infos[p] = RunInfo("unknown", None, None, None, None)
    skipped: list[tuple[Path, str]] = list(unread_run_folders(paths))
    by_group: dict[Path, set[str]] = {}
    for p, info in infos.items():
        if info.group(p.parent) and info.model is not None:
            by_group.setdefault(p.parent.parent, set()).add(info.model)
    mixed_groups = {g: ms for g, ms in by_group.items() if len(ms) > 1}
    for g, ms in sorted(mixed_groups.items()):
        warnings.warn(GovSimNotReadWarning(
            f"group folder {g.name!r} holds runs of different models ({', '.join(sorted(ms))}): each run is "
            f"labelled '{g.name} [<its model>]', never pooled under the folder's name"), stacklevel=2)
    frames = []
    counters: dict[str, int] = {}
    for p in paths:
        info = infos[p]
        group = info.group(p.parent)
        if group:
            model = (f"{group} [{info.model or 'no model named'}]" if p.parent.parent in mixed_groups
                     else group)
        elif info.model is None:
            skipped.append((p.parent, "its configuration names no model (llm.path empty)"))
            continue
        else:
            model = info.model
        i = counters.get(model, 0)
        frame = _rows(p, info, model, i)
        if frame.height == 0:
            skipped.append((p.parent, "log_env.json has no harvest record"))
            continue
        counters[model] = i + 1
        frames.append(frame)
    if skipped:
        warnings.warn(GovSimNotReadWarning(
            f"not read ({len(skipped)}): " + "; ".join(f"{d} ({why})" for d, why in sorted(skipped))), stacklevel=2)
    if not frames:
        return agent_round_frame([])
    return pl.concat(frames)
