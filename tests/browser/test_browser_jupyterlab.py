"""A real JupyterLab in headless Chromium, without network: notebook 01's charts render.

The test starts ``jupyter lab`` on 127.0.0.1 (free port, a token, no browser) in a
temporary root holding a copy of notebook 01 whose parameters point at the shipped
dataset and a temporary output folder (so it also shows that a copied notebook works),
opens it, runs all cells from the Run menu, and asserts that every chart output holds a
rendered SVG or canvas (the offline JupyterChart widget), that no output shows error
text, and that the browser asked nothing of the network.

Timings (opening, running) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "01_sovsim_power_conditions.ipynb"
ERROR_TEXT = ("Error loading script", "Error displaying widget", "Traceback", "Javascript Error",
              "Error:", "model not found")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_notebook(src: Path, dst: Path, out_dir: Path, **override) -> Path:
    """Copy notebook ``src`` into ``dst`` with its relative data paths made absolute
    (against the checkout), ``OUT_DIR`` set to ``out_dir`` and ``override`` applied,
    through the project's own parameter injection (``scarce-lab report``'s)."""
    import nbformat

    from scarce_lab.reporting import inject_parameters, notebook_parameters, read_notebook

    def absolute(v):
        if isinstance(v, str) and (v.startswith("data/") or v.startswith("../")):
            return str((REPO / v).resolve())
        return [absolute(x) for x in v] if isinstance(v, list) else v

    nb = read_notebook(src)
    values = {p.name: absolute(ast.literal_eval(p.default)) for p in notebook_parameters(nb)}
    values |= override | {"OUT_DIR": str(out_dir)}
    out = dst / src.name
    nbformat.write(inject_parameters(nb, values), out)
    return out


@pytest.fixture
def jupyter_lab(tmp_path):
    """``(base_url, token, root)`` of a JupyterLab started for this test."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e '.[notebooks]')")
    pytest.importorskip("anywidget", reason="anywidget is not installed (pip install -e '.[notebooks]')")
    root = tmp_path / "lab"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)  # render every cell (no windowing), so that every chart can be counted
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)  # no "get notified about Jupyter news?" toast over the charts' screenshots
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root",
           "--LabApp.news_url=None"]
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
            time.sleep(0.3)
        yield base, token, root
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _open_and_run(page, base: str, token: str, nb: Path, tmp_path: Path, min_charts: int) -> tuple[float, float, int]:
    """Open ``nb`` in JupyterLab, run all cells, wait for the charts; assert no error
    text and no network request. Returns (seconds to open, seconds to run, charts)."""
    t0 = time.monotonic()
    page.goto(f"{base}/lab/tree/{nb.name}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=60_000)
    t_open = time.monotonic() - t0

    n_code = sum(1 for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    t1 = time.monotonic()
    page.click("li.lm-MenuBar-item:has-text('Run')")
    page.click("li.lm-Menu-item:has-text('Run All Cells')")
    # done when every code cell shows a number in its prompt ([n]:) and none shows [*]
    page.wait_for_function(
        """(n) => {
            const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
            return p.length === n && p.every(t => /\\[\\d+\\]/.test(t));
        }""", arg=n_code, timeout=300_000, polling=500)
    # charts render asynchronously after their cell finished
    page.wait_for_function(
        "(k) => document.querySelectorAll('.jp-OutputArea-output .vega-embed').length >= k && "
        "[...document.querySelectorAll('.jp-OutputArea-output .vega-embed')].every("
        "e => e.querySelector('svg.marks, canvas.marks'))", arg=min_charts, timeout=60_000, polling=500)
    t_run = time.monotonic() - t1

    n_charts = page.locator(".jp-OutputArea-output .vega-embed").count()
    _check_every_chart(page, nb, tmp_path)
    outputs_text = page.locator(".jp-OutputArea-output").all_inner_texts()
    errors = [t for t in outputs_text if any(e in t for e in ERROR_TEXT)]
    shot = tmp_path / f"jupyterlab_{nb.stem}.png"
    first = page.locator(".jp-OutputArea-output .vega-embed").first
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(shot))
    print(f"\n[browser] JupyterLab: {nb.stem} opened (kernel idle) in {t_open:.1f} s, all cells ran and "
          f"{n_charts} charts rendered in {t_run:.1f} s; blocked requests: {len(page.blocked)}; screenshot {shot}")
    assert n_charts >= min_charts, f"expected the notebook's charts, found {n_charts} rendered"
    assert not errors, f"error text in outputs: {[e[:300] for e in errors]}"
    assert not page.blocked, f"the page asked for the network: {page.blocked[:5]}"
    return t_open, t_run, n_charts


#: Every chart, drawn in JupyterLab: no two legend entries alike, nothing wider than the
#: output area, no chart without marks. Returns per chart: legend labels, widths, drawn marks.
CHART_FACTS = """(sel) => [...document.querySelectorAll(sel || '.jp-OutputArea-output .vega-embed')].map(e => {
    const svg = e.querySelector('svg.marks, canvas.marks');
    const area = e.closest('.jp-OutputArea-output');
    const labels = [...e.querySelectorAll('.role-legend-label text')].map(t => t.textContent.trim());
    const marks = e.querySelectorAll('.mark-symbol path, .mark-line path, .mark-rect path, .mark-area path, '
        + '.mark-rule line, .mark-tick path, .mark-bar path').length;
    const title = (e.querySelector('.role-title-text') || {}).textContent || '';
    // legend entries as drawn: label -> fill of its symbol (one meaning per colour)
    const legend = [...e.querySelectorAll('.role-legend')].flatMap(lg => {
        const syms = [...lg.querySelectorAll('.role-legend-symbol path')];
        const labs = [...lg.querySelectorAll('.role-legend-label text')];
        return syms.map((p, k) => {
            const fill = p.getAttribute('fill') || '';
            const paint = (fill && fill !== 'none' && fill !== 'transparent') ? fill : (p.getAttribute('stroke') || '');
            return [labs[k] ? labs[k].textContent.trim() : `#${k}`, paint];
        });
    });
    // titles, panel headers and axis titles: their boxes must not overlap
    const texts = [...e.querySelectorAll('.role-title text, .role-axis-title text, '
        + '[class*="role-column-header"] text, [class*="role-row-header"] text, [class*="role-facet-header"] text, '
        + '.role-header-label text, [class*="header-label"] text, [class*="role-header"] text')];
    const boxes = [...new Set(texts)].filter(t => t.textContent.trim() && !t.closest('.role-axis-label')).map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent.trim(), l: r.left, r: r.right, t: r.top, b: r.bottom};
    });
    // tick labels as drawn: Vega cuts one longer than its axis's labelLimit with an ellipsis
    const ticks = [...e.querySelectorAll('.role-axis-label text')].map(t => t.textContent.trim());
    return {title, labels, legend, boxes, ticks, width: svg ? svg.getBoundingClientRect().width : 0,
            height: svg ? svg.getBoundingClientRect().height : 0, area: area ? area.clientWidth : 0, marks};
})"""


def _overlaps(boxes: list[dict], gap: float = 3.0) -> list[tuple[str, str]]:
    """Pairs of text boxes (titles, panel headers, axis titles) on the same line (overlapping
    by more than 1 px vertically) that overlap or run into each other (less than ``gap`` px
    apart horizontally: "(window start)Training episode" reads as one title)."""
    out = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if min(a["r"], b["r"]) - max(a["l"], b["l"]) > -gap and min(a["b"], b["b"]) - max(a["t"], b["t"]) > 1:
                out.append((a["text"], b["text"]))
    return out


def _colour_problems(facts: list[dict]) -> list[str]:
    """One meaning per colour within a notebook, from the legends as drawn: a colour that
    labels two different legend entries, or an entry drawn in two colours."""
    by_colour: dict[str, dict[str, int]] = {}
    by_label: dict[str, dict[str, int]] = {}
    for i, f in enumerate(facts, 1):
        for label, colour in f["legend"]:
            if not colour or label.startswith("#"):
                continue
            by_colour.setdefault(colour.lower(), {}).setdefault(label, i)
            by_label.setdefault(label, {}).setdefault(colour.lower(), i)
    out = [f"colour {c} stands for {sorted(t)} (charts {sorted(set(t.values()))})" for c, t in by_colour.items() if len(t) > 1]
    out += [f"{x!r} is drawn in {sorted(c)} (charts {sorted(set(c.values()))})" for x, c in by_label.items() if len(c) > 1]
    return out


#: Tallest chart as drawn (CSS px): a taller one is read by scrolling past most of it.
MAX_HEIGHT = 1250


def _check_every_chart(page, nb: Path, tmp_path: Path) -> None:
    """Every chart of the open notebook: no duplicate legend labels, not wider than its output
    area (1,400 px window, left sidebar open), at most :data:`MAX_HEIGHT` tall, no tick label,
    legend entry or title cut with an ellipsis, some marks drawn; a screenshot of each
    (``$SCARCE_LAB_SCREENSHOTS`` or ``tmp_path``)."""
    shots = Path(os.environ.get("SCARCE_LAB_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    facts = page.evaluate(CHART_FACTS)
    sidebar = page.evaluate("() => { const s = document.querySelector('#jp-left-stack'); "
                            "return s ? s.getBoundingClientRect().width : 0; }")
    assert sidebar > 0, "the left sidebar is closed: the width check needs it open (the narrow case)"
    view = page.viewport_size
    for i, loc in enumerate(page.locator(".jp-OutputArea-output .vega-embed").all()):
        loc.scroll_into_view_if_needed()
        box = loc.bounding_box() or {"height": 0}
        tall = box["height"] > view["height"] - 250  # a chart taller than the notebook panel: a taller window
        if tall:
            page.set_viewport_size({"width": view["width"], "height": int(box["height"]) + 400})
            loc.scroll_into_view_if_needed()
        loc.screenshot(path=str(shots / f"{nb.stem}_chart{i + 1:02d}.png"))
        if tall:
            page.set_viewport_size(view)
    problems = []
    for i, f in enumerate(facts, 1):
        dup = sorted({x for x in f["labels"] if f["labels"].count(x) > 1})
        if dup:
            problems.append(f"chart {i} ({f['title']}): duplicate legend labels {dup}")
        if f["width"] > f["area"] + 1:
            problems.append(f"chart {i} ({f['title']}): {f['width']:.0f} px wide in a {f['area']} px output area")
        if f["marks"] == 0:
            problems.append(f"chart {i} ({f['title']}): no marks drawn")
        if clash := _overlaps(f["boxes"]):
            problems.append(f"chart {i} ({f['title']}): overlapping titles {clash[:4]}")
        if cut := [x for x in [*f["labels"], *(b["text"] for b in f["boxes"])] if x.endswith("\u2026")]:
            problems.append(f"chart {i} ({f['title']}): legend entries or titles cut: {cut[:4]}")
        if cut := [x for x in f["ticks"] if x.endswith("\u2026")]:
            problems.append(f"chart {i} ({f['title']}): tick labels cut: {cut[:4]}")
        if f["height"] > MAX_HEIGHT:
            problems.append(f"chart {i} ({f['title']}): {f['height']:.0f} px tall (at most {MAX_HEIGHT})")
    problems += _colour_problems(facts)
    print(f"\n[browser] {nb.stem}: legend colours "
          f"{[dict(f['legend']) for f in facts]}; title boxes checked {[len(f['boxes']) for f in facts]}")
    print(f"\n[browser] {nb.stem}: {len(facts)} charts checked; widths "
          f"{[round(f['width']) for f in facts]}, heights {[round(f['height']) for f in facts]} in output areas of {sorted({f['area'] for f in facts})} px; "
          f"sidebar {sidebar:.0f} px; screenshots in {shots}")
    assert not problems, problems


@pytest.mark.slow
def test_notebook_01_charts_render_offline_in_jupyterlab(jupyter_lab, page, tmp_path):
    base, token, root = jupyter_lab
    out_dir = tmp_path / "figures"
    nb = _copy_notebook(NOTEBOOK, root, out_dir, SHARED_DATA=str(tmp_path / "no_shared_data"))
    _, _, n_charts = _open_and_run(page, base, token, nb, tmp_path, min_charts=4)
    assert n_charts == 4  # pool dynamics, trajectories, leader rate, misreports
    assert (out_dir / "sovsim_pool_dynamics.png").exists()  # the copied notebook wrote where told


ALL = sorted((REPO / "notebooks").glob("0[2-9]*.ipynb"))


@pytest.mark.skipif(not os.environ.get("SCARCE_LAB_BROWSER_ALL"),
                    reason="set SCARCE_LAB_BROWSER_ALL=1 to time every notebook in JupyterLab (minutes)")
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_every_notebook_in_jupyterlab(jupyter_lab, page, tmp_path, path):
    base, token, root = jupyter_lab
    nb = _copy_notebook(path, root, tmp_path / "figures")
    _open_and_run(page, base, token, nb, tmp_path, min_charts=1)
