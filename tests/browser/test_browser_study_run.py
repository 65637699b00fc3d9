"""Notebook 03 runs its study in JupyterLab: ``RUN = True`` with a model at a local
OpenAI-compatible server (tests/fake_server.py), a tiny study through the notebook's own
parameters (one seed per arm; ``OVERRIDES`` as ``-S`` would give them), headless Chromium.

The test runs every cell, interrupts the kernel once the first run is complete, runs every
cell again (the study resumes: the complete run is not played again) and once more (nothing
is missing: the server gets no request), and reads in the page what the notebook shows:
the data note with one run per arm of the model, and the replication report. Needs the
study engine (``scarce_lab.studies.run``): skipped, saying so, without it.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.browser.test_browser_jupyterlab import ERROR_TEXT, _copy_notebook, jupyter_lab  # noqa: F401, F811 - a fixture

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "03_memory_horizon.ipynb"
MODEL = "openai/gpt-4o-mini"  # a name the cost table prices; served by the fake server
ARMS = ("none", "subrun", "cross")


@pytest.fixture
def fake_openai(monkeypatch):
    """A fake OpenAI-compatible server; its URL also in the environment JupyterLab's kernel
    inherits (for any call the study makes outside the runs' config, e.g. its judges)."""
    pytest.importorskip("scarce_lab.studies.run", reason="the study engine (scarce_lab.studies.run) is not installed")
    from tests.fake_server import FakeOpenAIServer

    with FakeOpenAIServer(latency_s=0.01) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        yield server


def _requests(server) -> int:
    return int(server.stats()["requests"])


def _prompts(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent)")


def _numbers(page) -> list[int | None]:
    """Each code cell's execution number as its prompt shows it (``None``: not run, or queued)."""
    out = []
    for p in _prompts(page):
        m = re.search(r"\[(\d+)\]", p)
        out.append(int(m.group(1)) if m else None)
    return out


def _run_all(page, *, until_done: bool = True) -> None:
    """Run > Run All Cells; with ``until_done``, wait until no cell is queued or running
    and assert that every code cell ran again (else the outputs' error text is shown)."""
    before = max([n for n in _numbers(page) if n is not None] or [0])
    page.click("li.lm-MenuBar-item:has-text('Run')")
    page.click("li.lm-Menu-item:has-text('Run All Cells')")
    if not until_done:
        return
    page.wait_for_function(
        """(b) => {
            const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
            const n = p.map(t => { const m = t.match(/\\[(\\d+)\\]/); return m ? +m[1] : 0; });
            return !p.some(t => t.includes('*')) && Math.max(...n) > b;
        }""", arg=before, timeout=480_000, polling=500)
    if not all(n is not None and n > before for n in _numbers(page)):
        text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
        pytest.fail(f"Run All stopped before the last cell; the outputs end: {text[-3000:]}")


def _complete(run_dir: Path) -> dict[str, float]:
    """Complete runs under ``run_dir``: run id -> its manifest's modification time."""
    out = {}
    for m in run_dir.rglob("manifest.json"):
        if json.loads(m.read_text()).get("status") == "complete":
            out[m.parent.name] = m.stat().st_mtime
    return out


@pytest.mark.slow
def test_notebook_03_runs_resumes_and_reports_its_study_in_jupyterlab(fake_openai, jupyter_lab, page, tmp_path):  # noqa: F811
    base, token, root = jupyter_lab
    run_dir = tmp_path / "study"
    overrides = {"llm.api_base": fake_openai.url, "workers": 2, "subruns": 1, "deadline_min": 5,
                 "max_solver_steps": 3}
    nb = _copy_notebook(NOTEBOOK, root, tmp_path / "figures", RUN=True, MODEL=MODEL, RUN_DIR=str(run_dir),
                        SEEDS=[0], OVERRIDES=overrides)
    page.goto(f"{base}/lab/tree/{nb.name}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)

    # 1. run, and interrupt the kernel as soon as one run of the study is complete
    _run_all(page, until_done=False)
    deadline = time.monotonic() + 300
    while not _complete(run_dir):
        assert time.monotonic() < deadline, "no run of the study completed within 300 s"
        time.sleep(0.5)
    # interrupt while the next run waits on the model (a request has gone out since), as a
    # user would: an interrupt inside a first import is Python's hazard, not the study's
    sent, wait_until = _requests(fake_openai), time.monotonic() + 30
    while _requests(fake_openai) == sent and time.monotonic() < wait_until:
        time.sleep(0.05)
    page.click("li.lm-MenuBar-item:has-text('Kernel')")
    page.click("li.lm-Menu-item:has-text('Interrupt Kernel')")
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)
    first = _complete(run_dir)
    assert (run_dir / "study.json").is_file(), "the study's choices were not written on the first run"

    # 2. run again: the study resumes; a run complete before the interrupt is not played again
    _run_all(page)
    done = _complete(run_dir)
    assert len(done) == len(ARMS), f"expected one complete run per arm, found {sorted(done)}"
    assert all(done[r] == t for r, t in first.items()), "a run completed before the interrupt was played again"
    calls = _requests(fake_openai)
    assert calls > 0

    # 3. once more: nothing is missing, so no model call at all
    _run_all(page)
    assert _requests(fake_openai) == calls, "a re-run with nothing missing called the model"
    assert _complete(run_dir) == done

    text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert MODEL in text, "the data note does not name the model that ran"
    assert "runs per arm: none 1, subrun 1, cross 1" in text, text[:3000]
    report = page.locator(".jp-CodeCell").last.locator(".jp-OutputArea-output").all_inner_texts()
    assert report and "Table 2" in "\n".join(report), f"no replication report citing the paper's Table 2: {report}"
    errors = [e for e in ERROR_TEXT if e in text]
    assert not errors, f"error text in outputs: {errors}"
    assert not page.blocked, f"the page asked for the network: {page.blocked[:5]}"
