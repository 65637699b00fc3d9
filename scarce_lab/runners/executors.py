"""Where the runs of a sweep execute: ``local`` (this process) or ``ray`` (a Ray cluster).

``scarce-lab run sovsim|scarce|economy ... --executor ray [--address auto]`` and
``scarce-lab judge label ... --executor ray`` send **one Ray task per run** (SovSim
game, SCARCE run, Economy seed, or the judge units of one run). The task receives the
run's pydantic config, builds its own model client on the node (so the response cache
is the node's own, ``~/.cache/scarce_lab/llm`` or ``llm.cache_dir``), and runs exactly
the code a local run runs, so the same seeds give the same trajectories.

Run folders reach the output folder in one of two ways (:func:`output_transfer`):

- ``shared``: every node sees the output folder (NFS, a shared volume, one machine):
  each task writes its run folder there directly, under the one resume rule of
  :func:`scarce_lab.runtime.open_run` (complete -> skipped, unfinished -> continued
  with ``--resume``, other settings -> error);
- ``return``: the output folder is not visible on a node (found by a probe file): the
  task runs in a temporary folder on its node, starting from a copy of the run folder
  as the driver has it (so an unfinished run resumes there), and returns the finished
  folder's files to the driver, which writes them under the output folder (an
  unchanged folder, e.g. a complete run that was skipped, is not rewritten).

Connecting: ``address=None`` starts (or joins, in this process) a local Ray instance
on 127.0.0.1 without the dashboard (unless ``RAY_ADDRESS`` names a cluster: Ray's own
rule); ``"auto"`` joins the cluster this machine belongs
to; ``"ray://host:10001"`` or ``"host:6379"`` a remote one. A local instance gets this
checkout on its workers' ``PYTHONPATH``; on a real cluster scarce_lab must be installed
on every node (docs/ray.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Transfer = Literal["shared", "return"]


class ExecutorError(RuntimeError):
    """Ray is not installed or cannot connect to the cluster (the message says which)."""


@dataclass
class RunOutcome:
    """What became of one run: ``status`` is complete, skipped, failed (the run raised;
    its manifest says why) or error (it could not start: an unfinished run without
    ``--resume``, other settings in the folder, a run in progress elsewhere)."""

    run_id: str
    status: str
    error: str | None = None
    detail: dict[str, Any] | None = None


# -- Ray connection ---------------------------------------------------------------------
def connect(address: str | None = None) -> Any:
    """The ``ray`` module, connected (see the module docstring for ``address``).

    Raises:
        ExecutorError: ray is not installed (``pip install 'scarce-lab[ray]'``) or the
            cluster cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'scarce-lab[ray]' "
                            "(scripts/install.sh installs it)") from None
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True}
    if address is None and not os.environ.get("RAY_ADDRESS"):  # a new local instance
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        kwargs |= {"_node_ip_address": "127.0.0.1", "runtime_env": {"env_vars": {"PYTHONPATH": path}}}
    try:
        ray.init(address=address, **kwargs)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError from ray
        raise ExecutorError(f"cannot start or reach a Ray cluster at {address or 'a new local instance'}: "
                            f"{type(exc).__name__}: {exc}") from None
    return ray


def output_transfer(ray: Any, out_dir: Path) -> Transfer:
    """``shared`` when every alive node sees ``out_dir`` (a probe file written here is
    found there), else ``return``."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    probe = out_dir / f".ray-probe-{uuid.uuid4().hex}"
    probe.write_text("scarce_lab output folder probe\n")
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        check = ray.remote(num_cpus=0)(_exists)
        seen = ray.get([check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(str(probe))
                        for n in nodes])
    finally:
        probe.unlink(missing_ok=True)
    return "shared" if seen and all(seen) else "return"


def _exists(path: str) -> bool:
    return Path(path).exists()


# -- files of a run folder ----------------------------------------------------------------
def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` as ``relative path -> bytes`` (empty if absent)."""
    folder = Path(folder)
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Replace ``folder`` with ``files`` (written to a sibling, then renamed in place)."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + f".incoming-{uuid.uuid4().hex[:8]}")
    for rel, data in files.items():
        target = tmp / rel
        if tmp.resolve() not in target.resolve().parents:
            raise ValueError(f"refusing to write {rel!r} outside {folder}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


# -- the tasks (module level: Ray ships them by reference) ---------------------------------
def _path_run(run: Callable[..., list[Path]], cfg: Any, out_dir: Path, resume: bool) -> RunOutcome:
    """One run through an environment's ``run`` (:class:`scarce_lab.registry.EnvironmentSpec`),
    its outcome read from the manifest: refused to start -> ``error``, raised -> ``failed``."""
    from ..data.recorder import RunInProgressError, read_manifest
    from ..runtime import RunMismatchError

    try:
        run_dir = run(cfg, out_dir, resume=resume)[-1]
    except (RunInProgressError, FileExistsError, RunMismatchError) as exc:
        return RunOutcome(cfg.run_id, "error", str(exc))
    except Exception as exc:
        return RunOutcome(cfg.run_id, "failed", f"{type(exc).__name__}: {exc}")
    status = read_manifest(run_dir).status.value
    return RunOutcome(cfg.run_id, "complete" if status == "complete" else status)


def run_task(environment: str) -> Callable[[Any, Path, bool], RunOutcome]:
    """``task(cfg, out_dir, resume) -> RunOutcome`` of ``environment``: its spec's
    ``run_task``, else its ``run`` with the outcome read from the manifest.

    Raises:
        UnknownEnvironmentError: not a registered environment (the names are listed).
    """
    from functools import partial

    from ..registry import get

    spec = get(environment)
    return spec.run_task or partial(_path_run, spec.run)


def _remote_body(task: Callable[[Any, Path, bool], RunOutcome], cfg: Any, out_dir: str, resume: bool,
                 transfer: Transfer, files: dict[str, bytes]) -> tuple[RunOutcome, dict[str, bytes]]:
    """One run on a node: in the shared folder, or in a temporary one seeded with
    ``files`` whose result is returned. ``task`` travels by reference (the node imports
    the environment's module), so the node needs no registry lookup."""
    if transfer == "shared":
        return task(cfg, Path(out_dir), resume), {}
    with tempfile.TemporaryDirectory(prefix="scarce_lab-ray-") as tmp:
        if files:
            write_files(Path(tmp) / cfg.run_id, files)
        outcome = task(cfg, Path(tmp), resume)
        return outcome, folder_files(Path(tmp) / cfg.run_id)


def run_configs(
    environment: str,
    configs: Sequence[Any],
    out_dir: Path,
    *,
    resume: bool = False,
    address: str | None = None,
    transfer: Transfer | None = None,
    num_cpus: float = 1.0,
    progress: bool = True,
) -> list[RunOutcome]:
    """Run every config of ``environment`` (a registered one,
    :func:`scarce_lab.registry.names`) as one Ray task each and return their
    outcomes in ``configs`` order.

    ``transfer`` defaults to what :func:`output_transfer` finds. ``num_cpus``: CPUs Ray
    reserves per task (fractions let several API-bound games share a CPU).

    Raises:
        ExecutorError: Ray missing or unreachable.
        ValueError: unknown environment (UnknownEnvironmentError), or two configs with
            one run id.
    """
    task = run_task(environment)
    ids = [c.run_id for c in configs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{environment}: several configs share a run id: "
                         f"{sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    ray = connect(address)
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    transfer = transfer or output_transfer(ray, out_dir)
    remote = ray.remote(num_cpus=num_cpus, max_retries=0)(_remote_body)
    outcomes: dict[int, RunOutcome] = {}
    pending: dict[Any, tuple[int, dict[str, bytes]]] = {}
    for i, cfg in enumerate(configs):
        # return mode: the task gets the folder as it is here, so that open_run decides
        # on the node exactly as locally (skip a complete run only if its settings match)
        files = folder_files(out_dir / cfg.run_id) if transfer == "return" else {}
        pending[remote.remote(task, cfg, str(out_dir), resume, transfer, files)] = (i, files)
    from tqdm.auto import tqdm

    with tqdm(total=len(pending), desc=f"{environment} on ray ({transfer})", unit="run", disable=not progress) as bar:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            ref = done[0]
            i, sent = pending.pop(ref)
            try:
                outcome, files = ray.get(ref)
            except Exception as exc:  # the task itself died (worker lost, unpicklable)
                outcome, files = RunOutcome(configs[i].run_id, "failed", _one_line(exc)), {}
            if files and files != sent:  # an unchanged folder (skipped, refused) is not rewritten
                write_files(out_dir / configs[i].run_id, files)
            outcomes[i] = outcome
            bar.update(1)
    return [outcomes[i] for i in range(len(configs))]


def _one_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1][:500]


# -- judge labelling ------------------------------------------------------------------------
def _judge_body(units: list, taxonomy: Any, judges: list, client_settings: dict, panel_kwargs: dict
                ) -> dict[str, bytes]:
    """Label ``units`` (one run's) with the panel in a temporary folder on the node and
    return its ``judgements.jsonl`` and ``llm_calls.jsonl``."""
    from ..judge.panel import label_units
    from ..judge.store import CALLS_FILE, JUDGEMENTS_FILE
    from ..llm import make_client

    client = make_client(**client_settings)
    with tempfile.TemporaryDirectory(prefix="scarce_lab-judge-") as tmp:
        label_units(units, taxonomy, judges, client=client, out_dir=Path(tmp), progress=False, **panel_kwargs)
        return {name: (Path(tmp) / name).read_bytes() for name in (CALLS_FILE, JUDGEMENTS_FILE)
                if (Path(tmp) / name).exists()}


def judge_on_ray(
    units: Sequence[Any],
    taxonomy: Any,
    judges: Sequence[Any],
    out_dir: Path,
    *,
    client_settings: dict,
    panel_kwargs: dict | None = None,
    address: str | None = None,
    progress: bool = True,
) -> int:
    """Judge the units not yet judged in ``out_dir``, one Ray task per run (units
    grouped by ``run_id``), and append each task's judgements and call records to
    ``out_dir``'s store. Returns the number of tasks sent. Afterwards a local
    :func:`scarce_lab.judge.panel.label_units` with the same ``out_dir`` finds every
    pair done and arbitrates, exactly as after a local labelling.

    Raises:
        ExecutorError: Ray missing or unreachable.
        ValueError: ``out_dir`` holds judgements of another taxonomy.
    """
    from ..data.jsonl import append_jsonl_durable
    from ..judge.store import JudgementStore

    store = JudgementStore(out_dir)
    store.check_taxonomy(taxonomy.id)
    done = store.done({u.unit_id for u in units}, {j.key for j in judges})
    todo: dict[str, list] = {}
    for u in units:
        if any((u.unit_id, j.key) not in done for j in judges):
            todo.setdefault(str(getattr(u, "run_id", None) or "units"), []).append(u)
    if not todo:
        return 0
    ray = connect(address)
    remote = ray.remote(num_cpus=1, max_retries=0)(_judge_body)
    refs = [remote.remote(group, taxonomy, list(judges), client_settings, panel_kwargs or {})
            for _, group in sorted(todo.items())]
    from tqdm.auto import tqdm

    with tqdm(total=len(refs), desc="judging on ray", unit="run", disable=not progress) as bar:
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for name, data in ray.get(ready[0]).items():  # the store's write rule (fsynced, torn tail repaired)
                append_jsonl_durable(Path(out_dir) / name, data.splitlines())
            bar.update(1)
    return len(refs)
