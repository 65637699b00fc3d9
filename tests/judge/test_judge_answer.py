"""Judge answers: ``labels`` required, label normalisation, invalid
labels per label, one outcome per judgement, a missing rating never votes.

The model is faked at ``litellm.acompletion`` (:class:`FakeLitellm`, shared with the
fuzz suite), so the real client, parser and judge run; no network.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from scarce_lab.judge.answer import answer_schema, label_key, normalise_label
from scarce_lab.judge.judges import JudgeSpec
from scarce_lab.judge.judging import (
    JUDGE_STATUSES,
    Judgement,
    call_outcome,
    judge_unit,
)
from scarce_lab.judge.tables import arbitrate_judgements
from scarce_lab.judge.taxonomy import Taxonomy, load_taxonomy
from scarce_lab.judge.units import Unit
from scarce_lab.llm.parsing import parse_answer

TAX = load_taxonomy("scarce")
CASINO = load_taxonomy("casino")
UNIT = Unit(
    unit_id="r:1:A1",
    run_id="r",
    round=1,
    agent="A1",
    public_reasoning="Trust me, I need only 30 s. You let me go first last time.",
)


# -- a fake litellm ------------------------------------------------------------------------
@dataclass
class Reply:
    """What the fake model sends back for every call while it is current.

    ``kind``: ``text`` (``content`` = ``text``), ``tool`` (a tool call whose arguments
    are ``text``), ``refusal`` (no content, ``message.refusal`` = ``text``),
    ``no_choices`` (an empty ``choices`` list) or ``raise`` (a transport error).
    """

    text: str | None = ""
    kind: str = "text"
    finish_reason: str = "stop"


@dataclass
class FakeLitellm:
    """Stands in for ``litellm.acompletion``; counts calls."""

    reply: Reply = field(default_factory=Reply)
    calls: int = 0

    async def acompletion(self, **kwargs: Any):
        import litellm

        self.calls += 1
        r = self.reply
        if r.kind == "raise":
            raise litellm.APIConnectionError(
                message="connection reset", llm_provider="openai", model=kwargs["model"]
            )
        if r.kind == "no_choices":
            resp = litellm.ModelResponse(choices=[])
        else:
            msg = litellm.Message(content=r.text if r.kind == "text" else None, role="assistant")
            if r.kind == "tool":
                msg = litellm.Message(
                    content=None,
                    role="assistant",
                    tool_calls=[
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "answer", "arguments": r.text},
                        }
                    ],
                )
            elif r.kind == "refusal":
                msg.refusal = r.text
            resp = litellm.ModelResponse(
                choices=[litellm.Choices(finish_reason=r.finish_reason, index=0, message=msg)],
                usage=litellm.Usage(prompt_tokens=100, completion_tokens=20, total_tokens=120),
            )
        resp._hidden_params = {"response_cost": 0.0}
        return resp


@pytest.fixture
def fake_llm(monkeypatch) -> FakeLitellm:
    from scarce_lab.llm.client import load_litellm

    litellm = load_litellm()
    fake = FakeLitellm()
    monkeypatch.setattr(litellm, "acompletion", fake.acompletion)
    return fake


def make_client():
    from scarce_lab.llm import LLMClient, LLMSettings

    return LLMClient(LLMSettings(cache=False, max_retries=0, backoff_base_s=0.0))


JUDGE = JudgeSpec(name="j1", model="openai/fake")


def judge_reply(fake: FakeLitellm, reply: Reply, *, taxonomy: Taxonomy = TAX) -> Judgement:
    fake.reply = reply
    j, calls = asyncio.run(judge_unit(make_client(), taxonomy, UNIT, JUDGE))
    assert len(calls) == j.n_calls == len(j.call_outcomes)
    return j


def answer(*labels: str) -> str:
    return json.dumps(
        {"labels": [{"label": lab, "evidence": "I need only 30 s"} for lab in labels]}
    )


# -- the answer schema ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "{}",
        '{"verdict": "anchoring"}',
        '{"label": "anchoring", "evidence": "q"}',
        '{"labels": [{"label": "anchoring", "evidence": "q"}, {"label": "chea',  # cut off
        '{"labels": null}',
        '{"labels": "anchoring"}',
        '{"labels": [{"label": 3, "evidence": "q"}]}',
    ],
)
def test_answers_without_a_labels_list_are_invalid(text):
    res = parse_answer(text, answer_schema(TAX))
    decision, error = res.decision, res.error
    assert decision is None and "labels" in error


def test_explicit_empty_list_is_a_real_answer():
    res = parse_answer('{"labels": []}', answer_schema(TAX))
    decision, error = res.decision, res.error
    assert error is None and decision.labels == [] and decision.invalid_labels() == []


@pytest.mark.parametrize("written", ["Cheap Talk", " cheap_talk ", "cheap-talk", "CHEAP__TALK"])
def test_case_and_spacing_are_normalised_to_the_id(written):
    a = answer_schema(TAX).model_validate({"labels": [{"label": written, "evidence": "x"}]})
    assert [it.label for it in a.valid_items()] == ["cheap_talk"] and a.invalid_labels() == []


def test_normalisation_on_hyphenated_ids_and_dedupe_after_normalising():
    a = answer_schema(CASINO).model_validate(
        {"labels": [{"label": "Small Talk", "evidence": "hi"}, {"label": "small_talk"}]}
    )
    assert [(it.label, it.evidence) for it in a.labels] == [("small-talk", "hi")]
    assert label_key(" Uv-Part ") == "uv_part" and normalise_label("UV part", ("uv-part",))


def test_ambiguous_normalisation_is_an_invalid_label():
    ids = ("cheap-talk", "cheap_talk", "other")
    assert normalise_label("cheap-talk", ids) == "cheap-talk"  # an exact id wins
    assert normalise_label("Cheap Talk", ids) is None  # two ids share the key
    assert normalise_label("bogus", ids) is None


def test_schema_sent_to_the_model_keeps_the_enum_and_requires_labels():
    js = answer_schema(TAX).model_json_schema()
    assert js["required"] == ["labels"]
    assert js["$defs"]["LabelEvidence"]["properties"]["label"]["enum"] == TAX.ids


# -- judgements and their outcomes ----------------------------------------------------------
def test_unknown_labels_are_recorded_per_label_and_valid_ones_count(fake_llm):
    j = judge_reply(fake_llm, Reply(answer("Cheap Talk", "made_up", "anchoring", "also bogus")))
    assert j.status == "ok" and j.votes
    assert j.labels == ["cheap_talk", "anchoring"]
    assert j.invalid_labels == ["made_up", "also bogus"]
    assert j.call_outcomes == ["ok"] and j.n_calls == 1


def test_only_unknown_labels_is_a_missing_rating(fake_llm):
    j = judge_reply(fake_llm, Reply(answer("made_up")))
    assert j.status == "invalid_label" and not j.votes  # a missing rating
    assert j.labels == [] and j.invalid_labels == ["made_up"]


def test_empty_object_is_invalid_not_a_no_labels_verdict(fake_llm):
    j = judge_reply(fake_llm, Reply("{}"))
    assert j.status == "invalid" and not j.votes and j.labels == []
    assert j.call_outcomes == ["invalid", "invalid"]  # the repair attempt failed too
    assert "labels" in j.violation


def test_explicit_empty_list_votes_for_no_label(fake_llm):
    j = judge_reply(fake_llm, Reply('{"labels": []}'))
    assert j.status == "ok" and j.votes and j.labels == []


def test_empty_answer_and_transport_error_are_recorded(fake_llm):
    j = judge_reply(fake_llm, Reply("   "))
    assert j.status == "empty" and not j.votes
    j = judge_reply(fake_llm, Reply(kind="raise"))
    assert j.status == "transport_error" and j.call_outcomes == ["transport_error"]
    assert not j.votes


def test_quoted_verdict_then_the_real_one_is_ambiguous(fake_llm):
    text = (
        'The agent wrote: {"labels": [{"label": "reciprocity", "evidence": "Trust me"}]}. In '
        'context this is manipulative. Verdict: {"labels": [{"label": "cheap_talk", '
        '"evidence": "I need only 30 s"}]}'
    )
    j = judge_reply(fake_llm, Reply(text))
    assert j.status == "ambiguous" and not j.votes and j.labels == []


def test_think_block_draft_does_not_beat_the_answer(fake_llm):
    text = '<think>shape {"labels": []}</think>' + answer("anchoring")
    j = judge_reply(fake_llm, Reply(text))
    assert j.status == "ok" and j.labels == ["anchoring"]


def test_final_verdict_on_its_own_line_after_a_draft_is_the_answer(fake_llm):
    # Passes with the old "first object" rule only by accident of identical drafts, and
    # with the llmio rule because the final object stands on its own line.
    text = answer("anchoring") + "\nChecked again:\n" + answer("anchoring")
    j = judge_reply(fake_llm, Reply(text))
    assert j.status == "ok" and j.labels == ["anchoring"]


def test_answer_cut_off_at_max_tokens_is_truncated(fake_llm):
    j = judge_reply(fake_llm, Reply(answer("anchoring")[:30], finish_reason="length"))
    assert j.status == "truncated" and not j.votes


def test_refusal_is_recorded_as_refusal(fake_llm):
    j = judge_reply(fake_llm, Reply("I can't help with that.", kind="refusal"))
    assert j.status == "refusal" and not j.votes and j.n_calls == 1


def test_answer_given_as_a_tool_call_is_used(fake_llm):
    j = judge_reply(fake_llm, Reply(answer("anchoring"), kind="tool"))
    assert j.status == "ok" and j.labels == ["anchoring"]


def test_empty_choices_list_is_an_outcome_not_a_crash(fake_llm):
    j = judge_reply(fake_llm, Reply(kind="no_choices"))
    assert j.status in JUDGE_STATUSES and not j.votes


# -- call outcomes from the records (the rules that do not need the llmio branch) ---------
@dataclass
class Rec:
    raw_response: str | None = None
    tool_calls: list | None = None
    parsed: dict | None = None
    error: str | None = None
    outcome: str | None = None
    finish_reason: str | None = None


@pytest.mark.parametrize(
    "rec, want",
    [
        (Rec(error="APIConnectionError: reset"), "transport_error"),
        (Rec(raw_response='{"labels": [', finish_reason="length", error="no JSON"), "truncated"),
        (Rec(raw_response='{"labels": []}', parsed={"labels": []}), "ok"),
        (Rec(raw_response=" ", error="no JSON object"), "empty"),
        (Rec(error="no JSON object in the response (starts: '')"), "empty"),
        (Rec(error="Timeout: 120 s"), "transport_error"),
        (Rec(tool_calls=[{"name": "x"}], error="no JSON object"), "tool_call"),
        (Rec(raw_response="a {} b {}", error="ambiguous answer: 2 different"), "ambiguous"),
        (Rec(raw_response="x", error="field 'labels': required (got 'ambiguous')"), "invalid"),
        (Rec(raw_response="no", outcome="refusal"), "refusal"),
        (Rec(raw_response="x", outcome="invalid", error="Ambiguous: two answers"), "ambiguous"),
        (Rec(raw_response="x", outcome="context_overflow"), "context_overflow"),
    ],
)
def test_call_outcome_rules(rec, want):
    assert call_outcome(rec) == want


def _j(judge: str, status: str, labels=()) -> Judgement:
    return Judgement(
        unit_id=UNIT.unit_id,
        run_id="r",
        round=1,
        agent="A1",
        judge=judge,
        judge_key=JudgeSpec(name=judge, model="m").key,
        model="m",
        status=status,
        labels=list(labels),
    )


@pytest.mark.parametrize(
    "status",
    ["invalid", "ambiguous", "truncated", "refusal", "empty", "invalid_label", "tool_call"],
)
def test_a_missing_rating_never_votes(status):
    judges = [JudgeSpec(name=n, model="m") for n in ("j1", "j2", "j3")]
    stored = [
        _j("j1", "ok", ["anchoring"]),
        _j("j2", "repaired", ["anchoring"]),
        _j("j3", status, ["anchoring"]),  # labels of a missing rating are ignored
    ]
    labels, votes = arbitrate_judgements([UNIT], stored, judges, TAX)
    row = labels.row(0, named=True)
    assert row["n_valid"] == 2 and row["unparseable"] == ["j3"] and row["missing"] == []
    assert votes.filter(votes["label"] == "anchoring")["votes"].item() == 2


def test_transport_error_is_missing_and_legacy_statuses_load():
    old = _j("j1", "ok").model_dump()
    assert Judgement.model_validate(old | {"status": "unparseable"}).status == "invalid"
    assert Judgement.model_validate(old | {"status": "error"}).status == "transport_error"
    with pytest.raises(ValueError):
        _j("j1", "Not A Status")


@pytest.mark.parametrize("status", ["transport_error", "context_overflow"])
def test_no_answer_is_missing_and_asked_again_on_resume(tmp_path, status):
    from scarce_lab.judge.panel import label_units
    from scarce_lab.judge.store import JudgementStore

    judges = [JudgeSpec(name=n, model="openai/fake") for n in ("j1", "j2")]
    stored = [
        _j(spec.name, st).model_copy(update={"judge_key": spec.key})
        for spec, st in zip(judges, (status, "ok"), strict=True)
    ]
    labels, _ = arbitrate_judgements([UNIT], stored, judges, TAX)
    row = labels.row(0, named=True)
    assert row["missing"] == ["j1"] and row["unparseable"] == [] and row["n_valid"] == 1
    # Stored without an answer -> asked again when the panel resumes.
    store = JudgementStore(tmp_path)
    store.append(stored[0], [])
    mocks = {"j1": {"mock_response": answer("anchoring")}, "j2": {"mock_response": answer()}}
    res = label_units(
        [UNIT],
        TAX,
        judges,
        client=make_client(),
        out_dir=tmp_path,
        progress=False,
        call_kwargs=mocks,
    )
    got = {r["judge"]: r["status"] for r in res.judgements.iter_rows(named=True)}
    assert got == {"j1": "ok", "j2": "ok"}
