"""Scripted SCARCE agents with strategies (scarce_lab.environments.scarce.agents.scripted): budgets
spent down, urgency near deadlines, reciprocity and alliances through private messages,
and the skilled solver whose progress is stochastic and needs several slots."""

from __future__ import annotations

import asyncio
import math

import polars as pl
import pytest

from scarce_lab.environments.scarce.agents import (
    SCRIPTED_NEGOTIATORS,
    SkilledScriptedSolver,
    StrategicNegotiator,
    make_negotiator,
    make_solver,
)
from scarce_lab.environments.scarce.agents.scripted import (
    ATTEMPT_S,
    FAILED_NOTE,
    SPEND_SHARE,
    parse_skill,
)
from scarce_lab.environments.scarce.analysis.dynamics import budget_left
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.environments.scarce.world import (
    Contention,
    Declaration,
    MechanismConfig,
    NegotiationView,
    Request,
)
from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, of, toy_task

W = ("w0", "w1", "w2")


def run(coro):
    return asyncio.run(coro)


def view(c: Contention, w: str, *, budget=1000, remaining=1200.0, history=(), duration=60) -> NegotiationView:
    return NegotiationView(worker=w, contention=c.private_view(w), history=list(history), own_budget=budget,
                           own_deadline_s=1500.0, own_remaining_s=remaining, private_round=c.private_round)


def contention(duration=60, **cfg) -> Contention:
    return Contention(3, [Request(worker=w, time_s=float(i), duration_s=duration) for i, w in enumerate(W)],
                      MechanismConfig(**cfg))


def declared(c: Contention, bids=(10, 20, 30)) -> Contention:
    for w, b in zip(W, bids, strict=True):
        c.declare(w, Declaration(desired_position=1, desired_duration_seconds=60, bid_price=b))
    c.advance()
    for w in W:
        c.reason(w, "")
    c.advance()
    return c


def past(k, order):
    """A public history row: contention ``k``, workers in ``order`` (first = position 1)."""
    return {"contention": k, "allocations": [{"worker": w, "position": i + 1, "duration_s": 60}
                                             for i, w in enumerate(order)], "bids": {}, "subrun": 0}


def test_policies_are_known_to_the_factory_and_config():
    for p in ("spend-down", "urgency", "reciprocal", "coalition", "strategic"):
        assert p in SCRIPTED_NEGOTIATORS
        neg = make_negotiator(f"scripted/{p}")  # one negotiator class, deciding through its Model
        assert neg.scripted and isinstance(neg.lm.policy, StrategicNegotiator) and neg.lm.policy.policy == p
        ScarceConfig(model=f"scripted/{p}")
    with pytest.raises(ValueError, match="strategic negotiator policy"):
        StrategicNegotiator("greedy")


def test_spend_down_bids_a_share_of_what_is_left():
    neg = StrategicNegotiator("spend-down")
    c = contention()
    left, bids = 1000, []
    for _ in range(4):
        d = run(neg.declare(view(c, "w1", budget=left))).value
        bids.append(d.bid_price)
        left -= d.bid_price
    assert bids == [350, 228, 148, 96]  # ceil(0.35 x balance): a geometric spend-down
    assert left / 1000 < 1 / 3 and bids[0] == math.ceil(SPEND_SHARE * 1000)
    assert run(StrategicNegotiator("reciprocal").declare(view(c, "w1", budget=1000))).value.bid_price == 100


def test_urgency_raises_the_bid_and_asks_for_the_first_place_near_the_deadline():
    neg = StrategicNegotiator("urgency")
    c = contention(duration=60)  # urgency horizon: 8 x 60 = 480 s
    calm = run(neg.declare(view(c, "w2", remaining=1000.0))).value
    assert (calm.desired_position, calm.bid_price) == (3, 100)  # request-time position, 10 % of 1000
    near = run(neg.declare(view(c, "w2", remaining=96.0))).value  # u = 1 - 96/480 = 0.8
    assert near.desired_position == 1 and near.bid_price == math.ceil(1000 * 0.1 * (1 + 2 * 0.8))
    c2 = declared(contention())
    assert "deadline is close" in run(neg.reason(view(c2, "w2", remaining=96.0))).value


def test_reciprocity_comes_from_the_visible_history_and_is_honoured_in_the_ballot():
    neg = StrategicNegotiator("reciprocal")
    c = declared(contention())
    hist = [past(0, ["w0", "w1"])]  # w1 waited behind w0 (w2 was not there)
    to, text = run(neg.message(view(c, "w0", history=hist))).value
    assert to == "w1" and text.startswith("[return]") and "#0" in text
    c.send("w0", "w1", text)
    # without memory (no history shown) there is nothing to return
    assert run(neg.message(view(contention(), "w0"))).value is None
    # w1, who is owed, asks w0... and w0 answers in round 2 and keeps its word
    c2 = declared(contention())
    ask = run(neg.message(view(c2, "w1", history=hist))).value
    assert ask[0] == "w0" and ask[1].startswith("[ask-return]")
    c2.send("w1", "w0", ask[1])
    c2.advance()
    reply = run(neg.message(view(c2, "w0", history=hist))).value
    assert reply[0] == "w1" and reply[1].startswith("[ok-return]")
    c2.send("w0", "w1", reply[1])
    c2.advance()
    assert run(neg.ballot(view(c2, "w0", history=hist))).value.ranking()[:2] == ["w1", "w0"]
    # an urgent reciprocal worker declines
    c3 = declared(contention())
    c3.send("w1", "w0", ask[1])
    c3.advance()
    urgent = StrategicNegotiator("strategic")
    assert run(urgent.message(view(c3, "w0", history=hist, remaining=10.0))).value[1].startswith("[no-return]")


def test_alliance_offer_accept_and_ballots_of_both_allies():
    neg = StrategicNegotiator("coalition", seed=1)
    assert run(neg.message(view(declared(contention()), "w2"))).value is None  # met nobody: no offer
    met = [past(0, ["w0", "w2"])]  # w2 met w0 (w0 was first)
    c = declared(contention())
    to, offer = run(neg.message(view(c, "w2", history=met))).value
    assert offer.startswith("[ally]") and to == "w0"
    c.send("w2", to, offer)
    c.advance()
    to2, ans = run(neg.message(view(c, to, history=met))).value
    assert to2 == "w2" and ans.startswith("[ally-yes]")
    c.send(to, "w2", ans)
    c.advance()
    assert run(neg.ballot(view(c, "w2", history=met))).value.ranking()[:2] == ["w2", to]
    assert run(neg.ballot(view(c, to, history=met))).value.ranking()[:2] == ["w2", to]
    # loyalty: first and second together before -> the former second is offered first place
    hist = [past(0, ["w2", "w0", "w1"])]
    loyal = run(neg.message(view(declared(contention()), "w2", history=hist))).value
    assert loyal[0] == "w0" and "this time I rank you first" in loyal[1]


def test_revision_follows_urgency_and_budget():
    neg = StrategicNegotiator("strategic")
    c = declared(contention(mechanism="revisable"), bids=(10, 20, 300))
    c.advance()  # private round 1 silent -> revision
    assert run(neg.revise(view(c, "w2"))).value == 21  # leads by far: one above the next bid
    assert run(neg.revise(view(c, "w0", remaining=5.0))).value == 301  # urgent: outbid the top


def test_parse_skill_and_factory():
    assert parse_skill(None) == 0.5 and parse_skill("0.25") == 0.25
    for bad in ("0", "1.5", "x"):
        with pytest.raises(ValueError, match="skill"):
            parse_skill(bad)
    s = make_solver("scripted/skilled:0.3", toy_task(), seed=4)
    assert s.scripted and s.model == "scripted/skilled:0.3"
    assert isinstance(s.lm.policy, SkilledScriptedSolver) and s.lm.policy.skill == 0.3
    assert s.lm.policy.model == "scripted/skilled:0.3"
    with pytest.raises(ValueError, match="skill must be in"):
        ScarceConfig(model="scripted/skilled:0", negotiator_model="scripted/fifo")
    with pytest.raises(ValueError, match="scripted negotiator policy"):
        ScarceConfig(model="scripted/skilled")  # the solver's name is not a negotiator policy


def _skilled_run(tmp_path, *, skill=0.5, seed=0, subruns=1, memory="cross", deadline_min=25.0, workers=2):
    cfg = ScarceConfig(workers=workers, subruns=subruns, model=f"scripted/skilled:{skill}",
                       negotiator_model="scripted/strategic", memory=memory, deadline_min=deadline_min, seed=seed)
    return run_scarce(cfg, tmp_path, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade,
                      sandbox=FakeSandbox(tmp_path / f"sbx{seed}{memory}{skill}"))


def test_skilled_solver_needs_several_slots_and_its_progress_is_stochastic(tmp_path):
    attempts = {}
    for seed in range(4):
        evs = events(_skilled_run(tmp_path, seed=seed))
        reqs = [e for e in of(evs, "slot_request") if e["agent"] == "w0"]
        attempts[seed] = len(reqs)
        assert len(reqs) >= 2  # the explore slot and at least one attempt slot
        assert any(e["payload"]["reason"] == "submit" for e in of(evs, "submission"))
    assert len(set(attempts.values())) > 1  # seeds differ in how many slots the work took
    low = sum(len(of(events(_skilled_run(tmp_path / "l", skill=0.2, seed=s)), "slot_request")) for s in range(3))
    high = sum(len(of(events(_skilled_run(tmp_path / "h", skill=1.0, seed=s)), "slot_request")) for s in range(3))
    assert high < low


def test_skilled_solver_requests_grow_when_memory_carries_failures(tmp_path):
    firsts = {}
    for memory in ("cross", "subrun"):
        evs = events(_skilled_run(tmp_path, skill=0.2, seed=1, subruns=3, memory=memory))
        per = {}
        for e in of(evs, "slot_request"):
            if e["agent"] == "w0" and e["payload"]["reason"].startswith("attempt"):
                per.setdefault(e["payload"]["subrun"], e["payload"]["duration_s"])
        firsts[memory] = [per[k] for k in sorted(per)]
    assert firsts["subrun"] == [ATTEMPT_S + 10] * 3  # each subrun starts afresh
    assert firsts["cross"][0] == ATTEMPT_S + 10 and firsts["cross"][-1] > firsts["cross"][0]


def test_skilled_solver_gives_up_before_its_deadline(tmp_path):
    evs = events(_skilled_run(tmp_path, skill=0.05, seed=2, deadline_min=2.0))
    subs = {e["agent"]: e["payload"] for e in of(evs, "submission")}
    assert set(subs) == {"w0", "w1"}
    # some worker ran out of time: it either submitted what it had or missed while waiting
    assert any(p["reason"] in ("deadline", "submit") and p["score"] == 0.0 or p["deadline_missed"]
               for p in subs.values())
    notes = [e for e in of(evs, "memory_save") if FAILED_NOTE in e["payload"]["text"]]
    assert notes  # failed attempts leave free notes


def test_a_strategic_scripted_run_exercises_budget_phases_and_replies(tmp_path):
    evs = events(_skilled_run(tmp_path, seed=3, subruns=1, workers=4, deadline_min=10.0))
    from scarce_lab.environments.scarce.tables import contentions_table

    ct = budget_left(contentions_table(tmp_path))
    assert {">66%", "33-66%"} <= set(ct["budget_phase"].drop_nulls())
    msgs = of(evs, "private_message")
    assert any(m["payload"]["private_round"] == 2 for m in msgs)  # answers in round 2
    assert ct.filter(pl.col("private_sent") > 0).height > 0
