"""Notebooks stay clean in git: no outputs, no execution counts, no volatile metadata,
kernelspec ``python3``. (Each ``.ipynb`` is its own source, edited in JupyterLab; a
notebook saved with outputs fails here: clear its outputs before committing.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stripped(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3", "kernelspec must be python3"
    extra = set(nb["metadata"]) - {"kernelspec", "language_info"}
    assert not extra, f"volatile notebook metadata {sorted(extra)}"
    for i, cell in enumerate(nb["cells"]):
        where = f"{path.name} cell {i}"
        assert set(cell.get("metadata", {})) <= {"tags"}, f"{where}: metadata {sorted(cell['metadata'])}"
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{where} has outputs"
            assert cell.get("execution_count") is None, f"{where} has an execution count"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 7
