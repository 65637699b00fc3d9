"""Fuzz suite: generated model answers through every decision schema via
the LLM client, with a fast fake ``litellm.acompletion`` (no network).

At least 10,000 model answers in total (each test asserts its share; the shares sum
to more): random and adversarial text (unicode including lone surrogates, JSON
fragments, nested and huge objects, think blocks, several objects, booleans, numeric
strings, fractions), and response shapes (truncations, refusals, content filters,
empty choices, blank and missing content, tool calls, transport errors, odd response
objects). Every answer must give 0 exceptions and a recorded, UTF-8-writeable call
record with an outcome; the invariants of the client (missing vs fallback, no repair
after a refusal, truncated answers never parsed, resends of the original prompt) are
checked on every example, and oracles where the right answer is known.

Deterministic for CI (``derandomize=True``); no example database.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from types import SimpleNamespace
from typing import Any

import pytest
from _llm_fakes import decision_schemas, response, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scarce_lab.llm import CallContext, LLMClient, LLMSettings
from scarce_lab.llm.client import load_litellm
from scarce_lab.llm.decisions import validate_decision
from scarce_lab.llm.outcomes import NO_ANSWER, OUTCOMES, USABLE
from scarce_lab.llm.parsing import json_objects

SCHEMAS = decision_schemas()
FALLBACKS = {name: validate_decision(ex, schema)[0] for name, schema, ex in SCHEMAS}
MSGS = [{"role": "system", "content": "You decide."}, {"role": "user", "content": "Your move?"}]
SERVED: dict[str, int] = {}  # model answers served by the fake (first and second calls)
DECISIONS: dict[str, int] = {}  # decisions run (one generated first answer each)


def fuzz(n: int) -> settings:
    """Hypothesis settings of the suite: ``n`` examples, deterministic, no database."""
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def served(test: str) -> int:
    return SERVED.get(test, 0)


class _Fake:
    """The fastest fake: pops prepared replies; counts answers served per test."""

    def __init__(self):
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.test = ""

    async def __call__(self, **kw):
        self.requests.append(kw)
        SERVED[self.test] = SERVED.get(self.test, 0) + 1
        r = self.replies.pop(0) if self.replies else response(choices=[])
        if isinstance(r, BaseException):
            raise r
        return r


@pytest.fixture(scope="module")
def env():
    lit = load_litellm()
    fake, real = _Fake(), lit.acompletion
    lit.acompletion = fake
    loop = asyncio.new_event_loop()
    client = LLMClient(LLMSettings(cache=False, max_retries=0, backoff_base_s=0.0))
    yield SimpleNamespace(fake=fake, loop=loop, client=client)
    lit.acompletion = real
    loop.close()


def run(env, test: str, schema_i: int, replies: list[Any], max_tokens: int = 50):
    name, schema, _ = SCHEMAS[schema_i]
    DECISIONS[test] = DECISIONS.get(test, 0) + 1
    env.fake.test, env.fake.replies, env.fake.requests = test, list(replies), []
    out = env.loop.run_until_complete(env.client.adecide(
        model="openai/fuzz", messages=MSGS, schema=schema, fallback=FALLBACKS[name], seed=11,
        context=CallContext(agent="a", round=1, purpose=name), max_tokens=max_tokens,
    ))
    check(out, schema, FALLBACKS[name], env.fake.requests, max_tokens)
    return out


def check(out, schema, fallback, requests, max_tokens) -> None:
    """The client's invariants on any answer."""
    calls = out.calls
    assert 1 <= len(calls) <= 2 and len(requests) == len(calls)
    assert len({c.decision_id for c in calls}) == 1
    for c in calls:
        assert c.outcome in OUTCOMES
        json.loads(c.model_dump_json().encode("utf-8"))  # recordable as UTF-8 JSON
        if c.outcome not in USABLE:
            assert c.parsed is None and c.error
    first = calls[0]
    if out.missing:
        assert out.decision is None and not out.fallback_used and all(c.outcome in NO_ANSWER for c in calls)
        assert calls[-1].missing
    elif out.fallback_used:
        assert out.decision is fallback and not out.valid and calls[-1].fallback_used
        assert not any(c.outcome in USABLE for c in calls)
    else:
        used = calls[-1]
        assert out.valid and used.outcome in USABLE and used.parsed == out.decision.model_dump(mode="json")
        again, err = validate_decision(used.parsed, schema)
        assert err is None and again == out.decision
        assert out.repaired == (len(calls) == 2)
    if first.outcome == "refusal":
        assert len(calls) == 1
    if len(calls) == 2:
        second = requests[1]
        if first.outcome in ("truncated", "empty"):
            assert second["messages"] == MSGS
            assert second["max_tokens"] > max_tokens if first.outcome == "truncated" else second["max_tokens"] == max_tokens
        else:
            assert first.outcome in ("invalid", "ambiguous")
            assert second["messages"][:2] == MSGS and second["messages"][2]["role"] == "assistant"


# -- strategies ------------------------------------------------------------------------
def from_json_schema(node: dict, defs: dict) -> st.SearchStrategy:
    """Valid-by-construction values of the JSON-schema subset our decision schemas use.

    Raises:
        NotImplementedError: a construct this generator does not know (extend it).
    """
    if "$ref" in node:
        return from_json_schema(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "const" in node:
        return st.just(node["const"])
    if "oneOf" in node or "anyOf" in node:  # e.g. a masked solver action: one object per legal tool
        return st.one_of([from_json_schema(n, defs) for n in node.get("oneOf") or node["anyOf"]])
    t = node.get("type")
    if t == "string" and "pattern" in node:
        lo, hi = node.get("minLength", 0), node.get("maxLength", 10**6)
        return st.from_regex(node["pattern"], fullmatch=True).filter(lambda s: lo <= len(s) <= hi)
    if t == "object":
        props, req = node.get("properties", {}), set(node.get("required", []))
        return st.fixed_dictionaries(
            {k: from_json_schema(v, defs) for k, v in props.items() if k in req},
            optional={k: from_json_schema(v, defs) for k, v in props.items() if k not in req},
        )
    if t == "string":
        return st.text(min_size=node.get("minLength", 0), max_size=min(node.get("maxLength", 40), 40))
    if t == "integer":
        return st.integers(node.get("minimum", -(10**6)), node.get("maximum", 10**6))
    if t == "boolean":
        return st.booleans()
    if t == "null":
        return st.none()
    if t == "array":
        lo = node.get("minItems", 0)
        return st.lists(from_json_schema(node["items"], defs), min_size=lo, max_size=node.get("maxItems", lo + 3))
    raise NotImplementedError(f"fuzz generator: unsupported JSON schema node {node}")


VALID = [from_json_schema(s.model_json_schema(), s.model_json_schema().get("$defs", {})) for _, s, _ in SCHEMAS]
schema_index = st.integers(0, len(SCHEMAS) - 1)

# Text is drawn as bytes (one cheap draw per answer) and mapped through a table of 256
# tokens: JSON punctuation and literals, field names of our schemas, reasoning tags,
# fences, refusal phrases, lone surrogates, control and other unicode characters.
_SPECIAL = [
    "{", "}", "[", "]", '"', ":", ",", "\\", "\\u", "\\ud800", "\\udfff", "\ud800", "\udfff", "\udc80",
    "true", "false", "null", "NaN", "Infinity", "1e999", "-0", "15.0", "7.5", '"15"', "0", "3", "12", "-1",
    "99999999999999999999", "<think>", "</think>", "<reasoning>", "</reasoning>", "<thinking>", "</thinking>",
    "```json\n", "```", "\n", "\r\n", " ", "\t", '{"reasoning": ', '"extraction": ', '"announced_pool": ',
    '{"labels": [', '{"label": ', '"evidence": ', '{"tool": "submit"', '"tool": ', '"desired_position": ',
    '"desired_duration_seconds": ', '"bid_price": ', '{"entries": [', '"worker": "w0"', '"price": ',
    '"duration_seconds": ', '"note": ', '"answer": ', '"to": "w1"', '"text": ', "I'm sorry, I can't help.",
    "$12", "12 tons", "1,000", "é", "中", "😀", "\u200b", "\x00", "\x1f", "\x7f", "\u2028", "\ufeff", "\U0010ffff",
]
_TOKENS = (_SPECIAL + [chr(c) for c in range(0x20, 0x7F)] + [chr(c) for c in range(0xA1, 0x180)])[:256]
assert len(_TOKENS) == 256


def _detok(b: bytes) -> str:
    return "".join(_TOKENS[x] for x in b)


random_text = st.binary(max_size=96).map(_detok)

_KEYS = ["reasoning", "extraction", "announced_pool", "labels", "label", "evidence", "tool", "entries",
         "worker", "price", "bid_price", "note", "answer", "to", "text", "x", "", "\ud800"]


def _random_json(b: bytes) -> str:
    """Random JSON text (objects, arrays, booleans, numbers incl. huge and non-finite,
    numeric strings, surrogates), several values concatenated, from the bytes as seed."""
    rnd = random.Random(b)

    def value(depth: int) -> Any:
        k = rnd.randrange(12 if depth < 4 else 8)
        if k == 0:
            return rnd.choice([True, False, None])
        if k == 1:
            return rnd.choice([0, 3, 15, -1, 10**20, 2**63])
        if k == 2:
            return rnd.choice([15.0, 7.5, -0.0, 1e300, float("inf"), float("nan")])
        if k in (3, 4):
            return rnd.choice(["15", "$12", "12 tons", "", "w0", "submit", "\ud800", "x" * 300])
        if k in (5, 6, 7):
            return rnd.choice([0, 3, 6, 9, 12, 30, 1, 2, 60, 120])
        if k in (8, 9):
            return {rnd.choice(_KEYS): value(depth + 1) for _ in range(rnd.randrange(5))}
        return [value(depth + 1) for _ in range(rnd.randrange(4))]

    parts = [json.dumps({rnd.choice(_KEYS): value(1) for _ in range(rnd.randrange(1, 5))}) for _ in range(rnd.randrange(1, 4))]
    return rnd.choice(["\n", " ", " or ", "\nActually:\n"]).join(parts)


json_text = st.binary(min_size=1, max_size=8).map(_random_json)


@st.composite
def nested_or_huge(draw) -> str:
    kind = draw(st.sampled_from(["deep_obj", "deep_arr", "unclosed", "wide", "long_str", "big_int"]))
    n = draw(st.integers(1, 3000))
    if kind == "deep_obj":
        return '{"a":' * n + "1" + "}" * n
    if kind == "deep_arr":
        return '{"labels": ' + "[" * n + "]" * n + "}"
    if kind == "unclosed":
        return '{"reasoning": "x", "extraction": {' * min(n, 500)
    if kind == "wide":
        return json.dumps({f"k{i}": i for i in range(n)})
    if kind == "long_str":
        return json.dumps({"reasoning": "x" * n * 10, "extraction": 3, "note": "y" * n})
    return '{"reasoning": "r", "extraction": ' + "9" * (n * 2) + "}"


any_text = st.one_of(random_text, json_text, nested_or_huge())


def _int_paths(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _int_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _int_paths(v, (*path, i))]
    return [path] if isinstance(value, int) and not isinstance(value, bool) else []


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    h, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_set(v, rest, new) if k == h else v) for k, v in value.items()}
    return [(_set(v, rest, new) if i == h else v) for i, v in enumerate(value)]


_BAD_INTS = [True, False, "7", "$7", "7 tons", 7.0, 7.5, float("inf")]


@st.composite
def mutated(draw, i: int) -> str | None:
    """A valid answer with one integer written as a bool, a string or a fraction
    (never valid under the policy); ``None`` when the schema has no integer."""
    obj = draw(VALID[i])
    paths = _int_paths(obj)
    if not paths:
        return None
    return json.dumps(_set(obj, draw(st.sampled_from(paths)), draw(st.sampled_from(_BAD_INTS))))


# -- tests -------------------------------------------------------------------------------
@pytest.mark.slow
def test_fuzz_random_text(env):
    """Random text, random JSON and nested/huge objects, 5 answers per example."""
    before = served("random_text")

    @fuzz(600)
    @given(st.lists(st.tuples(schema_index, any_text, random_text), min_size=5, max_size=5))
    def inner(batch):
        for i, first, second in batch:
            run(env, "random_text", i, [response(first), response(second)])

    inner()
    print(f"fuzz random_text: {DECISIONS['random_text']} decisions, {served('random_text') - before} model answers")
    assert DECISIONS["random_text"] >= 3000 and served("random_text") - before >= 3000


@st.composite
def adversarial(draw, i: int):
    """``(text, expected, error)``: drafts in think blocks, invalid objects (mutated
    answers, random JSON that does not validate), prose, then the final valid answer
    alone on the last line (or as the last fenced block); ``expected`` is that answer,
    the only valid candidate outside reasoning blocks, or the final one."""
    schema = SCHEMAS[i][1]
    final = draw(VALID[i])
    expected, err = validate_decision(final, schema)
    parts = []
    for kind in draw(st.lists(st.sampled_from(["think", "prose", "mutated", "random_obj", "fenced_think"]), max_size=4)):
        if kind == "think":
            tag = draw(st.sampled_from(["think", "thinking", "reasoning"]))
            noise = draw(random_text).replace("<", "")
            parts.append(f"<{tag}>{json.dumps(draw(VALID[i]))} {noise}</{tag}>")
        elif kind == "prose":
            parts.append(re.sub(r"[{}<`]", "", draw(random_text)))
        elif kind == "mutated":
            m = draw(mutated(i))
            if m is not None:
                parts.append(m)
        elif kind == "random_obj":
            for obj in json_objects(draw(json_text)):
                if validate_decision(obj.obj, schema)[0] is None:
                    parts.append(json.dumps(obj.obj))
        else:
            parts.append(f"<think>```json\n{json.dumps(draw(VALID[i]))}\n```</think>")
    answer = f"```json\n{json.dumps(final)}\n```" if draw(st.booleans()) else json.dumps(final)
    return "\n".join([*parts, answer]), expected, err


@pytest.mark.slow
def test_fuzz_adversarial_text_final_answer_wins(env):
    """Think-block drafts, invalid objects and prose before the final answer."""
    before = served("adversarial")

    @fuzz(1000)
    @given(st.data())
    def inner(data):
        for _ in range(2):
            i = data.draw(schema_index)
            text, expected, err = data.draw(adversarial(i))
            out = run(env, "adversarial", i, [response(text), response(text)])
            assert expected is not None, err
            assert out.calls[0].outcome == "ok" and out.decision == expected, (text, out.violation)

    inner()
    print(f"fuzz adversarial: {DECISIONS['adversarial']} decisions, {served('adversarial') - before} model answers")
    assert DECISIONS["adversarial"] >= 2000 and served("adversarial") - before >= 2000


@pytest.mark.slow
def test_fuzz_values_and_type_mutations(env):
    """Valid answers of every schema are taken as they are; the same answers with one
    integer as a boolean, numeric string or fraction are never accepted."""
    before = served("values")

    @fuzz(650)
    @given(st.data())
    def inner(data):
        for _ in range(2):
            i = data.draw(schema_index)
            schema = SCHEMAS[i][1]
            obj = data.draw(VALID[i])
            expected, err = validate_decision(obj, schema)
            assert expected is not None, err
            out = run(env, "values", i, [response(json.dumps(obj))])
            assert out.decision == expected and out.calls[0].outcome == "ok"
            m = data.draw(mutated(i))
            if m is not None:
                out = run(env, "values", i, [response(m), response(m)])
                assert out.fallback_used and out.calls[0].outcome == "invalid" and "field" in out.violation

    inner()
    print(f"fuzz values: {DECISIONS['values']} decisions, {served('values') - before} model answers")
    assert DECISIONS["values"] >= 1300 and served("values") - before >= 1300


LIT = load_litellm()
TRANSPORT = [
    LIT.RateLimitError("rate limited", llm_provider="openai", model="x"),
    LIT.APIConnectionError(message="connection reset", llm_provider="openai", model="x"),
    LIT.AuthenticationError("bad key", llm_provider="openai", model="x"),
    LIT.ServiceUnavailableError("down", llm_provider="openai", model="x"),
    RuntimeError("provider bug"),
]
KINDS = [
    "text", "length", "refusal", "content_filter", "empty_choices", "none_content", "blank", "tool_call",
    "tool_call_dict", "tool_call_and_text", "transport", "dict", "no_choices_attr", "odd_choice",
]


def _or_empty_object(m: str | None) -> str:
    return m or "{}"


@st.composite
def reply(draw, i: int):
    """Any response shape, with a text or tool-call payload drawn from all the above."""
    payload = draw(st.one_of(random_text, json_text, VALID[i].map(json.dumps), mutated(i).map(_or_empty_object)))
    kind = draw(st.sampled_from(KINDS))
    fr = draw(st.sampled_from(["stop", None, "length", "tool_calls", "weird"])) if kind == "text" else "stop"
    if kind in ("text", "length"):
        return response(payload, finish_reason="length" if kind == "length" else fr)
    if kind == "refusal":
        return response(draw(st.sampled_from([None, payload])), refusal=draw(random_text) or "no")
    if kind == "content_filter":
        return response(payload, finish_reason="content_filter")
    if kind == "empty_choices":
        return response(choices=[])
    if kind == "none_content":
        return response(None)
    if kind == "blank":
        return response(draw(st.sampled_from(["", " ", "\n\t "])))
    if kind == "tool_call":
        return response(None, tool_calls=[tool_call(draw(random_text), payload)], finish_reason="tool_calls")
    if kind == "tool_call_dict":
        return response(None, tool_calls=[tool_call("f", draw(VALID[i]))])
    if kind == "tool_call_and_text":
        return response(payload, tool_calls=[tool_call("f", json.dumps(draw(VALID[i])))])
    if kind == "transport":
        return draw(st.sampled_from(TRANSPORT))
    if kind == "dict":
        return {"choices": [{"message": {"content": payload}, "finish_reason": fr}], "usage": {"prompt_tokens": "x"}}
    if kind == "no_choices_attr":
        return SimpleNamespace(usage=None)
    return SimpleNamespace(choices=[SimpleNamespace(message=None, finish_reason=None)])


def _expect_first(first, out) -> None:
    o = out.calls[0].outcome
    if isinstance(first, BaseException):
        assert o == "transport_error" and out.calls[0].error
    elif isinstance(first, SimpleNamespace):
        assert o == "empty"
    elif not isinstance(first, dict):
        if not first.choices:
            assert o == "empty"
        elif getattr(first.choices[0].message, "refusal", None) or first.choices[0].finish_reason == "content_filter":
            assert o == "refusal" and len(out.calls) == 1
        elif first.choices[0].finish_reason == "length":
            assert o == "truncated" and out.calls[0].parsed is None


@pytest.mark.slow
def test_fuzz_response_shapes(env):
    """Truncations, refusals, empty choices, blank content, tool calls, transport
    errors and odd response objects, 4 decisions per example."""
    before = served("shapes")

    @fuzz(750)
    @given(st.data())
    def inner(data):
        for _ in range(4):
            i = data.draw(schema_index)
            first, second = data.draw(reply(i)), data.draw(reply(i))
            _expect_first(first, run(env, "shapes", i, [first, second]))

    inner()
    print(f"fuzz shapes: {DECISIONS['shapes']} decisions, {served('shapes') - before} model answers")
    assert DECISIONS["shapes"] >= 3000 and served("shapes") - before >= 3000


@pytest.mark.slow
def test_fuzz_cache_replays_the_same_outcomes(tmp_path_factory):
    """Through the response cache: a rerun gives the same outcomes and decision."""
    lit = load_litellm()
    fake, real = _Fake(), lit.acompletion
    fake.test = "cache"
    lit.acompletion = fake

    @fuzz(150)
    @given(schema_index, st.data())
    def inner(i, data):
        # a fresh cache per example: examples whose (schema, seed) keys collide (a resend
        # uses seed + 1) must not replay each other's answers
        c = LLMClient(LLMSettings(cache_dir=tmp_path_factory.mktemp("fuzz_cache"), max_retries=0))
        first, second = data.draw(reply(i)), data.draw(reply(i))
        name, schema, _ = SCHEMAS[i]
        kw = dict(model="openai/fuzz", messages=MSGS, schema=schema, fallback=FALLBACKS[name],
                  seed=data.draw(st.integers(0, 2**31 - 1)), max_tokens=50)
        fake.replies = [first, second]
        a = c.decide(**kw)
        # only calls that got no answer are not cached: they reach the provider again
        fake.replies = [r for r, x in zip([first, second], a.calls, strict=False) if x.outcome in NO_ANSWER]
        b = c.decide(**kw)
        assert [x.outcome for x in a.calls] == [x.outcome for x in b.calls]
        assert a.decision == b.decision and a.missing == b.missing
        assert all(y.cache_hit for x, y in zip(a.calls, b.calls, strict=True) if x.outcome not in NO_ANSWER)

    try:
        inner()
    finally:
        lit.acompletion = real
