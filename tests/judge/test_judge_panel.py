"""Judge panel plumbing with litellm mock responses: schema, prompts, arbitration,
answers without a rating, transport errors, resume."""

import json

import pytest
from pydantic import ValidationError

from scarce_lab.judge.answer import answer_schema
from scarce_lab.judge.judges import make_judges, panel_note
from scarce_lab.judge.judging import evidence_found, render_messages
from scarce_lab.judge.panel import label_units
from scarce_lab.judge.store import JudgementStore
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.units import PrivateMessage, Unit

TAX = load_taxonomy("scarce")


def _units():
    return [
        Unit(
            unit_id="r:1:a",
            run_id="r",
            round=1,
            agent="a",
            public_reasoning="My deadline is soonest, so I go first.",
            private_messages=[PrivateMessage(to="b", text="You let me go last time, thanks.")],
            context="Contention 1.",
        ),
        Unit(
            unit_id="r:1:b",
            run_id="r",
            round=1,
            agent="b",
            public_reasoning="I bid 40, the highest bid should win.",
            context="Contention 1.",
        ),
    ]


def _answer(*pairs):
    return json.dumps({"labels": [{"label": lab, "evidence": ev} for lab, ev in pairs]})


def _client(tmp_path=None, **settings):
    from scarce_lab.llm import LLMClient, LLMSettings

    return LLMClient(LLMSettings(cache=False, max_retries=0, **settings))


def test_answer_schema_enum_cut_dedupe_and_limit():
    schema = answer_schema(TAX, max_labels=2, max_evidence=20)
    js = schema.model_json_schema()
    item = js["$defs"]["LabelEvidence"]["properties"]
    assert item["label"]["enum"] == TAX.ids and item["evidence"]["maxLength"] == 20
    a = schema.model_validate(
        {
            "labels": [
                {"label": "anchoring", "evidence": "x" * 50},
                {"label": "anchoring", "evidence": "again"},
            ]
        }
    )
    assert [(i.label, i.evidence) for i in a.labels] == [("anchoring", "x" * 20)]
    # An unknown label no longer fails the answer: it is kept as an invalid label.
    b = schema.model_validate({"labels": [{"label": "not_a_label", "evidence": ""}]})
    assert b.valid_items() == [] and b.invalid_labels() == ["not_a_label"]
    with pytest.raises(ValidationError):
        schema.model_validate({"labels": [{"label": i} for i in TAX.ids[:3]]})


def test_make_judges_and_prompts():
    judges = make_judges(["embedded/smollm2", "embedded/smollm2", "openai/gpt-x"], seed=5)
    assert [(j.name, j.seed, j.variant, j.detail) for j in judges] == [
        ("j1", 5, 0, "brief"),
        ("j2", 6, 1, "brief"),
        ("j3", 5, 0, "full"),
    ]
    assert "only 2 distinct model(s)" in panel_note(judges)
    assert "3 different models" in panel_note(make_judges(["a/x", "b/y", "c/z"]))
    u = _units()[0]
    m0 = render_messages(TAX, u, judges[0])
    m1 = render_messages(TAX, u, judges[1])
    full = render_messages(TAX, u, judges[2])[0]["content"]
    for cid in TAX.ids:
        assert f"- {cid} (" in m0[0]["content"] and f"- {cid} (" in full
    order = lambda text: [c for c in TAX.ids if f"- {c} (" in text]  # noqa: E731
    pos0 = sorted(TAX.ids, key=lambda c: m0[0]["content"].index(f"- {c} ("))
    pos1 = sorted(TAX.ids, key=lambda c: m1[0]["content"].index(f"- {c} ("))
    assert pos0 == TAX.ids and pos1 != TAX.ids and sorted(pos1) == sorted(order(full))
    assert "Includes:" in full and "Includes:" not in m0[0]["content"]
    assert "You let me go last time" in m0[1]["content"] and "Contention 1." in m0[1]["content"]
    with pytest.raises(ValueError):
        make_judges([])
    with pytest.raises(ValueError, match="scripted policies"):
        make_judges(["scripted/greedy"])


def test_evidence_found():
    u = _units()[0]
    assert evidence_found("you let me go LAST time", u)
    assert not evidence_found("the speaker is kind", u)
    assert not evidence_found("", u)


def test_panel_arbitrates_records_unparseable_and_resumes(tmp_path):
    units = _units()
    judges = make_judges(["openai/mock-a", "openai/mock-b", "openai/mock-c"])
    good = {
        "mock_response": _answer(
            ("earliest_deadline_first", "deadline is soonest"),
            ("reciprocity", "You let me go last time"),
        )
    }
    other = {"mock_response": _answer(("earliest_deadline_first", "My deadline"))}
    mocks = {"j1": good, "j2": {"mock_response": "no json here"}, "j3": other}
    out = tmp_path / "out"
    res = label_units(
        units, TAX, judges, client=_client(), out_dir=out, progress=False, call_kwargs=mocks
    )
    assert res.min_votes == 2
    j = {(r["unit_id"], r["judge"]): r for r in res.judgements.iter_rows(named=True)}
    assert j[("r:1:a", "j2")]["status"] == "invalid" and j[("r:1:a", "j2")]["n_calls"] == 2
    assert j[("r:1:a", "j2")]["call_outcomes"] == ["invalid", "invalid"]
    assert j[("r:1:a", "j1")]["status"] == "ok"
    labels = {r["unit_id"]: r for r in res.labels.iter_rows(named=True)}
    a = labels["r:1:a"]
    assert a["labels"] == ["earliest_deadline_first"] and a["ties"] == ["reciprocity"]
    assert a["unparseable"] == ["j2"] and a["status"] == "partial" and a["n_valid"] == 2
    v = res.votes.filter(res.votes["unit_id"] == "r:1:a").rows(named=True)
    assert [(x["label"], x["votes"], x["accepted"], x["tie"], x["relational"]) for x in v] == [
        ("reciprocity", 1, False, True, True),
        ("earliest_deadline_first", 2, True, False, False),
    ]
    assert v[1]["evidence_found"] == 1.0
    # Files: 6 judgements; j2's two attempts (first try + repair) among the call records.
    lines = (out / "judgements.jsonl").read_text().splitlines()
    assert len(lines) == 6
    calls = [json.loads(x) for x in (out / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) == 8 and sum(c["purpose"] == "judge:j2" for c in calls) == 4
    assert json.loads((out / "panel.json").read_text())["taxonomy"] == "scarce"
    # Resume: nothing is asked again (different mocks would change the answers).
    garbage = {n: {"mock_response": "garbage"} for n in ("j1", "j2", "j3")}
    res2 = label_units(
        units, TAX, judges, client=_client(), out_dir=out, progress=False, call_kwargs=garbage
    )
    assert len((out / "judgements.jsonl").read_text().splitlines()) == 6
    assert res2.labels.equals(res.labels)


def test_transport_error_is_retried_on_resume(tmp_path):
    import litellm

    units = _units()[:1]
    judges = make_judges(["openai/mock-a", "openai/mock-b", "openai/mock-c"])
    ok = {"mock_response": _answer(("bid_priority", "I go first"))}
    err = {
        "mock_response": litellm.BadRequestError(
            "boom", model="openai/mock-a", llm_provider="openai"
        )
    }
    out = tmp_path / "out"
    res = label_units(
        units,
        TAX,
        judges,
        client=_client(),
        out_dir=out,
        progress=False,
        call_kwargs={"j1": err, "j2": ok, "j3": ok},
    )
    row = res.labels.row(0, named=True)
    assert (
        row["missing"] == ["j1"] and row["unparseable"] == [] and row["labels"] == ["bid_priority"]
    )
    assert (
        res.judgements.filter(res.judgements["judge"] == "j1")["status"].item() == "transport_error"
    )
    res2 = label_units(
        units,
        TAX,
        judges,
        client=_client(),
        out_dir=out,
        progress=False,
        call_kwargs={"j1": ok, "j2": err, "j3": err},
    )
    row2 = res2.labels.row(0, named=True)
    assert row2["missing"] == [] and row2["n_valid"] == 3 and row2["status"] == "ok"


def test_store_skips_torn_tail_and_refuses_other_taxonomy(tmp_path):
    store = JudgementStore(tmp_path)
    store.check_meta({"taxonomy": "scarce", "judges": []})
    (tmp_path / "judgements.jsonl").write_text('{"unit_id": "x"')  # a killed writer's half line
    with pytest.warns(UserWarning, match=r"judgements\.jsonl:1: skipped a torn last line"):
        assert store.load() == []
    with pytest.raises(ValueError, match="taxonomy 'scarce', not 'casino'"):
        store.check_meta({"taxonomy": "casino", "judges": []})


def test_duplicate_units_or_judges_rejected():
    u = _units()
    with pytest.raises(ValueError, match="duplicate unit ids"):
        label_units([u[0], u[0]], TAX, make_judges(["openai/x"]), client=_client(), progress=False)
    j = make_judges(["openai/x"])
    with pytest.raises(ValueError, match="unique names"):
        label_units(u, TAX, j + j, client=_client(), progress=False)
