"""``--human`` of every run command: the front end that asks the person of a
``human/<name>`` seat (docs/running.md, "Human seats").

``--human terminal`` reads the person's answers from stdin and shows the questions on
stdout (:class:`scarce_lab.agents.human.TerminalDesk`; scripted keystrokes piped to
stdin are a fake human). Left out, a run with a human seat uses the terminal when stdin
is one, and is refused otherwise (a person's answers never come from a pipe by
accident). A person plays one game at a time, in this process: a command with a human
seat plans one run, with the local executor and one process.
"""

from __future__ import annotations

import enum
import inspect
import sys
from typing import Annotated, Any

import typer


class HumanFrontEnd(enum.StrEnum):
    """The front ends a command line can give a person."""

    terminal = "terminal"


def human_parameters() -> list[inspect.Parameter]:
    """The ``--human`` option."""
    return [inspect.Parameter("human", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        HumanFrontEnd | None, typer.Option("--human", help=(
            "the front end of the human/<name> seats: terminal (questions on stdout, answers from stdin); "
            "default: terminal when stdin is a terminal, else an error"))])]


def human_desk(configs: list[Any], human: HumanFrontEnd | None, *, processes: int = 1,
               executor: str = "local") -> Any:
    """The desk the runs of ``configs`` ask their people through (``None`` when no seat
    is a person).

    Raises:
        typer.BadParameter: ``--human`` without a human seat; a human seat with several
            runs, processes or a remote executor; no ``--human`` while stdin is not a
            terminal (each names the seat).
    """
    seats = {seat: model for cfg in configs for seat, model in cfg.human_seats().items()}
    if not seats:
        if human is not None:
            raise typer.BadParameter("no seat is a person (human/<name>): leave --human out", param_hint="--human")
        return None
    seat, model = next(iter(seats.items()))
    if len(configs) > 1:
        raise typer.BadParameter(f"seat {seat} is {model}, and this command plans {len(configs)} runs: a person "
                                 "plays one game at a time (give one value of each sweep option)", param_hint="--seat")
    if processes > 1 or executor != "local":
        raise typer.BadParameter(f"seat {seat} is {model}: a person answers in this process (--processes 1, "
                                 "--executor local)", param_hint="--executor" if executor != "local" else "--processes")
    if human is None:
        if not sys.stdin.isatty():
            raise typer.BadParameter(f"seat {seat} is {model}, and stdin is not a terminal: pass --human terminal to "
                                     "read the person's answers from stdin anyway", param_hint="--human")
        human = HumanFrontEnd.terminal
    from ..agents.human import TerminalDesk

    return TerminalDesk()
