"""SCARCE runs with the auction's institutions on: scripted agents that promise and
defect, sanction and contract; money conserved, visibility, determinism, the model
path through a fake client, the CLI and sl.run."""

from __future__ import annotations

import json
import typing

import pytest

from scarce_lab.data.schema import LLMCallRecord, messages_hash
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.llm import DecisionOutcome
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

ALL_ON = dict(sanctions="mechanism", fine=60, fine_to="harmed", reputation=True, contracts=True)


def _run(tmp_path, name="a", client=None, **kw):
    base = dict(workers=4, subruns=2, model="scripted/fifo", negotiator_model="scripted/institution-mix", seed=1)
    cfg = ScarceConfig(**{**base, **kw})
    out = tmp_path / name
    run = run_scarce(cfg, out, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade,
                     sandbox=FakeSandbox(out / "sbx"), client=client)
    return cfg, [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()], run


def of(evs, kind):
    return [e for e in evs if e["kind"] == kind]


def test_scripted_institutions_conserve_money_and_record_visibility(tmp_path):
    cfg, evs, _ = _run(tmp_path, institutions=ALL_ON)
    budgets = cfg.budgets_for()
    for end in of(evs, "subrun_end"):
        p = end["payload"]
        assert p["conserved"]
        assert sum(b["credits"] for b in p["balances"]) + p["sink_balance"] == sum(budgets.values())
    breaches, sanctions = of(evs, "breach"), of(evs, "sanction")
    assert breaches and len(breaches) == len(sanctions)  # the promise-breakers defect and are fined
    assert all(s["payload"]["passed"] and s["payload"]["fine"] == 60 for s in sanctions)
    payments = of(evs, "fine_payment")
    assert len(payments) == len(sanctions)
    for f, b in zip(payments, breaches, strict=True):
        tr = f["payload"]["transfers"]
        assert 0 < f["payload"]["amount"] <= 60 and sum(t["amount"] for t in tr) == f["payload"]["amount"]
        assert {t["payee"] for t in tr} <= {*b["payload"]["harmed"], "auctioneer"}
        # the levied amount (capped at a private balance) is private to the breaker and the workers paid
        assert f["visibility"] == "private"
        assert set(f["visible_to"]) == {f["agent"], *(t["payee"] for t in tr if t["payee"] != "auctioneer")}
    judged = of(evs, "promise_judged")
    assert {j["payload"]["kept"] for j in judged} == {True, False}  # the sanctioner keeps its promise
    for kind in ("reputation", "promise", "promise_judged", "breach", "sanction"):
        assert of(evs, kind) and all(e["visibility"] == "public" for e in of(evs, kind)), kind
    for kind in ("contract_offer", "contract_answer", "contract_settlement"):  # private to the two parties
        rows = of(evs, kind)
        assert rows, kind
        for e in rows:
            assert e["visibility"] == "private"
            assert sorted(e["visible_to"]) == sorted([e["payload"]["payer"], e["payload"]["payee"]])
    # reputation falls for the defectors and stays >= 0.5 for those who keep promises
    last = {r["worker"]: r for r in of(evs, "reputation")[-1]["payload"]["workers"]}
    assert last["w0"]["score"] < 0.5 and last["w0"]["broken"] > 0 and last["w0"]["fined"] > 0
    assert "fines_paid" not in last["w0"]  # credits levied are capped at a private balance: not public
    assert last["w1"]["score"] >= 0.5


def test_vote_mode_fines_only_on_a_strict_majority(tmp_path):
    _, evs, _ = _run(tmp_path, institutions=dict(sanctions="vote", fine=50))
    votes, sanctions = of(evs, "fine_vote"), of(evs, "sanction")
    assert votes and sanctions
    for s in sanctions:
        p = s["payload"]
        mine = [v for v in votes if v["payload"]["offender"] == s["agent"] and v["round"] == s["round"]
                and v["payload"]["contention"] == p["contention"]]
        yes = sum(v["payload"]["fine"] for v in mine)
        assert yes == p["votes_yes"]
        assert p["passed"] == (2 * yes > yes + p["votes_no"])
    assert {s["payload"]["passed"] for s in sanctions} == {True, False}  # both outcomes occur


def test_same_seed_same_trajectory_with_institutions(tmp_path):
    strip = lambda evs: [{k: v for k, v in e.items() if k != "timestamp"} for e in evs]  # noqa: E731
    _, a, _ = _run(tmp_path, "a", institutions=ALL_ON)
    _, b, _ = _run(tmp_path, "b", institutions=ALL_ON)
    assert strip(a) == strip(b)


def test_all_off_records_nothing_new(tmp_path):
    cfg, evs, run = _run(tmp_path, institutions=dict(sanctions="off", reputation=False, contracts=False))
    kinds = {e["kind"] for e in evs}
    assert not kinds & {"reputation", "promise", "breach", "sanction", "contract_offer", "fine_vote"}
    manifest = json.loads((run / "manifest.json").read_text())
    assert "institutions" not in manifest["config"]
    assert cfg.run_id == ScarceConfig(workers=4, subruns=2, model="scripted/fifo",
                                      negotiator_model="scripted/institution-mix", seed=1).run_id


class InstitutionsClient:
    """A fake model: FIFO-ish declarations, then promises the latest rank, offers the
    first payee 7 credits for going first, accepts offers, votes to fine."""

    async def adecide(self, *, model, messages, schema, fallback, seed, context, **kw):
        phase = context.purpose.split(":")[1]
        ann = schema.model_fields

        def choices(name):
            return typing.get_args(ann[name].annotation)

        if phase == "declaration":
            d = schema(desired_position=1, desired_duration_seconds=20, bid_price=0)
        elif phase == "promise":
            d = schema(min_own_rank=max(choices("min_own_rank")))
        elif phase == "contract_offer":
            payee = choices("payee")[0]
            d = schema(payee=payee, amount=7, first=choices("first")[0])
        elif phase == "contract_answer":
            d = schema(accept=True)
        elif phase == "fine_vote":
            d = schema(fine=True)
        else:
            d = fallback
        rec = LLMCallRecord(call_id=f"{context.agent}-{phase}-{seed}", agent=context.agent, round=context.round,
                            purpose=context.purpose, model=model, messages=messages,
                            messages_hash=messages_hash(messages), raw_response=d.model_dump_json(),
                            parsed=d.model_dump())
        return DecisionOutcome(decision=d, valid=True, repaired=False, fallback_used=False, violation=None,
                               calls=[rec])


def test_model_negotiator_gets_the_institution_questions_and_no_private_contract(tmp_path):
    budgets = {"w0": 1111, "w1": 2222, "w2": 3333}  # canaries no other number of the game takes
    _, evs, run = _run(tmp_path, negotiator_model="fake/model", client=InstitutionsClient(), workers=3, subruns=1,
                       private_rounds=0, worker_budgets=budgets,
                       institutions=dict(sanctions="vote", reputation=True, contracts=True))
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    for c in calls:  # another worker's budget reaches no prompt, institution questions included
        text = "\n".join(m["content"] for m in c["messages"])
        assert not [w for w, b in budgets.items() if w != c["agent"] and str(b) in text], (c["agent"], c["purpose"])
    purposes = {c["purpose"] for c in calls}
    assert {"negotiation:promise", "negotiation:contract_offer", "negotiation:contract_answer",
            "negotiation:fine_vote"} <= purposes
    offers = of(evs, "contract_offer")
    assert offers and all(o["payload"]["amount"] == 7 for o in offers)
    assert of(evs, "promise") and all(e["payload"]["call_ids"] for e in of(evs, "promise"))
    text_of = {}
    for c in calls:
        text_of.setdefault((c["agent"], c["round"]), []).append("\n".join(m["content"] for m in c["messages"]))
    decl = [c for c in calls if c["purpose"] == "negotiation:declaration"]
    assert decl and all("Public reputation" in "\n".join(m["content"] for m in c["messages"]) for c in decl)
    # a contract line reaches only its two parties' prompts
    for o in offers:
        p = o["payload"]
        line = f"{p['payer']} pays {p['payee']} {p['amount']} credits if"
        for c in calls:
            text = "\n".join(m["content"] for m in c["messages"])
            if c["round"] == o["round"] and line in text:
                assert c["agent"] in (p["payer"], p["payee"]), f"{c['agent']} saw {line}"
    seen = sum(line in "\n".join(m["content"] for m in c["messages"]) for c in calls
               for o in offers for line in [f"{o['payload']['payer']} pays {o['payload']['payee']} 7 credits if"])
    assert seen > 0  # positive control: the parties do see their contracts


def test_model_path_without_institutions_asks_nothing_new(tmp_path):
    _, _, run = _run(tmp_path, negotiator_model="fake/model", client=InstitutionsClient(), workers=2, subruns=1,
                     private_rounds=0)
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and not {c["purpose"] for c in calls} & {
        "negotiation:promise", "negotiation:contract_offer", "negotiation:contract_answer", "negotiation:fine_vote"}
    assert not any("reputation" in m["content"].lower() for c in calls for m in c["messages"])


def test_config_rejects_bad_institution_settings():
    with pytest.raises(ValueError, match="sanctions"):
        ScarceConfig(institutions={"sanctions": "always"})
    with pytest.raises(ValueError, match="fine"):
        ScarceConfig(institutions={"fine": -1})
    with pytest.raises(ValueError, match="extra_forbidden|Extra inputs"):
        ScarceConfig(institutions={"sanction": "vote"})
    cfg = ScarceConfig(institutions={"sanctions": "vote", "fine_to": "harmed"})
    assert "institutions.sanctions=vote" in cfg.condition_label() and "institutions.fine_to=harmed" in cfg.condition_label()
    assert cfg.run_id != ScarceConfig().run_id


def test_cli_and_sl_run_with_scripted_institutions(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    r = CliRunner().invoke(app, ["run", "scarce", "-m", "scripted/fifo", "--negotiator-model",
                                 "scripted/institution-mix", "--workers", "3", "--subruns", "1",
                                 "-S", "institutions.sanctions=mechanism", "-S", "institutions.reputation=true",
                                 "-o", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in (tmp_path / "cli").iterdir() if p.is_dir()]
    kinds = {json.loads(x)["kind"] for x in (run / "events.jsonl").read_text().splitlines()}
    assert {"reputation", "promise", "promise_judged"} <= kinds
    import scarce_lab as sl

    paths = sl.run(ScarceConfig(model="scripted/fifo", negotiator_model="scripted/institution-mix", workers=3,
                                subruns=1, institutions={"contracts": True}), out=tmp_path / "slrun")
    runs = paths if isinstance(paths, list) else [paths]
    kinds = {json.loads(x)["kind"] for p in runs for x in (p / "events.jsonl").read_text().splitlines()}
    assert "contract_offer" in kinds


def test_an_interrupted_institutions_run_resumes_to_the_same_trajectory(tmp_path):
    """Reputation, promises and escrow are world state: they come back from the
    checkpoint, and the resumed run equals an uninterrupted one."""
    from scarce_lab.data.recorder import read_manifest
    from scarce_lab.environments.scarce.runner import ScarceRunner
    from scarce_lab.llm.client import run_sync

    class Killed(RuntimeError):
        pass

    cfg = ScarceConfig(workers=4, subruns=2, model="scripted/fifo", negotiator_model="scripted/institution-mix",
                       seed=3, institutions=ALL_ON)

    def runner(out, sbx, die_at=None):
        r = ScarceRunner(cfg, out, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade, sandbox=FakeSandbox(sbx))
        if die_at is not None:
            orig = r._contention

            async def contention(participants, tc):
                if r.world.k == die_at:
                    raise Killed(f"killed before contention {die_at}")
                return await orig(participants, tc)

            r._contention = contention
        return r

    def strip(run):
        return [{k: v for k, v in json.loads(x).items() if k != "timestamp"}
                for x in (run / "events.jsonl").read_text().splitlines()]

    full = run_sync(runner(tmp_path / "full", tmp_path / "sbx_f").arun())
    n = max(e["round"] for e in strip(full) if e["kind"] == "contention_start") + 1
    assert n >= 4 and any(e["kind"] == "sanction" for e in strip(full))
    with pytest.raises(Killed):
        run_sync(runner(tmp_path / "broken", tmp_path / "sbx_a", die_at=n // 2 + 1).arun())
    run_dir = tmp_path / "broken" / full.name
    run_sync(runner(tmp_path / "broken", tmp_path / "sbx_b").arun(resume=True))
    assert read_manifest(run_dir).status == "complete"
    assert strip(run_dir) == strip(full)


def test_the_dry_run_plans_the_institutions_questions():
    from scarce_lab.environments.scarce import plan_calls

    base = dict(workers=5, model="scripted/fifo", negotiator_model="openai/gpt-4o-mini")
    off = plan_calls(ScarceConfig(**base), "openai/gpt-4o-mini")[2]
    on = plan_calls(ScarceConfig(**base, institutions=dict(sanctions="vote", contracts=True)), "openai/gpt-4o-mini")[2]
    rep = plan_calls(ScarceConfig(**base, institutions=dict(reputation=True)), "openai/gpt-4o-mini")[2]
    assert off == 25 and on == 25 + 5 * (1 + 2 + 4) and rep == 25 + 5
