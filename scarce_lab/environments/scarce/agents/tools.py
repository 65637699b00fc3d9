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

import re
from pathlib import Path

from scarce_lab.sandbox import fileio, gate
from scarce_lab.sandbox.fileio import ToolError

__all__ = ["HIDDEN", "READ_LIMIT", "WRITE_LIMIT", "ToolError", "list_files", "listing", "listing_note", "read_file",
           "readable_names", "write_file"]

READ_LIMIT = 4000  # characters returned by read_file
WRITE_LIMIT = 200_000  # bytes accepted by write_file
HIDDEN = (".tmp",)


def listing(root: Path) -> gate.Shown:
    """The bounded listing of ``root`` a solver is shown (:func:`scarce_lab.sandbox.gate.listing`
    with :data:`~scarce_lab.sandbox.gate.LISTING`): at most 50 names, sorted, each valid
    UTF-8 without control characters and at most 200 bytes, ``.tmp`` skipped, links
    neither listed nor followed; the rest counted (``Shown.tail()``: "and N more").
    These names are also the only paths of ``read_file``'s schema enum, so a prompt
    and a schema stay bounded whatever the worker writes."""
    return gate.listing(root, skip=HIDDEN)


_MORE = re.compile(r"^\(and [0-9,]+ more[^()]*\)$")


def readable_names(files: list[str] | tuple[str, ...]) -> list[str]:
    """The names of an observation's ``files`` that may become ``read_file``'s path
    enum and prompt text: the runner's "(and N more)" note dropped, names that fail
    :func:`scarce_lab.sandbox.gate.name_problem` dropped, at most
    ``gate.LISTING.files`` kept. Applied by the solver whatever built the observation,
    so its schema and prompt are bounded by construction."""
    out = [f for f in files if isinstance(f, str) and not _MORE.match(f)
           and gate.name_problem(f, gate.LISTING.path_bytes) is None]
    return out[:gate.LISTING.files]


def listing_note(files: list[str] | tuple[str, ...]) -> str:
    """The runner's "(and N more)" note in ``files`` ('' when there is none)."""
    return next((f for f in files if isinstance(f, str) and _MORE.match(f)), "")


def list_files(root: Path) -> list[str]:
    """The names of :func:`listing` (a missing or unusable folder gives ``[]``)."""
    return listing(root).names


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
