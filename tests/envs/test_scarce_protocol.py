"""SCARCE environment: aggregation rule on hand cases, budgets, clock, protocol phases."""

import pytest

from scarce_lab.environments.scarce.world import (
    Ballot,
    BallotEntry,
    ClockConfig,
    Contention,
    Declaration,
    InsufficientFunds,
    Ledger,
    Mechanism,
    MechanismConfig,
    Phase,
    ProtocolError,
    Request,
    SandboxTimeline,
    aggregate_ballots,
    baseline_schedule,
)


def B(*rows):
    return Ballot(entries=[BallotEntry(worker=w, duration_seconds=d, price=p) for w, d, p in rows])


DECL = {
    "a": Declaration(desired_position=1, desired_duration_seconds=90, bid_price=50),
    "b": Declaration(desired_position=1, desired_duration_seconds=200, bid_price=30),
    "c": Declaration(desired_position=2, desired_duration_seconds=60, bid_price=80),
}
TIMES = {"a": 0.0, "b": 1.0, "c": 2.0}


def test_borda_order_durations_and_fixed_prices_by_hand():
    ballots = {
        "a": B(("a", 120, 10), ("b", 60, 5), ("c", 100, 0)),
        "b": B(("b", 300, 0), ("a", 60, 20), ("c", 30, 9)),
        "c": B(("c", 60, 7), ("a", 100, 40), ("b", 90, 1)),
    }
    s = aggregate_ballots(["a", "b", "c"], ballots, DECL, TIMES, slot_cap_s=300, seed_key="s")
    # Borda (n=3: 2,1,0 points): a = 2+1+1 = 4, b = 1+2+0 = 3, c = 0+0+2 = 2
    assert s.order() == ["a", "b", "c"]
    assert [x.borda for x in s.allocations] == [4, 3, 2]
    # durations: lower median of ballots, capped by declared desire (a: 90) and cap
    # a: [120, 60, 100] -> 100 -> min(100, 90) = 90; b: [60, 300, 90] -> 90; c: [100, 30, 60] -> 60
    assert [x.duration_s for x in s.allocations] == [90, 90, 60]
    # fixed bids: the declared price binds
    assert [x.price for x in s.allocations] == [50, 30, 80]
    assert not s.random_tiebreak


def test_revisable_price_is_median_of_ballots_capped_at_final_bid():
    ballots = {
        "a": B(("a", 90, 10), ("b", 60, 5), ("c", 60, 0)),
        "b": B(("b", 90, 0), ("a", 60, 70), ("c", 30, 9)),
        "c": B(("c", 60, 7), ("a", 90, 40), ("b", 90, 100)),
    }
    s = aggregate_ballots(
        ["a", "b", "c"], ballots, DECL, TIMES, mechanism=Mechanism.revisable,
        final_bids={"a": 35, "b": 30, "c": 80},
    )
    prices = {x.worker: x.price for x in s.allocations}
    # a: median_low(10, 70, 40) = 40, capped at revised bid 35; b: median_low(5, 0, 100) = 5;
    # c: median_low(0, 9, 7) = 7
    assert prices == {"a": 35, "b": 5, "c": 7}


def test_tie_breaks_first_votes_then_request_time_then_seeded_random():
    d = {w: Declaration(desired_position=1, desired_duration_seconds=10, bid_price=0) for w in "xyz"}
    # x: 2+0 = 2 with one first vote; y: 1+1 = 2 with none -> x first
    s = aggregate_ballots(
        ["x", "y"], {"x": B(("x", 5, 0), ("y", 5, 0)), "y": B(("y", 5, 0), ("x", 5, 0))},
        d, {"x": 5.0, "y": 3.0},
    )
    # equal Borda (1,1) and first votes (1,1): earlier request (y at 3 s) wins
    assert s.order() == ["y", "x"] and not s.random_tiebreak
    three = {
        "x": B(("x", 5, 0), ("y", 5, 0), ("z", 5, 0)),
        "y": B(("y", 5, 0), ("x", 5, 0), ("z", 5, 0)),
        "z": B(("z", 5, 0), ("x", 5, 0), ("y", 5, 0)),
    }
    # x = 2+1+1 = 4 beats y = 1+2+0 = 3 even though y requested first
    assert aggregate_ballots(["x", "y", "z"], three, d, {"x": 9.0, "y": 0.0, "z": 0.0}).order()[0] == "x"
    # complete tie (same request time): seeded random, reproducible
    same = {"x": 1.0, "y": 1.0}
    bal = {"x": B(("x", 5, 0), ("y", 5, 0)), "y": B(("y", 5, 0), ("x", 5, 0))}
    r1 = aggregate_ballots(["x", "y"], bal, d, same, seed_key="k1")
    r2 = aggregate_ballots(["x", "y"], bal, d, same, seed_key="k1")
    assert r1.random_tiebreak and r1.order() == r2.order()
    orders = {tuple(aggregate_ballots(["x", "y"], bal, d, same, seed_key=str(k)).order()) for k in range(20)}
    assert orders == {("x", "y"), ("y", "x")}


def test_baselines():
    deadlines = {"a": 900.0, "b": 600.0, "c": 1500.0}
    assert baseline_schedule("fifo", ["c", "b", "a"], DECL, TIMES).order() == ["a", "b", "c"]
    assert baseline_schedule("sjf", ["a", "b", "c"], DECL, TIMES).order() == ["c", "a", "b"]
    assert baseline_schedule("edf", ["a", "b", "c"], DECL, TIMES, deadlines=deadlines).order() == ["b", "a", "c"]
    hb = baseline_schedule("highest-bid", ["a", "b", "c"], DECL, TIMES)
    assert hb.order() == ["c", "a", "b"] and [x.price for x in hb.allocations] == [80, 50, 30]
    assert all(x.price == 0 for x in baseline_schedule("fifo", ["a", "b"], DECL, TIMES).allocations)
    capped = baseline_schedule("fifo", ["b"], DECL, TIMES, slot_cap_s=100)
    assert capped.allocations[0].duration_s == 100
    with pytest.raises(ProtocolError, match="deadlines"):
        baseline_schedule("edf", ["a"], DECL, TIMES)
    with pytest.raises(ProtocolError, match="scheduler must be one of"):
        baseline_schedule("lottery", ["a"], DECL, TIMES)  # type: ignore[arg-type]


def test_bad_ballot_rejected():
    with pytest.raises(ProtocolError, match="not a permutation"):
        aggregate_ballots(["a", "b"], {"a": B(("a", 1, 0), ("a", 1, 0))}, DECL, TIMES)


def test_ledger_conservation_and_no_negative_budget():
    led = Ledger({"a": 100, "b": 40})
    p = led.charge_capped("a", 70, ref="c0")
    assert (p.amount, led.balance("a")) == (70, 30)
    p = led.charge_capped("b", 55, ref="c0")
    assert (p.requested, p.amount, p.capped, led.balance("b")) == (55, 40, True, 0)
    p = led.charge_capped("a", 31)
    assert (p.amount, led.balance("a")) == (30, 0)
    assert led.sink_balance == 140 == led.total_paid and led.conserved()
    with pytest.raises(InsufficientFunds):
        led.debit("a", 1)
    with pytest.raises(ValueError, match="integer >= 0"):
        led.charge_capped("a", -5)
    with pytest.raises(ValueError, match="budget of 'x'"):
        Ledger({"x": -1})
    assert all(b >= 0 for b in led.balances.values())


def test_clock_and_queue_wait_accounting():
    clk = ClockConfig(model_call_s=20, scripted_call_s=2, command_s=5)
    assert clk.call_cost(scripted=False, measured_s=1.3) == 20
    assert clk.call_cost(scripted=True) == 2
    assert ClockConfig(kind="wall").call_cost(scripted=False, measured_s=1.3) == 1.3
    tl = SandboxTimeline()
    # three slots booked at a contention ending at t=100: they run back to back
    assert tl.book(100, 60) == (100, 160)
    assert tl.book(100, 30) == (160, 190)  # second waits 60 s in the queue
    assert tl.book(100, 10) == (190, 200)  # third waits 90 s
    with pytest.raises(ValueError, match="clock kind"):
        ClockConfig(kind="lunar")  # type: ignore[arg-type]


def _play(cfg, reqs):
    c = Contention(0, reqs, cfg)
    phases = []
    for w in c.participants:
        c.declare(w, Declaration(desired_position=1, desired_duration_seconds=10, bid_price=5))
    phases.append(c.advance())
    return c, phases


def test_protocol_phase_order_and_visibility():
    reqs = [Request(worker=w, time_s=t, duration_s=30) for w, t in (("b", 2.0), ("a", 1.0), ("c", 3.0))]
    cfg = MechanismConfig(mechanism=Mechanism.revisable, private_rounds=2)
    c = Contention(0, reqs, cfg)
    assert c.participants == ["a", "b", "c"]
    c.declare("a", Declaration(desired_position=1, desired_duration_seconds=30, bid_price=10))
    assert c.public_view()["declarations"] == {}  # sealed while others have not declared
    with pytest.raises(ProtocolError, match="no submission from"):
        c.advance()
    with pytest.raises(ProtocolError, match="desired_position must be in 1..3"):
        c.declare("b", Declaration(desired_position=4, desired_duration_seconds=30, bid_price=1))
    with pytest.raises(ProtocolError, match="slot cap"):
        c.declare("b", Declaration(desired_position=1, desired_duration_seconds=301, bid_price=1))
    for w in "bc":
        c.declare(w, Declaration(desired_position=2, desired_duration_seconds=20, bid_price=3))
    assert c.advance() == Phase.reasoning
    assert set(c.public_view()["declarations"]) == {"a", "b", "c"}
    for w in "abc":
        c.reason(w, f"reason of {w}")
    assert c.advance() == Phase.private and c.private_round == 1
    c.send("a", "b", "secret-ab")
    with pytest.raises(ProtocolError, match="already messaged"):
        c.send("a", "b", "again")
    with pytest.raises(ProtocolError, match="cannot message itself"):
        c.send("a", "a", "x")
    assert c.advance() == Phase.private and c.private_round == 2
    c.send("b", "a", "reply-ba")
    assert c.advance() == Phase.revision
    assert "secret-ab" in str(c.private_view("b")) and "reply-ba" in str(c.private_view("a"))
    assert "secret-ab" not in str(c.private_view("c")) and "secret" not in str(c.public_view())
    c.revise("a", 4)
    assert c.current_bid("a") == 4 and c.current_bid("b") == 3
    assert c.advance() == Phase.ballots
    with pytest.raises(ProtocolError, match="ranking must list each participant once"):
        c.ballot("a", B(("a", 10, 1), ("b", 10, 1)))
    for w in "abc":
        c.ballot(w, B(("a", 10, 1), ("b", 10, 1), ("c", 10, 1)))
    assert c.advance() == Phase.closed


def test_fixed_single_participant_and_baseline_phases():
    c, phases = _play(MechanismConfig(), [Request(worker="a", time_s=0, duration_s=5)])
    # one participant: no private phase; fixed: no revision
    assert phases == [Phase.reasoning]
    c.reason("a", "alone")
    assert c.advance() == Phase.ballots
    with pytest.raises(ProtocolError, match="phase is ballots, not revision"):
        c.revise("a", 1)
    c2, phases2 = _play(MechanismConfig(negotiate=False), [Request(worker="a", time_s=0, duration_s=5)])
    assert phases2 == [Phase.closed]
