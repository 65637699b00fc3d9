"""Architecture checks: the import-linter contracts in pyproject.toml (layers, purity
of environments and analysis, no cycles) and the module size rule."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500


def test_import_contracts_are_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "BROKEN" not in res.stdout and "kept, 0 broken" in res.stdout


def test_no_module_over_the_size_limit_without_a_stated_reason():
    """A module over ~500 lines must say why in its docstring (a line starting
    ``Size:``), so that growth is a decision, not an accident."""
    offenders = []
    for path in sorted((ROOT / "scarce_lab").rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not any(line.strip().startswith("Size:") for line in doc.splitlines()):
            offenders.append(f"{path.relative_to(ROOT)} ({n} lines)")
    assert not offenders, "modules over the size limit without a 'Size:' reason: " + ", ".join(offenders)
