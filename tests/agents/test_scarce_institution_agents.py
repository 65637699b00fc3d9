"""Negotiators and the auction's institutions: the scripted policies that promise and
defect, sanction and contract; the model negotiator's masked schemas; the embedded
model through the institutions' questions."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from scarce_lab.environments.scarce.agents import (
    INSTITUTION_NEGOTIATORS,
    SCRIPTED_NEGOTIATORS,
    InstitutionalNegotiator,
)
from scarce_lab.environments.scarce.agents.schemas import (
    ContractAnswer,
    FineVote,
    contract_offer_schema,
    promise_schema,
)
from scarce_lab.environments.scarce.world import InstitutionRules, ScarceWorld, WorldRules
from scarce_lab.llm.decisions import validate_decision

W = ("w0", "w1", "w2")


class _Task:
    name, program, id = "t", "p", "t0"


def _contention(**ins):
    world = ScarceWorld(WorldRules(workers=W, budgets=dict.fromkeys(W, 200), deadlines_s=dict.fromkeys(W, 900.0),
                                   institutions=InstitutionRules(**ins)))
    world.start_subrun(dict.fromkeys(W, _Task()))
    for w in W:
        world.request_slot(w, 30, "run")
    return world, world.open_contention(list(W))


def run(coro):
    return asyncio.run(coro)


def to_ballots(world, c, neg):
    """Declarations and public reasoning by ``neg`` for everyone, up to the ballots."""
    for w in W:
        c.declare(w, run(neg.declare(world.negotiation_view(c, w, 0.0))).value)
    c.advance()
    for w in W:
        c.reason(w, run(neg.reason(world.negotiation_view(c, w, 0.0))).value)
    while c.phase != "ballots":
        c.advance()


def test_policies_are_registered():
    assert set(INSTITUTION_NEGOTIATORS) <= set(SCRIPTED_NEGOTIATORS)
    with pytest.raises(ValueError, match="institution negotiator must be one of"):
        InstitutionalNegotiator("saint")
    mix = InstitutionalNegotiator("institution-mix")
    assert [mix.role(w) for w in ("w0", "w1", "w2", "w3")] == ["promise-breaker", "sanctioner", "contractor",
                                                               "promise-breaker"]
    with pytest.raises(ValueError, match="has no number"):
        mix.role("alice")


def test_breaker_promises_last_and_ranks_itself_first_sanctioner_keeps():
    world, c = _contention(sanctions="mechanism")
    breaker, sanctioner = InstitutionalNegotiator("promise-breaker"), InstitutionalNegotiator("sanctioner")
    v = world.negotiation_view(c, "w0", 0.0)
    assert run(breaker.promise(v)).value == 3
    to_ballots(world, c, breaker)
    b = run(breaker.ballot(world.negotiation_view(c, "w0", 0.0))).value
    assert b.ranking()[0] == "w0"
    v1 = world.negotiation_view(c, "w0", 0.0)
    p = run(sanctioner.promise(v1)).value  # w0 is first by request time: promises 2
    assert p == 2
    own = run(sanctioner.ballot(v1)).value.ranking().index("w0") + 1
    assert own >= p  # keeps its promise
    breach = {"worker": "w1", "kind": "promise", "contention": 0, "detail": "x", "harmed": ["w2"]}
    assert run(sanctioner.vote_fine(v1, breach)).value is True
    assert run(breaker.vote_fine(v1, breach)).value is False
    assert run(InstitutionalNegotiator("contractor").vote_fine(world.negotiation_view(c, "w2", 0.0), breach)).value


def test_contractor_offers_the_one_ahead_and_honours_signed_contracts():
    world, c = _contention(contracts=True, max_contract=15)
    con = InstitutionalNegotiator("contractor")
    v = world.negotiation_view(c, "w2", 0.0)
    payee, amount, first = run(con.offer_contract(v)).value
    assert (payee, amount, first) == ("w1", 15, "w2")  # min(max_contract, 200 // 10)
    assert run(con.offer_contract(world.negotiation_view(c, "w0", 0.0))).value is None  # first already
    o = world.institutions.offer(c.index, "w2", payee, amount, first, 200)
    world.institutions.sign(world.ledger, o, True)
    to_ballots(world, c, con)
    r = run(con.ballot(world.negotiation_view(c, "w1", 0.0))).value.ranking()
    assert r.index("w2") < r.index("w1")  # the payee honours the contract in its ballot


def test_nothing_is_offered_when_the_modules_are_off():
    world, c = _contention()
    assert world.institutions is None
    v = world.negotiation_view(c, "w1", 0.0)
    for policy in INSTITUTION_NEGOTIATORS:
        n = InstitutionalNegotiator(policy)
        assert run(n.promise(v)).value is None and run(n.offer_contract(v)).value is None


def test_schemas_mask_the_legal_values():
    s = promise_schema((2, 3))
    assert validate_decision({"min_own_rank": 3}, s)[0] is not None
    assert validate_decision({"min_own_rank": 0}, s)[0] is not None  # no promise
    assert validate_decision({"min_own_rank": 1}, s)[0] is None
    o = contract_offer_schema("w0", ["w1", "w2"], 40)
    assert validate_decision({"payee": "w1", "amount": 40, "first": "w0"}, o)[0] is not None
    for bad in ({"payee": "w0", "amount": 5, "first": "w0"}, {"payee": "w1", "amount": 41, "first": "w0"},
                {"payee": "w1", "amount": 0, "first": "w0"}, {"payee": "w1", "amount": "5", "first": "w0"}):
        assert validate_decision(bad, o)[0] is None, bad
    compact = contract_offer_schema("w0", ["w1"], 40, compact=True)
    enum = json.dumps(compact.model_json_schema())
    assert '"enum"' in enum
    assert validate_decision({"accept": True}, ContractAnswer)[0] is not None
    assert validate_decision({"fine": 1}, FineVote)[0] is None  # strict: no number for a bool
    with pytest.raises(ValidationError):
        FineVote(fine="yes")


@pytest.mark.embedded
def test_embedded_negotiators_answer_the_institutions(tmp_path, embedded_model):
    """One short contention with the embedded model: promises, contract offers and
    answers are asked, validated and recorded (votes follow a broken promise only)."""
    from scarce_lab.data.recorder import read_manifest
    from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, of, toy_task

    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", negotiator_model=embedded_model,
                       deadline_min=1.0, private_rounds=0, scripted_call_s=0, seed=0,
                       institutions=dict(sanctions="vote", reputation=True, contracts=True))
    run_dir = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    evs = events(run_dir)
    assert read_manifest(run_dir).status == "complete"
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    purposes = {c["purpose"] for c in calls}
    assert {"negotiation:promise", "negotiation:contract_offer"} <= purposes
    assert all(c["model"] == embedded_model for c in calls)
    for e in of(evs, "promise"):
        assert 2 <= e["payload"]["min_own_rank"] <= 2
    for e in of(evs, "contract_offer"):
        assert 1 <= e["payload"]["amount"] <= 500 and e["visibility"] == "private"
    judged, breaches = of(evs, "promise_judged"), of(evs, "breach")
    assert len(breaches) == sum(not j["payload"]["kept"] for j in judged)
    assert all(e["payload"]["conserved"] for e in of(evs, "subrun_end"))
