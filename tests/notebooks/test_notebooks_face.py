"""Each notebook is its own source (edited in JupyterLab; no builder script rewrites it)
and uses the notebook face: ``import scarce_lab as sl``, not the package's deep modules.
The check that replaced the builders (``scripts/build_notebook_01_sovsim.py``,
``build_notebook_07_economy.py``, ``make_scarce_notebooks.py``): a notebook that reaches
past the face, or keeps its code in a script, fails here."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import scarce_lab as sl

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
#: What a notebook may import from the package: the face only (the judge's taxonomy and
#: institutions and the reasoning-effort levels are read inside the SCARCE findings).
ALLOWED = {"scarce_lab"}


def _code(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_uses_the_face(path):
    imported, deep = set(), []
    for i, src in enumerate(_code(path)):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                imported |= {(a.name, a.asname) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scarce_lab"):
                if node.module not in ALLOWED:
                    deep.append(f"cell {i}: from {node.module} import ...")
    assert ("scarce_lab", "sl") in imported, f"{path.name} does not `import scarce_lab as sl`"
    assert not deep, f"{path.name} reaches past the face: {deep}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_sl_name_a_notebook_uses_exists(path):
    """``sl.<face>.<name>`` in a cell names something the face exports (a renamed
    function fails here, not halfway through a notebook run)."""
    missing = []
    for src in _code(path):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "sl":
                face = getattr(sl, node.value.attr)
                if not hasattr(face, node.attr):
                    missing.append(f"sl.{node.value.attr}.{node.attr}")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sl":
                if not hasattr(sl, node.attr):
                    missing.append(f"sl.{node.attr}")
    assert not missing, f"{path.name} uses names the face lacks: {sorted(set(missing))}"


def test_no_builder_script_writes_the_notebooks():
    scripts = (REPO / "scripts").glob("*.py")
    writers = [p.name for p in scripts if ".ipynb" in p.read_text() and "nbformat" in p.read_text()]
    assert not writers, f"scripts that write notebooks (edits in JupyterLab would be lost): {writers}"
