"""Human seats: forms from decision schemas, the terminal front end driven by scripted
keystrokes (re-prompts, the time limit and its default, bounded text), the model of a
``human/<name>`` seat, who may sit where, the preflight without a front end, plans that
count a person at 0 calls, and whole games with a person in SovSim and SCARCE."""

from __future__ import annotations

import asyncio
import enum
import io
import json
import os
import threading
import time
from typing import Literal

import pytest
from pydantic import Field

from scarce_lab.agents.human import TerminalDesk, parse_field
from scarce_lab.llm.decisions import DecisionModel, DecisionPart, int_choice
from scarce_lab.llm.human import FormError, NoDeskError, form_answer, form_fields, use_desk
from scarce_lab.llm.model import DecisionRequest, HumanModel, HumanReply, model_for
from scarce_lab.llm.models import resolve_model
from tests.agents.human_keys import Keys, Screen, choices_in


class Colour(enum.Enum):
    red = "red"
    teal = "teal"


class Line(DecisionPart):
    who: Literal["ann", "ben"]
    share: int = Field(ge=0, le=9)


class Offer(DecisionModel):
    note: str = Field(max_length=12, description="a short note")
    units: int = Field(ge=2, le=40)
    step: int_choice((0, 5, 10))  # type: ignore[valid-type]
    colour: Literal["red", "teal"]
    sure: bool
    weight: float | None = None
    tags: list[Literal["x", "y", "z"]] = Field(default_factory=list)
    lines: list[Line] = Field(min_length=2, max_length=2)


def _ask(schema, fallback, desk, *, limit=5.0, agent="a2", purpose="offer"):
    lm = HumanModel("human/dana", time_limit_s=limit)

    async def go():
        with use_desk(desk):
            return await lm.adecide(DecisionRequest(schema=schema, fallback=fallback, seed=1, purpose=purpose,
                                                    messages=[{"role": "user", "content": "make an offer"}],
                                                    agent=agent, round=4))
    return asyncio.run(go())


def test_form_of_a_schema_keeps_bounds_choices_lengths_and_nesting():
    by = {f.name: f for f in form_fields(Offer)}
    assert list(by) == ["note", "units", "step", "colour", "sure", "weight", "tags", "lines.0.who", "lines.0.share",
                        "lines.1.who", "lines.1.share"]
    assert (by["note"].kind, by["note"].max_length, by["note"].description) == ("str", 12, "a short note")
    assert (by["units"].kind, by["units"].minimum, by["units"].maximum) == ("int", 2, 40)
    assert (by["step"].kind, by["step"].choices) == ("choice", ("0", "5", "10"))
    assert by["colour"].choices == ("red", "teal") and by["sure"].kind == "bool"
    assert by["weight"].kind == "float" and not by["weight"].required
    assert by["tags"].multiple and by["tags"].choices == ("x", "y", "z")
    assert by["lines.1.share"].maximum == 9
    answer = {"note": "hi", "units": 7, "step": "10", "colour": "teal", "sure": True, "weight": None, "tags": ["z"],
              "lines.0.who": "ben", "lines.0.share": 3, "lines.1.who": "ann", "lines.1.share": 0}
    obj = form_answer(Offer, answer)
    assert obj["step"] == 10 and "weight" not in obj and obj["lines"][0] == {"who": "ben", "share": 3}
    assert Offer.model_validate(obj, strict=True).colour == "teal"
    with pytest.raises(FormError, match="'step'.*'7' is not one of 0, 5, 10"):
        form_answer(Offer, {**answer, "step": "7"})
    with pytest.raises(FormError, match="'units': no answer"):
        form_answer(Offer, {k: v for k, v in answer.items() if k != "units"})


def test_an_enum_is_a_choice():
    class Paint(DecisionModel):
        colour: Colour

    (f,) = form_fields(Paint)
    assert (f.kind, f.choices) == ("choice", ("red", "teal"))


def test_a_list_of_any_length_is_refused_by_name():
    class Bag(DecisionModel):  # a list of entries keyed by a choice is a mapping (test_human_institutions.py)
        items: list[int]

    with pytest.raises(FormError, match="field 'items'"):
        form_fields(Bag)


def test_terminal_parser_refuses_out_of_bounds_and_unknown_choices():
    by = {f.name: f for f in form_fields(Offer)}
    assert parse_field(by["units"], "41")[1] == "41 is outside 2..40"
    assert parse_field(by["units"], "2.5")[1] == "'2.5' is not a whole number"
    assert parse_field(by["colour"], "TEAL") == ("teal", None)
    assert parse_field(by["tags"], "z, x, z") == (["z", "x"], None)
    assert parse_field(by["tags"], "") == (None, None)  # optional: its default applies
    assert parse_field(by["sure"], "maybe")[1] == "answer y or n"
    assert parse_field(by["note"], "x" * 13)[1] == "13 characters; at most 12"
    assert parse_field(by["weight"], "") == (None, None)


def test_invalid_keystrokes_are_asked_again_and_the_answer_is_a_human_decision():
    keys = ["far too long a note", "ok", "1", "40", "7", "5", "blue", "red", "y", "", "x,w", "y", "ann", "10", "2",
            "ben", "9"]
    out = io.StringIO()
    fb = Offer(note="fb", units=2, step=0, colour="red", sure=False, lines=[Line(who="ann", share=0)] * 2)
    res = _ask(Offer, fb, TerminalDesk(io.StringIO("\n".join(keys) + "\n"), out))
    assert res.outcome == "human" and res.source == "human" and res.valid and not res.fallback_used
    assert res.calls == [] and res.latency_s is not None and res.latency_s >= 0
    d = res.decision
    assert (d.note, d.units, d.step, d.colour, d.sure, d.tags) == ("ok", 40, 5, "red", True, ["y"])
    assert [(x.who, x.share) for x in d.lines] == [("ann", 2), ("ben", 9)]
    screen = out.getvalue()
    assert screen.count("refused") == 6  # note, units 1, step 7, blue, x,w, share 10
    assert "make an offer" in screen and "(the documented fallback)" in screen


def test_the_time_limit_plays_the_fallback_and_late_keys_never_answer_the_next_question():
    read, write = os.pipe()
    stdin, out = os.fdopen(read, "r"), io.StringIO()
    desk = TerminalDesk(stdin, out)
    class Pick(DecisionModel):
        n: int = Field(ge=0, le=20)

    res = _ask(Pick, Pick(n=4), desk, limit=0.3)
    assert (res.outcome, res.fallback_used, res.valid, res.decision.n) == ("human_timeout", True, False, 4)
    assert "no answer within 0.3 s" in res.violation and res.latency_s >= 0.3
    assert "time is up: the default was taken: n 4 (the documented fallback)" in out.getvalue()
    os.write(write, b"13\n")  # typed after the time ran out
    time.sleep(0.2)
    threading.Timer(0.3, lambda: os.write(write, b"6\n")).start()
    res = _ask(Pick, Pick(n=4), desk, limit=5)
    assert (res.outcome, res.decision.n) == ("human", 6)
    assert "1 line(s) typed after the time ran out were discarded" in out.getvalue()
    os.close(write)


def test_text_turns_are_bounded_and_no_call_record():
    lm = model_for("human/eve")
    out = io.StringIO()

    async def go():
        with use_desk(TerminalDesk(io.StringIO("this is too long\nshort\n"), out)):
            return await lm.acomplete([{"role": "user", "content": "say"}], seed=0, purpose="note", agent="a0",
                                      max_chars=6)
    res = asyncio.run(go())
    assert res.text == "short" and isinstance(res.record, HumanReply) and res.outcome == "human"
    assert "refused: 16 characters; at most 6" in out.getvalue()


def test_no_desk_is_a_loud_error_naming_the_seat():
    with pytest.raises(NoDeskError, match="seat a2 is human/dana"):
        _ask(Offer, None, None)


def test_human_names_resolve_and_bad_ones_are_refused():
    ref = resolve_model("human/li.wei-2")
    assert (ref.kind, ref.person) == ("human", "li.wei-2")
    for bad in ("human/", "human/a b", "human/-x"):
        with pytest.raises(ValueError, match="person's name"):
            resolve_model(bad)


def test_an_eof_stops_the_decision():
    with pytest.raises(EOFError):
        _ask(Offer, None, TerminalDesk(io.StringIO("a note\n"), io.StringIO()))


# -- configs ----------------------------------------------------------------------------
def test_time_limit_is_off_by_default_and_needs_a_person():
    from scarce_lab.config import SovSimConfig

    plain = SovSimConfig(condition="bcpr", model="scripted/random", seed=3)
    assert "human_time_limit_s" not in plain.model_dump() and "human_time_limit_s" not in plain.condition_settings()
    with pytest.raises(ValueError, match="human_time_limit_s: 30.0 is set, but no seat is a person"):
        SovSimConfig(condition="bcpr", model="scripted/random", human_time_limit_s=30)
    timed = SovSimConfig(condition="bcpr", model="scripted/random", seats={"a0": "human/kim"}, human_time_limit_s=30)
    assert timed.model_dump()["human_time_limit_s"] == 30 and timed.condition_settings()["human_time_limit_s"] == 30
    assert timed.human_seats() == {"a0": "human/kim"}
    with pytest.raises(ValueError, match="sits in seats.a0, seats.a2: a person plays one seat"):
        SovSimConfig(condition="bcpr", model="scripted/random", seats={"a0": "human/kim", "a2": "human/kim"})
    with pytest.raises(ValueError, match="a person plays one seat"):
        SovSimConfig(condition="bcpr", model="human/kim")


def test_economy_refuses_a_person_by_name():
    from scarce_lab.config import EconomyRunConfig

    with pytest.raises(ValueError, match="seats.a1: 'human/kim': an Economy agent bids in every step"):
        EconomyRunConfig(agents=3, seats={"a1": "human/kim"})
    with pytest.raises(ValueError, match="model: 'human/kim': an Economy agent"):
        EconomyRunConfig(agents=3, model="human/kim")


def test_scarce_seats_a_negotiator_never_a_solver():
    from scarce_lab.config import ScarceConfig

    cfg = ScarceConfig(workers=3, model="scripted/random", seats={"w2.negotiator": "human/ola"})
    assert cfg.human_seats() == {"w2.negotiator": "human/ola"} and cfg.llm_models() == []
    with pytest.raises(ValueError, match="seats.w2.solver: 'human/ola': a SCARCE solver writes and runs code"):
        ScarceConfig(workers=3, model="scripted/random", seats={"w2": "human/ola"})
    with pytest.raises(ValueError, match="negotiator_model: 'human/ola': names every worker's negotiator"):
        ScarceConfig(workers=3, model="scripted/random", negotiator_model="human/ola")


def test_preflight_refuses_a_person_without_a_desk_before_anything_is_written(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig
    from scarce_lab.runners.preflight import ModelUnavailableError

    cfg = SovSimConfig(condition="cpr", model="scripted/sustainable", seats={"a3": "human/raj"})
    with pytest.raises(ModelUnavailableError, match="seats.a3 'human/raj': a person plays this seat and no human"):
        sl.run(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_plan_counts_a_person_at_zero_calls_and_says_so():
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    cfg = SovSimConfig(condition="kcpr", model="scripted/greedy", seats={"a3": "human/raj"}, game={"rounds": 2})
    plan = sl.run(cfg, "unused", dry_run=True)
    assert plan.models == {}
    assert any("human/raj (seat a3): a person, 0 model calls, $0 (never priced)" in n for n in plan.notes)


# -- whole games --------------------------------------------------------------------------
def _sovsim_keys(field: str, prompt: str, said: list[str] = []) -> str:  # noqa: B006 - the talk so far
    if field == "reasoning":
        return "keep the pool alive"
    if field == "message":  # the first message too long (asked again), then short ones
        said.append("x" * 80 if not said else "let us take 6 each")
        return said[-1]
    if field == "to":
        return choices_in(prompt)[0]
    if field in ("extraction", "announced_pool"):
        return choices_in(prompt)[2] if choices_in(prompt) else "60"
    raise AssertionError(f"unexpected prompt {prompt!r}")


@pytest.mark.parametrize("seat", ["a1", "a3"])  # a subordinate, and the king who announces the pool
def test_a_person_plays_a_sovsim_seat_with_talk_to_the_end(tmp_path, seat):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    cfg = SovSimConfig(condition="kcpr_m", model="scripted/sustainable", seats={seat: "human/noor"}, seed=5,
                       game={"rounds": 3}, talk="public+private", talk_turns=1, talk_max_chars=40)
    screen = Screen()
    keys = Keys(screen, lambda field, prompt, said=[]: _sovsim_keys(field, prompt, said))  # noqa: B006
    (run,) = sl.run(cfg, tmp_path, human=TerminalDesk(keys, screen, show_prompt=False))
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "complete" and man["models"][seat] == "human/noor"
    assert man["notes"]["humans"] == {seat: {"person": "noor", "time_limit_s": 120.0}}
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    mine = [e for e in events if e["agent"] == seat and "outcome" in e["payload"]]
    kinds = {e["kind"] for e in mine}
    assert {"extraction", "talk"} <= kinds and (seat != "a3" or "announcement" in kinds)
    assert all(e["payload"]["outcome"] == "human" and e["payload"]["call_ids"] == [] for e in mine)
    assert all(isinstance(e["payload"]["latency_s"], float) for e in mine)
    others = [e for e in events if e["agent"] not in (seat, None) and "outcome" in e["payload"]]
    assert others and all("latency_s" not in e["payload"] for e in others)
    talk = [e for e in mine if e["kind"] == "talk"]
    assert all(len(e["payload"]["text"]) <= 40 for e in talk) and talk[0]["payload"]["text"] == "let us take 6 each"
    assert "refused: 80 characters; at most 40" in screen.getvalue()
    assert (run / "llm_calls.jsonl").read_text() == ""
    ds = sl.load(tmp_path)
    ext = ds.payloads("extraction", "sovsim").collect()
    assert set(ext.filter(ext["agent"] == seat)["outcome"].to_list()) == {"human"}
    assert ds.llm_calls.collect().height == 0


def test_a_person_negotiates_a_scarce_game(tmp_path):
    from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner
    from scarce_lab.runtime import run_sync
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    def answer(field: str, prompt: str) -> str:
        name = field.rsplit(".", 1)[-1]
        if name in ("to", "worker", "desired_position"):
            opts = choices_in(prompt)
            return opts[int(field.split(".")[1]) if name == "worker" else 0] if opts else "1"
        return {"text": "can I go first?", "reasoning": "short job"}.get(name, "0" if "price" in name else "30")

    cfg = ScarceConfig(workers=3, subruns=1, model="scripted/random", mechanism="revisable", seed=2,
                       seats={"w0.negotiator": "human/ines"})
    screen = Screen()
    with use_desk(TerminalDesk(Keys(screen, answer), screen, show_prompt=False)):
        run_sync(ScarceRunner(cfg, tmp_path, tasks=[toy_task(0)], grade_fn=fake_grade,
                              sandbox=FakeSandbox(tmp_path / ".sbx")).arun())
    (run,) = [p.parent for p in tmp_path.rglob("manifest.json")]
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "complete" and man["notes"]["humans"]["w0.negotiator"]["person"] == "ines"
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    mine = {e["kind"] for e in events if e["agent"] == "w0" and e["payload"].get("outcome") == "human"}
    assert {"declaration", "reasoning", "ballot"} <= mine and mine & {"private_message", "private_silence"}


def test_a_fork_with_a_person_is_refused():
    from scarce_lab.config import SovSimConfig

    fork = {"parent": "sovsim-parent", "parent_digest": "a" * 64, "at": 2}
    with pytest.raises(ValueError, match="fork: seats.a1 is 'human/kim': a fork replays its parent's recorded model"):
        SovSimConfig(condition="kcpr", model="scripted/greedy", seats={"a1": "human/kim"}, fork=fork)


def test_a_person_is_never_in_a_cross_model_mean():
    import polars as pl

    from scarce_lab.environments.sovsim.analysis.cross import models_under_study

    per_sim = pl.DataFrame({"model": ["openai/gpt-4o", "human/kim", "scripted/greedy", "embedded/smollm2"]})
    assert models_under_study(per_sim) == (["embedded/smollm2", "openai/gpt-4o"], ["human/kim", "scripted/greedy"])


def test_a_person_answers_the_interview_after_the_game(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    def answer(field: str, prompt: str) -> str:
        if field == "self_assessment":
            return choices_in(prompt)[-1]
        return "6" if field == "extraction" else "took little"

    cfg = SovSimConfig(condition="bcpr", model="scripted/greedy", seats={"a1": "human/zed"}, game={"rounds": 1},
                       interviews=True)
    screen = Screen()
    keys = Keys(screen, answer)
    (run,) = sl.run(cfg, tmp_path, human=TerminalDesk(keys, screen, show_prompt=False))
    assert keys.error is None
    (mine,) = [json.loads(x)["payload"] for x in (run / "events.jsonl").read_text().splitlines()
               if '"interview"' in x and '"agent":"a1"' in x]
    assert (mine["answered_by"], mine["outcome"], mine["explanation"]) == ("human", "human", "took little")
    assert mine["self_assessment"] == "self_interested" and mine["latency_s"] >= 0


def test_a_person_out_of_time_gets_the_documented_fallback_recorded_as_such(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    read, write = os.pipe()  # nobody types
    cfg = SovSimConfig(condition="cpr", model="scripted/greedy", seats={"a2": "human/sol"}, game={"rounds": 1},
                       human_time_limit_s=0.4)
    try:
        (run,) = sl.run(cfg, tmp_path, human=TerminalDesk(os.fdopen(read, "r"), io.StringIO()))
    finally:
        os.close(write)
    man = json.loads((run / "manifest.json").read_text())
    assert man["notes"]["humans"]["a2"]["time_limit_s"] == 0.4 and man["config"]["human_time_limit_s"] == 0.4
    (mine,) = [json.loads(x)["payload"] for x in (run / "events.jsonl").read_text().splitlines()
               if '"extraction"' in x and '"agent":"a2"' in x]
    assert (mine["outcome"], mine["fallback_used"], mine["valid"]) == ("human_timeout", True, False)
    assert mine["extraction"] == 120 // 8 // 3 * 3 and mine["latency_s"] >= 0.4  # the sustainable share, floor3(P/8)


@pytest.mark.parametrize("typed", ["nan", "NaN", "inf", "-inf", "1e400", "1_0", "9" * 5000])
def test_keystrokes_no_bound_can_hold_are_refused(typed):
    from scarce_lab.llm.human import FormField

    for f in (FormField("price", "float", "p"), FormField("price", "float", "p", minimum=0, maximum=50),
              FormField("units", "int", "u")):
        value, why = parse_field(f, typed)
        assert value is None and why is not None and len(why) < 80, (f, typed, value)


@pytest.mark.parametrize(("typed", "value"), [(" 7 ", 7), ("+7", 7), ("-0", 0), ("７", 7)])
def test_whole_numbers_in_other_notations_read_as_their_value(typed, value):
    from scarce_lab.llm.human import FormField

    assert parse_field(FormField("units", "int", "u", minimum=0, maximum=9), typed) == (value, None)
