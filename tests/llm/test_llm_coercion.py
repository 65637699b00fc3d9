"""One type-coercion policy for every decision schema.

Strict JSON types: booleans are never numbers, numeric strings ("15") are rejected
everywhere, "$12" / "12 tons" are never normalised, an integer is written without a
fraction (15.0 is rejected everywhere). Parametrized over the registry of decision
schema families (plus the judge's answer schema), so a new family is covered."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from _llm_fakes import decision_schemas, import_agent_modules
from pydantic import BaseModel

from scarce_lab.llm.decisions import (
    DecisionModel,
    DecisionPart,
    decision_families,
    int_choice,
    register_decision_family,
    validate_decision,
)
from scarce_lab.llm.parsing import parse_answer

SCHEMAS = decision_schemas()
IDS = [name for name, _, _ in SCHEMAS]


def _leaves(value: Any, path: tuple = ()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def test_registry_holds_every_agent_family():
    import_agent_modules()  # whatever ran before (this file alone registers no environment's agents)
    names = set(decision_families())
    assert {
        "sovsim.extraction", "sovsim.announcement", "scarce.declaration", "scarce.reasoning",
        "scarce.private_message", "scarce.revision", "scarce.ballot", "scarce.solver_action",
        "scarce.solver_choice", "economy.note", "economy.answer",
    } <= names


def test_every_decision_model_subclass_belongs_to_a_registered_family():
    # build every sample so factory-made classes exist, then walk all subclasses
    import_agent_modules()
    roots = {fam.root for fam in decision_families().values()}
    for fam in decision_families().values():
        fam.sample()
    seen, stack = [], [DecisionModel]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            seen.append(sub)
    unregistered = [
        c.__qualname__ for c in seen
        if not issubclass(c, DecisionPart) and not any(b in roots for b in c.__mro__)
        and c.__module__.startswith("scarce_lab.")
    ]
    assert not unregistered, f"decision schemas without a registered family: {unregistered}"


@pytest.mark.parametrize(("name", "schema", "example"), SCHEMAS, ids=IDS)
def test_example_is_valid_and_round_trips(name, schema, example):
    d, err = validate_decision(example, schema)
    assert err is None, err
    text = json.dumps(example)
    res = parse_answer(text, schema)
    d2, err2 = res.decision, res.error
    assert err2 is None and d2 == d


def _integer_properties(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in (node.get("properties") or {}).items():
            if isinstance(v, dict) and v.get("type") == "integer":
                out.add(k)
        for v in node.values():
            out |= _integer_properties(v)
    elif isinstance(node, list):
        for v in node:
            out |= _integer_properties(v)
    return out


@pytest.mark.parametrize(("name", "schema", "example"), SCHEMAS, ids=IDS)
def test_examples_cover_every_integer_field(name, schema, example):
    keys = {p[-1] for p, _ in _leaves(example) if p}
    assert _integer_properties(schema.model_json_schema()) <= keys


@pytest.mark.parametrize(("name", "schema", "example"), SCHEMAS, ids=IDS)
def test_numbers_are_strict_json_numbers(name, schema, example):
    ints = [(p, v) for p, v in _leaves(example) if isinstance(v, int) and not isinstance(v, bool)]
    if not ints:
        pytest.skip(f"{name} has no integer field")
    for path, v in ints:
        for bad in (True, False, str(v), f"${v}", f"{v} tons", f"{v:,}.00", float(v), v + 0.5, None, [v]):
            obj = _replace(example, path, bad)
            res = parse_answer(json.dumps(obj), schema)
            d, err = res.decision, res.error
            assert d is None and err, f"{name}: {path} = {bad!r} was accepted as {d!r}"
            assert ".".join(map(str, path)) in err, err
        # the canonical JSON number is accepted
        res = parse_answer(json.dumps(_replace(example, path, v)), schema)
        d, err = res.decision, res.error
        assert err is None


@pytest.mark.parametrize(("name", "schema", "example"), SCHEMAS, ids=IDS)
def test_text_fields_take_only_json_strings(name, schema, example):
    # numbers and booleans never become text (a null for an optional text field is each
    # schema's own choice, e.g. the judge reads a null quote as empty)
    strs = [(p, v) for p, v in _leaves(example) if isinstance(v, str)]
    for path, _v in strs:
        for bad in (12, 1.5, True, ["x"], {"t": "x"}):
            d, err = validate_decision(_replace(example, path, bad), schema)
            assert d is None and err, f"{name}: {path} = {bad!r} was accepted"


def test_messages_name_the_policy():
    from scarce_lab.environments.sovsim.agents.schemas import (
        AnnouncementDecision,
        extraction_schema,
    )

    err = parse_answer('{"reasoning": "r", "extraction": false}', extraction_schema(30)).error
    assert "boolean is not an integer" in err
    err = parse_answer('{"reasoning": "r", "announced_pool": "500"}', AnnouncementDecision).error
    assert "not a string" in err and "'500'" in err
    err = parse_answer('{"reasoning": "r", "extraction": 15.0}', extraction_schema(30)).error
    assert "without a fraction" in err


def test_policy_also_holds_for_schemas_outside_the_base():
    class Plain(BaseModel):  # not a DecisionModel: validation is still strict
        amount: Literal[0, 1, 2, 3]
        n: int

    for bad in ('{"amount": true, "n": 1}', '{"amount": 1.0, "n": 1}', '{"amount": 1, "n": "1"}',
                '{"amount": 1, "n": false}', '{"amount": 1, "n": 1.0}'):
        res = parse_answer(bad, Plain)
        d, err = res.decision, res.error
        assert d is None and err, bad
    assert parse_answer('{"amount": 1, "n": 1}', Plain).decision == Plain(amount=1, n=1)


def test_int_choice_refuses_bool_and_float_on_direct_construction():
    class M(DecisionModel):
        x: int_choice([0, 3, 6])

    assert M(x=3).x == 3
    for bad in (False, 3.0, "3"):
        with pytest.raises(ValueError):
            M(x=bad)
    assert M.model_json_schema()["properties"]["x"] == {"enum": [0, 3, 6], "title": "X", "type": "integer"}
    with pytest.raises(ValueError, match="non-empty list of integers"):
        int_choice([True, 1])


def test_registering_a_bad_example_fails_loudly():
    class Tmp(DecisionModel):
        n: int

    with pytest.raises(ValueError, match="does not validate"):
        register_decision_family("test.tmp", Tmp, {"n": "1"})
    assert "test.tmp" not in decision_families()
