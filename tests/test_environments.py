"""The environment registry: the three shipped environments are registered specs, and
the shared layers dispatch through it instead of naming environments."""

from __future__ import annotations

import ast
from pathlib import Path

from scarce_lab import registry as environments
from scarce_lab.data.events import ENVIRONMENTS, payload_types
from scarce_lab.testing import HARNESSES

ROOT = Path(__file__).resolve().parents[1] / "scarce_lab"
SHIPPED = ("economy", "scarce", "sovsim")
#: The core: every module of the package outside ``environments/`` (the notebook face,
#: the CLI, data, llm, sandbox, tasks, judge, analysis, viewer, runners, testing, ...),
#: the SCARCE task suite's reference programs (task data, not package code) left out.
SHARED = tuple(sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                      if p.relative_to(ROOT).parts[0] != "environments" and "suite" not in p.relative_to(ROOT).parts))
#: String constants naming an environment that a core module may keep, and why.
ALLOWED: dict[tuple[str, str], str] = {
    ("judge/taxonomy.py", "scarce"): "the id of the shipped taxonomy file taxonomies/scarce.yaml, the default "
                                     "taxonomy of a units file (which names no environment), not an environment",
}
#: Imports of one environment's own modules that a core module may keep, and why.
ALLOWED_IMPORTS: dict[tuple[str, str], str] = {}


def test_the_shipped_environments_are_registered_specs():
    assert environments.names() == list(SHIPPED)
    for spec in environments.specs():
        assert spec.config.ENVIRONMENT == spec.name
        assert environments.for_config(spec.config.model_construct()) is spec
        assert set(payload_types(spec.name)) == {p.model_fields["kind"].default for p in spec.payloads} | {
            "round_committed"}
        assert spec.tables and spec.face == f"scarce_lab.environments.{spec.name}.analysis"
        assert spec.migrate_v1 is not None and spec.config_v1 is not None and spec.plan_calls is not None
        assert spec.view is not None and (spec.demo is not None) == (spec.name == "sovsim")
        assert [x.name for x in spec.layouts] == (["sovsim_json", "sovsim_run", "govsim_log"] if spec.name == "sovsim"
                                                  else [])
    assert sorted(HARNESSES) == list(SHIPPED) and sorted(ENVIRONMENTS) == list(SHIPPED)


def _names_in_code(path: Path) -> list[tuple[int, str]]:
    """String constants equal to a shipped environment's name, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in SHIPPED and id(n) not in docs]


def test_the_shared_layers_name_no_environment():
    found = [f"{rel}:{line} {name!r}" for rel in SHARED for line, name in _names_in_code(ROOT / rel)
             if (rel, name) not in ALLOWED]
    assert not found, "shared modules name an environment (go through scarce_lab.registry): " + ", ".join(found)


def test_the_check_finds_a_hand_kept_table(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""Docstring naming "sovsim" is fine."""\nRUN = {"sovsim": 1, "economy": 2}\n')
    assert _names_in_code(bad) == [(2, "sovsim"), (2, "economy")]


def _env_imports(path: Path) -> list[tuple[int, str]]:
    """Imported modules (relative ones without their dots) of which a part is a shipped
    environment's name (``from .envs.scarce import ...``, ``from ..viewer import sovsim``)."""
    found = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom):
            mods = [n.module or ""] + [f"{n.module}.{a.name}" if n.module else a.name for a in n.names]
        elif isinstance(n, ast.Import):
            mods = [a.name for a in n.names]
        else:
            continue
        hit = next((m for m in mods if set(m.split(".")) & set(SHIPPED)), None)
        if hit is not None:
            found.append((n.lineno, hit))
    return found


def test_the_shared_layers_import_no_environment_module():
    """The per-environment code (renderers, conformance plays, tables, runners) lives in
    modules of its own that the specs point at; a shared module reaches it only through
    the registry."""
    found = [f"{rel}:{line} {mod}" for rel in SHARED for line, mod in _env_imports(ROOT / rel)
             if (rel, mod) not in ALLOWED_IMPORTS]
    assert not found, "shared modules import an environment's module (go through scarce_lab.registry): " + (
        ", ".join(found))


def test_the_import_check_finds_an_environment_module(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from .envs.scarce import ScarceWorld\nfrom ..viewer import sovsim\nimport json\n"
                   "from .render import esc\n")
    assert _env_imports(bad) == [(1, "envs.scarce"), (2, "viewer.sovsim")]
