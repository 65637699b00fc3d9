"""The JupyterLab front end of human seats: :class:`WidgetDesk` (ipywidgets), a
:class:`~scarce_lab.llm.human.HumanDesk` that shows each question in the running
cell and takes the answer from a form::

    sl.run(config, out, human=sl.human.WidgetDesk())   # a seat of config is human/<name>

What a person sees, per question (:class:`~scarce_lab.llm.human.HumanTurn`): the seat,
the purpose and round; exactly the messages the seat's model would get, one block per
message with its role (system and user parts drawn apart), every text escaped (and
marked for MathJax to leave alone, where a front end typesets widget text), so that an
agent's words are shown as typed and can never become markup, a link or a formula; a
form built from the turn's fields (``choice``: a drop-down, with a blank first where the
field is optional, or one checkbox per choice for a multiple choice, answered with the
schema's values; ``int``/``float``: a text box with the bounds beside it, read by the
terminal's parser :func:`~scarce_lab.agents.human.parse_field`, which refuses what it
cannot read or what is out of bounds, naming the field and value, where a number box would
clamp or round it silently; ``bool``: a checkbox; ``str`` and text turns: a text area
with its character count against the limit); a Submit button; the seconds left and the
default action said in words. A refused answer (the form's own check, or the schema's
through :class:`~scarce_lab.llm.model.HumanModel`'s re-ask) is said above the form; a
form asked again keeps what was entered, to correct. On the time limit the form closes
saying that the default was taken; when the game is over (or stops) it says so
(:meth:`WidgetDesk.finish`, called by :func:`~scarce_lab.llm.human.use_desk`). Below, a
log of the seat's decisions, each answer as it was sent, field by field
(:func:`~scarce_lab.llm.human.answer_text`; :attr:`WidgetDesk.decisions` holds the
same as data).

How the answer reaches a blocked cell. ``sl.run`` is synchronous: the cell runs until
the game ends, and a kernel handles a widget's messages on the thread that runs cells.
JupyterLab (4.4 and later) sends widget messages to a kernel *subshell* when the kernel
has them (ipykernel 7), a thread of its own that runs while a cell blocks; so a click is
handled while ``sl.run`` waits, with no polling and no second event loop. ipykernel 7.4
routes a widget's messages back to the shell that last sent on the widget (here: the
running cell's, blocked) unless the widget says otherwise; the desk's widgets ask to be
answered where the front end sent from (:func:`_answer_where_sent`; the one place that
knows of it). The handler (on the subshell thread) hands the values to the game's event
loop with ``call_soon_threadsafe``. Chosen over ``jupyter-ui-poll`` (which pumps the
kernel from inside the cell: its 1.1 calls ``kernel.do_one_iteration``, gone from
ipykernel 7.4, and swallows the error, so clicks would silently never arrive) and over a
game in a background thread with a handle (the cells below would run before the game
ended, and waiting on the handle blocks the cell again).

Where a front end cannot answer during a cell (no browser, ipykernel 6, JupyterLab with
*Kernel Comms over subshells* disabled, an editor without subshells) the desk would only
ever time out into defaults; instead it fails loudly: the first question waits for the
form's own signal that it was drawn and can answer (:data:`FRONT_END_WAIT_S`), and raises
:class:`FrontEndError` saying so (the run stops there and resumes with ``resume=True``).
On ipykernel 7.4 an ``await asyncio.to_thread(sl.run, config, out, human=desk)`` cell
also works without subshells (the kernel handles widget messages while a cell awaits).
"""

from __future__ import annotations

import asyncio
import functools
import html
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..llm.human import FormField, HumanAnswer, HumanTurn, answer_text
from .human import _hint as field_hint  # the terminal's words for a field's bounds or choices
from .human import parse_field

__all__ = ["FRONT_END_WAIT_S", "FrontEndError", "WidgetDesk", "render_messages"]

#: Seconds the first question waits for the form to say it was drawn (and can answer).
FRONT_END_WAIT_S = 60.0
#: Largest number of choices of a multiple choice drawn as checkboxes (else a list box).
MAX_CHECKBOXES = 20
_ROLE_STYLE = {"system": "border-left:4px solid #999;background:#f4f4f4",
               "user": "border-left:4px solid #2a6fdb;background:#f3f7fe",
               "assistant": "border-left:4px solid #2a9d5b;background:#f2faf5"}


class FrontEndError(RuntimeError):
    """The form was not drawn, or its messages cannot reach the kernel while the cell
    runs: no person could answer, every question would time out into its default."""


def _esc(text: Any) -> str:
    """``text`` as inert HTML: escaped, in an element MathJax skips (``$x$`` stays)."""
    return f'<span class="tex2jax_ignore mathjax_ignore">{html.escape(str(text), quote=True)}</span>'


def _content(message: dict) -> str:
    c = message.get("content", "")
    if isinstance(c, list):  # content parts: the text parts, in order
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in c)
    return "" if c is None else str(c)


def render_messages(messages: tuple[dict, ...] | list[dict]) -> str:
    """The prompt as HTML: one block per message, headed by its role, its text escaped
    (:func:`html.escape`) in a ``<pre>`` that wraps, inside elements MathJax ignores.
    Every character of every message is shown, none is interpreted."""
    blocks = []
    for m in messages:
        role = str(m.get("role", "?"))
        style = _ROLE_STYLE.get(role, "border-left:4px solid #c80")
        blocks.append(
            f'<div class="sl-human-message" data-role="{html.escape(role, quote=True)}" '
            f'style="{style};padding:4px 8px;margin:4px 0">'
            f'<div style="font-weight:bold;font-size:90%">{_esc(role)}</div>'
            f'<pre class="tex2jax_ignore mathjax_ignore" style="white-space:pre-wrap;margin:0;font-size:90%">'
            f"{html.escape(_content(m), quote=True)}</pre></div>")
    return "".join(blocks)


def _answer_where_sent(widget: Any) -> None:
    """Make the kernel handle ``widget``'s incoming messages on the (sub)shell the front
    end sent them to. ipykernel 7.4 sends them to the shell that last published on the
    widget unless the comm's ``_reply_subshell_for`` says otherwise; without the hook
    (ipykernel 7.0 to 7.3) the front end's choice is already what counts."""
    comm = getattr(widget, "comm", None)
    if comm is not None and hasattr(comm, "_reply_subshell_for"):
        comm._reply_subshell_for = lambda data, default: default


@functools.cache
def _beacon_class() -> type:
    import anywidget

    class Beacon(anywidget.AnyWidget):
        """Draws nothing; says once per view that the form was drawn."""

        _esm = "export default { render({ model }) { model.send({ drawn: true }); } };"

    return Beacon


@dataclass
class _Input:
    field: FormField
    widget: Any
    boxes: tuple[Any, ...] = ()  # a multiple choice's checkboxes

    def value(self) -> tuple[Any, str | None]:
        """The answer as the form holds it: ``(value, None)`` or ``(None, why)``. A
        choice is the schema's value (:attr:`FormField.values`); a number or text is
        read by the terminal's parser (:func:`parse_field`) from what was typed."""
        f = self.field
        if f.kind == "choice" and f.multiple:
            if self.boxes:
                return [v for v, b in zip(_values(f), self.boxes, strict=True) if b.value], None
            return list(self.widget.value), None
        if f.kind == "choice":
            v = self.widget.value
            return (v, None) if v is not None else (None, None) if not f.required else (None, "choose one")
        if f.kind == "bool":
            return bool(self.widget.value), None
        return parse_field(f, str(self.widget.value))

    @property
    def entered(self) -> Any:
        """What the person entered, as the widgets hold it (to fill a form asked again)."""
        return tuple(b.value for b in self.boxes) if self.boxes else self.widget.value

    def fill(self, entered: Any) -> None:
        if self.boxes:
            for b, v in zip(self.boxes, entered, strict=True):
                b.value = v
        else:
            self.widget.value = entered


def _values(f: FormField) -> tuple[Any, ...]:
    """The values a choice's widget returns: the schema's (texts where a field has none)."""
    return f.values or f.choices


class WidgetDesk:
    """A person answers a human seat's questions in JupyterLab (module docstring: what
    is shown, and how the answer reaches the kernel while ``sl.run`` blocks the cell).

    Args:
        front_end_wait_s: seconds the first question waits for the form to be drawn and
            able to answer before :class:`FrontEndError` (at most 80% of that
            question's time limit); ``None`` waits for nothing (a test that answers
            through the widgets' own handlers).
        show_log: draw the log of past decisions below the form.

    The desk draws itself in the cell that asks its first question (again in each later
    cell that asks), or where ``display(desk)`` put it. :attr:`decisions` lists each
    answer or timeout: seat, person, purpose, round, outcome (``answered``,
    ``refused``: an answer the game refused and asked again, ``timeout``), the answer
    as sent (field name -> value, a choice as the schema's value; on a timeout the
    default played) and the seconds taken. When the game is over or stops
    (:meth:`finish`) the form says so.

    Raises (from :meth:`ask`):
        FrontEndError: no form was drawn within ``front_end_wait_s`` (see the module
            docstring for the front ends that can answer while a cell runs).
        ImportError: ipywidgets (or anywidget) is not installed (the ``notebooks`` extra).
    """

    def __init__(self, *, front_end_wait_s: float | None = FRONT_END_WAIT_S, show_log: bool = True):
        import ipywidgets as w

        self._w = w
        self.front_end_wait_s = front_end_wait_s
        self.decisions: list[dict[str, Any]] = []
        self._drawn = threading.Event()
        self._shown_in: str | None = None
        self._turn: dict[str, Any] = {}  # seat, person, purpose, round of the question shown
        #: field name -> its input widget, of the question shown (a multiple choice: its
        #: checkboxes, in the order of the field's choices)
        self.inputs: dict[str, Any] = {}
        self.header = w.HTML()
        self.prompt = w.HTML()
        self.problem = w.HTML()
        self.form = w.VBox()
        self.submit = w.Button(description="Submit", button_style="primary", disabled=True)
        self.note = w.HTML()  # why the form did not send (its own check)
        self.status = w.HTML()  # the seconds left and the default; then sent, or the default taken
        self.log = w.HTML()
        beacon = _beacon_class()()
        beacon.on_msg(lambda _w, content, _b: self._drawn.set() if content.get("drawn") else None)
        _answer_where_sent(beacon)
        _answer_where_sent(self.submit)
        parts = [beacon, self.header, self.prompt, self.problem, self.form, self.submit, self.note, self.status]
        self.widget = w.VBox(parts + ([self.log] if show_log else []))
        self.widget.add_class("sl-human-desk")
        self._on_submit = None
        #: (the question, field name -> what was entered) of the last answer sent
        self._entered: tuple[tuple, dict[str, Any]] | None = None
        self._last = ""  # how the last question ended, said again when the game ends
        self.submit.on_click(lambda _b: self._on_submit and self._on_submit())

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._shown_in = _cell_id()
        display(self.widget)

    def _show_here(self) -> None:
        cell = _cell_id()
        if cell is not None and cell != self._shown_in:
            self._ipython_display_()

    async def _front_end(self, turn: HumanTurn) -> None:
        if self.front_end_wait_s is None or self._drawn.is_set():
            return
        wait = min(self.front_end_wait_s, 0.8 * turn.time_limit_s)
        end = time.monotonic() + wait
        while not self._drawn.is_set():
            if time.monotonic() > end:
                raise FrontEndError(
                    f"seat {turn.seat} ({turn.person}): the form was not drawn, or cannot answer while the cell "
                    f"runs, within {wait:.0f} s: open the notebook in JupyterLab 4.4 or later with ipykernel 7 "
                    "(Settings Editor > Kernels > Kernel Comms over subshells: not Disabled), or run the game in an "
                    "`await asyncio.to_thread(sl.run, config, out, human=desk)` cell; with no one at the "
                    "keyboard use sl.human.TerminalDesk over scripted lines. Resume with resume=True.")
            await asyncio.sleep(0.05)

    def _inputs(self, turn: HumanTurn) -> list[_Input]:
        w = self._w
        if turn.kind == "text":
            limit = turn.max_chars
            f = FormField("text", "str", "your text", max_length=limit)
            return [_Input(f, w.Textarea(placeholder=f"at most {limit} characters" if limit else "your text",
                                         layout=w.Layout(width="95%", height="6em")))]
        out = []
        for f in turn.fields:
            if f.kind == "choice" and f.multiple:
                if len(f.choices) <= MAX_CHECKBOXES:  # each choice's words beside its box, as text
                    boxes = tuple(w.Checkbox(value=False, indent=False, layout=w.Layout(width="auto"))
                                  for _ in f.choices)
                    row = [x for b, c in zip(boxes, f.choices, strict=True) for x in (b, w.HTML(_esc(c)))]
                    out.append(_Input(f, w.HBox(row), boxes))
                else:
                    out.append(_Input(f, w.SelectMultiple(options=list(zip(f.choices, _values(f), strict=True)),
                                                          rows=min(8, len(f.choices)))))
            elif f.kind == "choice":  # label: the choice's text; value: the schema's; optional: a blank first
                options = [("", None)] * (not f.required) + list(zip(f.choices, _values(f), strict=True))
                out.append(_Input(f, w.Dropdown(options=options, value=None)))
            elif f.kind == "bool":
                out.append(_Input(f, w.Checkbox(value=False, indent=False)))
            elif f.kind == "str":
                height = "2.5em" if (f.max_length or 999) <= 80 else "5em"
                out.append(_Input(f, w.Textarea(layout=w.Layout(width="95%", height=height))))
            else:  # a number: typed and read by the terminal's parser (a number box would clamp or round
                # what was typed without a word: 99 in 1..9 becomes 9, 2.7 in a whole-number box 2)
                out.append(_Input(f, w.Text(placeholder=field_hint(f))))
        return out

    def _row(self, item: _Input) -> Any:
        w, f = self._w, item.field
        hint = field_hint(f)
        label = w.HTML(f"<b>{_esc(f.name)}</b>: {_esc(f.description)} <i>({_esc(hint)})</i>")
        for x in (item.widget, *item.boxes):
            x.add_class(f"sl-field-{f.name.replace('.', '-')}")
            _answer_where_sent(x)
        parts = [label, item.widget]
        if f.kind == "str" and f.max_length:
            count = w.HTML(f"0 / {f.max_length} characters")
            item.widget.observe(lambda ch, n=f.max_length, c=count: setattr(
                c, "value", f"{len(ch['new'] or '')} / {n} characters"), names="value")
            parts.append(count)
        return w.VBox(parts)

    async def ask(self, turn: HumanTurn) -> HumanAnswer:
        """Show ``turn`` and return the submitted answer (see the class docstring).
        Cancelled (the time limit): the form closes saying the default was taken."""
        loop = asyncio.get_running_loop()
        if turn.problem and self.decisions and self.decisions[-1]["outcome"] == "answered":
            self.decisions[-1].update(outcome="refused", problem=turn.problem)  # the game asks again
            self._draw_log()
        self._show_here()
        await self._front_end(turn)
        start = time.monotonic()
        inputs = self._inputs(turn)
        answered: asyncio.Future = loop.create_future()
        where = f", round {turn.round}" if turn.round is not None else ""
        self.header.value = (f"<h4 style='margin:4px 0'>{_esc(turn.seat)} ({_esc(turn.person)}): "
                             f"{_esc(turn.purpose)}{_esc(where)}</h4>")
        self.prompt.value = render_messages(turn.messages)
        self.problem.value = (f"<div style='color:#b00020' class='sl-human-problem'>Your last answer was refused: "
                              f"{_esc(turn.problem)}</div>" if turn.problem else "")
        self.form.children = [self._row(i) for i in inputs]
        asked_again = self._entered[0] == _question(turn) if turn.problem and self._entered else False
        for item in inputs if asked_again else ():  # the refused answer, to correct (the problem says why)
            item.fill(self._entered[1][item.field.name])
        self.note.value = ""
        self.inputs = {i.field.name: i.boxes or i.widget for i in inputs}
        self._turn = {"seat": turn.seat, "person": turn.person, "purpose": turn.purpose, "round": turn.round}

        def on_submit() -> None:  # on the thread that handles widget messages
            values, why = {}, []
            for item in inputs:
                v, bad = item.value()
                if bad is not None:
                    why.append(f"{item.field.name}: {bad}")
                values[item.field.name] = v
            if why:
                self.note.value = f"<span style='color:#b00020'>Not sent: {_esc('; '.join(why))}</span>"
                return
            self.note.value = ""
            self.submit.disabled = True
            self._entered = (_question(turn), {item.field.name: item.entered for item in inputs})
            value = values["text"] if turn.kind == "text" else values
            loop.call_soon_threadsafe(lambda: answered.done() or answered.set_result(value))

        self._on_submit = on_submit
        self.submit.disabled = False
        ticker = loop.create_task(self._countdown(turn, start))
        try:
            value = await answered
        except asyncio.CancelledError:
            self._last = f"Time is up: the default was taken: {turn.default_text}."
            self._close(self._last, "#b00020")
            self._record(outcome="timeout", answer=turn.default, latency=time.monotonic() - start)
            raise
        finally:
            ticker.cancel()
        latency = time.monotonic() - start
        self._last = "Your answer was sent."
        self._close("Sent; waiting for the game.", "#2a6fdb")
        self._record(outcome="answered", answer=value, latency=latency)
        return HumanAnswer(value, latency)

    async def _countdown(self, turn: HumanTurn, start: float) -> None:
        while True:
            left = max(0.0, turn.time_limit_s - (time.monotonic() - start))
            self.status.value = (f"<span class='sl-human-countdown'>{left:.0f} s left</span>; if you do not answer "
                                 f"in time: {_esc(turn.default_text)}")
            await asyncio.sleep(1.0)

    def _close(self, text: str, colour: str) -> None:
        self._on_submit = None
        self.submit.disabled = True
        for box in self.form.children:
            for x in _walk(box):
                if hasattr(x, "disabled"):
                    x.disabled = True
        self.status.value = f"<span style='color:{colour}' class='sl-human-status'>{_esc(text)}</span>"

    def finish(self, error: BaseException | None) -> None:
        """The game is over (``error`` ``None``) or stopped (``error``): the form says so
        and takes no answer; called by :func:`~scarce_lab.llm.human.use_desk` when the
        block that bound the desk (``sl.run``) ends. A later game may ask again."""
        last = f"{self._last} " if self._last else ""
        if error is None:
            self._close(f"{last}The game is over: no further question comes.", "#2a9d5b")
        else:
            self._close(f"{last}The game stopped ({type(error).__name__}: {str(error)[:200]}): no further question "
                        "comes (a stopped run resumes with resume=True).", "#b00020")

    def _record(self, *, outcome: str, answer: Any, latency: float) -> None:
        self.decisions.append({**self._turn, "outcome": outcome, "answer": answer, "latency_s": round(latency, 3)})
        self._draw_log()

    def _draw_log(self) -> None:
        rows = "".join(
            f"<tr><td>{_esc(d['seat'])}</td><td>{_esc('' if d['round'] is None else d['round'])}</td>"
            f"<td>{_esc(d['purpose'])}</td><td>{_esc(d['outcome'])}</td><td>{_esc(answer_text(d['answer']))}</td>"
            f"<td>{d['latency_s']:.1f} s</td></tr>" for d in self.decisions)
        self.log.value = ("<details open><summary>Your decisions</summary><table class='sl-human-log'><tr><th>seat"
                          "</th><th>round</th><th>purpose</th><th>outcome</th><th>answer</th><th>time</th></tr>"
                          f"{rows}</table></details>")


def _question(turn: HumanTurn) -> tuple:
    """What makes a question the same one asked again: seat, purpose, round and form."""
    return turn.seat, turn.purpose, turn.round, turn.kind, turn.fields


def _walk(widget: Any):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _cell_id() -> str | None:
    """The message id of the cell running now (``None`` outside a kernel)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    parent = kernel.get_parent() if hasattr(kernel, "get_parent") else {}
    return (parent or {}).get("header", {}).get("msg_id")
