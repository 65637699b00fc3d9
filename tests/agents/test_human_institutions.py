"""A person at a SovSim table with the institutions on: the sanction form (a list of
target -> points entries asked as one optional field per target), and the latency of
each of a person's institution decisions recorded as measured (never a silent 0)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import Field

from scarce_lab.agents.decided import Decided
from scarce_lab.llm.decisions import DecisionPart, validate_decision
from scarce_lab.llm.human import HumanAnswer, form_answer, form_fields


def test_a_list_of_target_points_entries_is_one_optional_field_per_target():
    from scarce_lab.environments.sovsim.agents.institutions import sanction_schema

    schema = sanction_schema(("worker E", "boss F", "worker G"), 3)
    fields = form_fields(schema)
    pts = [f for f in fields if f.name.startswith("punish.")]
    assert [f.name for f in pts] == ["punish.worker E", "punish.boss F", "punish.worker G"]
    assert all(f.kind == "choice" and f.choices == ("0", "1", "2", "3") and f.values == (0, 1, 2, 3)
               and not f.required and "0 or empty: none" in f.description for f in pts)
    obj = form_answer(schema, {"reasoning": "too much", "punish.boss F": "2"}, fields)
    assert obj == {"reasoning": "too much", "punish": [{"name": "boss F", "points": 2}]}
    assert validate_decision(obj, schema)[1] is None
    nobody = form_answer(schema, {"reasoning": "fine"}, fields)
    assert nobody["punish"] == [] and validate_decision(nobody, schema)[1] is None
    # 0 points is no entry, typed ("0", a terminal) or picked (0, the form's value), like an empty field
    zeros = form_answer(schema, {"reasoning": "r", "punish.worker E": "0", "punish.boss F": 0,
                                 "punish.worker G": " 3 "}, fields)
    assert zeros["punish"] == [{"name": "worker G", "points": 3}] and validate_decision(zeros, schema)[1] is None


class _SlowDesk:
    """Answers every form after ``wait_s`` seconds: the first choice, 1, or a short text."""

    def __init__(self, wait_s: float):
        self.wait_s = wait_s

    async def ask(self, turn):
        await asyncio.sleep(self.wait_s)
        if turn.kind == "text":
            return HumanAnswer("ok", self.wait_s)
        return HumanAnswer({f.name: "r" if f.kind == "str" else f.choices[-1] if f.kind == "choice" else 1
                            for f in turn.fields}, self.wait_s)


def test_a_person_votes_proposes_and_punishes_with_each_latency_recorded(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    cfg = SovSimConfig(condition="bcpr", model="scripted/conditional", seats={"a2": "human/ola"}, seed=3,
                       game={"rounds": 3}, sanctions=True, sanction_max_points=2, quota="all", elections=1)
    (run,) = sl.run(cfg, tmp_path, human=_SlowDesk(0.12))
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    mine = [e for e in events if e["agent"] == "a2" and e["payload"].get("outcome") == "human"]
    assert {"ballot", "quota_proposal", "sanction", "extraction"} <= {e["kind"] for e in mine}
    assert all(e["payload"]["latency_s"] >= 0.1 for e in mine), [(e["kind"], e["payload"]["latency_s"])
                                                                  for e in mine]
    punished = [e for e in mine if e["kind"] == "sanction"]
    assert punished and all(sum(e["payload"]["points"]) > 0 for e in punished)


def test_a_persons_decision_without_its_latency_is_refused_not_written_as_zero():
    lost = Decided(value=3, outcome="human")
    with pytest.raises(ValueError, match="without its latency"):
        lost.decision_fields()
    assert Decided(value=3, outcome="human", latency_s=0.0004).decision_fields()["latency_s"] == 0.0


class _LeavingDesk(_SlowDesk):
    """Answers like :class:`_SlowDesk` (at once) until the ``leave_at``-th question, where
    the person's input ends (``EOFError``, as a closed terminal)."""

    def __init__(self, leave_at: int = 0):
        super().__init__(0.0)
        self.leave_at, self.asked = leave_at, []

    async def ask(self, turn):
        self.asked.append(turn.purpose)
        if len(self.asked) == self.leave_at:
            raise EOFError("the person left")
        return await super().ask(turn)


def _events(run):
    rows = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    return [(e["kind"], e["agent"], e["round"], {k: v for k, v in e["payload"].items() if k != "latency_s"})
            for e in rows]


@pytest.mark.parametrize(("leave_at", "phase"), [(3, "sanction"), (4, "ballot"), (5, "quota")])
def test_a_game_the_person_left_in_an_institution_phase_resumes_to_the_same_game(tmp_path, leave_at, phase):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig
    from scarce_lab.runners.preflight import RunFailedError

    cfg = SovSimConfig(condition="kcpr", model="scripted/quota_keeper", seats={"a0": "human/tui"}, seed=9,
                       game={"rounds": 2}, quota="all", elections=1, sanctions=True, sanction_max_points=2)
    whole = _LeavingDesk()
    (ref,) = sl.run(cfg, tmp_path / "whole", human=whole)
    assert whole.asked[leave_at - 1] == phase, whole.asked
    left = _LeavingDesk(leave_at)
    with pytest.raises(RunFailedError, match="EOFError"):
        sl.run(cfg, tmp_path / "left", human=left)
    (run,) = sl.run(cfg, tmp_path / "left", human=_LeavingDesk(), resume=True)
    assert _events(run) == _events(ref)


class _GreedyPunisher(_SlowDesk):
    """Punishes everyone with the most points, then (asked again) with the fewest (1: the
    choice after 0, which means none)."""

    def __init__(self):
        super().__init__(0.0)
        self.problems = []

    async def ask(self, turn):
        if turn.problem:
            self.problems.append(turn.problem)
        return HumanAnswer({f.name: "r" if f.kind == "str" else f.choices[1 if turn.problem else -1]
                            for f in turn.fields}, 0.0)


def test_a_person_punishing_beyond_the_round_payoff_is_asked_again_not_given_no_punishment(tmp_path):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    cfg = SovSimConfig(condition="cpr", model="scripted/sustainable", seats={"a2": "human/eli"}, seed=4,
                       game={"rounds": 1}, sanctions=True, sanction_cost=4)
    desk = _GreedyPunisher()
    (run,) = sl.run(cfg, tmp_path, human=desk)
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    (mine,) = [e["payload"] for e in events if e["kind"] == "sanction" and e["agent"] == "a2"]
    assert desk.problems and "your round payoff affords at most" in desk.problems[0]
    assert mine["points"] == [1, 1, 1] and not mine["fallback_used"] and mine["repaired"]


class _Hours(DecisionPart):
    crew: Literal["mate", "cook"]
    hours: int = Field(..., ge=1, le=12)


class _Tips(DecisionPart):
    crew: Literal["mate", "cook"]
    tip: int = Field(..., ge=0, le=5)


def test_zero_of_a_count_per_key_is_no_entry_and_a_legal_zero_stays_an_entry():
    from pydantic import create_model

    from scarce_lab.agents.human import parse_field
    from scarce_lab.llm.decisions import DecisionModel

    # at most one entry per key (max_length 2 of 2 keys) is still a mapping
    shifts = create_model("Shifts", __base__=DecisionModel, rota=(list[_Hours], Field(..., max_length=2)))
    tips = create_model("Tips", __base__=DecisionModel, tips=(list[_Tips], ...))
    by = {f.name: f for f in form_fields(shifts)}
    assert (by["rota.mate"].kind, by["rota.mate"].minimum, by["rota.mate"].maximum) == ("int", 0, 12)
    typed = {name: parse_field(f, text)[0] for (name, f), text in zip(by.items(), (" 0 ", "7"), strict=True)}
    obj = form_answer(shifts, typed)
    assert obj == {"rota": [{"crew": "cook", "hours": 7}]} and validate_decision(obj, shifts)[1] is None
    (mate, cook) = form_fields(tips)  # 0 is a legal tip: kept as an entry, the bound unchanged
    assert mate.minimum == 0 and "none" not in mate.description
    assert form_answer(tips, {"tips.mate": 0, "tips.cook": None}) == {"tips": [{"crew": "mate", "tip": 0}]}


@pytest.mark.parametrize(("kind", "lo", "hi", "typed", "value"),
                         [("int", 0, 5, "0", 0), ("int", 0, 5, " 0\t", 0), ("int", -3, 0, "-0", 0),
                          ("float", 0, 1, "0", 0.0), ("float", 0, 1, " 0.0 ", 0.0), ("float", -1, 0, "-0.0", 0.0)])
def test_zero_is_read_wherever_the_bounds_hold_it(kind, lo, hi, typed, value):
    from scarce_lab.agents.human import parse_field
    from scarce_lab.llm.human import FormField

    assert parse_field(FormField("catch", kind, "c", minimum=lo, maximum=hi), typed) == (value, None)
    assert parse_field(FormField("catch", kind, "c", minimum=lo, maximum=hi, required=False), typed) == (value, None)


def test_a_whole_number_field_refuses_a_decimal_zero_by_its_value():
    from scarce_lab.agents.human import parse_field
    from scarce_lab.llm.human import FormField

    assert parse_field(FormField("catch", "int", "c", minimum=0, maximum=5), " 0.0 ") == (
        None, "'0.0' is not a whole number")
    assert parse_field(FormField("catch", "int", "c", minimum=0, maximum=5), "  ") == (
        None, "no answer: type a whole number (0..5)")
