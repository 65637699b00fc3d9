"""The JupyterLab desk (scarce_lab.agents.human_widget) without a browser: a person is a
thread that fills the desk's own widgets and clicks its Submit button (the button's
handler is what a click runs in the kernel), while HumanModel asks through the desk."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Literal

import pytest
from pydantic import Field, model_validator

pytest.importorskip("ipywidgets", reason="ipywidgets is not installed (pip install -e '.[notebooks]')")
pytest.importorskip("anywidget", reason="anywidget is not installed (pip install -e '.[notebooks]')")

from scarce_lab.agents.human_widget import FrontEndError, WidgetDesk, render_messages  # noqa: E402
from scarce_lab.llm.decisions import DecisionModel, int_choice  # noqa: E402
from scarce_lab.llm.human import use_desk  # noqa: E402
from scarce_lab.llm.model import (
    DecisionRequest,  # noqa: E402
    HumanModel,  # noqa: E402
)


class Catch(DecisionModel):
    note: str = Field(..., max_length=40, description="why")
    boats: int_choice((0, 2, 4, 6)) = Field(..., description="boats sent")
    nets: int = Field(..., ge=1, le=9, description="nets per boat")
    share: bool = Field(..., description="share the catch")


class Pair(DecisionModel):
    first: int = Field(..., ge=0, le=5)
    second: int = Field(..., ge=0, le=5)

    @model_validator(mode="after")
    def _differ(self):
        if self.first == self.second:
            raise ValueError("first and second must differ")
        return self


PROMPT = [{"role": "system", "content": "You fish a lake. <b>bold</b> & $x^2$"},
          {"role": "user", "content": "Round 3: pool 77. </pre><script>alert(1)</script>[x](http://e.org)"}]


def _request(schema, fallback):
    return DecisionRequest(schema=schema, fallback=fallback, seed=5, messages=PROMPT, purpose="catch",
                           agent="a3", round=3)


def _person(desk: WidgetDesk, answers: list[dict], log: list[str]) -> threading.Thread:
    """Answers each question shown (one dict of field -> value each) by setting the
    widgets and clicking Submit, from a thread of its own (as the kernel's subshell)."""

    def play():
        for values in answers:
            deadline = time.monotonic() + 5
            while desk.submit.disabled or set(desk.inputs) != set(values):
                assert time.monotonic() < deadline, "no question was shown"
                time.sleep(0.01)
            for name, v in values.items():
                if isinstance(desk.inputs[name], tuple):  # a multiple choice: its checkboxes, in order
                    for box, pick in zip(desk.inputs[name], v, strict=True):
                        box.value = pick
                elif hasattr(desk.inputs[name], "options") and v is not None:  # a drop-down: picked by its words
                    desk.inputs[name].label = v
                else:
                    desk.inputs[name].value = v
            desk.submit.click()
            log.append(desk.note.value)
            while not desk.submit.disabled and "Not sent" not in desk.note.value:
                time.sleep(0.01)

    t = threading.Thread(target=play, daemon=True)
    t.start()
    return t


def _decide(desk, request, limit=5.0):
    async def go():
        with use_desk(desk):
            return await HumanModel("human/rosa", time_limit_s=limit).adecide(request)

    return asyncio.run(go())


def test_a_person_answers_through_the_form_and_the_decision_is_the_typed_one():
    desk = WidgetDesk(front_end_wait_s=None)
    fb = Catch(note="fallback", boats=0, nets=1, share=False)
    t = _person(desk, [{"note": "  two boats, keep it small ", "boats": "2", "nets": " 7 ", "share": True}], [])
    out = _decide(desk, _request(Catch, fb))
    t.join(5)
    assert out.outcome == "human" and out.source == "human" and not out.fallback_used and out.calls == []
    assert out.decision == Catch(note="two boats, keep it small", boats=2, nets=7, share=True)
    assert 0 < out.latency_s < 5
    assert [d["outcome"] for d in desk.decisions] == ["answered"]
    assert desk.decisions[0]["seat"] == "a3" and desk.decisions[0]["round"] == 3
    assert desk.submit.disabled and "sent. The game is over" in desk.status.value
    assert all(w.disabled for w in desk.inputs.values())
    # the widgets the form is made of: bounds and choices from the schema (a choice's words, the schema's value)
    assert desk.inputs["nets"].placeholder == "whole number 1..9"
    assert list(desk.inputs["boats"].options) == [("0", 0), ("2", 2), ("4", 4), ("6", 6)]


class Vote(DecisionModel):
    keep: list[Literal["w0", "w2", "w5"]] = Field(..., description="who keeps a slot")
    rounds: int | None = Field(None, description="for how many rounds")


def test_a_multiple_choice_and_an_optional_number_left_empty():
    desk = WidgetDesk(front_end_wait_s=None)
    t = _person(desk, [{"keep": (True, False, True), "rounds": ""}], [])
    out = _decide(desk, _request(Vote, Vote(keep=[])))
    t.join(5)
    assert out.outcome == "human" and out.decision == Vote(keep=["w0", "w5"], rounds=None)
    # the words of each choice are drawn as text beside its box (never as a widget's typeset label)
    assert [b.description for b in desk.inputs["keep"]] == ["", "", ""]


def test_an_unanswered_choice_is_not_sent_and_then_the_choice_is():
    desk = WidgetDesk(front_end_wait_s=None)
    statuses: list[str] = []
    fb = Catch(note="fb", boats=0, nets=1, share=False)
    t = _person(desk, [{"note": "n", "boats": None, "nets": "3", "share": False},
                       {"note": "n", "boats": "6", "nets": "3", "share": False}], statuses)
    out = _decide(desk, _request(Catch, fb))
    t.join(5)
    assert "Not sent" in statuses[0] and "boats: choose one" in statuses[0]
    assert out.decision.boats == 6 and out.outcome == "human"


def test_an_answer_the_schema_refuses_is_asked_again_showing_why():
    desk = WidgetDesk(front_end_wait_s=None)
    t = _person(desk, [{"first": "2", "second": "2"}, {"first": "2", "second": "4"}], [])
    out = _decide(desk, _request(Pair, Pair(first=0, second=1)))
    t.join(5)
    assert out.outcome == "human" and out.decision == Pair(first=2, second=4) and out.repaired
    assert [d["outcome"] for d in desk.decisions] == ["refused", "answered"]
    assert "must differ" in desk.decisions[0]["problem"]
    assert "must differ" in desk.problem.value  # shown above the form of the second ask


def test_on_the_time_limit_the_form_says_the_default_was_taken():
    desk = WidgetDesk(front_end_wait_s=None)
    fb = Pair(first=1, second=3)
    out = _decide(desk, _request(Pair, fb), limit=0.3)
    assert out.outcome == "human_timeout" and out.fallback_used and out.decision == fb
    assert "default was taken" in desk.status.value and "first 1; second 3" in desk.status.value
    assert desk.submit.disabled and all(w.disabled for w in desk.inputs.values())
    assert desk.decisions[-1]["outcome"] == "timeout" and desk.decisions[-1]["answer"] == {"first": 1, "second": 3}
    desk.submit.click()  # a late click answers nothing (and raises nothing)


def test_a_text_turn_is_a_text_area_with_its_limit():
    desk = WidgetDesk(front_end_wait_s=None)

    async def go():
        with use_desk(desk):
            return await HumanModel("human/rosa", time_limit_s=5).acomplete(PROMPT, seed=1, purpose="talk",
                                                                           agent="a1", max_chars=12)

    statuses: list[str] = []
    t = _person(desk, [{"text": "far too long a message"}, {"text": "short one"}], statuses)
    res = asyncio.run(go())
    t.join(5)
    assert "Not sent" in statuses[0] and "at most 12" in statuses[0]
    assert res.text == "short one" and res.record.outcome == "human"


def test_without_a_drawn_form_the_desk_fails_loudly_instead_of_timing_out():
    desk = WidgetDesk(front_end_wait_s=0.2)
    with pytest.raises(FrontEndError, match="seat a3 .*rosa.*not drawn"):
        _decide(desk, _request(Pair, Pair(first=0, second=1)))
    # the form's signal (what the browser sends once it drew the form) lets it ask
    beacon = desk.widget.children[0]
    beacon._handle_custom_msg({"drawn": True}, [])
    t = _person(desk, [{"first": "0", "second": "5"}], [])
    assert _decide(desk, _request(Pair, Pair(first=0, second=1))).decision == Pair(first=0, second=5)
    t.join(5)


def test_the_prompt_is_shown_as_text_never_as_markup():
    out = render_messages(PROMPT)
    assert "<script" not in out and "<b>bold" not in out and "</pre><script" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "&lt;b&gt;bold&lt;/b&gt; &amp; $x^2$" in out
    assert out.count('class="sl-human-message"') == 2
    assert 'data-role="system"' in out and 'data-role="user"' in out
    assert out.count("tex2jax_ignore") >= 4  # each role and each text: MathJax leaves "$x^2$" alone
    hostile = render_messages([{"role": '"><img src=x onerror=alert(1)>', "content": "hi"}])
    assert "<img" not in hostile and "&quot;&gt;&lt;img" in hostile


def test_widget_messages_are_answered_where_the_front_end_sent_them():
    from scarce_lab.agents.human_widget import _answer_where_sent

    class Comm:
        def _reply_subshell_for(self, data, default):
            return None  # ipykernel 7.4: the shell that last published (the blocked cell's)

    class W:
        comm = Comm()

    w = W()
    _answer_where_sent(w)
    assert w.comm._reply_subshell_for({"method": "update"}, "subshell-7") == "subshell-7"
    _answer_where_sent(object())  # no comm (outside a kernel): nothing to do


def _at(example, dotted: str):
    node = example
    for part in dotted.split("."):
        if node is None:
            return None
        if isinstance(node, list) and not part.isdigit():  # a list of key -> value entries: the key's value
            entry = next((e for e in node if part in [str(v) for v in e.values()]), None)
            node = None if entry is None else next(v for v in entry.values() if str(v) != part)
            continue
        node = node[int(part)] if isinstance(node, list) else node.get(part)
    return node


def _typed(field, value):
    """What a person enters in the desk's widget for ``value`` of ``field``."""
    if field.kind == "choice" and field.multiple:
        return tuple(c in {str(v) for v in value or ()} for c in field.choices)
    if field.kind == "choice":
        return None if value is None else ("true" if value is True else "false" if value is False else str(value))
    if field.kind == "bool":
        return bool(value)
    return "" if value is None else str(value)


def test_every_decision_family_is_answered_through_the_form():
    """Each registered decision family's documented example, entered in the desk's widgets
    as a person would, is the decision HumanModel returns (every form the environments ask)."""
    import importlib
    import pkgutil

    import scarce_lab.environments as envs
    from scarce_lab.llm.decisions import decision_families, validate_decision
    from scarce_lab.llm.human import form_fields

    for m in pkgutil.walk_packages(envs.__path__, envs.__name__ + "."):
        if m.name.endswith(".agents") or ".agents." in m.name:
            importlib.import_module(m.name)
    checked = []
    for name, fam in sorted(decision_families().items()):
        schema = fam.sample()
        fields = form_fields(schema)
        if not fields:  # a union of actions: asked as its parts, never as one form
            continue
        desk = WidgetDesk(front_end_wait_s=None)
        t = _person(desk, [{f.name: _typed(f, _at(fam.example, f.name)) for f in fields}], [])
        out = _decide(desk, _request(schema, validate_decision(fam.example, schema)[0]))
        t.join(5)
        assert out.outcome == "human" and not out.repaired, (name, out.violation)
        assert out.decision == validate_decision(fam.example, schema)[0], name
        checked.append(name)
    assert {"sovsim.extraction", "sovsim.announcement", "sovsim.talk", "scarce.ballot", "scarce.declaration",
            "scarce.private_message", "scarce.contract_answer"} <= set(checked), checked


# -- what the log says, the end of the game, a form asked again, zero ----------------------
class Haul(DecisionModel):
    note: str = Field(..., max_length=30, description="why")
    gear: list[Literal["net", "line", "trap"]] = Field(..., description="gear taken")
    crew: int_choice((1, 3, 5)) = Field(..., description="crew size")
    hours: float = Field(..., ge=0, le=12, description="hours at sea")
    harbour: Literal["north", "south"] = Field(..., description="where to land")

    @model_validator(mode="after")
    def _rested(self):
        if self.crew == 5 and self.hours > 8:
            raise ValueError("a crew of 5 works at most 8 hours")
        return self


def _ask_in_thread(desk: WidgetDesk, steps: list, seen: list) -> threading.Thread:
    """Per question shown: record what its widgets hold (``seen``), then apply the step
    (field name -> what the person enters; only the fields named) and click Submit."""

    def play():
        for i, step in enumerate(steps):
            deadline = time.monotonic() + 5
            while desk.submit.disabled or len(desk.decisions) < i:
                assert time.monotonic() < deadline, "no question was shown"
                time.sleep(0.01)
            seen.append({k: tuple(b.value for b in v) if isinstance(v, tuple) else v.value
                         for k, v in desk.inputs.items()} | {"problem": desk.problem.value})
            for name, v in step.items():
                if isinstance(desk.inputs[name], tuple):
                    for box, pick in zip(desk.inputs[name], v, strict=True):
                        box.value = pick
                elif hasattr(desk.inputs[name], "options"):
                    desk.inputs[name].label = v
                else:
                    desk.inputs[name].value = v
            desk.submit.click()

    t = threading.Thread(target=play, daemon=True)
    t.start()
    return t


def test_the_log_shows_each_answer_as_sent_in_the_decisions_terms():
    desk = WidgetDesk(front_end_wait_s=None)
    t = _ask_in_thread(desk, [{"note": "calm sea", "gear": (False, True, True), "crew": "3", "hours": " 6.5 ",
                               "harbour": "south"}], [])
    out = _decide(desk, _request(Haul, Haul(note="fb", gear=[], crew=1, hours=0, harbour="north")))
    t.join(5)
    assert out.decision == Haul(note="calm sea", gear=["line", "trap"], crew=3, hours=6.5, harbour="south")
    sent = desk.decisions[0]["answer"]
    assert sent == {"note": "calm sea", "gear": ["line", "trap"], "crew": 3, "hours": 6.5, "harbour": "south"}
    assert type(sent["crew"]) is int  # the schema's value, not the drop-down's text "3"
    assert "note &#x27;calm sea&#x27;; gear [&#x27;line&#x27;, &#x27;trap&#x27;]; crew 3; hours 6.5; harbour " \
           "&#x27;south&#x27;" in desk.log.value


def test_the_form_says_when_the_game_is_over_or_stopped():
    desk = WidgetDesk(front_end_wait_s=None)
    fb = Pair(first=0, second=1)

    async def go(fail: bool):
        with use_desk(desk):
            out = await HumanModel("human/rosa", time_limit_s=5).adecide(_request(Pair, fb))
            inside = desk.status.value
            if fail:
                raise OSError("disk full")
        return out, inside

    t = _person(desk, [{"first": "1", "second": "4"}], [])
    out, inside = asyncio.run(go(False))
    t.join(5)
    assert out.decision == Pair(first=1, second=4)
    assert "waiting for the game" in inside  # while the game goes on
    assert "waiting" not in desk.status.value and "The game is over" in desk.status.value
    t = _person(desk, [{"first": "3", "second": "2"}], [])
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(go(True))
    t.join(5)
    assert "The game stopped (OSError: disk full)" in desk.status.value and "waiting" not in desk.status.value
    assert desk.submit.disabled


def test_the_form_says_the_game_is_over_after_sl_run(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    desk = WidgetDesk(front_end_wait_s=None)
    stop = threading.Event()

    def anyone():  # picks the largest choice and writes a word wherever asked, until the game is over
        while not stop.is_set():
            if desk.submit.disabled:
                time.sleep(0.01)
                continue
            for v in desk.inputs.values():
                if hasattr(v, "options"):
                    v.index = len(v.options) - 1
                elif not isinstance(v, tuple):
                    v.value = "ok"
            desk.submit.click()
            time.sleep(0.02)

    t = threading.Thread(target=anyone, daemon=True)
    t.start()
    cfg = SovSimConfig(condition="kcpr", model="scripted/sustainable", seats={"a1": "human/ida"}, seed=2,
                       game={"rounds": 2})
    try:
        (run,) = sl.run(cfg, tmp_path, human=desk)
    finally:
        stop.set()
        t.join(5)
    assert [d["outcome"] for d in desk.decisions] == ["answered", "answered"]
    assert "The game is over" in desk.status.value and "waiting" not in desk.status.value


def test_a_form_asked_again_keeps_what_was_entered_and_says_why():
    desk = WidgetDesk(front_end_wait_s=None)
    seen: list[dict] = []
    first = {"note": "storm ahead", "gear": (True, False, True), "crew": "5", "hours": "10.5", "harbour": "north"}
    t = _ask_in_thread(desk, [first, {"hours": "7.5"}], seen)
    out = _decide(desk, _request(Haul, Haul(note="fb", gear=[], crew=1, hours=0, harbour="north")))
    t.join(5)
    assert out.decision == Haul(note="storm ahead", gear=["net", "trap"], crew=5, hours=7.5, harbour="north")
    assert out.repaired and [d["outcome"] for d in desk.decisions] == ["refused", "answered"]
    assert seen[0] == {"note": "", "gear": (False, False, False), "crew": None, "hours": "", "harbour": None,
                       "problem": ""}
    again = seen[1]
    assert again.pop("problem").count("at most 8 hours") == 1
    assert again == {"note": "storm ahead", "gear": (True, False, True), "crew": 5, "hours": "10.5",
                     "harbour": "north"}


def test_a_new_question_after_an_accepted_answer_starts_empty():
    desk = WidgetDesk(front_end_wait_s=None)
    seen: list[dict] = []
    t = _ask_in_thread(desk, [{"first": "2", "second": "5"}, {"first": "4", "second": "1"}], seen)
    for _ in range(2):
        _decide(desk, _request(Pair, Pair(first=0, second=1)))
    t.join(5)
    assert seen[1] == {"first": "", "second": "", "problem": ""}


def test_zero_points_is_no_punishment_and_numbers_are_refused_by_field_and_value():
    from scarce_lab.environments.sovsim.agents.institutions import sanction_schema

    schema = sanction_schema(("fisher K", "fisher L", "fisher M"), 4)
    desk = WidgetDesk(front_end_wait_s=None)
    t = _ask_in_thread(desk, [{"reasoning": "L took most", "punish.fisher K": "0", "punish.fisher L": "4"}], [])
    req = DecisionRequest(schema=schema, fallback=schema(reasoning="fb", punish=[]), seed=1, messages=PROMPT,
                          purpose="sanction", agent="a0", round=2)
    out = _decide(desk, req)
    t.join(5)
    assert out.outcome == "human" and [(p.name, p.points) for p in out.decision.punish] == [("fisher L", 4)]
    blank = desk.inputs["punish.fisher M"]
    assert blank.options[:2] == (("", None), ("0", 0))  # an optional choice can be left (or set back to) blank
    # a typed number the field cannot hold is refused naming the field and what was typed (never clamped)
    notes: list[str] = []
    t = _person(desk, [{"note": "n", "boats": "2", "nets": "0.0", "share": False},
                       {"note": "n", "boats": "2", "nets": "12", "share": False},
                       {"note": "n", "boats": "0", "nets": " 1 ", "share": False}], notes)
    out = _decide(desk, _request(Catch, Catch(note="fb", boats=0, nets=1, share=False)))
    t.join(5)
    assert "Not sent" in notes[0] and "nets: &#x27;0.0&#x27; is not a whole number" in notes[0]
    assert "Not sent" in notes[1] and "nets: 12 is outside 1..9" in notes[1]
    assert out.decision == Catch(note="n", boats=0, nets=1, share=False)  # "0" picked, " 1 " typed


def test_a_front_end_whose_finish_fails_does_not_hide_the_games_error():
    from scarce_lab.llm.human import use_desk

    class Desk:
        async def ask(self, turn):  # never asked here
            raise AssertionError

        def finish(self, error):
            raise RuntimeError("the widget is gone")

    with pytest.raises(KeyboardInterrupt) as err, use_desk(Desk()):
        raise KeyboardInterrupt
    assert "the widget is gone" in "".join(getattr(err.value, "__notes__", []))
