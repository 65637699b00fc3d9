"""Notebook 10 (counterfactual forks) in a real JupyterLab, headless Chromium, no network:
every cell runs, the effect charts render (one per fork folder with a nonzero paired
difference: not the message forks, which change nothing), the chart rules hold, and the fork beside its
parent shows two timelines aligned by step with the steps that differ marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_browser_jupyterlab import _copy_notebook, _open_and_run, jupyter_lab  # noqa: F401 - a fixture

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "10_counterfactual_forks.ipynb"


@pytest.mark.slow
def test_notebook_10_runs_and_shows_a_fork_beside_its_parent_in_jupyterlab(jupyter_lab, page, tmp_path):  # noqa: F811
    base, token, root = jupyter_lab
    out_dir = tmp_path / "figures"
    nb = _copy_notebook(NOTEBOOK, root, out_dir)
    import scarce_lab as sl

    folders = ["sovsim/misreport", "sovsim/embedded", "sovsim/king", "scarce/sanctions", "scarce/message"]
    charts = sum(bool(sl.effects(REPO / "data/forks" / f).chart) for f in folders if (REPO / "data/forks" / f).exists())
    assert charts >= 3  # misreport, king, sanctions at least (the message forks: every difference zero, no chart)
    _, _, n_charts = _open_and_run(page, base, token, nb, tmp_path, min_charts=charts)
    assert n_charts == charts
    beside = page.locator(".jp-OutputArea-output .sl-fork-view")
    assert beside.count() == 1
    steps = beside.locator("tr[data-step]")
    assert steps.count() == 4  # the sustainable king's 4 rounds (random peasants) beside the parent's one
    assert beside.locator('tr[data-differs="true"]').count() == 4
    assert "no events (the run had ended)" in beside.inner_text()
    assert (out_dir / "sovsim_king" / "fork_effects.csv").exists()
    assert any((out_dir / "forks").iterdir())  # the fork the notebook made, where it was told
