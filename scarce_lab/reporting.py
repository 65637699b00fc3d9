"""Execute a numbered notebook headless with papermill-style parameters.

The notebook's first cell tagged ``parameters`` holds defaults; :func:`execute_notebook`
inserts a cell tagged ``injected-parameters`` right after it (papermill's convention)
with the overrides, runs every cell with nbclient and writes the executed copy, whose
charts keep only their static images (:func:`scarce_lab.analysis.figures.static_outputs`).

Which notebooks: those of the checkout the command is called from (the nearest folder
at or above the working directory with ``pyproject.toml`` and ``scarce_lab/``), else
those beside this package. The kernel imports that checkout's ``scarce_lab``.

Parameters are checked before anything runs: a name the notebook does not declare is
an error that lists the declared ones (names are case-sensitive), and a dataset path
that does not exist is a one-line error naming it.

Parameters are typed by the notebook's ``parameters`` cell (:func:`parameter_type`:
the annotation, e.g. ``MODELS: list[str] | None = None``, else the default's type). Every
value that enters a notebook (``scarce-lab report -p``, :func:`check_parameters`,
:func:`inject_parameters`, :func:`execute_notebook`) is converted to that type or refused
naming the parameter and the value (:func:`typed_parameters`); a bare string where a list
is declared (``MODELS='scripted/greedy'``) is refused with the list form to write.

Relative paths follow the rule of the Python face (module :mod:`scarce_lab.datasets`).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .datasets import REPO_ROOT, checkout_root, dataset_path

NOTEBOOKS = REPO_ROOT / "notebooks"
DATASET_PARAM = re.compile(r"^(?:[A-Z_]*_)?(?:DATASETS?|LABELS)$")


class ParameterError(ValueError):
    """A parameter override the notebook cannot take (unknown name, missing path)."""


def notebooks_dir(start: str | Path | None = None) -> Path:
    """``notebooks/`` of :func:`checkout_root`."""
    return checkout_root(start) / "notebooks"


def find_notebook(name: str, start: str | Path | None = None) -> Path:
    """Resolve ``name`` (a path, a file name, or a number prefix such as ``01``) among
    the notebooks of the checkout at or above ``start`` (:func:`notebooks_dir`).

    Raises:
        FileNotFoundError: nothing matches; the message lists the notebooks there are.
    """
    p = Path(name)
    if p.is_file():
        return p
    if p.exists():
        raise FileNotFoundError(f"notebook {name!r} is not a file")
    nbdir = notebooks_dir(start)
    matches = sorted(nbdir.glob(f"{name}*.ipynb")) if nbdir.exists() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise FileNotFoundError(f"notebook {name!r} is ambiguous: {', '.join(m.name for m in matches)}")
    have = ", ".join(x.name for x in sorted(nbdir.glob("*.ipynb"))) or "none"
    raise FileNotFoundError(f"notebook {name!r} not found in {nbdir} (notebooks: {have})")


def read_notebook(path: str | Path):
    """The notebook at ``path`` (nbformat v4 node).

    Raises:
        ValueError: the file is not a readable notebook (the message names it).
    """
    import nbformat

    try:
        return nbformat.read(Path(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - NotJSONError, validation, decoding errors
        raise ValueError(f"{path}: not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})") from None


# -- parameters ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Parameter:
    """One name assigned in a notebook's ``parameters`` cell."""

    name: str
    default: str  # the source text of its default value
    comment: str  # the comment at the end of its line, if any
    annotation: str = ""  # the source text of its annotation (``NAME: str | None = ...``), if any


def _parameters_index(nb) -> int | None:
    """Index of the ``parameters`` cell: the first code cell tagged so (``None``: none)."""
    return next((i for i, c in enumerate(nb.cells)
                 if c.get("cell_type") == "code" and "parameters" in c.get("metadata", {}).get("tags", [])), None)


def notebook_parameters(notebook) -> list[Parameter]:
    """The parameters a notebook declares (top-level assignments in its ``parameters``
    cell), in order. ``notebook`` is a path or an ``nbformat`` node.

    Raises:
        ValueError: the parameters cell is not valid Python.
    """
    nb = notebook if hasattr(notebook, "cells") else read_notebook(notebook)
    i = _parameters_index(nb)
    if i is None:
        return []
    src = nb.cells[i].source
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ValueError(f"parameters cell does not parse: {exc}") from None
    lines = src.splitlines()
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            line = lines[node.lineno - 1]
            comment = line.split("#", 1)[1].strip() if "#" in line[node.value.end_col_offset:] else ""
            default = ast.get_source_segment(src, node.value) or ""
            ann = ast.get_source_segment(src, node.annotation) or "" if isinstance(node, ast.AnnAssign) else ""
            out += [Parameter(t.id, default, comment, ann) for t in targets if isinstance(t, ast.Name)]
    return out


#: The names a parameter annotation may use (evaluated with nothing else in scope).
_ANNOTATION_NAMES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "list": list,
                                     "dict": dict, "None": None, "Literal": Literal, "Any": Any}


def parameter_type(param: Parameter) -> Any:
    """The type a notebook parameter takes: its annotation (built from ``str``, ``int``,
    ``float``, ``bool``, ``list``, ``dict``, ``None``, ``Literal``, ``|``), else the
    type of its literal default (``list[str]`` for a list of strings), else ``Any``
    (a default of ``None`` or an expression without an annotation).

    Raises:
        ValueError: an annotation outside those names (the message names the parameter).
    """
    if param.annotation:
        try:
            return eval(compile(param.annotation, "<annotation>", "eval"),  # noqa: S307 - names above only
                        {"__builtins__": {}}, dict(_ANNOTATION_NAMES))
        except Exception as exc:  # noqa: BLE001 - NameError, SyntaxError, TypeError
            raise ValueError(f"parameter {param.name}: annotation {param.annotation!r} is not a type built from "
                             f"{', '.join(_ANNOTATION_NAMES)} ({type(exc).__name__})") from None
    try:
        default = ast.literal_eval(param.default)
    except (ValueError, SyntaxError):
        return Any
    if default is None:
        return Any
    if isinstance(default, list | tuple):
        kinds = {type(x) for x in default}
        return list[kinds.pop()] if len(kinds) == 1 else list
    return type(default)


def _type_text(param: Parameter, tp: Any) -> str:
    if param.annotation:
        return param.annotation
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def _plain(v: Any) -> Any:
    """Paths as strings (a path parameter is declared ``str``), inside lists too."""
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def typed_parameters(notebook, parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` checked against the notebook's declared names and converted to
    their declared types (:func:`parameter_type`, pydantic's lax conversion: ``'false'``
    -> ``False``, ``'3'`` -> ``3``, ``1`` -> ``1.0``). ``notebook`` is a path or an
    ``nbformat`` node.

    Raises:
        ParameterError: a name the notebook does not declare (the declared ones are
            listed; names are case-sensitive), or a value that is not of the declared
            type (the message names the notebook, the parameter, the value and the type).
    """
    from pydantic import TypeAdapter, ValidationError

    from .config.base import boolean_as_number

    nb = notebook if hasattr(notebook, "cells") else read_notebook(notebook)
    where = Path(notebook).name if isinstance(notebook, str | Path) else "the notebook"
    params = {p.name: p for p in notebook_parameters(nb)}
    declared = list(params)
    unknown = [k for k in parameters if k not in params]
    if unknown:
        hint = []
        for k in unknown:
            near = [d for d in declared if d.lower() == k.lower()]
            hint.append(f"{k!r}" + (f" (did you mean {near[0]!r}? names are case-sensitive)" if near else ""))
        raise ParameterError(f"{where} has no parameter {', '.join(hint)}; "
                             f"its parameters: {', '.join(declared) or 'none'}")
    out = {}
    for k, v in parameters.items():
        tp = parameter_type(params[k])
        value = _plain(v)
        if tp is Any:
            out[k] = value
        else:
            try:
                out[k] = TypeAdapter(tp).validate_python(value)
            except ValidationError as exc:
                text = _type_text(params[k], tp)
                first = exc.errors()[0].get("msg", str(exc)) if exc.errors() else str(exc)
                hint = f"; a list is written {k}={[value]!r}" if isinstance(value, str) and "list" in text else ""
                raise ParameterError(f"{where}: parameter {k}={v!r} is not a {text} ({first}){hint}") from None
            if boolean_as_number(value, out[k]) is not None:  # -p N_STAGES=True must not mean 1
                raise ParameterError(f"{where}: parameter {k}={v!r} is not a {_type_text(params[k], tp)} "
                                     f"(a bool is not a number here; write the number)")
        _check_literal(where, k, v, out[k])
    return out


def _check_literal(where: str, name: str, given: Any, value: Any) -> None:
    """The injected cell writes ``NAME = repr(value)``: ``value`` must be a plain Python
    literal (str, int, finite float, bool, None, and lists/tuples/dicts/sets of them)
    whose ``repr`` reads back as the same value. ``nan``/``inf`` (``-p X=1e309`` is
    ``inf``) and objects would otherwise become a ``NameError`` or a different value
    inside the notebook.

    Raises:
        ParameterError: naming the parameter and the value.
    """
    import math

    def bad(x: Any) -> str | None:
        if isinstance(x, float) and not math.isfinite(x):
            return f"{x!r} is not a finite number"
        if isinstance(x, list | tuple | set | frozenset):
            return next((r for r in map(bad, x) if r), None)
        if isinstance(x, dict):
            return next((r for r in map(bad, [*x.keys(), *x.values()]) if r), None)
        if x is None or isinstance(x, str | int | float | bytes):
            return None
        return f"a {type(x).__name__} is not a plain literal (str, number, bool, None, list, dict)"

    reason = bad(value)
    if reason is None:
        try:
            same = ast.literal_eval(repr(value)) == value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            same = False
        reason = None if same else "its repr does not read back as the same value"
    if reason:
        shown = repr(given)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        raise ParameterError(f"{where}: parameter {name}={shown}: {reason}")


def check_parameters(notebook: str | Path, parameters: dict[str, Any],
                     start: str | Path | None = None) -> dict[str, Any]:
    """Validate ``parameters`` against the notebook's declared ones, convert them to
    their declared types (:func:`typed_parameters`) and return them with dataset paths
    (names ``DATASET``, ``DATASETS``, ``*_DATASET``, ``LABELS``) made absolute.

    Raises:
        ParameterError: as :func:`typed_parameters`, or a dataset path that does not
            exist (the message names the parameter and the path).
    """
    out = typed_parameters(notebook, parameters)
    for k, v in list(out.items()):
        if not DATASET_PARAM.match(k) or v is None:
            continue
        vals = [v] if isinstance(v, str | Path) else list(v)
        try:
            paths = [str(dataset_path(x, k, start)) for x in vals]
        except FileNotFoundError as exc:
            raise ParameterError(str(exc)) from None
        out[k] = paths[0] if isinstance(v, str | Path) else paths
    return out


def default_out_dir(notebook: str | Path, parameters: dict[str, Any],
                    start: str | Path | None = None) -> Path:
    """``runs/reports/<notebook stem>--<dataset name>-<hash>`` under the checkout: one
    folder per notebook and dataset (the hash covers the dataset's full path and every
    parameter, so two datasets with the same folder name never share a folder)."""
    ds = next((v for k, v in sorted(parameters.items(), key=lambda kv: kv[0] == "LABELS")
               if DATASET_PARAM.match(k) and v), None)
    if ds is None:
        slug = "defaults"
    else:
        first = ds if isinstance(ds, str | Path) else ds[0]
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(first).name) or "dataset"
    digest = hashlib.sha256(repr(sorted((k, str(v)) for k, v in parameters.items())).encode()).hexdigest()[:8]
    return checkout_root(start) / "runs" / "reports" / f"{Path(notebook).stem}--{slug}-{digest}"


def inject_parameters(nb, parameters: dict[str, Any]):
    """Return ``nb`` with an ``injected-parameters`` cell after the ``parameters`` cell
    (or first, if none is tagged). Values are converted to the parameters' declared
    types first (:func:`typed_parameters`) and written with ``repr``.

    Raises:
        ParameterError: an undeclared name or a value not of the declared type.
    """
    import nbformat

    parameters = typed_parameters(nb, parameters)
    src = "# Parameters injected by scarce-lab\n" + "".join(f"{k} = {v!r}\n" for k, v in parameters.items())
    cell = nbformat.v4.new_code_cell(src, metadata={"tags": ["injected-parameters"]})
    i = _parameters_index(nb)
    nb.cells.insert(0 if i is None else i + 1, cell)
    return nb


def execute_notebook(
    notebook: str | Path,
    parameters: dict[str, Any] | None = None,
    output: str | Path | None = None,
    timeout_s: int = 1800,
    cwd: str | Path | None = None,
) -> Path:
    """Run ``notebook`` with ``parameters`` and write the executed copy to ``output``.

    Cells run with the working directory ``cwd`` (default: the notebook's folder, as in
    JupyterLab and nbmake). The kernel's ``PYTHONPATH`` starts with the notebook's
    checkout, so it runs that checkout's ``scarce_lab``. Chart outputs keep only their
    static image in the written copy.

    Raises:
        FileNotFoundError: the notebook does not exist.
        ValueError: the file is not a readable notebook (the message names it).
        nbclient.exceptions.CellExecutionError: a cell failed (its traceback is in the
            message; the executed copy is written all the same).
    """
    import nbformat
    from nbclient import NotebookClient

    from .analysis.figures import static_outputs

    path = find_notebook(str(notebook))
    nb = read_notebook(path)
    if parameters:
        nb = inject_parameters(nb, parameters)
    out = Path(output) if output else path.with_name(path.stem + ".executed.ipynb")
    env = dict(os.environ)
    root = checkout_root(path.parent)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(root), env.get("PYTHONPATH", "")) if x)
    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd or path.parent)}},
        # the kernel process's own log (e.g. ipykernel's warning that its local TCP
        # sockets are unencrypted) is not the notebook's output: errors only
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    try:
        client.execute(env=env)
    finally:
        static_outputs(nb)
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
    return out
