"""``scarce-lab`` command line (typer).

Groups: ``run`` (play an environment), ``table`` (print a dataset's paper table),
``judge`` (label negotiation rounds, validate judges), ``demo`` (the README's main
job). Each environment's commands live in their own module and register on these
groups (an environment's module is named by its registered spec,
:mod:`scarce_lab.registry`); heavy imports (litellm, model) happen inside the
commands, not at start-up.
"""

from __future__ import annotations

from enum import StrEnum

import typer


class TableFormat(StrEnum):
    """Output format of every ``table`` command."""

    markdown = "markdown"
    csv = "csv"
    json = "json"


app = typer.Typer(
    name="scarce-lab",
    help="LLM agents under economic rules: run environments, record trajectories, print paper tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
run_app = typer.Typer(help="Play an environment and record trajectories.", no_args_is_help=True)
table_app = typer.Typer(help="Print a paper table for a trajectory dataset.", no_args_is_help=True)
judge_app = typer.Typer(help="LLM-judge panel: label rounds, validate against people.", no_args_is_help=True)
app.add_typer(run_app, name="run")
app.add_typer(table_app, name="table")
app.add_typer(judge_app, name="judge")


def _register() -> None:
    # Importing the modules registers their commands on the groups above: each
    # registered environment's (its spec's ``cli``), then the shared ones.
    import importlib

    from ..registry import specs

    modules = [s.cli for s in specs() if s.cli]
    for module in [*modules, *(f"scarce_lab.cli.{n}" for n in ("judge", "demo", "report", "data", "view"))]:
        importlib.import_module(module)
    from .environment import add_all

    add_all()  # generic commands for an environment without a CLI module of its own


_register()


def main() -> None:
    """Entry point of the ``scarce-lab`` console script."""
    from .environment import add_all

    add_all()  # an environment registered since the import (an entry point loaded late)
    app()


if __name__ == "__main__":
    main()
