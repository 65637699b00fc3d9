"""Execute a numbered notebook headless with papermill-style parameters.

The notebook's first cell tagged ``parameters`` holds defaults; :func:`execute_notebook`
inserts a cell tagged ``injected-parameters`` right after it (papermill's convention)
with the overrides, runs every cell with nbclient and writes the executed copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO_ROOT / "notebooks"


def project_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) that
    holds ``pyproject.toml``; notebooks use it so that ``data/...`` and ``figures/``
    resolve the same in JupyterLab, under nbmake and from the CLI.

    Raises:
        FileNotFoundError: no such folder above ``start``.
    """
    here = Path(start or Path.cwd()).resolve()
    for p in [here, *here.parents]:
        if (p / "pyproject.toml").exists() and (p / "scarce_lab").is_dir():
            return p
    raise FileNotFoundError(f"no scarce_lab project root (pyproject.toml) at or above {here}")


def find_notebook(name: str) -> Path:
    """Resolve ``name`` (a path, a file name, or a number prefix such as ``01``).

    Raises:
        FileNotFoundError: nothing matches; the message lists the notebooks there are.
    """
    p = Path(name)
    if p.is_file():
        return p
    if p.exists():
        raise FileNotFoundError(f"notebook {name!r} is not a file")
    matches = sorted(NOTEBOOKS.glob(f"{name}*.ipynb")) if NOTEBOOKS.exists() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise FileNotFoundError(f"notebook {name!r} is ambiguous: {', '.join(m.name for m in matches)}")
    have = ", ".join(x.name for x in sorted(NOTEBOOKS.glob("*.ipynb"))) or "none"
    raise FileNotFoundError(f"notebook {name!r} not found (notebooks: {have})")


def inject_parameters(nb, parameters: dict[str, Any]):
    """Return ``nb`` with an ``injected-parameters`` cell after the ``parameters`` cell
    (or first, if none is tagged). Values are written with ``repr``."""
    import nbformat

    src = "# Parameters injected by scarce-lab\n" + "".join(
        f"{k} = {v!r}\n" for k, v in parameters.items()
    )
    cell = nbformat.v4.new_code_cell(src, metadata={"tags": ["injected-parameters"]})
    idx = 0
    for i, c in enumerate(nb.cells):
        if "parameters" in c.get("metadata", {}).get("tags", []):
            idx = i + 1
            break
    nb.cells.insert(idx, cell)
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
    JupyterLab and nbmake; notebooks resolve paths with :func:`project_root`).

    Raises:
        FileNotFoundError: the notebook does not exist.
        ValueError: the file is not a readable notebook (the message names it).
        nbclient.exceptions.CellExecutionError: a cell failed (its traceback is in the
            message).
    """
    import nbformat
    from nbclient import NotebookClient

    path = find_notebook(str(notebook))
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - NotJSONError, validation, decoding errors
        raise ValueError(f"{path}: not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
    if parameters:
        nb = inject_parameters(nb, parameters)
    out = Path(output) if output else path.with_name(path.stem + ".executed.ipynb")
    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd or path.parent)}},
    )
    try:
        client.execute()
    finally:
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
    return out
