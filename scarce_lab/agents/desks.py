"""The front ends of human seats, as the notebook face gives them (``sl.human``)::

    sl.run(config, out, human=sl.human.WidgetDesk())      # in JupyterLab: a form in the cell
    sl.run(config, out, human=sl.human.TerminalDesk())    # on a terminal (the CLI's --human terminal)

A fake person (no one at the keyboard, as in CI) is a ``TerminalDesk`` over scripted
lines: ``sl.human.TerminalDesk(io.StringIO("fair share\\n9\\n"), io.StringIO())``.
The protocol (what a front end is asked and answers) is :mod:`scarce_lab.llm.human`;
:class:`WidgetDesk` (:mod:`scarce_lab.agents.human_widget`) imports ipywidgets when
first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm.human import FormField, HumanAnswer, HumanDesk, HumanTurn
from .human import TerminalDesk

if TYPE_CHECKING:
    from .human_widget import FrontEndError, WidgetDesk

__all__ = ["FormField", "FrontEndError", "HumanAnswer", "HumanDesk", "HumanTurn", "TerminalDesk", "WidgetDesk"]


def __getattr__(name: str) -> Any:
    if name in ("WidgetDesk", "FrontEndError"):  # ipywidgets: only when the JupyterLab desk is asked for
        from . import human_widget

        return getattr(human_widget, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
