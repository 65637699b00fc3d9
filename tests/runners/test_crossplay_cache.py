"""A cross-play grid reuses cached calls where prefixes repeat: a seat that plays the
same model with the same seed sends the same first prompts in every composition
(decision seeds depend on the run seed, round and agent, not on the composition; the
response cache keys on model, messages and parameters), so the second composition's
first-round calls are cache hits and never reach the server."""

from __future__ import annotations

import json

import pytest

import scarce_lab as sl
from scarce_lab.llm.fake_server import FakeOpenAIServer


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _calls(run_dir):
    return [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines() if x.strip()]


def test_second_composition_hits_the_cache_for_the_shared_first_round(tmp_path):
    with FakeOpenAIServer(latency_s=0.0) as srv:
        base = sl.config.SovSimConfig(condition="kcpr", model="openai/fake", game={"rounds": 2},
                                      llm={"api_base": srv.url, "cache_dir": str(tmp_path / "cache")})
        plan = sl.crossplay(base, ["scripted/greedy", "scripted/sustainable"], background="openai/fake",
                            focal_seats="king")
        first, second = (sl.run(cfg, out=tmp_path / "runs")[0] for cfg in plan.configs)
        sent = srv.stats()["requests"]
    a, b = _calls(first), _calls(second)
    assert not any(c["cache_hit"] for c in a)  # a fresh cache
    hits = [c for c in b if c["cache_hit"]]
    # round 1: the three peasants see the same game before the king acts -> the same requests
    assert sorted((c["agent"], c["round"]) for c in hits) == [("a0", 1), ("a1", 1), ("a2", 1)]
    for h in hits:
        (twin,) = [c for c in a if (c["agent"], c["round"]) == (h["agent"], h["round"])]
        assert (twin["messages_hash"], twin["params"], twin["raw_response"]) == (
            h["messages_hash"], h["params"], h["raw_response"])
    assert sent == len(a) + len(b) - len(hits)  # hits never reached the server
