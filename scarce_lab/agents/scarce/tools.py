"""The solver's free file tools, confined to the worker's own folder.

``list_files``, ``read_file`` and ``write_file`` cost no slot. Paths are relative to
the folder; a path that escapes it (``..``, absolute paths, symlinks out) raises
:class:`ToolError`, which the runner returns to the solver as the tool's result.
"""

from __future__ import annotations

from pathlib import Path

READ_LIMIT = 4000  # characters returned by read_file
WRITE_LIMIT = 200_000  # bytes accepted by write_file
HIDDEN = {".tmp"}


class ToolError(ValueError):
    """A tool call that cannot be carried out (bad path, too large)."""


def safe_path(root: Path, rel: str) -> Path:
    """Resolve ``rel`` inside ``root``.

    Raises:
        ToolError: empty path or a path outside ``root``.
    """
    if not rel or not str(rel).strip():
        raise ToolError("path: empty")
    if "\x00" in str(rel):
        raise ToolError(f"path: {rel!r} contains a NUL byte")
    root = Path(root).resolve()
    try:
        p = (root / rel).resolve()
    except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
        raise ToolError(f"path: {rel!r}: {exc}") from None
    if p != root and root not in p.parents:
        raise ToolError(f"path: {rel!r} is outside your folder")
    return p


def list_files(root: Path) -> list[str]:
    """Relative paths of regular files in ``root`` (sorted, hidden scratch dirs skipped)."""
    root = Path(root)
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not (set(rel.parts) & HIDDEN):
            out.append(str(rel))
    return out


def read_file(root: Path, rel: str, limit: int = READ_LIMIT) -> str:
    """Text of a file (first ``limit`` characters); binary files are summarised.

    Raises:
        ToolError: bad path or missing file.
    """
    p = safe_path(root, rel)
    try:
        if not p.is_file():
            raise ToolError(f"path: {rel!r} is not a file")
        data = p.read_bytes()
    except OSError as exc:  # name too long, permission denied...
        raise ToolError(f"path: {rel!r}: {exc.strerror}") from None
    if b"\x00" in data[:4096]:
        return f"<binary file, {len(data)} bytes>"
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + f"\n<... {len(text) - limit} more characters>"


def write_file(root: Path, rel: str, content: str, limit: int = WRITE_LIMIT) -> int:
    """Write ``content`` to ``rel`` (parents created); returns bytes written.

    Raises:
        ToolError: bad path or content over ``limit`` bytes.
    """
    data = str(content).encode("utf-8", "replace")  # a lone surrogate becomes '?'
    if len(data) > limit:
        raise ToolError(f"content: {len(data)} bytes is over the {limit}-byte limit")
    p = safe_path(root, rel)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    except OSError as exc:  # name too long, a file where a folder should be...
        raise ToolError(f"path: {rel!r}: {exc.strerror}") from None
    if rel.endswith(".sh"):
        p.chmod(0o755)
    return len(data)
