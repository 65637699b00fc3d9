"""A recorded condition setting is the sent one: the record gate
(:func:`scarce_lab.data.sent.check_sent`, called by ``RunRecorder.record_calls``)
compares every call with the settings that govern it, in all three environments."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from scarce_lab.data.sent import SentSettingError, check_sent, sent_mismatches
from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner import play as R
from scarce_lab.environments.scarce.config import ScarceConfig
from scarce_lab.environments.sovsim.config import SovSimConfig
from scarce_lab.llm.mock import MockModel


def _call(agent, purpose, attempt=0, **params):
    return SimpleNamespace(agent=agent, purpose=purpose, attempt=attempt, params=params, call_id="c1")


def test_a_recorded_max_tokens_no_call_sent_is_named():
    settings = {"llm.temperature": 0.0, "llm.max_tokens": 256, "llm.reasoning_effort": None}
    assert sent_mismatches(settings, _call("a0", "act:plan", temperature=0.0, max_tokens=256)) == []
    bad = sent_mismatches(settings, _call("a0", "act:plan", temperature=0.0, max_tokens=96))
    assert bad == ["llm.max_tokens=256 is recorded but the call sent 96"]
    with pytest.raises(SentSettingError, match="llm.max_tokens=256"):
        check_sent(settings, [_call("a0", "act:plan", temperature=0.0, max_tokens=96)])
    # a truncated answer's resend asks for more tokens (the client's documented rule)
    assert sent_mismatches(settings, _call("a0", "act:plan", attempt=1, temperature=0.0, max_tokens=512)) == []
    # a rename counts as sent; "not sent" must be absent
    assert sent_mismatches(settings, _call("a0", "x", temperature=0.0, max_completion_tokens=256)) == []
    dropped = _call("a0", "x", max_tokens=256)
    dropped.dropped_params = {"temperature": 0.0}
    assert sent_mismatches(settings, dropped) == ["llm.temperature=0.0 is recorded but litellm dropped it (not sent)"]
    gone = {"llm.temperature": "not sent"}
    assert sent_mismatches(gone, _call("a0", "x", temperature=0.0)) != []
    assert sent_mismatches(gone, _call("a0", "x", max_tokens=5)) == []


def test_scarce_seats_govern_solver_and_negotiator_calls_by_part():
    cfg = ScarceConfig(model="openai/gpt-4o-mini", workers=2, llm={"max_tokens": 300, "temperature": 0.2},
                       seats={"w0.negotiator": {"max_tokens": 50}})
    settings = json.loads(json.dumps(cfg.condition_settings()))
    # the solver now sends llm.max_tokens (it sent 400 whatever was recorded)
    assert settings["seats"]["w1"]["solver"]["max_tokens"] == 300
    assert cfg.seat_plan()["w1"].solver.max_tokens == 300
    ok = _call("w0", "solver", temperature=0.2, max_tokens=300)
    assert sent_mismatches(settings, ok) == []
    assert sent_mismatches(settings, _call("w0", "solver", temperature=0.2, max_tokens=400)) != []
    assert sent_mismatches(settings, _call("w0", "negotiation:ballots", temperature=0.2, max_tokens=50)) == []
    assert sent_mismatches(settings, _call("w0", "negotiation:ballots", temperature=0.2, max_tokens=300)) != []


def test_scarce_llm_max_tokens_reaches_the_solver_and_unset_keeps_the_run_id():
    cfg = ScarceConfig(model="openai/gpt-4o-mini", llm={"max_tokens": 123})
    assert {s.solver.max_tokens for s in cfg.seat_plan().values()} == {123}
    assert {s.negotiator.max_tokens for s in cfg.seat_plan().values()} == {123}
    unset = ScarceConfig(model="openai/gpt-4o-mini")
    assert {s.solver.max_tokens for s in unset.seat_plan().values()} == {None}  # the solver's own 400


def test_sovsim_mixed_seats_govern_each_agent():
    cfg = SovSimConfig(model="openai/gpt-4o-mini", seats={"a0": {"temperature": 0.1}})
    settings = json.loads(json.dumps(cfg.condition_settings()))
    t0 = settings["seats"]["a0"]["temperature"]
    t1 = settings["seats"]["a1"]["temperature"]
    assert sent_mismatches(settings, _call("a0", "extraction", temperature=t0, max_tokens=cfg.llm.max_tokens)) == []
    assert t0 != t1
    assert sent_mismatches(settings, _call("a1", "extraction", temperature=t0, max_tokens=cfg.llm.max_tokens)) != []


def _economy(**kw):
    return EconomyRunConfig(task="arithmetic", model="openai/gpt-4o-mini", agents=3, episodes=2, eval_episodes=1,
                            seed=0, **kw)


def test_economy_sends_the_recorded_max_tokens_and_the_gate_passes(tmp_path):
    client = MockModel(['{"note": "result = 7", "answer": "7"}'])
    cfg = _economy(llm={"max_tokens": 77, "temperature": 0.3})
    d = R.run_economy(cfg, tmp_path, client=client)
    calls = [json.loads(x) for x in (d / "llm_calls.jsonl").read_text().splitlines()]
    manifest = json.loads((d / "manifest.json").read_text())
    assert calls and manifest["condition_settings"]["llm.max_tokens"] == 77
    assert {c["params"]["max_tokens"] for c in calls if c["attempt"] == 0} == {77}
    # the client's own settings (temperature 0.0) no longer stand in for the recorded 0.3
    assert {c["params"]["temperature"] for c in calls} == {0.3}


def test_economy_llm_kwargs_max_tokens_other_than_recorded_is_refused(tmp_path):
    with pytest.raises(ValueError, match="llm.max_tokens"):
        R.run_economy(_economy(), tmp_path, client=MockModel(["{}"]), llm_kwargs={"max_tokens": 20})


def test_the_record_gate_stops_a_run_whose_calls_depart_from_the_record(tmp_path, monkeypatch):
    from scarce_lab.environments.economy.agents import llm as policy_mod

    real = policy_mod.LLMPartialPolicy.__init__

    def wrong(self, *a, **kw):  # the fault this gate exists for: a policy ignoring the setting
        kw["max_tokens"] = 96
        real(self, *a, **kw)

    monkeypatch.setattr(policy_mod.LLMPartialPolicy, "__init__", wrong)
    with pytest.raises(SentSettingError, match="llm.max_tokens=77"):
        R.run_economy(_economy(llm={"max_tokens": 77}), tmp_path, client=MockModel(['{"answer": "7"}']))


@pytest.mark.parametrize("solver", ["openai/gpt-4o-mini", "scripted/fifo"])
def test_scarce_model_solver_and_negotiator_send_the_recorded_max_tokens(tmp_path, solver):
    from scarce_lab.environments.scarce.runner import run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    cfg = ScarceConfig(workers=3, subruns=1, model=solver, negotiator_model="openai/gpt-4o-mini",
                       llm={"max_tokens": 123, "temperature": 0.2}, private_rounds=1, seed=5,
                       **({"max_solver_steps": 2} if solver.startswith("openai/") else {}))
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"),
                     client=MockModel(["{}"]))
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    purposes = {c["purpose"].split(":")[0] for c in calls}
    # a model solver's steps (its fallback never asks for the sandbox); a scripted one contends: negotiations
    assert ("solver" if solver.startswith("openai/") else "negotiation") in purposes
    firsts = [c for c in calls if c["attempt"] == 0]
    # the solvers sent 400 per step whatever llm.max_tokens recorded; now every decision sends it
    assert {c["params"].get("max_tokens", c["params"].get("max_completion_tokens")) for c in firsts} == {123}
    assert {c["params"]["temperature"] for c in calls} == {0.2}


def test_economy_seats_are_compared_per_agent_seat(tmp_path, monkeypatch):
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=4, episodes=3, eval_episodes=1, seed=0,
                           seats={"compute": {"model": "openai/gpt-4o-mini", "temperature": 0.7, "max_tokens": 50}})
    d = R.run_economy(cfg, tmp_path / "ok", client=MockModel(['{"note": "result = 7", "answer": "7"}']))
    assert (d / "llm_calls.jsonl").read_text().strip(), "no call: nothing was compared"
    settings = {"seats.a1.temperature": 0.7, "seats.a1.max_tokens": 50, "seats.*.model": "scripted/partial"}
    seat_of = {"a1": "a1"}.get
    assert sent_mismatches(settings, _call("a1", "act:compute", temperature=0.7, max_tokens=50), seat_of) == []
    assert sent_mismatches(settings, _call("a1", "act:compute", temperature=0.7, max_tokens=96), seat_of) != []
    assert sent_mismatches(settings, _call("zz", "act:compute", max_tokens=1), seat_of) == []  # unknown agent

    from scarce_lab.environments.economy.runner import seats as economy_seats

    real = economy_seats.seat_generation

    def drops_the_seat_tokens(cfg, seat, settings):  # the fault: a seat's max_tokens not sent
        out = real(cfg, seat, settings)
        settings.pop("max_tokens", None)
        return out

    monkeypatch.setattr(R, "seat_generation", drops_the_seat_tokens)
    with pytest.raises(SentSettingError, match=r"seats\.a1\.max_tokens=50"):
        R.run_economy(cfg, tmp_path / "bad", client=MockModel(['{"note": "result = 7", "answer": "7"}']))


def test_a_purpose_recorded_with_its_own_answer_tokens_is_compared_with_them():
    settings = {"llm.temperature": 0.0, "llm.max_tokens": 256, "purpose_max_tokens": {"act:compute": 2048}}
    assert sent_mismatches(settings, _call("a0", "act:compute", temperature=0.0, max_tokens=2048)) == []
    assert sent_mismatches(settings, _call("a0", "act:plan", temperature=0.0, max_tokens=256)) == []
    assert sent_mismatches(settings, _call("a0", "act:compute", temperature=0.0, max_tokens=256)) != []
    from tests.tasks.test_economy_taskdir import TINY

    cfg = EconomyRunConfig(task=f"dir:{TINY}", model="openai/gpt-4o-mini", preset="eom-reference")
    assert cfg.condition_settings()["purpose_max_tokens"] == {"act:compute": 2048}
