"""Shared fixtures: an isolated LLM cache per test, paths to the shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _isolated_llm_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own response cache, so cached answers never leak between tests."""
    monkeypatch.setenv("SCARCE_LAB_CACHE_DIR", str(tmp_path_factory.mktemp("llm_cache")))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture(autouse=True)
def _fresh_shared_rate_limiter():
    """A 429 (real or mocked) in one test must not pause or throttle the next one."""
    yield
    from scarce_lab.llm.ratelimit import shared_limiter

    shared_limiter().reset()


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the repository; skips when it is absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def embedded_available() -> bool:
    from scarce_lab.llm.embedded import available

    return available()


@pytest.fixture
def embedded_model() -> str:
    """The embedded model name; skips with a reason when llama-cpp or the model is absent."""
    if not embedded_available():
        pytest.skip("embedded model not installed (run scripts/install.sh)")
    return "embedded/smollm2"


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
