"""A cross-play grid reuses cached calls where prefixes repeat: a seat that plays the
same model with the same seed sends the same first prompts in every composition
(decision seeds depend on the run seed, round and agent, not on the composition; the
response cache keys on model, messages and parameters), so the second composition's
first-round calls are cache hits and never reach the server."""

from __future__ import annotations

import json

import pytest

import scarce_lab as sl
from tests.fake_server import FakeOpenAIServer


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


def test_a_request_answered_while_another_waited_for_a_slot_is_a_cache_hit(tmp_path):
    """Games of a sweep ask at once: with one slot, the second of two identical requests
    finds the first's answer when its turn comes, and is not sent."""
    import asyncio

    from scarce_lab.llm import LLMClient, LLMSettings

    msgs = [{"role": "user", "content": "same prefix"}]
    with FakeOpenAIServer(latency_s=0.2) as srv:
        client = LLMClient(LLMSettings(api_base=srv.url, cache_dir=tmp_path, max_concurrency=1, max_retries=0))

        async def both():
            return await asyncio.gather(client.acomplete("openai/fake", msgs, seed=5),
                                        client.acomplete("openai/fake", msgs, seed=5),
                                        client.acomplete("openai/fake", msgs, seed=6))

        a, b, c = asyncio.run(both())
        sent = srv.stats()["requests"]
    assert sent == 2  # seed 5 once, seed 6 once
    assert sorted([a.record.cache_hit, b.record.cache_hit]) == [False, True]
    assert a.text == b.text and not c.record.cache_hit
    hit = a if a.record.cache_hit else b
    assert hit.record.cost_usd == 0.0 and hit.record.outcome == "ok"
