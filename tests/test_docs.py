"""The documentation agrees with the tree it documents.

- no Markdown document repeats a heading (a section written twice drifts apart);
- a schema version the docs name is the one the code writes;
- a range or count of notebooks the docs name is the notebooks present;
- the test counts the README and docs/testing.md state are what pytest collects (the
  whole suite and the fast lane);
- a docstring that says which method gives a result's interval (``lo``/``hi``) names
  a method its code uses (the function or what it calls).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from scarce_lab.data.events.base import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "data").glob("*/README.md")])
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FAST = "not slow and not embedded and not server and not docker and not browser"


def _headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.append(line.strip())
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_heading_is_written_twice(doc):
    twice = [h for h, n in Counter(_headings(doc.read_text(encoding="utf-8"))).items() if n > 1]
    assert not twice, f"{doc.relative_to(REPO)} repeats the section(s) {twice}: one section, one place"


def test_the_check_finds_a_repeated_heading_but_not_a_shell_comment():
    text = "# A\n## B\n```bash\n# B\n```\n## B\n"
    assert [h for h, n in Counter(_headings(text)).items() if n > 1] == ["## B"]


_SCHEMA = re.compile(r"schema[ _]version (\d+)", re.I)


def test_the_schema_version_the_docs_name_is_the_one_written():
    wrong = [f"{d.relative_to(REPO)}: schema version {v}" for d in DOCS
             for v in _SCHEMA.findall(d.read_text(encoding="utf-8"))
             if int(v) > SCHEMA_VERSION or (int(v) < SCHEMA_VERSION and not _history(d, v))]
    assert not wrong, f"the code writes schema version {SCHEMA_VERSION}: {wrong}"


def _history(doc: Path, v: str) -> bool:
    """An older version named as history ("version 5 added ...", "from version 2 on")."""
    text = doc.read_text(encoding="utf-8")
    return bool(re.search(rf"[Ss]chema version {v} (added|introduced|changed|and older|or older)|"
                          rf"(since|from|before|until) schema version {v}", text))


_RANGE = re.compile(r"\b(?:notebooks?|NN)\s+(\d\d)\s*[-–]\s*(\d\d)\b|\b(\d\d)\s*[-–]\s*(\d\d),\s+each \.ipynb")


def test_a_range_of_notebooks_the_docs_name_is_the_notebooks_present():
    last = int(NOTEBOOKS[-1].name[:2])
    wrong = []
    for d in DOCS:
        for m in _RANGE.finditer(d.read_text(encoding="utf-8")):
            lo, hi = (int(x) for x in [g for g in m.groups() if g][:2])
            if lo == 1 and hi != last:
                wrong.append(f"{d.relative_to(REPO)}: {m.group(0)!r}")
    assert not wrong, f"the notebooks are 01-{last:02d}: {wrong}"


_COUNTS = re.compile(r"([\d,]+) of the ([\d,]+)\s+tests")


def _collected(*args: str) -> int:
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    m = re.search(r"(\d+)(?:/\d+)? tests? collected|^(\d+) tests? collected", res.stdout, re.M)
    assert m, res.stdout[-2000:] + res.stderr[-2000:]
    return int(m.group(1) or m.group(2))


@pytest.mark.slow
def test_the_test_counts_the_docs_state_are_what_pytest_collects():
    """README: "the fast lane: N of the M tests"; a count that disagrees with the tree
    tells a new user the wrong size of the suite."""
    stated = [(d, int(a.replace(",", "")), int(b.replace(",", ""))) for d in (REPO / "README.md", REPO / "docs" / "testing.md")
              for a, b in _COUNTS.findall(d.read_text(encoding="utf-8"))]
    assert stated, "the README states no test counts (\"N of the M tests\")"
    full = _collected()
    fast = _collected("-m", FAST)
    wrong = [f"{d.relative_to(REPO)}: {a:,} of the {b:,}" for d, a, b in stated if (a, b) != (fast, full)]
    assert not wrong, f"pytest collects {fast:,} fast-lane tests of {full:,}: {wrong}"


# -- docstrings that name the interval method of a result ----------------------------------
#: method named in a docstring -> the functions that implement it (scarce_lab.analysis.stats
#: and the helpers that call them); "t" covers the Student-t family, the bounded hull included.
METHODS = {
    "cluster bootstrap": {"cluster_bootstrap_ci", "cluster_bootstrap_median"},
    "percentile bootstrap": {"bootstrap_ci", "relative_drop_ci", "cluster_bootstrap_ci", "cluster_bootstrap_median"},
    "wilson": {"wilson_ci"},
    "clopper": {"proportion_ci"},
    "fisher": {"pearson_ci"},
    "t interval": {"mean_ci", "bounded_mean_ci", "cluster_mean_ci", "grouped_mean_ci", "mean_ci_cells"},
}
#: how a docstring says which method gives ``lo``/``hi``: "``hi`` (cluster bootstrap ...)"
_CLAIM = re.compile(r"``hi``\s*\(([^)]*)\)", re.S)


def _method(claim: str) -> str | None:
    c = " ".join(claim.lower().split())
    for name in ("cluster bootstrap", "percentile bootstrap", "wilson", "clopper", "fisher"):
        if name in c:
            return name
    if re.search(r"\bt[- ]interval|\bstudent t\b|\bt over runs|\bhull\b", c):
        return "t interval"
    return None


def _graph() -> tuple[dict[str, set[str]], dict[str, tuple[Path, ast.AST]]]:
    """Function name -> names it calls, over the package (names resolve by their last
    part: a call of ``stats.mean_ci`` reaches every function named ``mean_ci``)."""
    calls: dict[str, set[str]] = {}
    funcs: dict[str, tuple[Path, ast.AST]] = {}
    for path in (REPO / "scarce_lab").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(node)
                         if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)}
                calls.setdefault(node.name, set()).update(names)
                funcs[f"{path.relative_to(REPO)}:{node.name}"] = (path, node)
    return calls, funcs


def _reaches(calls: dict[str, set[str]], start: str, targets: set[str], depth: int = 5) -> bool:
    seen, frontier = {start}, {start}
    for _ in range(depth):
        frontier = {c for f in frontier for c in calls.get(f, ())} - seen
        if frontier & targets:
            return True
        seen |= frontier
    return False


def test_a_docstring_names_the_interval_method_its_code_uses():
    calls, funcs = _graph()
    wrong = []
    for where, (_, node) in sorted(funcs.items()):
        doc = ast.get_docstring(node) or ""
        for claim in _CLAIM.findall(doc):
            method = _method(claim)
            if method and not _reaches(calls, node.name, METHODS[method]):
                wrong.append(f"{where}: says {method!r} ({' '.join(claim.split())[:60]})")
    assert not wrong, "docstrings name an interval method their code does not use: " + "; ".join(wrong)


def test_the_docstring_check_finds_a_wrong_claim():
    calls = {"f": {"mean_ci"}, "g": {"f"}}
    assert _reaches(calls, "g", METHODS["t interval"]) and not _reaches(calls, "g", METHODS["cluster bootstrap"])
    assert _method("value [lo, hi] from a cluster bootstrap over runs") == "cluster bootstrap"
    assert _method("t interval over run means, clipped") == "t interval"
