"""Make forks of a recorded run: ``sl.fork`` and ``scarce-lab fork``.

:func:`fork` checks everything before any fork runs (the parent is a complete run of an
environment that forks, not itself a fork; the step is one of its ``fork_steps``; the
environment's ``fork_check`` accepts the intervention; the parent's digest), then plays
one fork per seed into ``out``, each with a fresh :class:`~scarce_lab.forks.replay.Replay`
of the parent checked against the digest taken at the start (a parent altered meanwhile
is refused by name).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..data.recorder import read_manifest
from ..data.schema import RunStatus
from . import ForkError, ForkSpec, as_intervention
from .replay import Replay, parent_digest

__all__ = ["fork", "fork_configs", "parse_seeds"]


def parse_seeds(text: str | int | Iterable[int]) -> list[int]:
    """``"0..K"`` (inclusive), ``"0,2,5"``, an int or ints as a sorted list of distinct
    seeds >= 0.

    Raises:
        ForkError: a bad range, a negative seed or no seed.
    """
    if isinstance(text, int):
        seeds = [text]
    elif isinstance(text, str):
        try:
            seeds = []
            for part in text.split(","):
                lo, sep, hi = part.strip().partition("..")
                seeds += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
        except ValueError:
            raise ForkError(f"--seeds {text!r}: expected 0..K or a list like 0,1,2") from None
    else:
        seeds = [int(s) for s in text]
    if not seeds or min(seeds) < 0:
        raise ForkError(f"seeds {text!r}: at least one seed, none below 0")
    return sorted(set(seeds))


def fork_configs(run: Path | str, *, at: int, intervene: Any = "none", seeds: Any = (0,)) -> tuple[Any, list[Any]]:
    """``(environment spec, [config per seed])`` of the forks of ``run``, every check
    made (module docstring) and nothing run.

    Raises:
        ForkError: a parent that is not a complete run, a fork of a fork, an environment
            without forks, a step the parent lacks (its steps named), an intervention
            that does not apply (the environment's ``fork_check``), bad seeds, a parent
            whose config refuses a fork (a human seat: its answers are no model calls to
            replay; the field named).
        FileNotFoundError, TrajectoryFileError: an unreadable parent (its manifest).
    """
    from ..registry import get

    run_dir = Path(run)
    manifest = read_manifest(run_dir)
    if manifest.status != RunStatus.complete:
        raise ForkError(f"{run_dir}: the parent is {manifest.status.value}, not complete; fork a complete run")
    spec = get(manifest.environment)
    if spec.fork_steps is None or spec.fork_check is None:
        raise ForkError(f"{spec.title} runs cannot be forked yet (its environment declares no fork steps)")
    parent = spec.config.model_validate(manifest.config)
    if getattr(parent, "fork", None) is not None:
        raise ForkError(f"{run_dir} is itself a fork ({parent.fork.label()} of {parent.fork.parent}); fork its "
                        "parent instead")
    if parent.run_id != manifest.run_id:
        raise ForkError(f"{run_dir}: its config gives run id {parent.run_id!r}, its manifest {manifest.run_id!r} "
                        "(recorded by another package version): its prefix would not replay")
    steps = spec.fork_steps(run_dir)
    if isinstance(at, bool) or not isinstance(at, int) or at not in steps:
        shown = f"{steps[0]}..{steps[-1]}" if steps and steps == list(range(steps[0], steps[-1] + 1)) else steps
        raise ForkError(f"--at {at!r}: {manifest.run_id} has no step {at!r}; its steps: {shown}")
    try:
        intervention = as_intervention(intervene)
    except ValueError as exc:
        raise ForkError(str(exc)) from None
    spec.fork_check(parent, manifest, intervention, at)
    digest = parent_digest(run_dir)
    base = parent.model_dump(mode="json")
    try:  # a parent the config refuses to fork (e.g. a human seat: no recorded answers to replay)
        configs = [spec.config.model_validate({**base, "fork": ForkSpec(
            parent=manifest.run_id, parent_digest=digest, at=at, seed=j, intervention=intervention).model_dump(
            mode="json")}) for j in parse_seeds(seeds)]
    except ValidationError as exc:
        why = "; ".join(".".join(map(str, e["loc"])) + (": " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                        for e in exc.errors())
        raise ForkError(f"{run_dir}: {spec.config.__name__}: {why}") from None
    ids = [c.run_id for c in configs]
    if len(set(ids)) < len(ids) or manifest.run_id in ids:  # a run id must name the fork and its seed
        raise ForkError(f"{spec.title}'s run ids do not tell forks apart ({', '.join(ids)}): its config's run_id "
                        "must add fork_tag() (scarce_lab.forks)")
    return spec, configs


def fork(run: Path | str, *, at: int, intervene: Any = "none", seeds: Any = (0,), out: Path | str,
         progress: bool = False) -> list[Path]:
    """Fork the complete run in folder ``run`` at step ``at`` (SovSim round, SCARCE
    contention, Economy episode) with ``intervene`` (an intervention, a dict with
    ``kind`` or the text form of :mod:`scarce_lab.forks.interventions`), one fork per
    seed in ``seeds`` (``"0..K"``, a list or an int; 0 keeps the parent's seeds), into
    ``out``; a fork already complete there is skipped.

    Returns:
        The fork run folders, in seed order.

    Raises:
        ForkError: as :func:`fork_configs`; a parent altered since the checks (digest).
        ForkDivergedError: a prefix call the parent never made (that fork is recorded
            as failed).
    """
    spec, configs = fork_configs(run, at=at, intervene=intervene, seeds=seeds)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for cfg in configs:
        there = out / cfg.run_id
        if (there / "manifest.json").exists():  # a fork of another parent with the same run id is not this one
            theirs = ((read_manifest(there).config or {}).get("fork") or {}).get("parent_digest")
            if theirs != cfg.fork.parent_digest:
                raise ForkError(f"{there} holds a fork of another parent (digest {str(theirs)[:12]}..., this parent "
                                f"{cfg.fork.parent_digest[:12]}...); use another --out")
        replay = Replay.from_run(Path(run), at=at, digest=cfg.fork.parent_digest)
        paths += spec.run(cfg, out, replay=replay, progress=progress)
    return paths
