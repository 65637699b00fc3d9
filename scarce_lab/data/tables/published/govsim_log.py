"""Adapter: GovSim fishing runs (``log_env.json`` + the run's Hydra configuration) ->
the agent-round table.

Layout, as GovSim's ``simulation/main.py`` writes it:
``results/<experiment.name>/<run name>/`` with ``log_env.json`` and the run's Hydra
folder ``.hydra/`` (``config.yaml``: the composed configuration; ``overrides.yaml``:
the command-line overrides; ``hydra.yaml``). ``experiment.name`` is
``fishing_<code_version>/<group_name>``, so runs sit in ``<group>/<run>/``. Some
published copies (e.g. the shared ``govsim_fishing_v7``) keep the configuration as
``config.yaml`` beside ``log_env.json``; both places are read (``.hydra/`` first).

``log_env.json`` is a list of event records (pandas ``orient="records"``); harvest rows
have ``action == "harvesting"``, ``agent_id`` (``persona_k``), ``round`` counted from 0,
``resource_in_pool_before_harvesting``, ``resource_in_pool_after_harvesting`` (after
all fishers), ``resource_collected``. Values may be strings: every number is parsed
with ``float(str(v))``.

Condition (never pooled across settings): ``base_condition`` is the environment name
``experiment.env.name`` (e.g. ``fish_baseline_concurrent`` or
``fish_baseline_concurrent_universalization``; from ``overrides.yaml``'s
``experiment=...`` when the config lacks it); ``settings`` is every other setting of the
flattened configuration except :data:`NOT_CONDITION` (replicate seed, bookkeeping names,
model identity and serving). ``model`` is the group folder (GovSim's ``group_name``);
``llm.path`` must be the same for every run of a group. Game: 5 fishers, pool 100,
regeneration min(100, 2 x remaining), collapse when fewer than :data:`COLLAPSE_BELOW`
tons remain; ``extraction`` = ``payoff`` = tons collected, no leader (role ``fisher``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from .. import settings_json
from ..agent_rounds import agent_round_frame
from . import ForcedDataWarning

COLLAPSE_BELOW = 5.0

#: Flattened configuration keys that do not define a condition: the replicate seed,
#: names used only to store and log the run (GovSim's own analysis drops
#: ``experiment.agent.name`` too), the model identity (the ``model`` column) and how
#: the model was served. Prefix match on dotted keys.
NOT_CONDITION = (
    "seed", "debug", "group_name", "experiment.name", "experiment.agent.name",
    "llm.path", "llm.backend", "llm.is_api", "llm.render", "llm.gpu_list",
)


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

    for cfg in (run_dir / ".hydra" / "config.yaml", run_dir / "config.yaml"):
        if not cfg.exists():
            continue
        try:
            data = yaml.safe_load(cfg.read_text())
            ov_path = cfg.parent / "overrides.yaml"
            overrides = yaml.safe_load(ov_path.read_text()) if ov_path.exists() else []
        except yaml.YAMLError as exc:
            raise GovSimConfigError(f"{cfg}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise GovSimConfigError(f"{cfg}: expected a mapping, got {type(data).__name__}")
        return data, [str(o) for o in (overrides or [])], cfg
    return None


def run_condition(run_dir: Path, *, force: bool = False) -> tuple[str, str | None, str | None]:
    """``(base_condition, settings JSON, llm.path)`` of one GovSim run folder.

    Raises:
        GovSimConfigError: no configuration (or no environment name in it), unless
            ``force``: then a warning, base condition ``unknown`` and no settings.
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
        msg = f"{run_dir}: {where}: the run's condition (environment name and settings) is unknown"
        if not force:
            raise GovSimConfigError(msg + " (pass force=True / --force to load it as condition 'unknown')")
        warnings.warn(ForcedDataWarning(f"FORCED: {msg}; loaded as condition 'unknown'"), stacklevel=2)
        return "unknown", None, None
    flat = flatten(cfg)
    settings = {k: v for k, v in flat.items() if _is_condition_key(k) and k != "experiment.env.name"}
    llm = flat.get("llm.path")
    return str(name), settings_json(settings), None if llm is None else str(llm)


def _num(v, field: str, path: Path, k: int) -> float:
    try:
        return float(str(v))
    except (TypeError, ValueError):
        raise ValueError(f"{path}: record {k} field {field!r} is not a number: {v!r}") from None


def read_govsim_log(
    path: Path | str, *, model: str | None = None, simulation: int = 0, force: bool = False
) -> pl.DataFrame:
    """One ``log_env.json`` as agent-round rows (``model`` defaults to the grandparent
    folder, GovSim's group); condition from the run's configuration (module docstring).

    Raises:
        GovSimConfigError: the run's configuration is missing or unreadable (see
            :func:`run_condition`).
        ValueError: not a JSON list, or a harvest record with a non-numeric field.
    """
    return _read_one(Path(path), model, simulation, force)[0]


def _read_one(path: Path, model: str | None, simulation: int, force: bool) -> tuple[pl.DataFrame, str | None]:
    run_dir = path.parent
    model = model or run_dir.parent.name
    base, settings, llm = run_condition(run_dir, force=force)
    records = json.loads(path.read_text())
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    harvest = [(k, r) for k, r in enumerate(records) if r.get("action") == "harvesting"]
    agents = sorted({str(r["agent_id"]) for _, r in harvest}, key=lambda a: (len(a), a))
    n = len(agents)
    rows: list[dict] = []
    for k, r in harvest:
        rnd = int(_num(r["round"], "round", path, k)) + 1
        after = _num(r["resource_in_pool_after_harvesting"], "resource_in_pool_after_harvesting", path, k)
        before = _num(r["resource_in_pool_before_harvesting"], "resource_in_pool_before_harvesting", path, k)
        got = _num(r["resource_collected"], "resource_collected", path, k)
        a = str(r["agent_id"])
        rows.append(
            {
                "source": "govsim_log", "run_id": f"govsim:{model}/{run_dir.name}", "model": model,
                "condition": base, "base_condition": base, "settings": settings, "simulation": simulation,
                "round": rnd, "agent": a, "agent_index": agents.index(a), "role": "fisher", "is_leader": False,
                "n_agents": n, "pool_before": before, "announced_pool": None, "pool_seen": before,
                "remainder_seen": None, "extraction": got, "payoff": got, "remaining": after,
                "collapsed": after < COLLAPSE_BELOW, "reasoning": None, "valid": None, "fallback_used": None,
            }
        )
    return agent_round_frame(rows), llm


def read_govsim_logs(paths: Iterable[Path | str], *, force: bool = False) -> pl.DataFrame:
    """Several logs; ``simulation`` numbers runs 0.. within each model (sorted by path).

    Raises:
        GovSimConfigError: as :func:`read_govsim_log`, or runs of one group folder name
            different models (``llm.path``), unless ``force`` (then a warning).
    """
    frames = []
    counters: dict[str, int] = {}
    llms: dict[str, dict[str, list[str]]] = {}
    for p in sorted(Path(x) for x in paths):
        model = p.parent.parent.name
        i = counters.get(model, 0)
        counters[model] = i + 1
        frame, llm = _read_one(p, model, i, force)
        frames.append(frame)
        if llm is not None:
            llms.setdefault(model, {}).setdefault(llm, []).append(p.parent.name)
    for model, by_llm in llms.items():
        if len(by_llm) > 1:
            msg = f"group folder {model!r} holds runs of different models (llm.path): " + "; ".join(
                f"{k}: {', '.join(v)}" for k, v in sorted(by_llm.items()))
            if not force:
                raise GovSimConfigError(msg + " (pass force=True / --force to pool them under the folder name)")
            warnings.warn(ForcedDataWarning("FORCED: " + msg), stacklevel=2)
    if not frames:
        return agent_round_frame([])
    return pl.concat(frames)
