"""``scarce-lab`` command line (typer).

Groups: ``run`` (play an environment), ``table`` (print a dataset's paper table),
``judge`` (label negotiation rounds, validate judges), ``select`` (selection chains over
models, :mod:`scarce_lab.cli.select`), ``study`` (run a paper experiment
and report it against the paper), ``fork`` (counterfactual forks of a run), ``demo`` (the README's main job). ``run NAME`` and ``table NAME`` are built for every registered environment from
its spec (:mod:`scarce_lab.cli.environment`, :mod:`scarce_lab.registry`); heavy
imports (litellm, model) happen inside the commands, not at start-up.
"""

from __future__ import annotations

from enum import StrEnum

import typer


class TableFormat(StrEnum):
    """Output format of every ``table`` command."""

    markdown = "markdown"
    csv = "csv"
    json = "json"


#: Help is click's plain layout (``rich_markup_mode=None``): rich's boxes cut long
#: option names at 80 columns ("--subordinate-c…"); the plain layout wraps the help
#: text instead and never cuts a name.
_PLAIN = {"rich_markup_mode": None, "no_args_is_help": True}

app = typer.Typer(
    name="scarce-lab",
    help="LLM agents under economic rules: run environments, record trajectories, print paper tables.",
    add_completion=False,
    pretty_exceptions_enable=False,
    **_PLAIN,
)
run_app = typer.Typer(help="Play an environment and record trajectories.", **_PLAIN)
table_app = typer.Typer(help="Print a paper table for a trajectory dataset.", **_PLAIN)
judge_app = typer.Typer(help="LLM-judge panel: label rounds, validate against people.", **_PLAIN)
app.add_typer(run_app, name="run")
app.add_typer(table_app, name="table")
app.add_typer(judge_app, name="judge")


def _register() -> None:
    # Importing the modules registers their commands on the groups above: the shared
    # ones, then ``run NAME`` / ``table NAME`` for every registered environment.
    import importlib

    for name in ("judge", "study", "demo", "report", "data", "view", "fork", "select"):
        importlib.import_module(f"scarce_lab.cli.{name}")
    from .environment import add_all

    add_all()


_register()


def main() -> None:
    """Entry point of the ``scarce-lab`` console script."""
    from .environment import add_all

    add_all()  # an environment registered since the import (an entry point loaded late)
    app()


if __name__ == "__main__":
    main()
