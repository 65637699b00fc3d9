"""A person plays a SovSim seat through the JupyterLab form (notebook 11, ``PLAY =
"widget"``), in a real JupyterLab in headless Chromium, no network.

The test runs every cell, and for each of the seat's decisions reads the form the
desk draws (the seat and round, the prompt shown as text, the legal extractions) and
answers it by typing a reasoning and picking an extraction, as a person would; one
answer is first sent incomplete (the form says what is missing and sends nothing), and
the last decision is left to run out of time (the form says that the default was
taken). The game completes; the notebook shows the record; the run's events hold the
typed reasoning and the picked extraction of each answered round (outcome ``human``,
the seconds taken) and the fallback of the timed-out one (``human_timeout``). A
second test kills the kernel while a question waits (Kernel > Restart), runs the
notebook again and finishes the game through the form: the answered rounds are not
asked again. A third turns JupyterLab's comms over subshells off: a plain ``sl.run``
cell then fails loudly naming the fix (no question silently times out into its
default), and the awaited form the error names plays.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest

from tests.browser.test_browser_jupyterlab import ERROR_TEXT, _copy_notebook, jupyter_lab  # noqa: F401 - a fixture

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "11_human_seats.ipynb"
DESK = ".sl-human-desk"
#: What the person types: per round, a reasoning (hostile on purpose: it must stay text) and an extraction.
ANSWERS = {1: ("<b>six</b> & $x^2$ for me", "6"), 2: ("twelve: the pool can take it", "12")}


def _open(page, base: str, token: str, nb: Path) -> None:
    page.goto(f"{base}/lab/tree/{nb.name}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)


def _run_all(page) -> None:
    page.click("li.lm-MenuBar-item:has-text('Run')")
    page.click("li.lm-Menu-item:has-text('Run All Cells')")


def _question(page, rnd: int, timeout_s: float = 90) -> None:
    """Wait until the desk asks round ``rnd`` (its heading) with Submit enabled."""
    page.wait_for_function(
        """(r) => { const d = [...document.querySelectorAll('.sl-human-desk')].pop();
                    if (!d) return false;
                    const h = d.querySelector('h4'), b = [...d.querySelectorAll('button')].find(x => x.textContent.includes('Submit'));
                    return h && h.textContent.includes('round ' + r) && b && !b.disabled; }""",
        arg=rnd, timeout=timeout_s * 1000, polling=200)


def _desk(page):
    return page.locator(DESK).last


LOGGED = "() => [...document.querySelectorAll('.sl-human-desk')].pop().querySelectorAll('.sl-human-log tr').length - 1"


def _answer(page, reasoning: str, extraction: str) -> None:
    """Type ``reasoning``, pick ``extraction``, Submit; wait until the desk logged the answer."""
    desk = _desk(page)
    before = max(0, page.evaluate(LOGGED))
    desk.locator(".sl-field-reasoning textarea").fill(reasoning)
    desk.locator(".sl-field-extraction select").select_option(extraction)
    desk.locator("button:has-text('Submit')").click()
    page.wait_for_function(f"() => ({LOGGED})() > {before}", timeout=30_000, polling=100)


def _done(page, n_code: int, timeout_s: float = 180) -> None:
    page.wait_for_function(
        """(n) => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
                    return p.length === n && p.every(t => /\\[\\d+\\]/.test(t)); }""",
        arg=n_code, timeout=timeout_s * 1000, polling=500)


def _person_events(run_dir: Path, seat: str) -> list[dict]:
    [events] = list(run_dir.rglob("events.jsonl"))
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    return [e for e in rows if e["kind"] == "extraction" and e["agent"] == seat]


def _notebook(root: Path, tmp_path: Path, *, rounds: int, limit_s: float) -> tuple[Path, Path, int]:
    run_dir = tmp_path / "game"
    nb = _copy_notebook(NOTEBOOK, root, tmp_path / "figures", PLAY="widget", SEAT="a1", PERSON="tester",
                        ROUNDS=rounds, TIME_LIMIT_S=limit_s, RUN_DIR=str(run_dir))
    n_code = sum(1 for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    return nb, run_dir, n_code


@pytest.mark.slow
def test_a_person_plays_a_sovsim_seat_through_the_form_in_jupyterlab(jupyter_lab, page, tmp_path):  # noqa: F811
    base, token, root = jupyter_lab
    nb, run_dir, n_code = _notebook(root, tmp_path, rounds=3, limit_s=25)
    _open(page, base, token, nb)
    t0 = time.monotonic()
    _run_all(page)

    _question(page, 1)
    desk = _desk(page)
    # the observation the seat's model would get, as text: a system part and a user part
    roles = desk.locator(".sl-human-message").evaluate_all("els => els.map(e => e.dataset.role)")
    assert roles == ["system", "user"], roles
    prompt = desk.locator(".sl-human-message").all_inner_texts()
    assert "You are peasant B" in prompt[0] and "Round 1 of 3" in prompt[1], prompt
    options = desk.locator(".sl-field-extraction select option").all_inner_texts()
    assert [o for o in options if o.strip()] == [str(v) for v in range(0, 31, 3)], options
    assert "if you do not answer in time" in desk.inner_text() and "(the documented fallback)" in desk.inner_text()
    # an answer without an extraction is not sent: the form says why
    desk.locator(".sl-field-reasoning textarea").fill("not yet")
    desk.locator("button:has-text('Submit')").click()
    page.wait_for_function("() => [...document.querySelectorAll('.sl-human-desk')].pop().textContent"
                           ".includes('Not sent: extraction: choose one')", timeout=30_000, polling=100)
    time.sleep(1.5)  # the countdown ticks on; the reason stays until the next Submit
    assert "Not sent: extraction: choose one" in desk.inner_text()
    asked = {}
    for rnd, (reasoning, extraction) in ANSWERS.items():
        if rnd > 1:
            _question(page, rnd)
        asked[rnd] = time.monotonic()
        _answer(page, reasoning, extraction)
    # round 3: nobody answers; the form says the default was taken
    _question(page, 3)
    page.wait_for_function("() => [...document.querySelectorAll('.sl-human-desk')].pop().textContent"
                           ".includes('Time is up: the default was taken')", timeout=60_000, polling=250)
    _done(page, n_code)
    t_game = time.monotonic() - t0
    # the game is over: the last form says so (never "waiting for the game" after the game)
    page.wait_for_function("() => [...document.querySelectorAll('.sl-human-desk')].pop().textContent"
                           ".includes('The game is over')", timeout=30_000, polling=250)
    assert "waiting for the game" not in _desk(page).inner_text()

    # what the person typed stayed text (no <b> element, no MathJax), in the log of decisions
    log = _desk(page).locator(".sl-human-log")
    assert "<b>six</b> & $x^2$ for me" in log.inner_text()
    assert _desk(page).locator(".sl-human-log b, .sl-human-message b, mjx-container").count() == 0
    # the record: the typed values, outcome human with the seconds taken; the timeout's fallback
    events = _person_events(run_dir, "a1")
    assert [e["round"] for e in events] == [1, 2, 3]
    for e in events[:2]:
        p = e["payload"]
        assert (p["reasoning"], str(p["extraction"])) == ANSWERS[e["round"]], p
        assert p["outcome"] == "human" and p["call_ids"] == [] and 0 < p["latency_s"] < 25
    last = events[2]["payload"]
    assert last["outcome"] == "human_timeout" and last["fallback_used"] and last["latency_s"] >= 25
    manifest = json.loads(next(run_dir.rglob("manifest.json")).read_text())
    assert manifest["status"] == "complete" and manifest["notes"]["humans"] == {
        "a1": {"person": "tester", "time_limit_s": 25.0}}
    text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "a1 (tester): 3 decisions, 2 answered and 1 timed out" in text, text[-2000:]
    assert not [e for e in ERROR_TEXT if e in text], text[-3000:]
    assert not page.blocked, f"the page asked for the network: {page.blocked[:5]}"
    page.screenshot(path=str(tmp_path / "human_seat.png"), full_page=True)
    print(f"\n[browser] a person played 3 rounds of SovSim through the form in {t_game:.1f} s "
          f"(one round left to its {25} s limit); screenshot {tmp_path / 'human_seat.png'}")


@pytest.mark.slow
def test_a_kill_while_the_person_decides_resumes_through_the_form(jupyter_lab, page, tmp_path):  # noqa: F811
    base, token, root = jupyter_lab
    nb, run_dir, n_code = _notebook(root, tmp_path, rounds=2, limit_s=120)
    _open(page, base, token, nb)
    _run_all(page)
    _question(page, 1)
    _answer(page, *ANSWERS[1])
    _question(page, 2)
    # the kernel dies while round 2 waits on the person (Kernel > Restart Kernel...)
    page.click("li.lm-MenuBar-item:has-text('Kernel')")
    page.click("li.lm-Menu-item:has-text('Restart Kernel…'), li.lm-Menu-item:has-text('Restart Kernel...')")
    page.click(".jp-Dialog-button.jp-mod-accept")
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)
    manifest = json.loads(next(run_dir.rglob("manifest.json")).read_text())
    assert manifest["status"] != "complete"
    assert [e["round"] for e in _person_events(run_dir, "a1")] == [1]

    _run_all(page)  # resume=True: round 1 is not asked again
    _question(page, 2)
    assert "round 1" not in " ".join(_desk(page).locator("h4").all_inner_texts())
    _answer(page, *ANSWERS[2])
    _done(page, n_code)
    events = _person_events(run_dir, "a1")
    assert [(e["round"], e["payload"]["reasoning"], str(e["payload"]["extraction"])) for e in events] == [
        (1, *ANSWERS[1]), (2, *ANSWERS[2])]
    assert all(e["payload"]["outcome"] == "human" for e in events)
    manifest = json.loads(next(run_dir.rglob("manifest.json")).read_text())
    assert manifest["status"] == "complete"
    text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "a1 (tester): 2 decisions, 2 answered and 0 timed out" in text, text[-2000:]


NO_SUBSHELLS = [
    "import asyncio\nimport scarce_lab as sl\n\n"
    "config = sl.config.SovSimConfig(condition='kcpr', model='scripted/sustainable', game={'rounds': 1}, "
    "seats={'a2': 'human/zed'}, human_time_limit_s=LIMIT)",
    "try:\n    sl.run(config, out=OUT + '/blocked', human=sl.human.WidgetDesk())\n"
    "except Exception as exc:  # the run stops there, recorded as failed\n    print('REFUSED', type(exc).__name__, exc)",
    "config = config.model_copy(update={'human_time_limit_s': 60.0})\n"
    "runs = await asyncio.to_thread(sl.run, config, OUT + '/awaited', human=sl.human.WidgetDesk())\n"
    "print('PLAYED', runs[0].name)",
]


@pytest.mark.slow
def test_without_comms_over_subshells_a_blocked_cell_fails_loudly_and_an_awaited_one_plays(
        jupyter_lab, page, tmp_path):  # noqa: F811
    base, token, root = jupyter_lab
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"  # read by the page as it loads
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "kernels-settings.jupyterlab-settings").write_text(json.dumps({"commsOverSubshells": "disabled"}))
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(f"OUT, LIMIT = {str(tmp_path)!r}, 10.0\n" + NO_SUBSHELLS[0]),
                *(nbformat.v4.new_code_cell(c) for c in NO_SUBSHELLS[1:])]
    path = root / "no_subshells.ipynb"
    nbformat.write(nb, path)
    _open(page, base, token, path)
    _run_all(page)
    page.wait_for_function("() => [...document.querySelectorAll('.jp-OutputArea-output')].some("
                           "e => e.textContent.includes('REFUSED'))", timeout=90_000, polling=250)
    text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "REFUSED RunFailedError" in text
    assert "FrontEndError: seat a2 (zed): the form was not drawn, or cannot answer while the cell runs" in text
    assert "Kernel Comms over subshells" in text and "asyncio.to_thread" in text
    _question(page, 1)
    _answer(page, "awaited", "3")
    _done(page, 3)
    text = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "PLAYED sovsim-kcpr" in text, text[-2000:]
    [awaited] = _person_events(tmp_path / "awaited", "a2")
    assert (awaited["payload"]["reasoning"], awaited["payload"]["extraction"], awaited["payload"]["outcome"]) == (
        "awaited", 3, "human")
