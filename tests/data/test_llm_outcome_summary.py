"""Per-model outcome summary of a dataset's llm_calls (decisions, invalid, repaired,
fallback, missing, refusals, truncated...), new records and old ones without outcomes."""

from __future__ import annotations

import json

import polars as pl
import pytest
from _llm_fakes import FakeLLM, response

from scarce_lab.analysis.llm_outcomes import COUNT_COLUMNS, llm_outcome_summary
from scarce_lab.llm import CallContext, LLMClient, LLMSettings


def _rows(out, run_id="r1"):
    rows = []
    for c in out.calls:
        d = c.model_dump(mode="json")
        d["run_id"] = run_id
        d["parsed"] = json.dumps(d["parsed"]) if d["parsed"] is not None else None
        rows.append(d)
    return rows


def _calls_frame(monkeypatch):
    from scarce_lab.environments.sovsim.agents.schemas import extraction_schema

    S = extraction_schema(30)
    fb = S(reasoning="f", extraction=0)
    lit_err = __import__("scarce_lab.llm.client", fromlist=["load_litellm"]).load_litellm().RateLimitError(
        "slow", llm_provider="openai", model="x")
    c = LLMClient(LLMSettings(cache=False, max_retries=0))
    scripts = {
        ("m1", "a"): [[response('{"reasoning": "r", "extraction": 3}')],                 # ok
                      [response("nope"), response('{"reasoning": "r", "extraction": 6}')],  # invalid, repaired
                      [response("nope"), response("still no")],                          # invalid, fallback
                      [response(None, refusal="no")]],                                    # refusal, fallback
        ("m1", "b"): [[response("{", finish_reason="length"), response("{", finish_reason="length")],  # truncated
                      [lit_err]],                                                          # missing
        ("m2", "a"): [[response(choices=[]), response('{"reasoning": "r", "extraction": 9}')],  # empty, repaired
                      [response('I could do {"reasoning": "a", "extraction": 3} or {"reasoning": "b", "extraction": 6}'),
                       response('{"reasoning": "r", "extraction": 6}')]],                   # ambiguous, repaired
    }
    rows = []
    fake = FakeLLM().install(monkeypatch)
    for (model, agent), decisions in scripts.items():
        for replies in decisions:
            fake.script(*replies)
            out = c.decide(model=model, messages=[{"role": "user", "content": "q"}], schema=S, fallback=fb, seed=1,
                           context=CallContext(agent=agent, round=1))
            rows += _rows(out)
    return pl.DataFrame(rows)


def test_counts_per_model_and_per_agent(monkeypatch):
    df = _calls_frame(monkeypatch)
    by_model = {r["model"]: r for r in llm_outcome_summary(df).to_dicts()}
    m1, m2 = by_model["m1"], by_model["m2"]
    assert {k: m1[k] for k in COUNT_COLUMNS} == {
        "decisions": 6, "calls": 9, "ok_first": 1, "invalid": 2, "ambiguous": 0, "repaired": 1, "fallback": 3,
        "missing": 1, "refusals": 1, "truncated": 1, "empty": 0, "transport_errors": 1, "context_overflows": 0,
        "tool_call": 0, "derived": 0,
    }
    assert m1["fallback_share"] == pytest.approx(3 / 6) and m1["missing_share"] == pytest.approx(1 / 6)
    assert (m2["decisions"], m2["repaired"], m2["empty"], m2["ambiguous"], m2["invalid"], m2["fallback"]) == (2, 2, 1, 1, 1, 0)
    per_agent = llm_outcome_summary(df.lazy(), by=("model", "agent"))
    assert per_agent.select("model", "agent", "decisions").rows() == [("m1", "a", 4), ("m1", "b", 2), ("m2", "a", 2)]


def test_old_records_without_outcomes_still_count():
    # as written before outcomes existed: no outcome / decision_id / missing fields
    old = pl.DataFrame({
        "run_id": ["r"] * 6,
        "call_id": list("abcdef"),
        "model": ["m"] * 6,
        "agent": ["x"] * 6,
        "attempt": [0, 0, 1, 0, 1, 0],
        "parsed": ['{"v": 1}', None, '{"v": 2}', None, None, None],
        "error": [None, "bad", None, "bad", "bad again", "RateLimitError: slow"],
        "raw_response": ["{..}", "nope", "{..}", "nope", "nope", None],
        "fallback_used": [False, False, False, False, True, True],
    })
    (row,) = llm_outcome_summary(old).to_dicts()
    assert (row["decisions"], row["calls"], row["ok_first"], row["invalid"], row["repaired"]) == (4, 6, 1, 2, 1)
    assert (row["fallback"], row["transport_errors"], row["missing"], row["derived"]) == (2, 1, 0, 6)


def test_old_dataset_files_load_and_summarise(tmp_path):
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.data.recorder import RunRecorder
    from scarce_lab.data.schema import LLMCallRecord, RunManifest

    rec = RunRecorder.create(tmp_path / "r1", RunManifest(run_id="r1", environment="sovsim", condition="cpr",
                                                          seed=0, package_version="0"))
    calls = [LLMCallRecord(call_id=f"c{i}", model="m", messages=[], messages_hash="h", attempt=a, parsed=p,
                           error=e, raw_response="x") for i, (a, p, e) in enumerate([(0, {"v": 1}, None), (0, None, "bad"), (1, {"v": 2}, None)])]
    rec.record_calls(calls)
    rec.commit_round(0)
    rec.finish()
    # strip the new fields, as an old file would lack them
    path = tmp_path / "r1" / "llm_calls.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for d in lines:
        for k in ("outcome", "finish_reason", "decision_id", "decision_source", "missing"):
            d.pop(k, None)
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    ds = load_dataset(tmp_path / "r1")
    (row,) = llm_outcome_summary(ds.llm_calls).to_dicts()
    assert (row["decisions"], row["ok_first"], row["invalid"], row["repaired"], row["derived"]) == (2, 1, 1, 1, 3)


def test_unknown_grouping_column_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown grouping column"):
        llm_outcome_summary(pl.DataFrame({"model": ["m"]}), by=("condition",))
