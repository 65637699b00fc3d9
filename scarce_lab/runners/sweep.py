"""Playing a sweep of configs into one output folder: the sweep's dollar cap and
ledger (:func:`with_sweep_cap`, :func:`sweep_spent`) and where the runs execute
(:func:`play`: this process, processes, or Ray) and its seal when it ends (:func:`seal`), shared by ``scarce-lab run NAME``
(:mod:`scarce_lab.cli.environment`) and the study engine (:mod:`scarce_lab.studies.run`).

The cap (docs/models.md, "Dollar caps"): every config gets
``llm.sweep_max_cost_usd = cap`` and ``llm.spend_ledger = OUT/.spend.sqlite``, so every
process and Ray task of the sweep reserves each call's worst case in one ledger
(:mod:`scarce_lab.llm.costs`); a call that would pass the cap is not sent, its run stops
as a missing decision ("cost cap"), and no further run is started once the cap is spent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The sweep's ledger file inside the output folder.
LEDGER = ".spend.sqlite"


def with_sweep_cap(configs: list[Any], out: Path, cap: float | None) -> list[Any]:
    """``configs`` with the sweep's cap and ledger set (unchanged when ``cap`` is
    ``None``); a per-run cap (``llm.max_cost_usd``) without a sweep cap gets the
    ledger too, so a resumed run counts what it spent before.

    Raises:
        ValueError: a capped model without a known price, or a cap for an environment
            whose config has no model settings.
    """
    out = Path(out)
    done = []
    for cfg in configs:
        no_llm = getattr(cfg, "llm", None) is None  # an environment without a model client
        if no_llm and cap is not None:
            raise ValueError(f"{type(cfg).__name__} has no model settings (llm): nothing to cap")
        if no_llm or (cap is None and cfg.llm.max_cost_usd is None):
            done.append(cfg)
            continue
        update = {"spend_ledger": out.resolve() / LEDGER}  # absolute: Ray tasks and processes share it
        if cap is not None:
            update["sweep_max_cost_usd"] = cap
        # the llm block revalidated, then the config's own check of what reaches the models
        # (a dump and re-validation of the whole config fails on derived fields: the
        # economy's ablation lives in two places once validated)
        llm = type(cfg.llm).model_validate({**cfg.llm.model_dump(), **update})
        new = cfg.model_copy(update={"llm": llm})
        new._settings_reach_the_models()
        done.append(new)
    return done


def sweep_spent(out: Path, cap: float | None) -> bool:
    """True when the sweep's cap is spent (no further run should start)."""
    if cap is None:
        return False
    from ..llm.costs import ledger_at

    ledger = ledger_at(Path(out).resolve() / LEDGER)
    return ledger.spent("sweep") >= cap or ledger.refused("sweep", cap)


def sweep_spent_usd(out: Path) -> float:
    """US dollars the sweep's ledger in ``out`` has charged (0 when there is none)."""
    if not (Path(out) / LEDGER).exists():
        return 0.0
    from ..llm.costs import ledger_at

    return float(ledger_at(Path(out).resolve() / LEDGER).spent("sweep"))


def play(environment: str, configs: list[Any], out: Path, *, resume: bool, progress: bool, executor: str = "local",
         address: str | None = None, processes: int = 1, max_cost: float | None = None) -> list[Any]:
    """Play ``configs`` of ``environment`` into ``out``; their outcomes
    (:class:`scarce_lab.runners.executors.RunOutcome`) in ``configs`` order. Locally,
    runs the cap left unstarted are ``not_started``; ``executor="ray"`` sends one Ray
    task per run; ``processes > 1`` deals them to the spec's ``run_processes``; a spec's
    ``run_many`` plays them together.

    Raises:
        ExecutorError: Ray missing or unreachable.
        ValueError: limits that cannot be split over ``processes``, the same run twice.
    """
    from ..registry import get
    from .executors import run_configs

    cmd = get(environment).cli
    if not configs:  # nothing to play: no folder written, nothing to seal
        return []
    if executor == "ray":
        outcomes = run_configs(environment, configs, out, resume=resume, address=address, progress=progress)
    elif processes > 1:
        outcomes = cmd.run_processes(configs, out, processes=processes, resume=resume, progress=progress)
    elif cmd.run_many is not None:
        outcomes = cmd.run_many(configs, out, resume=resume, progress=progress)
    else:
        outcomes = _play_here(environment, configs, out, resume, progress, max_cost)
    _seal_after(environment, out)
    return outcomes


def seal(out: Path | str, environments: tuple[str, ...] | None = None) -> Path | None:
    """Seal the sweep folder ``out`` (:mod:`scarce_lab.data.sweep_seal`) with the tables
    its environments build in ``sealed_tables`` (registry) from
    :func:`~scarce_lab.data.loaders.load_dataset` of the folder; ``environments``: seal
    only when one of these seals a table (``None``: every environment among its runs).
    Returns the seal file, or ``None`` when no table is sealed.

    Raises:
        SealError: the runs are not the folder's direct children, it holds another
            folder, or a run changed while sealing; and whatever the read raises.
    """
    from ..data.loaders import load_dataset
    from ..data.sweep_seal import write_seal
    from ..registry import get

    if environments is not None and not any(get(e).sealed_tables for e in environments):
        return None

    def build() -> dict[str, Any]:
        ds = load_dataset(out, cache=False)
        return {f"{env}/{name}": build_table(ds) for env in ds.environments
                for name, build_table in get(env).sealed_tables.items()}

    return write_seal(out, build)


def _seal_after(environment: str, out: Path) -> None:
    """:func:`seal` at a sweep's end; a folder that cannot be sealed (runs nested deeper,
    a run that fails to read) is left unsealed with a warning saying why (the runs are
    unaffected; readers read their folders)."""
    import warnings

    from ..data.sweep_seal import SealError

    try:
        seal(out, (environment,))
    except (SealError, OSError, ValueError) as exc:
        warnings.warn(f"{out}: not sealed ({exc}); its tables are read from the run folders", stacklevel=3)


def _play_here(environment: str, configs: list[Any], out: Path, resume: bool, progress: bool,
               max_cost: float | None) -> list[Any]:
    from tqdm.auto import tqdm

    from .executors import RunOutcome, run_task

    task = run_task(environment)
    outcomes = []
    for cfg in tqdm(configs, desc=f"{environment} runs", unit="run", disable=not progress or len(configs) < 2):
        if sweep_spent(out, max_cost):
            outcomes.append(RunOutcome(cfg.run_id, "not_started", f"the sweep's ${max_cost:g} cost cap is spent"))
            continue
        outcomes.append(task(cfg, Path(out), resume))
    return outcomes
