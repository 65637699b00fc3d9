"""Shared fixtures and the test suite's marker gates.

Fixtures: an isolated LLM cache per test, paths to the shared data, the embedded model.

Markers (declared in ``pyproject.toml``) are applied and enforced here, in one place:

- ``embedded``: a test so marked is skipped, with the reason, when llama-cpp-python or the
  model package is missing (a partial install). A test that reaches the embedded model
  (loads it, builds a grammar or counts prompt tokens with its tokenizer) or asks for the
  ``embedded_model`` fixture without the marker fails, naming the marker it lacks.
- ``notebook`` and ``slow``: every notebook run by nbmake; ``browser``: every test under
  ``tests/browser``; ``docker``: every case parametrized with the ``docker`` backend.

The fast lane (docs/testing.md) deselects the slow and the optional-dependency tests:
``pytest -m "not slow and not embedded and not server and not docker and not browser"``
(``scripts/test-fast``).
"""

from __future__ import annotations

import os
import sys
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


@pytest.fixture(autouse=True)
def _fresh_colour_book():
    """The notebook colour book is process state (one meaning per colour in a kernel): a
    test that starts it (a chart drawn as in a kernel) must not use up the colours of the
    tests after it."""
    yield
    figures = sys.modules.get("scarce_lab.analysis.figures")
    if figures is not None and figures.colour_book().active:
        figures.stop_colour_book()


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the repository; skips when it is absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def embedded_missing() -> str:
    """Why the embedded model cannot run here ('' when it can): names what is missing."""
    import importlib.util

    from scarce_lab.llm.embedded import EmbeddedModelUnavailable, model_path

    try:
        model_path()
    except EmbeddedModelUnavailable as exc:
        return f"embedded model not installed: {exc}"
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (llama_cpp): run scripts/install.sh"
    return ""


def embedded_available() -> bool:
    return not embedded_missing()


#: The functions through which every in-process use of the embedded model passes:
#: loading it, building a grammar (llama_cpp), the chat formatter that counts prompt
#: tokens. Cached ones are listed too, since a cache hit does not reach ``load_model``.
EMBEDDED_GATES = (
    ("scarce_lab.llm.embedded", "load_model"),
    ("scarce_lab.llm.embedded", "_grammar_for"),
    ("scarce_lab.llm.context", "_embedded_formatter"),
)
NEEDS_EMBEDDED = ("embedded", "server")


def pytest_collection_modifyitems(config, items):
    """Apply the markers a test gets from where it lives or what it is parametrized with."""
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            item.add_marker(pytest.mark.slow)
        if path.is_relative_to(REPO) and path.relative_to(REPO).parts[:2] == ("tests", "browser"):
            item.add_marker(pytest.mark.browser)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(params.get(k) == "docker" for k in ("backend", "kind", "sandbox")):
            item.add_marker(pytest.mark.docker)


def pytest_runtest_setup(item):
    """Skip an ``embedded`` test on a partial install, with what is missing."""
    if item.get_closest_marker("embedded") is not None:
        why = embedded_missing()
        if why:
            pytest.skip(why)


@pytest.fixture(autouse=True)
def _embedded_only_where_marked(request, monkeypatch):
    """A test without the ``embedded`` (or ``server``) marker must not use the embedded model.

    On a full install such a test passes, and on a partial install it fails instead of
    skipping; this makes it fail everywhere, naming the marker it lacks.
    """
    node = request.node
    if any(node.get_closest_marker(m) is not None for m in NEEDS_EMBEDDED):
        yield
        return
    if "embedded_model" in request.fixturenames:
        pytest.fail(f"{node.nodeid} uses the embedded_model fixture without @pytest.mark.embedded",
                    pytrace=False)
    import importlib

    reached: list[str] = []

    def gate(where: str):
        def refused(*args, **kwargs):
            from scarce_lab.llm.embedded import EmbeddedModelUnavailable

            reached.append(where)
            raise EmbeddedModelUnavailable(f"{where} reached by a test without @pytest.mark.embedded")

        return refused

    for module, name in EMBEDDED_GATES:  # a renamed one fails tests/test_markers.py, not every test
        monkeypatch.setattr(importlib.import_module(module), name, gate(f"{module}.{name}"), raising=False)
    yield
    if reached:
        pytest.fail(f"{node.nodeid} uses the embedded model ({', '.join(sorted(set(reached)))}) "
                    "without @pytest.mark.embedded: mark it, so that a partial install skips it",
                    pytrace=False)


@pytest.fixture
def embedded_model() -> str:
    """The embedded model name; skips with a reason when llama-cpp or the model is absent."""
    if not embedded_available():
        pytest.skip("embedded model not installed (run scripts/install.sh)")
    return "embedded/smollm2"


os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# checkpoints are sealed with a per-user key (scarce_lab.data.sealed): the suite, and the
# processes it starts, use one key of its own instead of the user's
os.environ.setdefault("SCARCE_LAB_CHECKPOINT_KEY", os.path.join(
    __import__("tempfile").mkdtemp(prefix="scarce-lab-key-"), "checkpoint.key"))
