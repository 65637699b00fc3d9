"""Which JSON object in a model's text is the answer.

Reasoning blocks are stripped; among the top-level objects the valid ones count; one
distinct valid candidate is the answer; several different ones are ambiguous unless
the last is final (alone at the end, starting a line)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scarce_lab.data.limits import LIMITS
from scarce_lab.environments.sovsim.agents.schemas import extraction_schema
from scarce_lab.llm.parsing import (
    json_objects,
    parse_answer,
    parse_reply,
    strip_reasoning,
)

S = extraction_schema(30)


def obj(reasoning: str, extraction) -> str:
    return json.dumps({"reasoning": reasoning, "extraction": extraction})


def value(text: str):
    res = parse_answer(text, S)
    d, err = res.decision, res.error
    return d.extraction if d is not None else err


# -- reasoning blocks -------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        f"<think>draft {obj('draft', 30)}</think>{obj('final', 12)}",
        f"<think>maybe {{\"x\": 1}}</think>{obj('final', 12)}",
        f"<THINK>{obj('draft', 30)}</THINK>\n{obj('final', 12)}",
        f"<thinking>{obj('d', 30)}</thinking> {obj('final', 12)}",
        f'<reasoning effort="high">{obj("d", 30)}</reasoning>{obj("final", 12)}',
        f"<reflection>{obj('d', 3)}</reflection>{obj('final', 12)}",
        # the opening tag was in the chat template: everything before the orphan close
        f"I consider {obj('draft', 30)} and more.</think>\n{obj('final', 12)}",
        # nested blocks
        f"<think>a<think>{obj('x', 0)}</think>{obj('y', 3)}</think>{obj('final', 12)}",
    ],
)
def test_reasoning_blocks_never_hold_the_answer(text):
    assert value(text) == 12


def test_unclosed_leading_think_block_is_all_reasoning():
    res = parse_answer(f"<think>I will take {obj('draft', 30)} ... and then", S)
    d, err = res.decision, res.error
    assert d is None and "no JSON object outside reasoning blocks" in err
    assert strip_reasoning("  <think> unfinished {\"a\": 1}") == ""


def test_judge_answer_in_think_block_is_not_taken():
    from scarce_lab.judge.answer import answer_schema
    from scarce_lab.judge.taxonomy import load_taxonomy

    tax = load_taxonomy("scarce")
    lab = tax.ids[0]
    answer = json.dumps({"labels": [{"label": lab, "evidence": "x"}]})
    t = '<think>shape {"labels": []}</think>' + answer
    res = parse_answer(t, answer_schema(tax))
    d, err = res.decision, res.error
    assert err is None and [it.label for it in d.labels] == [lab]


# -- candidates --------------------------------------------------------------------------
def test_final_answer_after_a_draft_wins():
    assert value(f"{obj('a', 12)}\nToo greedy.\n{obj('b', 9)}") == 9


def test_two_inline_candidates_are_ambiguous():
    res = parse_answer(f"I could do {obj('a', 6)} or {obj('b', 9)}", S)
    assert res.decision is None and res.status == "ambiguous" and res.error.startswith("ambiguous")
    assert res.n_objects == 2 and res.n_valid == 2


def test_quoted_verdict_then_inline_verdict_is_ambiguous():
    from scarce_lab.judge.answer import answer_schema
    from scarce_lab.judge.taxonomy import load_taxonomy

    tax = load_taxonomy("scarce")
    a, b = tax.ids[0], tax.ids[1]
    text = (
        f'The format is like {{"labels": [{{"label": "{a}", "evidence": "q"}}]}} as an example. '
        f'Verdict: {{"labels": [{{"label": "{b}", "evidence": "r"}}]}}'
    )
    res = parse_answer(text, answer_schema(tax))
    assert res.status == "ambiguous" and res.decision is None


def test_equal_candidates_are_one_answer():
    assert value(f"I pick {obj('a', 6)}, i.e. {obj('a', 6)} again") == 6


def test_invalid_object_never_hides_a_later_valid_one():
    # an out-of-range draft, a schema-like example and a non-answer object come first
    text = f'{obj("greedy", 31)} no wait {{"type": "object"}} then {obj("ok", 15)} done'
    assert value(text) == 15
    # a broken (undecodable) draft does not hide the answer either
    assert value('{"reasoning": "a", "extraction": \n' + obj("b", 3)) == 3


def test_last_fenced_block_is_final():
    text = f"Draft:\n```json\n{obj('a', 6)}\n```\nFinal:\n```json\n{obj('b', 21)}\n```\n"
    assert value(text) == 21
    assert value(f"Draft: {obj('a', 6)}\nFinal: ```json {obj('b', 21)}```") == 21


def test_trailing_prose_makes_a_last_candidate_not_final():
    res = parse_answer(f"{obj('a', 6)}\n{obj('b', 9)}\nHope this helps!", S)
    assert res.status == "ambiguous"


def test_nested_objects_are_not_candidates():
    objs = json_objects('x {"a": {"b": {"c": 1}}, "d": 2} y {"e": 3}')
    assert [o.obj for o in objs] == [{"a": {"b": {"c": 1}}, "d": 2}, {"e": 3}]


def test_no_json_and_empty():
    assert parse_answer("I take ten.", S).status == "no_json"
    assert parse_answer("", S).status == "no_json"
    assert parse_answer(None, S).status == "no_json"
    assert parse_answer("   \n", S).error.startswith("empty answer")


def test_too_deep_object_is_skipped_whole_and_later_answer_found():
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    res = parse_answer(deep, S)
    assert res.status == "no_json" and "no JSON object" in res.error
    assert value(deep + "\n" + obj("after", 9)) == 9


def test_huge_integer_and_surrogates_do_not_crash():
    res = parse_answer('{"reasoning": "r", "extraction": ' + "9" * 5000 + "}", S)
    assert res.decision is None
    res = parse_answer('{"reasoning": "a\\ud800b", "extraction": 3}', S)
    d, err = res.decision, res.error
    assert err is None and d.reasoning == "a\ufffdb"
    d.model_dump_json().encode("utf-8")


def test_json_objects_outside_reasoning():
    assert [c.obj for c in json_objects(strip_reasoning('<think>{"x": 0}</think> text ```json\n{"a": 1}\n``` more'))] \
        == [{"a": 1}]
    assert json_objects(strip_reasoning("nothing here")) == []


def test_reply_tool_call_and_text_disagreeing_is_ambiguous():
    tc = [{"name": "f", "arguments": obj("t", 3)}]
    assert parse_reply(None, tc, S).source == "tool_call"
    assert parse_reply(obj("t", 3), tc, S).source == "text"  # the same decision
    assert parse_reply(obj("x", 6), tc, S).status == "ambiguous"
    bad = parse_reply(None, [{"name": "f", "arguments": "{not json"}], S)
    assert bad.decision is None and "tool call 'f'" in bad.error


# -- properties --------------------------------------------------------------------------
decisions = st.builds(
    lambda r, e: (r, e),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<>"), max_size=40),
    st.sampled_from(range(0, 31, 3)),
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(decisions, decisions, st.sampled_from(["think", "thinking", "reasoning"]), st.sampled_from(["\n", "\n\n", "\nActually:\n"]))
def test_property_final_answer_wins_over_drafts(draft, final, tag, sep):
    d, f = obj(*draft), obj(*final)
    assert value(f"<{tag}>{d}</{tag}>{f}") == final[1]
    assert value(f"{d}{sep}{f}") == final[1]
    res = parse_answer(f"either {d} or {f}", S)
    if draft == final:
        assert res.decision is not None and res.decision.extraction == final[1]
    else:
        assert res.status == "ambiguous"


def test_parsing_time_is_linear_on_adversarial_nesting():
    """Deeply nested, never-closed or undecodable braces do not make parsing quadratic
    (found by the judge's fuzz suite: 24 KB took 3.7 s). Counted in decode calls, not
    seconds: the work must not grow with the square of the text."""
    import scarce_lab.llm.parsing as P

    calls = {"n": 0}
    real = P._DECODER.raw_decode

    class Counting:
        def raw_decode(self, text, i):
            calls["n"] += 1
            return real(text, i)

    P_decoder, P._DECODER = P._DECODER, Counting()
    try:
        for n in (500, 4000):
            for text in ('{"labels": [' * n, "{" * n + '"x' + "}" * n):
                calls["n"] = 0
                P.json_objects(text)
                assert calls["n"] <= P.MAX_DECODE_ATTEMPTS + 1, (n, calls["n"])
        text = "draft " + '{"a": 1} ' * (LIMITS.parse_candidates - 1) + '\n{"a": 2}'
        assert P.json_objects(text)[-1].obj == {"a": 2}  # successes do not count against the bound
        # past the bound on candidates the parse says so (never a silent cut)
        more = text.replace("draft", '{"reasoning": "r", "extraction": 3} {"a": 3}')
        res = P.parse_answer(more, S)
        assert res.status == "invalid" and "LIMITS.parse_candidates" in res.error
    finally:
        P._DECODER = P_decoder


# -- a tag inside a JSON string is text; a key given twice is no answer -------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"reasoning": "no </think> needed, I take 9", "extraction": 9}',
        '{"reasoning": "I skip <think> blocks", "extraction": 9}',
        '<think>draft {"reasoning": "</think>", "extraction": 30}</think>\n{"reasoning": "", "extraction": 9}',
        '{"reasoning": "<reasoning>x</reasoning> then </thinking>", "extraction": 9}',
    ],
)
def test_reasoning_tags_inside_json_strings_are_not_delimiters(text):
    assert value(text) == 9


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"reasoning": "take 3, no wait", "extraction": 3, "extraction": 30}', "extraction"),
        ('{"reasoning": "a", "reasoning": "b", "extraction": 3}', "reasoning"),
        ('{"reasoning": "a", "extraction": 3, "meta": {"x": 1, "x": 2}}', "meta.x"),
    ],
)
def test_a_key_given_twice_with_different_values_is_ambiguous(text, key):
    res = parse_answer(text, S)
    assert res.decision is None and res.status == "ambiguous"
    assert repr(key) in res.error


def test_a_key_repeated_with_one_value_is_harmless_and_a_later_answer_still_counts():
    assert value('{"reasoning": "", "extraction": 9, "extraction": 9}') == 9
    assert value('{"reasoning": "", "extraction": 3, "extraction": 30}\n{"reasoning": "", "extraction": 6}') == 6


@pytest.mark.slow
def test_a_two_megabyte_adversarial_answer_parses_in_linear_time():
    """Unclosed braces and quotes, unclosed and lone reasoning tags, nested undecodable
    objects, many small objects: 2 MB takes about 10x the time of 200 KB (a quadratic
    parser took 100x; 900 KB once took 10 s in the event loop). A ratio measured in the
    same run, never an absolute time."""
    import time

    shapes = {
        "braces": lambda n: "{" * n + "}",  # a closing brace at the end: the scan must run to it
        "quotes": lambda n: '{"k": "' * (n // 7) + '"}',
        "tags": lambda n: "x <think> {" * (n // 11),
        "tags_and_close": lambda n: "x <think> {" * (n // 11) + "}",
        "lone_closes": lambda n: "</reasoning>{}" * (n // 14),
        "nested": lambda n: '{"x":' * (n // 10) + "1" + "}" * (n // 10 - 1) + ",}",
        "objects": lambda n: '{"reasoning": "r", "extraction": 1} ' * (n // 37),
    }

    def best(text):  # CPU time, best of three: other processes on the machine do not count
        out = []
        for _ in range(3):
            t0 = time.process_time()
            parse_answer(text, S)
            out.append(time.process_time() - t0)
        return min(out)

    for name, make in shapes.items():
        small, large = best(make(200_000)), best(make(2_000_000))
        assert large / max(small, 1e-3) < 15, (name, small, large)
