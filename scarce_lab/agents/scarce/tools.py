"""The solver's free file tools, confined to the worker's own folder.

``list_files``, ``read_file`` and ``write_file`` cost no slot. Paths are relative to
the folder. The I/O is done from the host by :mod:`scarce_lab.sandbox.fileio`, which
never follows a link the worker controls (every component opened with ``O_NOFOLLOW``
from a directory fd, regular files only) and gives written files to the folder's
owner (the worker's uid). Whatever the worker put in its folder (links, FIFOs, deep
trees, names over the system's limits, files vanishing midway), the result is either
a value or a :class:`ToolError`, which the runner returns to the solver as the tool's
result: one worker cannot end a run.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...sandbox import fileio
from ...sandbox.fileio import ToolError

__all__ = ["HIDDEN", "READ_LIMIT", "WRITE_LIMIT", "ToolError", "list_files", "read_file", "write_file"]

READ_LIMIT = 4000  # characters returned by read_file
WRITE_LIMIT = 200_000  # bytes accepted by write_file
HIDDEN = (".tmp",)


def list_files(root: Path) -> list[str]:
    """Relative paths of regular files in ``root`` (sorted; ``.tmp`` skipped; at most
    32 levels deep and 5000 entries; links are neither listed nor followed). A missing
    or unusable folder gives ``[]``.

    A name that is not UTF-8 (a worker's command made ``b'out\\xff.txt'``; Python lists
    it as ``'out\\udcff.txt'``, which cannot be encoded, so the action schema, the prompt
    and the record all failed and the run stopped) is listed with its bytes escaped
    (``'out\\\\xff.txt'``): every name an agent sees is valid UTF-8 text.
    """
    try:
        files = fileio.list_files(root, skip=HIDDEN).files
    except ToolError:
        return []
    return sorted({_shown(f) for f in files})


def _shown(name: str) -> str:
    """``name`` as valid UTF-8 text: undecodable bytes written as ``\\xNN``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def read_file(root: Path, rel: str, limit: int = READ_LIMIT) -> str:
    """Text of a regular file (first ``limit`` characters); binary files are summarised.

    Raises:
        ToolError: bad path, link, not a regular file, missing.
    """
    got = fileio.read_file(root, rel, limit=4 * limit + 4096)
    data = got.data
    if b"\x00" in data[:4096]:
        return f"<binary file, {got.size} bytes>"
    text = data.decode("utf-8", errors="replace")
    if len(text) <= limit and got.size <= len(data):
        return text
    if got.size <= len(data):
        return text[:limit] + f"\n<... {len(text) - limit} more characters>"
    return text[:limit] + f"\n<... truncated: the file has {got.size} bytes>"


def write_file(root: Path, rel: str, content: str, limit: int = WRITE_LIMIT) -> int:
    """Write ``content`` (UTF-8; a lone surrogate becomes '?') to ``rel``, parents
    created, owned by the worker; ``*.sh`` files are made executable. Returns bytes.

    Raises:
        ToolError: bad path, link or folder in the way, over ``limit`` bytes, no space.
    """
    data = str(content).encode("utf-8", "replace")
    if len(data) > limit:
        raise ToolError(f"content: {len(data)} bytes is over the {limit}-byte limit")
    return fileio.write_file(root, rel, data, executable=str(rel).endswith(".sh"))
