"""``scarce-lab run NAME`` and ``scarce-lab table NAME PATH`` for a registered
environment whose spec names no CLI module of its own (:mod:`scarce_lab.registry`,
``EnvironmentSpec.cli``): one option per config field (as the shipped run commands
build them, :mod:`scarce_lab.cli._options`), ``--out`` and ``--resume``; the table
command prints the spec's paper table, its options given as ``-O key=value``.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from . import TableFormat, run_app, table_app
from ._crossplay import apply_crossplay, crossplay_parameters, crossplay_settings, pop_crossplay
from ._options import _option as option_of
from ._options import common_parameters, config_leaves, expand, fail, parse_kwargs, with_signature

#: Environments whose generic commands are on the groups already.
_ADDED: set[str] = set()


def _markdown(df: Any) -> str:
    cols = df.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join(lines)


def _option_value(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as JSON when it is JSON (``true``, ``3``), else
    as text.

    Raises:
        typer.BadParameter: no ``=`` in ``text``.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"-O {text!r}: expected key=value", param_hint="-O")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


def add_commands(spec: Any) -> None:
    """Add ``run NAME`` and ``table NAME`` for ``spec`` (once; a spec with its own CLI
    module gets none)."""
    if spec.cli or spec.name in _ADDED:
        return
    _ADDED.add(spec.name)
    cls = spec.config
    leaves = config_leaves(cls)

    def run_cmd(**kwargs: Any) -> None:
        from ..config.base import ConfigError
        from ..data.recorder import RunInProgressError
        from ..runners.preflight import ModelUnavailableError, check_configs
        from ..runtime import RunMismatchError
        from ._executor import run_failed

        out, resume = kwargs.pop("out"), kwargs.pop("resume")
        xp = pop_crossplay(kwargs)
        try:
            parsed = parse_kwargs(cls, leaves, kwargs)
            population = crossplay_settings(xp, parsed)
            configs = apply_crossplay(spec.name, expand(cls, parsed, order=()), population)
            check_configs(configs)
        except ModelUnavailableError as exc:
            raise typer.BadParameter(str(exc), param_hint="--model") from None
        except ConfigError as exc:
            raise fail(exc) from None
        for cfg in configs:
            try:
                dirs = spec.run(cfg, out, resume=resume)
            except (RunInProgressError, FileExistsError, RunMismatchError) as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(1) from None
            except Exception as exc:  # noqa: BLE001 - the run failed: recorded in its manifest
                run_failed(Path(out) / cfg.run_id, exc)
            for d in dirs:
                typer.echo(f"{d}")

    run_cmd.__doc__ = f"Play {spec.title} and record the run under OUT (every config setting is an option)."
    params = [
        *(option_of(leaf) for leaf in leaves),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=Path(f"data/{spec.name}"),
                          annotation=Annotated[Path, typer.Option("--out", "-o", help="dataset folder")]),
        inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--resume", help="continue an unfinished run from its last committed round")]),
        *crossplay_parameters(),
        *common_parameters(),
    ]
    run_app.command(spec.name)(with_signature(run_cmd, params))

    def table_cmd(
        path: Path = typer.Argument(..., help="Dataset folder or run directory."),  # noqa: B008
        fmt: TableFormat = typer.Option(TableFormat.markdown, "--format", "-f"),  # noqa: B008
        options: list[str] = typer.Option(None, "--option", "-O", help=(  # noqa: B008
            "an option of the paper table, key=value (JSON values: -O strict=true); repeatable")),
    ) -> None:
        from .._api import table
        from ..data.recorder import TrajectoryFileError

        kwargs = dict(_option_value(o) for o in options or [])
        try:
            df = table(path, spec.name, **kwargs)
        except (FileNotFoundError, TrajectoryFileError, TypeError, ValueError) as exc:
            raise typer.BadParameter(str(exc)) from None
        if fmt == TableFormat.csv:
            typer.echo(df.write_csv(), nl=False)
        elif fmt == TableFormat.json:
            typer.echo(json.dumps(df.to_dicts(), indent=2, default=str))
        else:
            typer.echo(_markdown(df))

    table_cmd.__doc__ = f"The paper table of a {spec.title} dataset."
    table_app.command(spec.name)(table_cmd)


def remove_commands(name: str) -> None:
    """Take the generic commands of ``name`` off the groups (a test that unregisters its
    environment cleans up with it)."""
    for group in (run_app, table_app):
        group.registered_commands[:] = [c for c in group.registered_commands if c.name != name]
    _ADDED.discard(name)


def add_all() -> None:
    """Generic commands for every registered environment without a CLI module of its own
    (one registered after the CLI was built included: :func:`scarce_lab.cli.main` calls
    this before it parses the command line)."""
    from ..registry import specs

    for spec in specs():
        add_commands(spec)
