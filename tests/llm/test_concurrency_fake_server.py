"""Sweeps against a local OpenAI-compatible server: calls go through litellm's real
HTTP path, concurrency is bounded by the client, and games overlap in time."""

from __future__ import annotations

import polars as pl
import pytest

from scarce_lab.data.loaders import load_dataset
from scarce_lab.environments.sovsim.runner.play import plan_sweep, run_sweep
from scarce_lab.llm import LLMClient, LLMSettings
from tests.fake_server import FakeOpenAIServer, instance_for_schema


def test_instance_for_schema_is_valid():
    from typing import Literal

    from pydantic import BaseModel, Field

    class Inner(BaseModel):
        label: Literal["a", "b"]

    class D(BaseModel):
        reasoning: str = Field(max_length=50)
        extraction: Literal[0, 3, 6]
        items: list[Inner]
        flag: bool

    for key in range(5):
        D.model_validate(instance_for_schema(D.model_json_schema(), key=key))


@pytest.mark.slow
def test_sweep_runs_games_concurrently_with_bounded_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-local-server")
    specs = plan_sweep(["all"], ["openai/fake"], 2, seed=3, rounds=2)  # 8 short games
    with FakeOpenAIServer(latency_s=0.1) as server:
        client = LLMClient(LLMSettings(api_base=server.url, cache=False, max_concurrency=6, max_retries=0))
        results = run_sweep(specs, tmp_path, client=client, concurrency=6, progress=False)
        stats = server.stats()
    assert [r.status for r in results] == ["complete"] * 8
    calls = load_dataset(tmp_path).llm_calls.collect()
    assert calls.height == stats["requests"]
    assert calls["error"].is_null().all() and (~calls["fallback_used"]).all()
    # never more than the client's bound in flight; more than one game's worth at once
    # (a round of one game asks at most 4 agents together)
    assert stats["peak_in_flight"] == 6
    assert calls.select(pl.col("run_id").n_unique()).item() == 8
