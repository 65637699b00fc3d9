"""Retrospective interviews: off by default (nothing recorded, configs dumped as before),
researcher-only when on, answered from the agent's own memory, never shown to any agent
later (canary through a second subrun), unusable or missing answers never made up."""

from __future__ import annotations

import asyncio
import json
import typing
from pathlib import Path

import pytest

from scarce_lab.config import SovSimConfig
from scarce_lab.data.schema import LLMCallRecord, messages_hash
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.environments.sovsim.runner.play import arun_game
from scarce_lab.llm import DecisionOutcome
from scarce_lab.llm.mock import MockModel
from scarce_lab.testing.interviews import check_interviews_unseen
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def calls(run_dir: Path) -> list[dict]:
    p = run_dir / "llm_calls.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def of(evs, kind):
    return [e for e in evs if e["kind"] == kind]


def _sovsim_answers(messages):
    text = "\n".join(m["content"] for m in messages)
    if "A researcher now asks you" in text:
        me = text.split("You are ", 1)[1].split(".", 1)[0]
        return json.dumps({"explanation": f"CANARY-{me}-explains", "view_of_others": f"CANARY-{me}-views",
                           "self_assessment": "cooperative"})
    if "Announce" in text:
        return '{"reasoning": "KINGSECRET-understate", "announced_pool": 60}'
    return '{"reasoning": "ordinary", "extraction": 12}'


def test_off_by_default_nothing_recorded_and_config_dumped_as_before(tmp_path):
    cfg = SovSimConfig(condition="kcpr_m", model="scripted/greedy_leader", game={"rounds": 2})
    assert "interviews" not in cfg.model_dump() and "interviews" not in cfg.condition_settings()
    on = cfg.model_copy(update={"interviews": True})
    assert on.model_dump()["interviews"] is True and on.condition_settings()["interviews"] is True
    assert on.run_id != cfg.run_id and on.condition_label().endswith("interviews=True")
    assert SovSimConfig.model_validate(on.model_dump()).interviews is True
    res = asyncio.run(arun_game(cfg, tmp_path))
    run = tmp_path / res.run_id
    assert not of(events(run), "interview")
    assert "interviews" not in json.loads((run / "manifest.json").read_text())["config"]
    sc = ScarceConfig()
    assert "interviews" not in sc.model_dump() and ScarceConfig(interviews=True).run_id != sc.run_id


def test_sovsim_interviews_are_researcher_only_and_from_own_memory(tmp_path):
    lm = MockModel(_sovsim_answers)
    cfg = SovSimConfig(condition="kcpr_m", model="mock/any", interviews=True, game={"rounds": 3})
    res = asyncio.run(arun_game(cfg, tmp_path, client=lm))
    assert res.status == "complete"
    run = tmp_path / res.run_id
    evs, cs = events(run), calls(run)
    iv = of(evs, "interview")
    assert [e["agent"] for e in iv] == ["a0", "a1", "a2", "a3"]
    assert all(e["visibility"] == "researcher" and e["phase"] == "interview" for e in iv)
    p = iv[0]["payload"]
    assert p["answered_by"] == "model" and p["self_assessment"] == "cooperative" and p["valid"]
    assert p["explanation"].startswith("CANARY-") and p["memory_events"] > 0
    # each interview's call is recorded with its id, purpose interview
    by_id = {c["call_id"]: c for c in cs}
    for e in iv:
        (cid,) = e["payload"]["call_ids"]
        assert by_id[cid]["purpose"] == "interview" and by_id[cid]["agent"] == e["agent"]
    prompts = {c["agent"]: "\n".join(m["content"] for m in c["messages"]) for c in cs if c["purpose"] == "interview"}
    # the king's private reasoning is in the king's memory only (positive control + privacy)
    assert "KINGSECRET" in prompts["a3"]
    assert all("KINGSECRET" not in prompts[a] for a in ("a0", "a1", "a2"))
    # a peasant remembers its own reasoning, as "you"
    assert "by you" in prompts["a0"]
    assert check_interviews_unseen(run) == 8


class _NegotiatorClient:
    """A SCARCE negotiator model: declares, reasons, messages privately, ballots with
    the fallback; its interview answer is a canary naming worker and subrun."""

    def __init__(self, interview: str = "ok"):
        self.interview = interview
        self.interview_prompts: list[str] = []
        self.subrun_of_call: list[str] = []

    async def adecide(self, *, model, messages, schema, fallback, seed, context, **kw):
        from scarce_lab.llm.scope import current_scope

        purpose = context.purpose
        missing = False
        if purpose == "interview":
            self.interview_prompts.append(messages[0]["content"])
            sub = current_scope().subrun
            d = schema(explanation=f"CANARY-{context.agent}-sub{sub}-explains",
                       view_of_others=f"CANARY-{context.agent}-sub{sub}-views", self_assessment="fair")
            valid, fb = True, False
            if self.interview == "invalid":
                d, valid, fb = fallback, False, True
            missing = self.interview == "missing"
        else:
            phase = purpose.split(":")[1]
            valid, fb = True, False
            if phase == "declaration":
                d = schema(desired_position=1, desired_duration_seconds=20, bid_price=0)
            elif phase == "reasoning":
                d = schema(reasoning=f"{context.agent} needs the sandbox")
            elif phase == "private":
                to = typing.get_args(schema.model_fields["to"].annotation)[0]
                d = schema(to=to, text=f"PRIV-{context.agent}-TO-{to}")
            else:
                d = fallback
        rec = LLMCallRecord(call_id=f"{context.agent}-{purpose}-{seed}", agent=context.agent, round=context.round,
                            purpose=purpose, model=model, messages=messages, messages_hash=messages_hash(messages),
                            raw_response=None if missing else d.model_dump_json(),
                            parsed=None if missing else d.model_dump(),
                            outcome="transport_error" if missing else "ok")
        if missing:
            return DecisionOutcome(decision=None, valid=False, repaired=False, fallback_used=False,
                                   violation="no answer", calls=[rec], outcome="transport_error", missing=True)
        return DecisionOutcome(decision=d, valid=valid, repaired=False, fallback_used=fb,
                               violation="invalid" if fb else None, calls=[rec], outcome="invalid" if fb else "ok")


def _scarce(tmp_path, client, **kw):
    settings = {"workers": 2, "subruns": 2, "model": "scripted/fifo", "negotiator_model": "fake/model",
                "memory": "cross", "private_rounds": 1, "interviews": True, "seed": 3, **kw}
    cfg = ScarceConfig(**settings)
    return run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"),
                      client=client)


def test_scarce_interview_never_reaches_a_later_prompt(tmp_path):
    client = _NegotiatorClient()
    run = _scarce(tmp_path, client)
    evs, cs = events(run), calls(run)
    iv = of(evs, "interview")
    assert sorted((e["payload"]["subrun"], e["agent"]) for e in iv) == [(0, "w0"), (0, "w1"), (1, "w0"), (1, "w1")]
    ends = [e["seq"] for e in of(evs, "subrun_end")]
    assert all(e["seq"] > ends[e["payload"]["subrun"]] for e in iv)  # asked after the subrun ended
    # the later subrun's negotiation happened with cross memory (calls after subrun 0's interviews)
    later = [c for c in cs if c["purpose"].startswith("negotiation:") and c["round"] >= iv[0]["round"]]
    assert later, "subrun 1 negotiated after subrun 0's interviews"
    assert check_interviews_unseen(run) == 8
    # memory: own private message and the other's private message to it, never another's interview
    p0 = client.interview_prompts
    assert any("PRIV-w0-TO-w1" in p for p in p0) and all("CANARY" not in p for p in p0)
    # a worker remembers its own ballot (researcher-only as an input of the mechanism, but its own)
    assert all("ballot by you" in p for p in p0)


@pytest.mark.parametrize("mode", ["invalid", "missing"])
def test_unusable_or_missing_answers_are_never_made_up(tmp_path, mode):
    run = _scarce(tmp_path, _NegotiatorClient(mode), subruns=1)
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
    iv = of(events(run), "interview")
    assert len(iv) == 2
    for e in iv:
        p = e["payload"]
        assert p["explanation"] == "" and p["view_of_others"] == "" and p["self_assessment"] is None
        assert p["fallback_used"] is (mode == "invalid") and p["missing"] is (mode == "missing")
        assert p["valid"] is False and p["call_ids"]


def test_scripted_agents_get_a_labelled_rule_not_a_model_answer(tmp_path):
    cfg = SovSimConfig(condition="kcpr_m", model="scripted/greedy_leader", interviews=True, game={"rounds": 2})
    res = asyncio.run(arun_game(cfg, tmp_path))
    run = tmp_path / res.run_id
    iv = {e["agent"]: e["payload"] for e in of(events(run), "interview")}
    assert not calls(run)
    assert all(p["answered_by"] == "scripted" and "not a model" in p["explanation"] for p in iv.values())
    assert iv["a3"]["self_assessment"] == "self_interested" and iv["a0"]["self_assessment"] == "cooperative"
    with pytest.raises(AssertionError, match="no model's interview answer"):
        check_interviews_unseen(run)  # a scripted rule is no canary: the check says it has nothing to check


def test_cli_and_sl_run_take_the_setting(tmp_path):
    from typer.testing import CliRunner

    import scarce_lab as sl
    from scarce_lab.cli import app

    r = CliRunner().invoke(app, ["run", "sovsim", "-m", "scripted/sustainable", "-c", "kcpr_m", "--rounds", "2",
                                 "--interviews", "-n", "1", "--no-progress", "-o", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in (tmp_path / "cli").iterdir() if p.is_dir()]
    assert len(of(events(run), "interview")) == 4
    assert json.loads((run / "manifest.json").read_text())["condition_settings"]["interviews"] is True
    paths = sl.run(ScarceConfig(model="scripted/fifo", negotiator_model="scripted/institution-mix", workers=3,
                                subruns=1, interviews=True), out=tmp_path / "slrun")
    runs = paths if isinstance(paths, list) else [paths]
    iv = [e for p in runs for e in of(events(p), "interview")]
    assert sorted(e["agent"] for e in iv) == ["w0", "w1", "w2"]
    roles = {e["agent"]: e["payload"]["explanation"] for e in iv}
    assert "playing promise-breaker" in roles["w0"] and "playing sanctioner" in roles["w1"]
    assert {e["agent"]: e["payload"]["self_assessment"] for e in iv} == {
        "w0": "self_interested", "w1": "fair", "w2": "fair"}
