"""A person at a SovSim table with the institutions on: the sanction form (a list of
target -> points entries asked as one optional field per target), and the latency of
each of a person's institution decisions recorded as measured (never a silent 0)."""

from __future__ import annotations

import asyncio
import json

import pytest

from scarce_lab.agents.decided import Decided
from scarce_lab.llm.decisions import validate_decision
from scarce_lab.llm.human import HumanAnswer, form_answer, form_fields


def test_a_list_of_target_points_entries_is_one_optional_field_per_target():
    from scarce_lab.environments.sovsim.agents.institutions import sanction_schema

    schema = sanction_schema(("worker E", "boss F", "worker G"), 3)
    fields = form_fields(schema)
    pts = [f for f in fields if f.name.startswith("punish.")]
    assert [f.name for f in pts] == ["punish.worker E", "punish.boss F", "punish.worker G"]
    assert all(f.kind == "choice" and f.choices == ("1", "2", "3") and not f.required for f in pts)
    obj = form_answer(schema, {"reasoning": "too much", "punish.boss F": "2"}, fields)
    assert obj == {"reasoning": "too much", "punish": [{"name": "boss F", "points": 2}]}
    assert validate_decision(obj, schema)[1] is None
    nobody = form_answer(schema, {"reasoning": "fine"}, fields)
    assert nobody["punish"] == [] and validate_decision(nobody, schema)[1] is None


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
    """Punishes everyone with the most points, then (asked again) with the fewest."""

    def __init__(self):
        super().__init__(0.0)
        self.problems = []

    async def ask(self, turn):
        if turn.problem:
            self.problems.append(turn.problem)
        return HumanAnswer({f.name: "r" if f.kind == "str" else f.choices[0 if turn.problem else -1]
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
