"""What a server reports is a claim (docs/threat_model.md, "The server as adversary"): usage bounded by what was sent,
the ledger never below what sent calls reserved, the served model recorded.

Adversarial servers are scripted fakes (``litellm.acompletion`` replaced, answers as
plain dicts so that nothing coerces the usage first) and the local fake server
(``fake_usage``/``fake_model`` through ``extra_body``) for processes and kills.
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing as mp
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scarce_lab.llm import LLMClient, LLMSettings, costs
from scarce_lab.llm import outcomes as oc
from scarce_lab.llm.costs import (
    COMPLETION_SLACK_TOKENS,
    SpendLedger,
    check_usage,
    ledger_at,
    prompt_range,
    worst_case_usd,
)
from tests._llm_fakes import FakeLLM
from tests.fake_server import FakeOpenAIServer

PRICE = {"input_per_mtok": 2000.0, "output_per_mtok": 6000.0}  # $0.002 / $0.006 per token
MSGS = [{"role": "user", "content": "Name a number between one and nine, as JSON."}]
MAX_TOKENS = 30

# any value a server could put where a token count belongs
counts = st.one_of(
    st.integers(min_value=-10**12, max_value=10**12), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
)
usages = st.one_of(
    st.none(), st.just("absent"),
    st.fixed_dictionaries({}, optional={"prompt_tokens": counts, "completion_tokens": counts,
                                        "total_tokens": counts}),
    st.builds(lambda p, c: {"prompt_tokens": p, "completion_tokens": c},
              st.integers(0, 400), st.integers(0, MAX_TOKENS + 3)),  # near and inside the bounds
)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


@settings(max_examples=300, deadline=None)
@given(usage=usages, counted=st.integers(0, 5000), max_tokens=st.integers(1, 4096))
def test_a_usage_claim_is_accepted_only_within_what_was_sent(usage, counted, max_tokens):
    claim = check_usage(None if usage == "absent" else usage, max_tokens=max_tokens, counted=counted)
    json.dumps(claim.reported, allow_nan=False)  # recorded as it was, and always writable
    if claim.problem is None:
        low, high = prompt_range(counted)
        assert low <= claim.prompt_tokens <= high
        assert 0 <= claim.completion_tokens <= max_tokens + COMPLETION_SLACK_TOKENS
    else:
        assert claim.prompt_tokens is None and claim.completion_tokens is None


def _answer(usage, model="priced-1"):
    out = {"model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": '{"n": 4}'}}]}
    if usage != "absent":
        out["usage"] = usage
    return out


def _client(tmp_path, **kw):
    return LLMClient(LLMSettings(cache=False, max_retries=0, prices={"openai/priced-1": PRICE}, **kw))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(usages, min_size=1, max_size=12), cap=st.floats(0.2, 3.0), sweep=st.floats(0.2, 3.0))
# total_tokens also reaches the rate limiter (found by this test: a list or '' there raised)
@example(script=[{"total_tokens": []}], cap=2.0, sweep=2.0)
@example(script=[{"total_tokens": ""}, {"total_tokens": True}, {"total_tokens": -5}, {"total_tokens": 1e300}],
         cap=2.0, sweep=2.0)
def test_every_call_settles_at_least_its_floor_and_the_cap_holds(monkeypatch, tmp_path, script, cap, sweep):
    """Concurrency: all calls race against a run cap and a sweep cap; whatever the usage
    claims, the ledger holds the sum of the recorded costs, an unaccepted claim costs its
    worst case, and what the sent calls settled never passes either cap."""
    fake = FakeLLM(*[_answer(u) for u in script]).install(monkeypatch)
    costs._LEDGERS.pop(None, None)  # a fresh in-memory ledger per example (files: the process tests below)
    c = _client(tmp_path, max_cost_usd=cap, sweep_max_cost_usd=sweep)

    async def go():
        return await asyncio.gather(*[c.acomplete("openai/priced-1", MSGS, seed=i, max_tokens=MAX_TOKENS,
                                                  context=None) for i in range(len(script))])

    recs = [r.record for r in asyncio.run(go())]
    sent = [r for r in recs if r.outcome != oc.COST_CAP]
    assert len(fake.requests) == len(sent)
    worst = worst_case_usd((PRICE["input_per_mtok"] / 1e6, PRICE["output_per_mtok"] / 1e6),
                           _counted(), MAX_TOKENS)
    for r in sent:
        assert r.cost_usd is not None and math.isfinite(r.cost_usd) and r.cost_usd >= 0
        if r.usage_problem is not None:
            assert r.cost_usd == pytest.approx(worst) and r.prompt_tokens is None
        else:
            assert r.cost_usd <= worst + 1e-12
    for scope, limit in (("run:None", cap), ("sweep", sweep)):
        spent = ledger_at(None).spent(scope)
        assert spent == pytest.approx(sum(r.cost_usd for r in sent))
        assert spent <= limit + 1e-9


def _counted():
    from scarce_lab.llm.costs import counted_prompt

    return counted_prompt("openai/priced-1", MSGS)


def test_each_kind_of_bad_usage_is_recorded_as_it_is(monkeypatch, tmp_path):
    bad = [{"prompt_tokens": -700, "completion_tokens": -40}, "absent", {"prompt_tokens": "12", "completion_tokens": 3},
           {"prompt_tokens": float("nan"), "completion_tokens": 2}, {"prompt_tokens": 11, "completion_tokens": 9**9},
           {"prompt_tokens": 10**9, "completion_tokens": 2}, {"prompt_tokens": 0, "completion_tokens": 0}]
    FakeLLM(*[_answer(u) for u in bad]).install(monkeypatch)
    c = _client(tmp_path)
    recs = [c.decide(model="openai/priced-1", messages=[*MSGS, {"role": "user", "content": "x" * 400}],
                     schema=_N, fallback=_N(n=1), seed=i, max_tokens=MAX_TOKENS).calls[0] for i in range(len(bad))]
    problems = [r.usage_problem for r in recs]
    assert all(problems), problems
    assert "negative" in problems[0] and "missing" in problems[1] and "not a token count" in problems[2]
    assert "not a token count" in problems[3] and "max_tokens" in problems[4] and "outside" in problems[5]
    assert "outside" in problems[6]  # 0 prompt tokens for a prompt of ~100: under-reported
    assert recs[0].usage_reported == {"prompt_tokens": -700, "completion_tokens": -40}
    assert recs[1].usage_reported is None and recs[3].usage_reported["prompt_tokens"] == "nan"
    assert len({r.cost_usd for r in recs}) == 1 and recs[0].cost_usd > 0  # all at the worst case
    assert all(r.outcome == "ok" for r in recs)  # the answer itself is fine


from pydantic import BaseModel  # noqa: E402


class _N(BaseModel):
    n: int


def test_an_answer_from_another_model_is_its_own_outcome_priced_higher(monkeypatch, tmp_path):
    dear = {"input_per_mtok": 9000.0, "output_per_mtok": 9000.0}
    FakeLLM(_answer({"prompt_tokens": 20, "completion_tokens": 5}, model="other-9"),
            _answer({"prompt_tokens": 20, "completion_tokens": 5}, model="priced-1-2025-01-31"),
            _answer({"prompt_tokens": 20, "completion_tokens": 5}, model="unpriced-x")).install(monkeypatch)
    c = LLMClient(LLMSettings(cache=False, max_retries=0, prices={"openai/priced-1": PRICE, "other-9": dear}))
    out = c.decide(model="openai/priced-1", messages=MSGS, schema=_N, fallback=_N(n=1), seed=1)
    (rec,) = out.calls
    assert rec.outcome == oc.MODEL_MISMATCH and out.missing and out.decision is None
    assert rec.served_model == "other-9" and "other-9" in rec.error and rec.raw_response == '{"n": 4}'
    assert rec.cost_usd == pytest.approx(25 * 9000 / 1e6)  # the dearer price
    ok = c.decide(model="openai/priced-1", messages=MSGS, schema=_N, fallback=_N(n=1), seed=2)
    assert ok.decision == _N(n=4) and ok.calls[0].served_model == "priced-1-2025-01-31"  # a dated snapshot
    capped = LLMClient(LLMSettings(cache=False, max_retries=0, prices={"openai/priced-1": PRICE}, max_cost_usd=5.0,
                                   spend_ledger=tmp_path / "l.sqlite"))
    (rec,) = capped.decide(model="openai/priced-1", messages=MSGS, schema=_N, fallback=_N(n=1), seed=3).calls
    assert rec.outcome == oc.MODEL_MISMATCH and "price is unknown" in rec.error and "refused" in rec.error
    assert SpendLedger(tmp_path / "l.sqlite").spent("run:None") == pytest.approx(rec.cost_usd)  # the reservation
    assert rec.cost_usd == pytest.approx(worst_case_usd((0.002, 0.006), _counted_with_schema(), 256))


def _counted_with_schema():
    from scarce_lab.llm.client import _schema_json
    from scarce_lab.llm.costs import counted_prompt
    from scarce_lab.llm.structured import request_for

    form = request_for("json_schema", "_N", json.loads(_schema_json(_N)))
    return counted_prompt("openai/priced-1", MSGS, [form["response_format"]])


def test_the_ledger_refuses_a_negative_reservation_and_clamps_settlements(tmp_path):
    led = SpendLedger(tmp_path / "s.sqlite")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number"):
            led.reserve({"sweep": 10.0}, bad)
    rids = [led.reserve({"sweep": 10.0}, 1.0)[0] for _ in range(4)]
    led.settle(rids[0], -2000.0)  # clamped to 0
    led.settle(rids[1], float("nan"))  # kept at the reservation
    led.settle(rids[2], 0.1, floor=0.4)  # never below the floor
    assert led.spent("sweep") == pytest.approx(0 + 1.0 + 0.4 + 1.0)
    assert led.unsettled("sweep") == 1  # the fourth, never settled, stays counted


# -- several processes, and kills ----------------------------------------------------------

def _spend(url, ledger, cap, usage, n, out):
    os.environ["OPENAI_API_KEY"] = "sk-test-not-a-key"
    c = LLMClient(LLMSettings(api_base=url, cache=False, max_retries=0, prices={"openai/priced-1": PRICE},
                              sweep_max_cost_usd=cap, spend_ledger=ledger))

    async def go():
        return await asyncio.gather(*[c.acomplete("openai/priced-1", MSGS, seed=os.getpid() * 1000 + i,
                                                  max_tokens=MAX_TOKENS, extra_body={"fake_usage": usage})
                                      for i in range(n)])

    out.put([(r.record.outcome, r.record.cost_usd) for r in asyncio.run(go())])


@pytest.mark.slow
def test_a_parallel_sweep_holds_its_cap_against_a_lying_server(tmp_path):
    """Three processes share the sweep's SQLite ledger; the server claims negative usage
    (which once sent twice the calls a cap allows and unlocked the sweep cap)."""
    ledger, cap = tmp_path / ".spend.sqlite", 1.5
    ctx = mp.get_context("spawn")
    with FakeOpenAIServer(latency_s=0.05) as srv:
        out = ctx.Queue()
        procs = [ctx.Process(target=_spend, args=(srv.url, ledger, cap, {"prompt_tokens": -10**6,
                                                                            "completion_tokens": -5}, 12, out))
                 for _ in range(3)]
        for p in procs:
            p.start()
        rows = [r for _ in procs for r in out.get(timeout=120)]
        for p in procs:
            p.join(30)
        sent = [cost for outcome, cost in rows if outcome != oc.COST_CAP]
        assert len(srv.stats()["bodies"]) == len(sent) and 0 < len(sent) < len(rows)
    spent = SpendLedger(ledger).spent("sweep")
    assert spent == pytest.approx(sum(sent)) and spent <= cap + 1e-9
    assert all(c > 0 for c in sent)  # each at its worst case, never negative


def _reserve_and_hang(url, ledger):
    os.environ["OPENAI_API_KEY"] = "sk-test-not-a-key"
    c = LLMClient(LLMSettings(api_base=url, cache=False, max_retries=0, prices={"openai/priced-1": PRICE},
                              sweep_max_cost_usd=10.0, spend_ledger=ledger, timeout_s=600))
    asyncio.run(c.acomplete("openai/priced-1", MSGS, seed=1, max_tokens=MAX_TOKENS))


@pytest.mark.slow
def test_a_process_killed_between_reserve_and_settle_stays_counted(tmp_path):
    ledger = tmp_path / ".spend.sqlite"
    ctx = mp.get_context("spawn")
    with FakeOpenAIServer(latency_s=300) as srv:
        p = ctx.Process(target=_reserve_and_hang, args=(srv.url, ledger))
        p.start()
        deadline = time.monotonic() + 150  # a spawned process imports litellm first
        while time.monotonic() < deadline and not (ledger.exists() and SpendLedger(ledger).unsettled("sweep")):
            time.sleep(0.2)
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
    led = SpendLedger(ledger)
    reserved = worst_case_usd((0.002, 0.006), _counted(), MAX_TOKENS)
    assert led.unsettled("sweep") == 1 and led.spent("sweep") == pytest.approx(reserved)
    rid, why = led.reserve({"sweep": 10.0}, 10.0 - reserved + 1e-6)  # the killed call's money is not free again
    assert rid is None and "cost cap" in why
