"""The auction's institutions in the pure world: commitments and breaches, fines by
mechanism or vote, reputation, escrowed contracts, and conservation of money."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.environments.scarce.world import (
    Ballot,
    BallotEntry,
    Ledger,
    ProtocolError,
    WorldRules,
)
from scarce_lab.environments.scarce.world.budgets import ESCROW, InsufficientFunds
from scarce_lab.environments.scarce.world.institutions import (
    InstitutionRules,
    Institutions,
    check_offer,
    judge_overrun,
    judge_promise,
    levy,
    passes,
)
from scarce_lab.environments.scarce.world.institutions.reputation import Record
from scarce_lab.environments.scarce.world.institutions.sanctions import Breach, Promise

W = ("w0", "w1", "w2", "w3")


def ballot(*order: str) -> Ballot:
    return Ballot(entries=[BallotEntry(worker=w, duration_seconds=30, price=0) for w in order])


def total(led: Ledger) -> int:
    return sum(led.balances.values()) + led.sink_balance + led.escrow_balance


def test_promise_kept_and_broken_with_the_displaced_as_harmed():
    p = Promise("w0", 3, min_own_rank=3)
    assert judge_promise(p, ballot("w1", "w2", "w0", "w3"), W) is None  # rank 3: kept
    assert judge_promise(p, ballot("w1", "w2", "w3", "w0"), W) is None  # later: kept
    b = judge_promise(p, ballot("w0", "w2", "w1", "w3"), W)
    assert b is not None and b.own_rank == 1 and b.promised_rank == 3
    assert b.harmed == ("w2", "w1")  # placed at positions 2..3, below the breaker
    assert b.voters == ("w1", "w2", "w3")
    b2 = judge_promise(p, ballot("w2", "w0", "w1", "w3"), W)
    assert b2.harmed == ("w1",)


def test_promise_rank_must_be_legal():
    ins = Institutions(InstitutionRules(sanctions="mechanism"), W)
    ins.open(0, W)
    with pytest.raises(ProtocolError, match="min_own_rank must be an integer in 2..4, got 1"):
        ins.promise(0, "w0", 1)
    with pytest.raises(ProtocolError, match="got 5"):
        ins.promise(0, "w0", 5)
    with pytest.raises(ProtocolError, match="got True"):
        ins.promise(0, "w0", True)
    ins.promise(0, "w0", 2)
    with pytest.raises(ProtocolError, match="already promised"):
        ins.promise(0, "w0", 3)
    off = Institutions(InstitutionRules(contracts=True), W)
    off.open(0, W)
    with pytest.raises(ProtocolError, match="commitments are off"):
        off.promise(0, "w0", 2)


def test_overrun_and_its_harmed_worker():
    assert judge_overrun("w1", 2, 100.0, 100.0, "w2", W) is None
    b = judge_overrun("w1", 2, 101.5, 100.0, "w2", W)
    assert b.kind == "overrun" and b.harmed == ("w2",) and b.overrun_s == 1.5
    assert judge_overrun("w1", 2, 101.5, 100.0, None, W).harmed == ()


def test_vote_needs_a_strict_majority_of_the_voters():
    voters = ("a", "b", "c", "d")
    assert not passes({"a": True, "b": True}, voters)  # 2 of 4 is not more than half
    assert passes({"a": True, "b": True, "c": True}, voters)
    assert not passes({}, ())
    assert passes({"a": True}, ("a",))


def breach(worker="w0", harmed=("w1", "w2", "w3")) -> Breach:
    return Breach("promise", worker, 0, harmed, tuple(w for w in W if w != worker), "x", 4, 1)


def test_fine_to_bank_to_harmed_and_capped():
    led = Ledger(dict.fromkeys(W, 100))
    amount, tr = levy(led, breach(), 40, "bank", "c0")
    assert amount == 40 and led.sink_balance == 40 and led.balance("w0") == 60
    amount, tr = levy(led, breach(), 40, "harmed", "c0")  # 40 // 3 = 13 each, 1 to the bank
    assert amount == 40 and [t.amount for t in tr] == [13, 13, 13, 1] and tr[-1].payee == led.sink
    assert led.balance("w1") == 113 and led.balance("w0") == 20
    amount, _ = levy(led, breach(), 40, "harmed", "c0")  # capped at the balance
    assert amount == 20 and led.balance("w0") == 0
    assert levy(led, breach(), 40, "bank", "c0")[0] == 0
    led2 = Ledger(dict.fromkeys(W, 100))
    levy(led2, breach(harmed=()), 30, "harmed", "c0")  # nobody harmed: all to the bank
    assert led2.sink_balance == 30
    assert led.conserved() and led2.conserved() and total(led) == 400
    with pytest.raises(ValueError, match="fine_to must be"):
        levy(led2, breach(), 1, "nowhere", "c0")


@pytest.mark.parametrize("mode", ["off", "mechanism", "vote"])
def test_sanction_by_mode_and_reputation(mode):
    rules = InstitutionRules(sanctions=mode, reputation=True, fine=50)
    ins = Institutions(rules, W)
    led = Ledger(dict.fromkeys(W, 100))
    b = breach()
    if mode == "vote":
        with pytest.raises(ValueError, match="needs the votes"):
            ins.sanction(led, b)
        s = ins.sanction(led, b, {"w1": True, "w2": False})  # 1 of 3: no
        assert not s.passed and s.fined == 0
        s = ins.sanction(led, b, {"w1": True, "w2": True, "w0": True})  # the offender's own vote is ignored
        assert s.passed and s.fined == 50 and set(s.votes) == {"w1", "w2"}
    else:
        s = ins.sanction(led, b)
        assert s.passed == (mode == "mechanism") and s.fined == (50 if mode == "mechanism" else 0)
    rec = ins.reputation.records["w0"]
    assert rec.broken == (2 if mode == "vote" else 1)
    assert rec.fined == (1 if mode != "off" else 0)
    assert led.conserved()


def test_reputation_formula():
    assert Record().score == 0.5
    assert Record(kept=3).score == round(4 / 5, 3)
    assert Record(broken=2).score == 0.25
    assert Record(kept=1, broken=1, fined=1).score == round(2.25 / 4, 3)
    assert Record(broken=1, fined=1).score < 0.5  # a fined breach is still a breach


def test_contract_escrow_paid_or_refunded_and_void():
    rules = InstitutionRules(contracts=True, max_contract=100)
    ins = Institutions(rules, W)
    ins.open(0, W)
    led = Ledger({"w0": 100, "w1": 100, "w2": 10, "w3": 100})
    o1 = ins.offer(0, "w0", "w1", 30, "w0", led.balance("w0"))  # w0 pays w1 30 if w0 before w1
    o2 = ins.offer(0, "w3", "w1", 20, "w1", led.balance("w3"))  # w3 pays w1 20 if w1 before w3
    with pytest.raises(ProtocolError, match="already offered"):
        ins.offer(0, "w0", "w2", 5, "w0", 100)
    with pytest.raises(ProtocolError, match="amount must be an integer in 1..10"):
        ins.offer(0, "w2", "w1", 11, "w2", led.balance("w2"))
    assert ins.sign(led, o1, True) is not None and ins.sign(led, o2, False) is None
    assert led.escrow_balance == 30 and led.balance("w0") == 70 and led.conserved()
    assert [k["signed"] for k in ins.private("w1")] == [True, False]
    assert ins.private("w2") == []  # not a party: sees nothing
    out = ins.settle_contracts(led, ["w1", "w0", "w2", "w3"])  # condition fails: refund
    assert [(o.payer, held, t.payee) for o, held, t in out] == [("w0", False, "w0")]
    assert led.escrow_balance == 0 and led.balance("w0") == 100
    ins.open(1, W)
    o = ins.offer(1, "w0", "w1", 30, "w0", 100)
    ins.sign(led, o, True)
    (_, held, t), = ins.settle_contracts(led, ["w0", "w1", "w2", "w3"])
    assert held and t.payee == "w1" and led.balance("w1") == 130 and led.conserved()
    poor = Ledger({"w0": 5, "w1": 0, "w2": 0, "w3": 0})
    ins.open(2, W)
    o = ins.offer(2, "w0", "w1", 5, "w0", 5)
    poor.balances["w0"] = 2  # spent before signing: the offer is void
    assert ins.sign(poor, o, True) is None and poor.escrow_balance == 0


def test_check_offer_names_the_bad_field():
    with pytest.raises(ProtocolError, match="payee must be another participant"):
        check_offer(0, "w0", "w0", 5, "w0", W, 10)
    with pytest.raises(ProtocolError, match="first must be"):
        check_offer(0, "w0", "w1", 5, "w2", W, 10)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["pay", "fine_bank", "fine_harmed", "contract"]),
                          st.sampled_from(W), st.sampled_from(W), st.integers(0, 400), st.booleans()),
                max_size=40),
       st.lists(st.integers(0, 500), min_size=4, max_size=4))
def test_money_is_conserved_under_any_sequence(ops, budgets):
    """All balances + bank + escrow stay equal to the budgets, whatever is paid, fined
    or contracted (and escrow is empty after every settlement)."""
    led = Ledger(dict(zip(W, budgets, strict=True)))
    start = total(led)
    ins = Institutions(InstitutionRules(sanctions="mechanism", contracts=True, max_contract=10_000), W)
    for i, (op, a, b, amount, flag) in enumerate(ops):
        if op == "pay":
            led.charge_capped(a, amount, ref=f"c{i}")
        elif op.startswith("fine"):
            levy(led, breach(a, harmed=(b,)), amount, "bank" if op == "fine_bank" else "harmed", f"c{i}")
        elif a != b and led.balance(a) >= 1:
            ins.open(i, W)
            o = ins.offer(i, a, b, max(1, min(amount, led.balance(a))), a if flag else b, led.balance(a))
            ins.sign(led, o, True)
            assert led.escrow_balance == o.amount
            ins.settle_contracts(led, list(W) if flag else list(reversed(W)))
            assert led.escrow_balance == 0
        assert total(led) == start and led.conserved()


def test_transfer_refuses_overdraft_and_unknown_accounts():
    led = Ledger({"w0": 5})
    with pytest.raises(InsufficientFunds, match="cannot transfer 6"):
        led.transfer("w0", ESCROW, 6, purpose="escrow")
    with pytest.raises(KeyError, match="unknown worker 'zz'"):
        led.transfer("w0", "zz", 1, purpose="fine")
    with pytest.raises(ValueError, match="worker name 'escrow' collides"):
        Ledger({"escrow": 1})


def _world(**ins):
    from scarce_lab.environments.scarce.world import ScarceWorld

    rules = WorldRules(workers=W[:3], budgets=dict.fromkeys(W[:3], 100), deadlines_s=dict.fromkeys(W[:3], 900.0),
                       institutions=InstitutionRules(**ins) if ins else None)
    return ScarceWorld(rules)


class _Task:
    name, program, id = "t", "p", "t0"


def _contention(world):
    world.start_subrun(dict.fromkeys(world.rules.workers, _Task()))
    for w in world.rules.workers:
        world.request_slot(w, 30, "run")
    return world.open_contention(list(world.rules.workers))


def test_all_off_world_has_no_institutions_and_views_are_unchanged():
    for world in (_world(), _world(sanctions="off", reputation=False, contracts=False)):
        assert world.institutions is None
        c = _contention(world)
        v = world.negotiation_view(c, "w0", 0.0)
        assert "institutions" not in v.contention and "your_contracts" not in v.contention
        assert v.legal.institutions is None


def test_views_show_reputation_to_all_and_contracts_only_to_parties():
    world = _world(reputation=True, contracts=True)
    c = _contention(world)
    views = {w: world.negotiation_view(c, w, 0.0) for w in world.rules.workers}
    for v in views.values():
        assert set(v.contention["institutions"]["reputation"]) == set(world.rules.workers)
        assert v.legal.institutions.promise_ranks == (2, 3)
        assert "promises" not in v.contention["institutions"]  # sealed during the declaration phase
    ins = world.institutions
    o = ins.offer(c.index, "w0", "w1", 10, "w0", world.ledger.balance("w0"))
    ins.sign(world.ledger, o, True)
    seen = {w: world.negotiation_view(c, w, 0.0).contention["your_contracts"] for w in world.rules.workers}
    assert len(seen["w0"]) == len(seen["w1"]) == 1 and seen["w2"] == []
    vv = world.vote_view("w2", breach("w0", harmed=("w1",)))
    assert vv.own_budget == 100 and "reputation" in vv.contention["institutions"]
    assert not hasattr(vv, "own_deadline_s")


def test_a_world_checkpointed_before_institutions_existed_still_resumes():
    import pickle

    world = _world()
    _contention(world)
    del world.__dict__["institutions"]
    for k in ("escrow_balance", "transfers"):
        world.ledger.__dict__.pop(k, None)
    back = pickle.loads(pickle.dumps(world))
    assert back.institutions is None and back.ledger.escrow_balance == 0 and back.ledger.transfers == []
    assert back.ledger.conserved()
