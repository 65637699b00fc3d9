"""``--executor local|ray`` and ``--address`` for the run commands and ``judge label``
(:mod:`scarce_lab.runners.executors`), and :func:`run_failed`, the run commands' one-line
error for a run that failed."""

from __future__ import annotations

import inspect
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class ExecutorChoice(StrEnum):
    local = "local"
    ray = "ray"


EXECUTOR_HELP = ("where the runs execute: local (this process) or ray (one Ray task per run; "
                 "a local Ray instance unless --address is given)")
ADDRESS_HELP = ("Ray cluster to join with --executor ray: 'auto' (the cluster of this machine), "
                "'ray://HOST:10001' or 'HOST:6379'; default: start a local instance")


def executor_parameters() -> list[inspect.Parameter]:
    """The two options, for generated run commands."""
    return [
        inspect.Parameter("executor", inspect.Parameter.KEYWORD_ONLY, default=ExecutorChoice.local, annotation=Annotated[
            ExecutorChoice, typer.Option("--executor", help=EXECUTOR_HELP)]),
        inspect.Parameter("address", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            str | None, typer.Option("--address", help=ADDRESS_HELP)]),
    ]


def pop_executor(kwargs: dict) -> tuple[str, str | None]:
    """Take ``executor`` and ``address`` out of a command's keyword arguments.

    Raises:
        typer.BadParameter: ``--address`` without ``--executor ray``.
    """
    executor = kwargs.pop("executor", ExecutorChoice.local)
    executor = executor.value if isinstance(executor, StrEnum) else str(executor)
    address = kwargs.pop("address", None)
    if address is not None and executor != "ray":
        raise typer.BadParameter("--address is for --executor ray", param_hint="--address")
    return executor, address


def run_failed(run_dir: Path, exc: BaseException) -> None:
    """One line naming the failed run and its reason (the manifest's error when it has
    one), then exit status 1."""
    from ..runners.preflight import RunFailedError, check_finished

    try:
        check_finished([run_dir])
        reason = f"{type(exc).__name__}: {exc}"
    except RunFailedError as failed:
        reason = failed.reason or f"{type(exc).__name__}: {exc}"
    line = " ".join(str(reason).split())[:500]
    typer.echo(f"error: run {run_dir} failed: {line} (its folder keeps the events and model calls; "
               "--resume continues it)", err=True)
    raise typer.Exit(1) from None
