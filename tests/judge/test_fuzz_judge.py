"""Fuzz the judge's answers.

Thousands of generated model replies (random text incl. lone surrogates, JSON
fragments, nested, deep and huge objects, think blocks, two verdicts, unknown and
odd-case labels, truncations, ``{}``, tool calls, refusals, transport errors) go
through the judge's answer schema (:func:`~scarce_lab.llm.parsing.parse_answer`) and through
:func:`judge_unit` with a fake ``litellm.acompletion`` (no network). Every reply must
give a judgement, never an exception, with a known status recorded per reply; clean
answers (alone, wrapped in prose, fenced, after a brace-free think block) must give
exactly the labels an independent oracle expects.

Deterministic (``derandomize=True``) so CI runs the same examples each time. Sizes
(``max_examples``) are the constants below; the time is printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scarce_lab.judge.answer import answer_schema, normalise_label
from scarce_lab.judge.judges import JudgeSpec
from scarce_lab.judge.judging import (
    JUDGE_STATUSES,
    MAX_INVALID_LABEL_CHARS,
    RATING_STATUSES,
    Judgement,
    judge_unit,
)
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.units import Unit
from scarce_lab.llm.parsing import parse_answer
from tests.judge.test_judge_answer import FakeLitellm, Reply, make_client

N_SCHEMA = 2000  # replies through the answer schema alone
N_JUDGE = 1600  # replies through judge_unit (client, repair, outcome), half clean

TAX = load_taxonomy("scarce")
IDS = tuple(TAX.ids)
JUDGE = JudgeSpec(name="j1", model="openai/fake", max_labels=6, max_evidence=100)
SCHEMA = answer_schema(TAX, max_labels=JUDGE.max_labels, max_evidence=JUDGE.max_evidence)
UNIT = Unit(unit_id="r:1:A1", run_id="r", round=1, agent="A1", public_reasoning="I go first.")
SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)

# -- strategies ----------------------------------------------------------------------------
any_text = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
    max_size=120,
)  # includes lone surrogates and control characters
prose = st.text(
    alphabet=st.characters(exclude_characters='{}[]`<>\\"', exclude_categories=("Cs",)), max_size=60
)
label = st.one_of(
    st.sampled_from(IDS),
    st.sampled_from(IDS).map(lambda i: i.replace("_", " ").title()),
    st.sampled_from(IDS).map(lambda i: f"  {i.upper()} "),
    st.sampled_from(IDS).map(lambda i: i.replace("_", "-")),
    st.text(max_size=30),  # almost always unknown
    st.sampled_from(["made_up", "Cheap Talk!", "", "none", "cheap talk", "ANCHORING"]),
)
evidence = st.one_of(st.text(max_size=150), st.none(), st.just("x" * 5000))
item = st.fixed_dictionaries({"label": label}, optional={"evidence": evidence})
answer_obj = st.fixed_dictionaries(
    {"labels": st.lists(item, max_size=9)}, optional={"note": st.text(max_size=20)}
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
no_labels_key = st.text(max_size=10).filter(lambda k: k != "labels")
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(no_labels_key, inner, max_size=4)
    ),
    max_leaves=20,
)
no_labels_obj = st.dictionaries(no_labels_key, json_value, max_size=5)


def expected(obj: dict) -> tuple[str, list[str], list[str]] | None:
    """Oracle for a clean answer: (status, labels, invalid labels as written), or None
    when the answer must be invalid (more distinct labels than ``max_labels``)."""
    seen: list[str] = []
    for it in obj["labels"]:
        lab = normalise_label(it["label"], IDS) or it["label"]
        if lab not in seen:
            seen.append(lab)
    if len(seen) > JUDGE.max_labels:
        return None
    valid = [x for x in seen if x in IDS]
    invalid = [x for x in seen if x not in IDS]
    return ("invalid_label" if invalid and not valid else "ok"), valid, invalid


@st.composite
def clean_reply(draw):
    """A well-formed answer, alone or wrapped so that it stays the only candidate."""
    obj = draw(answer_obj)
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    wrap = draw(st.sampled_from(["alone", "prose", "fence", "think"]))
    if wrap == "prose":
        text = f"{draw(prose)}\n{text}\n{draw(prose)}"
    elif wrap == "fence":
        text = f"{draw(prose)}\n```json\n{text}\n```"
    elif wrap == "think":
        text = f"<think>{draw(prose)}</think>\n{text}"
    return Reply(text), obj


@st.composite
def other_reply(draw):
    """Anything else a model sends; only the invariants are checked."""
    kind = draw(
        st.sampled_from(
            [
                "random",
                "truncated",
                "no_labels",
                "two_verdicts",
                "think_draft",
                "deep",
                "huge",
                "surrogates",
                "tool",
                "refusal",
                "none",
                "raise",
                "fragments",
            ]
        )
    )

    def a() -> str:  # drawn only where needed (generation is most of the time)
        return json.dumps(draw(answer_obj))

    if kind == "random":
        return Reply(draw(any_text)), kind
    if kind == "truncated":
        full = a()
        cut = draw(st.integers(0, max(0, len(full) - 1)))
        return Reply(full[:cut], finish_reason=draw(st.sampled_from(["length", "stop"]))), kind
    if kind == "no_labels":
        return Reply(json.dumps(draw(no_labels_obj))), kind
    if kind == "two_verdicts":
        b = json.dumps(draw(answer_obj))
        return Reply(f"The agent wrote: {a()}. Verdict: {b}"), kind
    if kind == "think_draft":
        return Reply(f"<think>draft {a()}</think>{a()}"), kind
    if kind == "deep":
        n = draw(st.integers(100, 10_000))
        return Reply(draw(st.sampled_from(['{"a":', "[", '{"labels": ['])) * n), kind
    if kind == "huge":
        big = {"labels": [{"label": IDS[0], "evidence": "y" * 100_000}]}
        big |= {f"k{i}": i for i in range(draw(st.integers(0, 3000)))}
        return Reply(json.dumps(big)), kind
    if kind == "surrogates":
        lab = draw(st.sampled_from(["\\ud800", "\\udfff", "cheap_talk\\ud83d"]))
        text = '{"labels": [{"label": "' + lab + '", "evidence": "\\udc00 q"}]}'
        return Reply(draw(st.sampled_from([text, text + "\ud800", "\udcff" + a()]))), kind
    if kind == "tool":
        args = draw(st.sampled_from(["<answer>", "{", "", "null"]))
        return Reply(a() if args == "<answer>" else args, kind="tool"), kind
    if kind == "refusal":
        return Reply(draw(st.text(max_size=40)), kind="refusal"), kind
    if kind == "none":
        return Reply(None), kind
    if kind == "raise":
        return Reply(kind="raise"), kind
    pieces = draw(
        st.lists(st.sampled_from(['{"labels":', "[", "]", "{", "}", '"', ",", "A", "{}"]))
    )
    pieces = [a() if p == "A" else p for p in pieces]
    return Reply("".join(pieces)), kind


# -- harness ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def harness():
    from scarce_lab.llm.client import load_litellm

    litellm = load_litellm()
    fake = FakeLitellm()
    loop = asyncio.new_event_loop()
    client = make_client()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(litellm, "acompletion", fake.acompletion)
        yield fake, loop, client
    loop.close()


def run_judge(harness, reply: Reply) -> Judgement:
    fake, loop, client = harness
    fake.reply = reply
    j, calls = loop.run_until_complete(judge_unit(client, TAX, UNIT, JUDGE))
    check_invariants(j, calls)
    return j


def check_invariants(j: Judgement, calls: list) -> None:
    assert j.status in JUDGE_STATUSES, j.status
    assert j.votes == (j.status in RATING_STATUSES)
    assert 1 <= j.n_calls == len(calls) == len(j.call_outcomes) <= 2
    assert len(set(j.labels)) == len(j.labels) and set(j.labels) <= set(IDS)
    assert not set(j.invalid_labels) & set(IDS)
    assert all(len(x) <= MAX_INVALID_LABEL_CHARS for x in j.invalid_labels)
    if not j.votes:
        assert j.labels == [] and j.evidence == {}
    assert list(j.evidence) == j.labels
    assert all(len(q) <= JUDGE.max_evidence for q in j.evidence.values())
    line = j.model_dump_json()
    line.encode("utf-8")  # writable to judgements.jsonl (no lone surrogate)
    assert "\n" not in line
    assert Judgement.model_validate_json(line) == j


def report(name: str, seen: Counter, n: int, t0: float) -> None:
    took = time.perf_counter() - t0
    total = sum(seen.values())
    print(f"\n{name}: {total} replies in {took:.1f} s; by outcome {dict(sorted(seen.items()))}")
    assert total >= n * 0.9, (total, n)  # hypothesis ran (nearly) every example


# -- the tests -----------------------------------------------------------------------------
@pytest.mark.slow
def test_answer_schema_never_raises():
    seen: Counter = Counter()
    t0 = time.perf_counter()

    @settings(max_examples=N_SCHEMA, **SETTINGS)
    @given(st.one_of(clean_reply(), other_reply()))
    def one(case):
        reply, what = case
        res = parse_answer(reply.text, SCHEMA)
        decision, error = res.decision, res.error
        assert (decision is None) != (error is None)
        if decision is not None:
            assert len(decision.labels) <= JUDGE.max_labels
            assert {it.label for it in decision.valid_items()} <= set(IDS)
        if isinstance(what, dict):  # a clean answer: the oracle holds
            want = expected(what)
            if want is None:
                assert decision is None
            else:
                got = [it.label for it in decision.valid_items()], decision.invalid_labels()
                assert got == (want[1], want[2])
        seen["valid" if decision is not None else "invalid"] += 1

    one()
    report("answer schema", seen, N_SCHEMA, t0)


@pytest.mark.slow
def test_clean_answers_give_the_expected_judgement(harness):
    seen: Counter = Counter()
    t0 = time.perf_counter()

    @settings(max_examples=N_JUDGE // 2, **SETTINGS)
    @given(clean_reply())
    def one(case):
        reply, obj = case
        j = run_judge(harness, reply)
        want = expected(obj)
        if want is None:
            assert j.status == "invalid" and j.call_outcomes == ["invalid", "invalid"]
        else:
            status, labels, invalid = want
            # labels whose cited evidence is absent from the utterance are rejected
            kept = [x for x in labels if x not in j.rejected_labels]
            assert set(j.rejected_labels) <= set(labels) and j.labels == kept
            assert j.status == ("unsupported_evidence" if labels and not kept and status == "ok" else status)
            assert j.invalid_labels == [x[:MAX_INVALID_LABEL_CHARS] for x in invalid]
            assert j.call_outcomes == ["ok"]
        seen[j.status] += 1

    one()
    report("judge_unit, clean answers", seen, N_JUDGE // 2, t0)


@pytest.mark.slow
def test_any_reply_gives_a_recorded_judgement(harness):
    seen: Counter = Counter()
    t0 = time.perf_counter()

    @settings(max_examples=N_JUDGE // 2, **SETTINGS)
    @given(other_reply())
    def one(case):
        reply, kind = case
        j = run_judge(harness, reply)
        if kind == "raise":
            assert j.status == "transport_error" and j.call_outcomes == ["transport_error"]
        elif kind in ("no_labels", "deep"):
            assert j.status == "invalid" and not j.votes
        elif kind == "truncated":
            assert j.status in ("invalid", "truncated", "empty") and not j.votes
        elif kind == "none":
            assert j.status == "empty"
        elif kind == "huge":
            # 'yyy...' (cut to 100 characters) is not in the utterance: the label is rejected
            assert j.status == "unsupported_evidence" and j.labels == [] and j.rejected_labels == [IDS[0]]
        seen[f"{kind}:{j.status}"] += 1

    one()
    report("judge_unit, other replies", seen, N_JUDGE // 2, t0)
