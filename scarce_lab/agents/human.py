"""The terminal front end of human seats, :class:`TerminalDesk`, and its parser of a
typed line (:func:`parse_field`).

The protocol is :mod:`scarce_lab.llm.human` (where :class:`~scarce_lab.llm.model.HumanModel`
reads it): a front end is a :class:`~scarce_lab.llm.human.HumanDesk` (``async ask(turn)
-> HumanAnswer``); the caller binds one with :func:`~scarce_lab.llm.human.use_desk`
(``sl.run(config, out, human=desk)`` and the CLI's ``--human terminal`` do). A fake human in tests is a :class:`TerminalDesk` over scripted
input lines (keystrokes), so the real parser is what is tested.
"""

from __future__ import annotations

import asyncio
import math
import queue
import sys
import threading
import time
from typing import Any, TextIO

from ..llm.human import FormField, HumanAnswer, HumanTurn

__all__ = ["TerminalDesk", "parse_field"]

_EOF = object()
#: Seconds between looks at the input queue while a person is asked.
POLL_S = 0.02


def parse_field(f: FormField, text: str) -> tuple[Any, str | None]:
    """One typed line as the value of ``f``: ``(value, None)``, or ``(None, why)`` for a
    line the field refuses (the terminal shows ``why`` and asks again). An empty line is
    ``None`` for an optional field, ``""`` for a text, ``[]`` for a multiple choice.

    Rules (surrounding spaces ignored; a refusal names what was typed): ``int`` a whole
    number inside the bounds (``0.0`` and ``2.5`` are refused, not rounded); ``float`` a finite number inside
    the bounds (``nan``, ``inf`` refused); digit separators (``1_0``) refused; ``bool`` y/yes/true/1 or n/no/false/0; ``choice`` one of the choices
    (case-insensitive for words), several separated by commas for a multiple choice;
    ``str`` at most ``max_length`` characters.
    """
    s = text.strip()
    if s == "" and not f.required:
        return None, None
    if f.kind == "str":
        if f.max_length is not None and len(s) > f.max_length:
            return None, f"{len(s)} characters; at most {f.max_length}"
        return s, None
    if f.kind == "choice":
        picks = [p.strip() for p in s.split(",") if p.strip()] if f.multiple else [s]
        out = []
        for p in picks:
            hit = next((c for c in f.choices if c == p), None) or next(
                (c for c in f.choices if c.lower() == p.lower()), None)
            if hit is None:
                return None, f"{p!r} is not one of: {', '.join(f.choices)}"
            out.append(hit)
        return (list(dict.fromkeys(out)) if f.multiple else out[0]), None
    if f.kind == "bool":
        low = s.lower()
        if low in ("y", "yes", "true", "1"):
            return True, None
        if low in ("n", "no", "false", "0"):
            return False, None
        return None, "answer y or n"
    what = "a whole number" if f.kind == "int" else "a finite number"
    if not s:
        return None, f"no answer: type {what} ({_bounds(f)})"
    try:  # Python's own parsers, without their digit separators ("1_0")
        value: Any = int(s) if f.kind == "int" else float(s)
    except ValueError:
        return None, f"{s[:40]!r} is not {what}"
    if "_" in s or not math.isfinite(value):  # "nan" and "inf" pass float() and every bound
        return None, f"{s[:40]!r} is not {what}"
    if f.minimum is not None and value < f.minimum or f.maximum is not None and value > f.maximum:
        return None, f"{value} is outside {_bounds(f)}"
    return value, None


def _bounds(f: FormField) -> str:
    lo = "" if f.minimum is None else f"{f.minimum:g}"
    hi = "" if f.maximum is None else f"{f.maximum:g}"
    return f"{lo}..{hi}" if lo or hi else "any"


def _hint(f: FormField) -> str:
    if f.kind == "choice":
        shown = ", ".join(f.choices) if len(f.choices) <= 30 else ", ".join(f.choices[:30]) + ", ..."
        return f"one of {shown}" if not f.multiple else f"any of {shown}, comma-separated (empty: none)"
    if f.kind == "bool":
        return "y/n"
    if f.kind == "str":
        return f"text, at most {f.max_length} characters" if f.max_length is not None else "text"
    return f"{'whole number' if f.kind == 'int' else 'number'} {_bounds(f)}"


class TerminalDesk:
    """The terminal front end: prints the turn (the prompt the seat's model would get,
    the time left and the default action), then asks field by field, showing each
    field's bounds or choices and asking again after a line the field refuses
    (:func:`parse_field`).

    ``stdin``/``stdout`` default to the process's. Lines are read by one background
    thread, so a cancelled question (the time limit) never leaves a read behind that
    would swallow the next answer; lines typed after a timeout and before the next
    question are discarded (said on ``stdout``), so a late answer never answers the
    next question. ``show_prompt=False`` prints only the last message of the prompt.

    Raises (from :meth:`ask`):
        EOFError: the input ended (the run stops there; it can be resumed).
    """

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None, *, show_prompt: bool = True):
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.show_prompt = show_prompt
        self._lines: queue.Queue[Any] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._stale = False

    def _read_all(self) -> None:
        while True:
            try:
                line = self.stdin.readline()
            except (OSError, ValueError):  # closed
                line = ""
            if not line:
                self._lines.put(_EOF)
                return
            self._lines.put(line.rstrip("\r\n"))

    async def _readline(self) -> str:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_all, name="scarce-lab-terminal-desk", daemon=True)
            self._reader.start()
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                await asyncio.sleep(POLL_S)
                continue
            if line is _EOF:
                self._lines.put(_EOF)  # every later read ends too
                raise EOFError("the terminal's input ended while a person was being asked")
            return line

    def _say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def _drop_late_lines(self) -> None:
        dropped = 0
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is _EOF:
                self._lines.put(_EOF)
                break
            dropped += 1
        if dropped:
            self._say(f"({dropped} line(s) typed after the time ran out were discarded)")

    def _show(self, turn: HumanTurn) -> None:
        where = f"round {turn.round}, " if turn.round is not None else ""
        self._say(f"=== {turn.seat} ({turn.person}): {turn.purpose} ({where}{turn.time_limit_s:.0f} s left) ===")
        msgs = turn.messages if self.show_prompt else turn.messages[-1:]
        for m in msgs:
            self._say(f"--- {m.get('role', '?')} ---")
            self._say(str(m.get("content", "")))
        self._say(f"--- if you do not answer in time: {turn.default_text}")
        if turn.problem:
            self._say(f"!!! your last answer was refused: {turn.problem}")

    async def ask(self, turn: HumanTurn) -> HumanAnswer:
        """Ask ``turn`` on the terminal (see the class docstring)."""
        if self._stale:
            self._drop_late_lines()
            self._stale = False
        start = time.monotonic()
        try:
            self._show(turn)
            if turn.kind == "text":
                return HumanAnswer(await self._text(turn), time.monotonic() - start)
            values: dict[str, Any] = {}
            for f in turn.fields:
                values[f.name] = await self._field(f)
            return HumanAnswer(values, time.monotonic() - start)
        except asyncio.CancelledError:
            self._stale = True
            self._say(f"\n!!! time is up: the default was taken: {turn.default_text}")
            raise

    async def _field(self, f: FormField) -> Any:
        while True:
            opt = "" if f.required else ", empty to skip"
            self.stdout.write(f"{f.name} ({f.description}; {_hint(f)}{opt}): ")
            self.stdout.flush()
            value, why = parse_field(f, await self._readline())
            if why is None:
                return value
            self._say(f"  refused: {why}; try again")

    async def _text(self, turn: HumanTurn) -> str:
        limit = f"at most {turn.max_chars} characters, " if turn.max_chars is not None else ""
        while True:
            self.stdout.write(f"your text ({limit}one line; empty for nothing): ")
            self.stdout.flush()
            line = (await self._readline()).strip()
            if turn.max_chars is None or len(line) <= turn.max_chars:
                return line
            self._say(f"  refused: {len(line)} characters; at most {turn.max_chars}; try again")
