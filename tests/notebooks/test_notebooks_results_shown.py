"""Every finding a notebook computes is shown, not only saved: an ``sl.Finding(...)``
(or ``.save(...)`` of one) used as a statement is displayed only when it is the
cell's last statement; anywhere else (earlier in the cell, inside a loop) it must be
wrapped in ``display(...)``, or the reader never sees the table and chart."""

import ast
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))


def _is_result(node: ast.AST) -> bool:
    """``sl.Finding(...)`` or ``sl.Finding(...).save(...)`` (any chain ending in save)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "save":
        node = node.func.value
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Finding"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "sl")


def hidden_results(source: str) -> list[int]:
    """Line numbers of Finding statements the notebook would compute but never show."""
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body else None
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and _is_result(n.value) and n is not last]


def test_the_check_finds_a_hidden_result():
    assert hidden_results("sl.Finding('a', f).save(OUT)\nx = 1") == [1]
    assert hidden_results("for d in ds:\n    sl.Finding('a', d).save(OUT)") == [2]
    assert hidden_results("display(sl.Finding('a', f).save(OUT))\nsl.Finding('b', g)") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_result_is_shown(path):
    nb = json.loads(path.read_text())
    hidden = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
        hidden += [f"cell {i} line {n}" for n in hidden_results(src)]
    assert not hidden, f"{path.name}: results computed but never displayed (wrap in display(...)): {hidden}"
