"""The README's code runs, its links resolve, and the notes that docstrings cite exist.

Every code block of ``README.md`` is either executed here or listed in ``NOT_RUN`` with
the reason. Python blocks run in order in one namespace, and shell blocks line by line,
in a temporary copy of the checkout's layout (``data/``, ``notebooks/``, ``scarce_lab/``
and ``pyproject.toml`` linked in), so relative paths resolve as from the repository root
and what the blocks write stays in the temporary folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

#: first line of a block that is not run -> why
NOT_RUN = {
    "bash scripts/install.sh && .venv/bin/scarce-lab demo":
        "the set-up commands install everything and run the demo (minutes) and the whole suite; "
        "CI runs the second one (.ci/run)",
    "scripts/test-fast": "runs the fast lane itself (minutes)",
}

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of the README, in order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(README.read_text())]


def _needs_embedded(code: str) -> bool:
    return "embedded/" in code


def _to_run(lang: str, embedded: bool) -> list[str]:
    return [code for la, code in blocks() if la == lang and code.splitlines()[0] not in NOT_RUN
            and _needs_embedded(code) == embedded]


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    for name in ("data", "notebooks", "scarce_lab", "pyproject.toml"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_block_is_run_or_says_why_not():
    found = blocks()
    assert found, "README.md has no code blocks"
    firsts = {code.splitlines()[0] for _, code in found}
    stale = set(NOT_RUN) - firsts
    assert not stale, f"NOT_RUN names blocks the README no longer has: {stale}"
    langs = {la for la, code in found if code.splitlines()[0] not in NOT_RUN}
    assert langs <= {"python", "bash"}, f"blocks of a language this test does not run: {langs - {'python', 'bash'}}"
    assert _to_run("python", False) and _to_run("bash", False)
    # the two set-up commands come first, unchanged (.ci/run runs the second one's pytest)
    assert found[0][1].splitlines() == ["bash scripts/install.sh && .venv/bin/scarce-lab demo",
                                        "bash scripts/install.sh && .venv/bin/python -m pytest"]


@pytest.mark.slow
def test_readme_python_tour_runs(checkout):
    ns: dict = {"__name__": "__readme__"}
    for code in _to_run("python", False):
        exec(compile(code, "README.md", "exec"), ns)
    table1 = ns["table1"]
    assert table1.height > 0 and {"survival_rate_mean", "survival_rate_ci_low"} <= set(table1.columns)
    assert (checkout / "figures" / "tour" / "sovsim_pool_dynamics.png").stat().st_size > 0
    assert (checkout / "figures" / "tour" / "sovsim_pool_dynamics.svg").stat().st_size > 0


@pytest.mark.embedded
@pytest.mark.slow
def test_readme_embedded_model_blocks_run(checkout):
    import json

    import scarce_lab

    ns: dict = {"__name__": "__readme__", "sl": scarce_lab}  # what the tour's first block imported
    code = _to_run("python", True)
    assert code, "the README's tour has no run on the embedded model"
    for c in code:
        exec(compile(c, "README.md", "exec"), ns)
    manifest = json.loads((Path(ns["runs"][0]) / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["models"]


@pytest.mark.slow
def test_readme_shell_tour_runs(checkout):
    env = {**os.environ, "PYTHONPATH": str(REPO),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    for code in _to_run("bash", False):
        for line in code.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            proc = subprocess.run(["bash", "-c", line], cwd=checkout, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            for word in shlex.split(line):
                if word.endswith((".md", ".html")) and not word.startswith("-"):
                    assert (checkout / word).stat().st_size > 0, f"{line}: {word} is empty"


# -- links and citations -------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", [README, *sorted((REPO / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    missing = [t for t in _LINK.findall(page.read_text())
               if not re.match(r"[a-z]+:", t) and not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


def _sources() -> list[Path]:
    """The code whose docstrings and comments a reader sees: the package, tests,
    benchmarks, scripts and the notebooks."""
    found = [p for d in ("scarce_lab", "tests", "benchmarks") for p in sorted((REPO / d).rglob("*.py"))]
    return found + sorted(p for p in (REPO / "scripts").rglob("*") if p.is_file()) \
        + sorted((REPO / "notebooks").glob("*.ipynb"))


#: a docs/ page cited by a docstring or comment
_DOCS_PAGE = re.compile(r"\bdocs/[\w./-]+\.md\b")
#: the design notes that lived beside the repository (now docs/design.md, docs/embedded_model.md)
_OUTSIDE_NOTE = re.compile(r"\bDESIGN\.md\b|\bEMBEDDED_MODEL(?:\.md| notes)\b|\.\./shared/[\w/]*\.md")


def test_design_notes_that_code_cites_are_in_the_repository():
    bad = []
    for path in _sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            bad += [f"{path.relative_to(REPO)}:{n}: {c}" for c in _DOCS_PAGE.findall(line) if not (REPO / c).exists()]
            bad += [f"{path.relative_to(REPO)}:{n}: {c} (cite the docs/ page)" for c in _OUTSIDE_NOTE.findall(line)]
    assert not bad, "cited notes that are not in the repository:\n" + "\n".join(bad)


#: the word issue(s) followed by a number, "#NN" or "(#NN)": a tracker a reader of the code cannot open
_ISSUE_NUMBER = re.compile(r"\bissues? ?#?[0-9]+|\(#[0-9]+\)", re.I)


#: (file, text) -> why the citation stays for now
KEPT: dict[tuple[str, str], str] = {}


def test_no_docstring_or_comment_cites_a_tracker_issue_number():
    found, kept = [], set()
    for p in _sources():
        rel = str(p.relative_to(REPO))
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if not _ISSUE_NUMBER.search(line):
                continue
            key = next((k for k in KEPT if k[0] == rel and k[1] in line), None)
            if key:
                kept.add(key)
            else:
                found.append(f"{rel}:{n}: {line.strip()[:120]}")
    assert kept == set(KEPT), f"KEPT names citations that are gone: {set(KEPT) - kept}"
    assert not found, ("state the rule (or link the docs/ page) instead of an issue number:\n"
                       + "\n".join(found))
