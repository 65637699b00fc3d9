"""SCARCE's pure world (envs/scarce/world.py) without a sandbox, a grader or a run folder:
deadlines, payments, slot booking, step limits, memory horizons, the next-event order
and its tie-breaks, observations' privacy, determinism and pickling."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest

from scarce_lab.environments.scarce.conformance import (
    SCARCE_BUDGETS,
    SCARCE_DEADLINES,
    scarce_rules,
    scarce_step,
)
from scarce_lab.environments.scarce.world import (
    ActionRefused,
    Ballot,
    BallotEntry,
    ClockConfig,
    Declaration,
    EventKind,
    Phase,
    ScarceWorld,
    Status,
    WorldError,
    WorldRules,
    assign_tasks,
)
from scarce_lab.tasks.model import Task

W3 = ("w0", "w1", "w2")


def task(i: int = 0) -> Task:
    return Task(id=f"t{i}", name=f"task {i}", program=f"prog{i}", documentation="prints its input")


def rules(workers=W3, *, budgets=None, deadlines=None, **kw) -> WorldRules:
    kw.setdefault("clock", ClockConfig(scripted_call_s=2.0, command_s=5.0))
    kw.setdefault("scheduler", "fifo")
    return WorldRules(workers=workers, budgets=budgets or dict.fromkeys(workers, 100),
                      deadlines_s=deadlines or dict.fromkeys(workers, 600.0), **kw)


def world(workers=W3, **kw) -> ScarceWorld:
    w = ScarceWorld(rules(workers, **kw))
    w.start_subrun({n: task(i) for i, n in enumerate(workers)})
    return w


def play(wd: ScarceWorld, c, t: float, *, bids=None, durations=None, ballots=None):
    """Play contention ``c`` with FIFO declarations (or the given bids/durations)."""
    n = len(c.participants)
    for i, w in enumerate(c.participants):
        dur = (durations or {}).get(w, c.requests[w].duration_s)
        c.declare(w, Declaration(desired_position=min(i + 1, n), desired_duration_seconds=dur,
                                 bid_price=(bids or {}).get(w, 0)))
    c.advance()
    while c.phase != Phase.closed:
        for w in c.participants:
            if c.phase == Phase.reasoning:
                c.reason(w, "because")
            elif c.phase == Phase.revision:
                c.revise(w, c.current_bid(w))
            elif c.phase == Phase.ballots:
                order = (ballots or {}).get(w, c.participants)
                c.ballot(w, Ballot(entries=[BallotEntry(worker=x, duration_seconds=c.declarations[x]
                                                        .desired_duration_seconds, price=c.current_bid(x))
                                            for x in order]))
        c.advance()
    return wd.settle(c, t)


def request_all(wd: ScarceWorld, durations: dict[str, int]) -> None:
    for w, d in durations.items():
        assert wd.next_event().kind == EventKind.solver_step
        wd.begin_step(w, 0.0)
        wd.request_slot(w, d, "run")


# -- deadlines, booking, payments ------------------------------------------------------
def test_slots_booked_back_to_back_and_queue_wait_counts():
    wd = world(clock=ClockConfig(scripted_call_s=0.0))
    request_all(wd, {"w0": 20, "w1": 30, "w2": 10})
    ev = wd.next_event()
    assert (ev.kind, ev.t, ev.participants, ev.missed) == (EventKind.contention, 0.0, W3, ())
    st = play(wd, wd.open_contention(ev.participants), ev.t)
    assert [(b.slot.start, b.slot.end, b.slot.position) for b in st.bookings] == [(0, 20, 1), (20, 50, 2), (50, 60, 3)]
    assert all(wd.worker(w).status == Status.queued for w in W3) and wd.k == 1
    assert wd.timeline.free_at == 60
    # the first opens at once; each later one at its slot start
    assert [wd.next_event().kind, wd.open_slot("w0").start] == [EventKind.slot_open, 0]
    wd.begin_step("w0", 20.0)  # a decision overruns the slot end
    ev = wd.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.slot_close, "w0", 20.0)
    wd.close_slot("w0")
    ev = wd.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.solver_step, "w0", 20.0)  # tie with w1's slot start: w0 first


def test_queued_worker_whose_slot_starts_after_its_deadline_misses_it_and_slot_stays_idle():
    wd = world(deadlines={"w0": 600.0, "w1": 600.0, "w2": 45.0}, scheduler="highest-bid",
               clock=ClockConfig(scripted_call_s=0.0))
    request_all(wd, {"w0": 20, "w1": 30, "w2": 10})
    ev = wd.next_event()
    st = play(wd, wd.open_contention(ev.participants), ev.t, bids={"w0": 9, "w1": 7, "w2": 3})
    assert [b.allocation.worker for b in st.bookings] == ["w0", "w1", "w2"]
    assert st.bookings[2].slot.start == 50 > 45 and st.bookings[2].payment.amount == 3  # paid when booked
    for w in ("w0", "w1"):  # w0 and w1 use their slots and submit at their slot ends
        ev = wd.next_event()
        assert (ev.kind, ev.worker) == (EventKind.slot_open, w)
        slot = wd.open_slot(w)
        wd.begin_step(w, 0.0)
        assert wd.command_done(w, 0.0) == 5.0
        wd.worker(w).t = slot.end
        assert wd.next_event().kind == EventKind.slot_close
        wd.close_slot(w)
        ev = wd.next_event()
        assert (ev.kind, ev.worker) == (EventKind.solver_step, w)
        wd.begin_step(w, 0.0)
        wd.finish(w, missed=False, at=wd.worker(w).t, reason="submit")
    ev = wd.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.deadline_miss, "w2", 45.0)
    with pytest.raises(WorldError, match="after its deadline"):
        wd.open_slot("w2")
    f = wd.finish("w2", missed=True, at=ev.t)
    assert f.missed and not f.was_in_slot and wd.worker("w2").status == Status.missed
    assert wd.score(True, 0.75) == 0.0 and wd.score(False, 0.75) == 0.75
    # the booked slot [50, 60] stayed idle: the sandbox is still booked until 60
    assert wd.timeline.free_at == 60 and wd.ledger.balance("w2") == 97 and wd.ledger.conserved()
    assert wd.next_event().kind == EventKind.subrun_end


def test_zero_score_on_miss_can_be_turned_off():
    wd = world(zero_score_on_miss=False)
    assert wd.score(True, 0.5) == 0.5


def test_pending_requesters_past_their_deadline_miss_before_the_contention():
    wd = world(deadlines={"w0": 600.0, "w1": 25.0, "w2": 600.0}, clock=ClockConfig(scripted_call_s=0.0))
    request_all(wd, {"w0": 30})
    play(wd, wd.open_contention(["w0"]), 0.0)
    wd.open_slot("w0")  # sandbox busy until 30
    wd.begin_step("w1", 0.0)
    wd.request_slot("w1", 10, "x")
    wd.begin_step("w2", 0.0)
    wd.request_slot("w2", 10, "x")
    wd.begin_step("w0", 30.0)
    wd.close_slot("w0")
    wd.begin_step("w0", 1.0)
    wd.request_slot("w0", 5, "again")  # request at 31 s
    ev = wd.next_event()
    # the contention is due when the sandbox frees (30 s); w1's deadline (25 s) has passed
    assert (ev.kind, ev.t, ev.missed, ev.participants) == (EventKind.contention, 30.0, ("w1",), ("w0", "w2"))
    c = wd.open_contention(ev.participants)
    assert c.participants == ["w2", "w0"]  # ordered by request time


def test_payments_capped_at_balance_and_conserved():
    wd = world(budgets={"w0": 50, "w1": 8, "w2": 0}, scheduler="highest-bid")
    request_all(wd, {"w0": 10, "w1": 10, "w2": 10})
    st = play(wd, wd.open_contention(W3), 6.0, bids={"w0": 40, "w1": 30, "w2": 20})
    pays = {b.payment.payer: b.payment for b in st.bookings}
    assert [(p.requested, p.amount, p.capped, p.balance_after) for p in pays.values()] == [
        (40, 40, False, 10), (30, 8, True, 0), (20, 0, True, 0)]
    assert wd.ledger.sink_balance == 48 and wd.ledger.conserved()
    assert sum(wd.ledger.balances.values()) + wd.ledger.sink_balance == 58
    # a baseline without a market charges nothing
    wd2 = world(scheduler="fifo")
    request_all(wd2, {"w0": 10, "w1": 10, "w2": 10})
    st2 = play(wd2, wd2.open_contention(W3), 6.0, bids={"w0": 40, "w1": 30, "w2": 20})
    assert [b.payment.amount for b in st2.bookings] == [0, 0, 0]


def test_budgets_and_deadlines_apply_afresh_each_subrun():
    wd = ScarceWorld(rules(("w0",), budgets={"w0": 30}, scheduler="highest-bid", subruns=2))
    wd.start_subrun({"w0": task()})
    request_all(wd, {"w0": 10})
    play(wd, wd.open_contention(["w0"]), 0.0, bids={"w0": 25})
    assert wd.ledger.balance("w0") == 5
    with pytest.raises(WorldError, match="not over"):
        wd.start_subrun({"w0": task()})
    wd.finish("w0", missed=False, at=1.0, reason="submit")
    wd.start_subrun({"w0": task(1)})
    assert wd.ledger.balance("w0") == 30 and wd.timeline.free_at == 0 and wd.worker("w0").t == 0
    wd.finish("w0", missed=False, at=1.0)
    assert wd.over
    with pytest.raises(WorldError, match="all 2 subruns"):
        wd.start_subrun({"w0": task()})


# -- step limits, requests, time accounting ---------------------------------------------
def test_step_limit_is_an_automatic_submission_event():
    wd = world(("w0",), max_solver_steps=2)
    for i in range(2):
        ev = wd.next_event()
        assert (ev.kind, ev.t) == (EventKind.solver_step, 2.0 * i)
        assert wd.begin_step("w0", wd.decision_cost(True)) == 2.0 * i
    ev = wd.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.step_limit, "w0", 4.0)


def test_deadline_reached_while_working_and_in_slot():
    wd = world(("w0",), deadlines={"w0": 15.0})
    request_all(wd, {"w0": 60})  # the request costs no time here
    play(wd, wd.open_contention(["w0"]), 0.0)
    wd.open_slot("w0")
    wd.begin_step("w0", 2.0)
    assert wd.command_done("w0", 0.0) == 5.0 and wd.worker("w0").t == 7.0
    wd.begin_step("w0", 2.0)
    wd.command_done("w0", 0.0)  # t = 14
    wd.begin_step("w0", 2.0)  # t = 16, past the deadline, slot runs to 60
    ev = wd.next_event()
    assert (ev.kind, ev.t) == (EventKind.slot_close, 16.0)
    wd.close_slot("w0")
    ev = wd.next_event()
    assert (ev.kind, ev.t) == (EventKind.deadline_miss, 15.0)  # finished at the deadline itself


def test_commands_never_pass_the_slot_end_and_requests_are_clamped():
    wd = world(("w0",), slot_cap_s=30)
    wd.begin_step("w0", 0.0)
    assert wd.request_slot("w0", 10_000, "x" * 400).duration_s == 30
    assert len(wd.worker("w0").request.reason) == 300
    play(wd, wd.open_contention(["w0"]), 0.0)
    wd.open_slot("w0")
    with pytest.raises(ActionRefused, match="holding a slot"):
        wd.request_slot("w0", 10, "again")
    wd.worker("w0").t = 28.0
    assert wd.slot_left_s("w0") == 2.0
    assert wd.command_done("w0", 0.0) == 5.0 and wd.worker("w0").t == 30.0
    wall = ScarceWorld(rules(("w0",), clock=ClockConfig(kind="wall")))
    assert wall.decision_cost(False, 0.25) == 0.25 and wall.decision_cost(True, 0.5) == 0.5
    assert wd.decision_cost(False) == 20.0 and wd.decision_cost(True) == 2.0


def test_acting_out_of_turn_fails_loudly():
    wd = world()
    with pytest.raises(WorldError, match="'w0' is active"):
        wd.open_slot("w0")
    with pytest.raises(WorldError, match="'w1' is active"):
        wd.open_contention(["w1"])
    with pytest.raises(KeyError, match="unknown worker 'w9'"):
        wd.worker("w9")
    wd.finish("w0", missed=False, at=0.0)
    with pytest.raises(WorldError, match="already done"):
        wd.finish("w0", missed=True, at=1.0)
    with pytest.raises(WorldError, match="no subrun started"):
        ScarceWorld(rules()).next_event()


@pytest.mark.parametrize("field,value,msg", [
    ("scheduler", "lottery", "scheduler must be one of"),
    ("memory", "forever", "memory must be one of"),
    ("budgets", {"w0": 1}, "budgets must name exactly"),
    ("deadlines_s", {"w0": 0.0, "w1": 1.0, "w2": 1.0}, r"deadlines_s\['w0'\] must be > 0"),
    ("max_solver_steps", 0, "max_solver_steps must be an integer >= 1"),
    ("budgets", {"w0": -1, "w1": 1, "w2": 1}, "budget of 'w0' must be an integer >= 0"),
])
def test_bad_rules_name_the_field_and_value(field, value, msg):
    kw = {"budgets": dict.fromkeys(W3, 1), "deadlines_s": dict.fromkeys(W3, 1.0), field: value}
    with pytest.raises(ValueError, match=msg):
        WorldRules(workers=W3, **kw)


# -- next-event order ---------------------------------------------------------------------
def test_earliest_mover_first_ties_by_worker_order_and_movers_before_a_due_contention():
    wd = world(clock=ClockConfig(scripted_call_s=0.0))
    wd.begin_step("w1", 3.0)
    ev = wd.next_event()
    assert (ev.worker, ev.t) == ("w0", 0.0)  # w0 and w2 tie at 0: worker order
    wd.begin_step("w0", 3.0)
    assert wd.next_event().worker == "w2"
    wd.begin_step("w2", 0.0)
    wd.request_slot("w2", 10, "x")  # pending at 0 s; sandbox free: contention due at 0 s
    ev = wd.next_event()
    assert (ev.kind, ev.t, ev.participants) == (EventKind.contention, 0.0, ("w2",))
    # a mover whose next time equals the due time moves first (<=)
    wd2 = world(clock=ClockConfig(scripted_call_s=0.0))
    wd2.begin_step("w0", 5.0)
    wd2.request_slot("w0", 10, "x")  # request at 5 s
    wd2.begin_step("w1", 5.0)
    wd2.begin_step("w2", 6.0)
    ev = wd2.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.solver_step, "w1", 5.0)
    wd2.begin_step("w1", 1.0)
    ev = wd2.next_event()
    assert (ev.kind, ev.t, ev.participants) == (EventKind.contention, 5.0, ("w0",))


def test_queued_workers_move_at_their_slot_start():
    wd = world(("w0", "w1"), clock=ClockConfig(scripted_call_s=0.0))
    request_all(wd, {"w0": 20, "w1": 20})
    play(wd, wd.open_contention(["w0", "w1"]), 0.0)
    assert wd.worker("w1").next_time() == 20.0 and wd.worker("w1").t == 0.0
    wd.open_slot("w0")
    wd.begin_step("w0", 25.0)
    ev = wd.next_event()
    assert (ev.kind, ev.worker, ev.t) == (EventKind.slot_open, "w1", 20.0)
    assert wd.open_slot("w1").start == 20.0 and wd.worker("w1").t == 20.0


def test_subrun_end_at_the_latest_worker_time():
    wd = world(("w0", "w1"))
    wd.finish("w0", missed=False, at=12.5)
    wd.finish("w1", missed=True, at=40.0)
    ev = wd.next_event()
    assert (ev.kind, ev.t) == (EventKind.subrun_end, 40.0)


def test_task_assignment_is_seeded():
    pool = [task(i) for i in range(5)]
    a = assign_tasks(pool, W3, 3, "distinct", seed=1)
    assert a == assign_tasks(pool, W3, 3, "distinct", seed=1)
    assert all(len({t.id for t in sub.values()}) == 3 for sub in a)
    shared = assign_tasks(pool, W3, 2, "shared", seed=1)
    assert all(len({t.id for t in sub.values()}) == 1 for sub in shared)
    with pytest.raises(ValueError, match="task_assignment must be"):
        assign_tasks(pool, W3, 1, "lottery", seed=1)
    with pytest.raises(ValueError, match="pool is empty"):
        assign_tasks([], W3, 1, "shared", seed=1)


# -- a scripted driver: the runner's loop without I/O (shared with scarce_lab.environments.scarce.conformance) ----
BUDGETS, DEADLINES = SCARCE_BUDGETS, SCARCE_DEADLINES


def drive_event(wd: ScarceWorld, log: list, seen: list) -> bool:
    """One event handled like the runner would; ``seen`` gets ``(worker, observation
    JSON, everyone's balance then)``."""
    raw: list = []
    more = scarce_step(wd, log, raw)
    seen.extend((w, json.dumps(v), b) for w, v, b in raw)
    return more


def drive(wd: ScarceWorld, subruns: int, log: list, seen: list) -> None:
    for k in range(subruns):
        if wd.subrun < k:
            wd.start_subrun({w: task(k) for w in wd.rules.workers})
        while drive_event(wd, log, seen):
            pass


def driver_rules(**kw) -> WorldRules:
    return scarce_rules(kw.pop("memory", "subrun"), **kw)


def test_driver_exercises_slots_contentions_and_subruns():
    log, seen = [], []
    drive(ScarceWorld(driver_rules()), 3, log, seen)
    kinds = {x[0] for x in log}
    assert {"solver_step", "slot_open", "slot_close", "contention", "subrun_end", "settled"} <= kinds
    assert sum(x[0] == "subrun_end" for x in log) == 3 and len(seen) > 100
    sizes = [len(x[3]) for x in log if x[0] == "contention"]
    assert sizes.count(3) >= 3 and 1 in sizes  # three-way contentions (private messages matter) and single ones


@pytest.mark.parametrize("memory", ["none", "subrun", "cross"])
def test_no_observation_holds_another_workers_private_fields(memory):
    wd = ScarceWorld(driver_rules(memory=memory))
    log, seen = [], []
    drive(wd, 3, log, seen)
    secrets = []  # (text, parties) of every private message sent
    for k in range(wd.k):
        for a in W3:
            for b in W3:
                for r in (1, 2):
                    secrets.append((f"SECRET-{a}-{b}-{k}-{r}", {a, b}))
    own_budget_shown = own_file_shown = secrets_seen = 0
    for me, text, balances in seen:
        view = json.loads(text)
        assert view["own_budget"] == balances[me]
        for other in W3:
            if other == me:
                continue
            assert str(BUDGETS[other]) not in text, f"{me} sees {other}'s budget"
            assert str(balances[other]) not in text, f"{me} sees {other}'s balance {balances[other]}"
            assert str(DEADLINES[other]) not in text, f"{me} sees {other}'s deadline"
            assert f"{other}-private-file" not in text, f"{me} sees {other}'s files"
            # every time here is a whole second except deadline-derived ones: a number with
            # another worker's fraction (.5 / .25 / .75) would be its deadline or remaining time
            frac = DEADLINES[other] % 1
            assert not [x for x in _numbers(view) if x % 1 == frac], f"{me} sees {other}'s deadline-derived time"
            assert f"note of {other}" not in text, f"{me} sees {other}'s notes"
        for secret, parties in secrets:
            if secret in text:
                assert me in parties, f"{me} sees {secret}"
                secrets_seen += 1
        own_budget_shown += 1000 < view["own_budget"] <= BUDGETS[me] and view["worker"] == me
        own_file_shown += f"{me}-private-file" in text
    # positive controls: each sees its own state, and recipients see their messages
    assert own_budget_shown == len(seen) and own_file_shown > 0 and secrets_seen > 0
    assert any(str(DEADLINES[me]) in text for me, text, _ in seen)
    assert any(x % 1 == DEADLINES[me] % 1 for me, text, _ in seen for x in _numbers(json.loads(text)))
    assert any(b[me] < BUDGETS[me] for me, _, b in seen)  # payments happened: balances moved


def _numbers(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield obj


@pytest.mark.parametrize("memory", ["none", "subrun", "cross"])
def test_memory_horizons_of_negotiator_views(memory):
    wd = ScarceWorld(driver_rules(memory=memory))
    log, seen = [], []
    drive(wd, 3, log, seen)
    views = [json.loads(t) for _, t, _ in seen if "contention" in json.loads(t)]
    by_c: dict[int, list[dict]] = {}
    for v in views:
        by_c.setdefault(v["contention"]["contention"], []).append(v)
    subrun_of = {row["contention"]: row["subrun"] for row in wd.history.rows}
    assert len(set(subrun_of.values())) == 3 and all(by_c[k] for k in subrun_of)
    for k, vs in by_c.items():
        earlier = [c for c in subrun_of if c < k]
        same = [c for c in earlier if subrun_of[c] == subrun_of[k]]
        for v in vs:
            hist = [h["contention"] for h in v["history"]]
            own = [h["contention"] for h in v["own_history"]]
            if memory == "none":
                assert hist == [] and own == [] and v["memories"] == []
                continue
            visible = earlier if memory == "cross" else same
            assert hist == visible[-2:]  # history_k = 2
            assert set(own) <= set(visible) and own == sorted(own) and len(own) <= 2
            assert all(h["paid"] >= 0 for h in v["own_history"])
            assert "payment" not in json.dumps(v["history"])  # payments could reveal budgets
            subs = {int(n.rsplit(" ", 1)[1]) for n in v["memories"]}
            assert subs <= ({subrun_of[k]} if memory == "subrun" else set(range(subrun_of[k] + 1)))
    if memory != "none":  # positive controls: there was something to show
        assert any(v["history"] for v in views) and any(v["own_history"] for v in views)
        assert any(v["memories"] for v in views)
    if memory == "cross":  # the horizon really reaches back across subruns
        k2 = min(k for k in by_c if subrun_of[k] == 2)  # first contention of the last subrun
        assert all(h["subrun"] < 2 for v in by_c[k2] for h in v["history"]) and by_c[k2][0]["history"]
        assert any(min(int(n.rsplit(" ", 1)[1]) for n in v["memories"]) < 2 for v in by_c[k2])
    # solvers keep their own notes of the horizon
    solver_notes = [json.loads(t)["memories"] for _, t, _ in seen if "files" in json.loads(t)]
    assert any(solver_notes)


def test_same_rules_same_trajectory_and_pickled_world_continues_identically():
    full, again = ([], []), ([], [])
    drive(ScarceWorld(driver_rules()), 3, *full)
    drive(ScarceWorld(driver_rules()), 3, *again)
    assert full == again
    # checkpoint after the first contention (the durable point), resume from the copy
    wd = ScarceWorld(driver_rules())
    log, seen = [], []
    wd.start_subrun({w: task(0) for w in W3})
    while wd.k < 1:
        drive_event(wd, log, seen)
    copy = pickle.loads(pickle.dumps(wd))
    assert copy.memories["w0"] is copy.worker("w0").memories  # shared lists stay shared
    a, b = (list(log), list(seen)), (list(log), list(seen))
    drive(wd, 3, *a)
    drive(copy, 3, *b)
    assert a == b == full


def test_next_event_changes_nothing():
    wd = ScarceWorld(driver_rules())
    wd.start_subrun({w: task(0) for w in W3})
    log, seen, checked = [], [], 0
    while wd.subrun == 0 and not wd.over:
        before = pickle.dumps(wd)
        first = wd.next_event()
        assert wd.next_event() == first and pickle.dumps(wd) == before
        checked += 1
        if not drive_event(wd, log, seen):
            break
    assert checked > 20


# -- purity -------------------------------------------------------------------------------
def test_world_modules_do_no_io():
    """envs/scarce imports nothing that does I/O or knows agents, runners or storage."""
    allowed = {"__future__", "collections", "dataclasses", "enum", "typing", "math", "random", "statistics",
               "pydantic"}
    root = Path(__file__).resolve().parents[2] / "scarce_lab" / "envs" / "scarce"
    for f in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: must stay inside envs/scarce
                    assert node.level == 1, f"{f.name}: relative import {node.module} leaves envs/scarce"
                    continue
                mods = [node.module]
            else:
                continue
            for m in mods:
                assert m.split(".")[0] in allowed, f"{f.name} imports {m}"
