"""Rewrite runs of an older trajectory format as the current one (``scarce-lab migrate``).

Events are migrated by :mod:`scarce_lab.data.events.migrations`; the manifest's
``config`` is rebuilt as the environment's current config model and its
``condition_settings`` and ``condition`` derived from it, so migrated runs group with
new runs of the same settings. Settings the old manifest did not record are read from
the run's own LLM call records where they exist (sampling temperature and answer
tokens), else the 0.1.0 defaults apply (named in each environment's ``config_v1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data.jsonl import iter_json_objects, jsonl_line
from ..data.loaders import find_run_dirs, read_run_events
from ..data.recorder import EVENTS, LLM_CALLS, MANIFEST, RUN_FILES, _file_version, read_manifest
from ..data.safeio import RunFolder
from ..data.schema import SCHEMA_VERSION, RunManifest
from .base import ExperimentConfig


def _call_params(run_dir: Path) -> dict[str, Any]:
    for _, obj in iter_json_objects(Path(run_dir) / LLM_CALLS):
        params = obj.get("params") or {}
        if params:
            return params
    return {}


def v1_config(m: RunManifest, run_dir: Path) -> ExperimentConfig | None:
    """The current config of a version-1 run: its environment's ``config_v1``
    (:class:`scarce_lab.registry.EnvironmentSpec`) given the manifest and the
    settings of the run's first recorded LLM call (which override the 0.1.0 defaults
    each spec names); ``None`` for an environment that registered no ``config_v1``.

    Raises:
        UnknownEnvironmentError: the manifest's environment is not registered.
    """
    from ..registry import get

    spec = get(m.environment)
    return None if spec.config_v1 is None else spec.config_v1(m, _call_params(run_dir))


def migrate_run(run_dir: Path, out_dir: Path | None = None) -> Path | None:
    """Rewrite one run as the current version (in place, or copied under ``out_dir``);
    ``None`` when it already is.

    Raises:
        TrajectoryFileError: a corrupt line (path and line named); nothing is written.
    """
    run_dir = Path(run_dir)
    version = _file_version(run_dir)
    if version >= SCHEMA_VERSION and out_dir is None:
        return None
    m = read_manifest(run_dir)
    events = read_run_events(run_dir, m, tolerant=m.status != "complete")  # complete runs checked whole
    if m.status == "complete":
        m.n_events = len(events)
    cfg = v1_config(m, run_dir) if version < 2 else None
    if cfg is not None:
        m.config = cfg.model_dump(mode="json")
        m.condition_settings = cfg.condition_settings()
        m.condition = cfg.condition_label()
    target = run_dir if out_dir is None else Path(out_dir) / run_dir.name
    # written as the recorder writes: under the folder's descriptor, never through a link
    folder = RunFolder.open(target, RUN_FILES, manifest=MANIFEST, create=target != run_dir)
    try:
        if target != run_dir and (run_dir / LLM_CALLS).exists():
            with (run_dir / LLM_CALLS).open("rb") as src:
                folder.replace(LLM_CALLS, iter(lambda: src.read(1 << 20), b""))
        folder.replace(EVENTS, b"".join(jsonl_line(e.dump_line(), target / EVENTS, i) for i, e in enumerate(events)))
        folder.replace(MANIFEST, (m.model_dump_json(indent=2) + "\n").encode("utf-8"))
    finally:
        folder.close()
    return target


def migrate_dataset(path: Path, out_dir: Path | None = None) -> list[Path]:
    """Migrate every run below ``path``; returns the runs rewritten."""
    done = []
    for rd in find_run_dirs(Path(path)):
        dest = None if out_dir is None else Path(out_dir) / rd.relative_to(path).parent
        res = migrate_run(rd, dest)
        if res is not None:
            done.append(res)
    return done
