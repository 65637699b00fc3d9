"""Fake people for tests: keystrokes typed into a real
:class:`~scarce_lab.agents.human.TerminalDesk`, so its parser is what is tested.

:class:`Keys` answers each prompt the terminal shows with a rule on the field's name (a
prompt is the line the desk writes without a newline; its field name is what comes
before `` (``); the answer may depend on the prompt text). It hands a line only once
the prompt it answers is on the screen, so the desk's reader thread never reads ahead.
"""

from __future__ import annotations

import io
import queue
from collections.abc import Callable


class Screen(io.StringIO):
    """The terminal's stdout: keeps everything, and passes each prompt (a write that
    ends with ``": "``) to the keyboard."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: queue.Queue[str] = queue.Queue()

    def write(self, text: str) -> int:
        n = super().write(text)
        if text.endswith(": "):
            self.prompts.put(text.rsplit("\n", 1)[-1])
        return n


class Keys:
    """The terminal's stdin: one line per prompt, ``answer(field, prompt)`` (``None``:
    the input ends). ``typed`` lists ``(field, line)`` in order."""

    def __init__(self, screen: Screen, answer: Callable[[str, str], str | None], *, limit: int = 2000,
                 timeout_s: float = 20.0):
        self.screen, self.answer, self.limit, self.timeout_s = screen, answer, limit, timeout_s
        self.typed: list[tuple[str, str]] = []
        #: what a rule raised (the input then ended)
        self.error: Exception | None = None

    def readline(self) -> str:
        if len(self.typed) >= self.limit:
            return ""
        try:
            prompt = self.screen.prompts.get(timeout=self.timeout_s)
        except queue.Empty:
            return ""
        field = prompt.split(" (", 1)[0]
        try:
            line = self.answer(field, prompt)
        except Exception as exc:  # noqa: BLE001 - a broken rule ends the input at once (the test then fails)
            self.error = exc
            return ""
        if line is None:
            return ""
        self.typed.append((field, line))
        return line + "\n"


def choices_in(prompt: str) -> list[str]:
    """The choices a prompt shows (``one of a, b, c`` or ``any of a, b``)."""
    for head in ("; one of ", "; any of "):  # the hint after the field's description
        if head in prompt:
            return prompt.rsplit(head, 1)[1].split(", comma-separated")[0].rsplit(")", 1)[0].split(", ")
    return []
