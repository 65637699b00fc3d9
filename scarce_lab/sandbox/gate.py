"""The one gate for what the harness reads of a worker's folder.

A worker controls everything in its folder: sizes (sparse files cost it no space but
cost a reader their nominal size), counts, names (any bytes but ``/`` and NUL, not
necessarily UTF-8, with control characters, up to 255 bytes a component and any
depth) and the shape of the tree (links, FIFOs, folders swapped midway). Every place
where the harness takes something out of a worker's folder goes through this module:

=========================  =========================================  ============
caller                     what                                       budget
=========================  =========================================  ============
grading: collect           the submission (``tasks.grading``)         SUBMISSION
grading: build scan        what the build left (checked for copies)   BUILD_OUTPUT
runner: checkpoint         the worker's files between commands        CHECKPOINT
runner/solver: listing     names shown in prompts and the read_file   LISTING
                           path enum (``agents.scarce.tools``)
=========================  =========================================  ============

Rules, the same for every caller (:class:`Budget`):

* **Bytes**: a file is charged its *nominal* size (``st_size``) before a byte is read,
  so a sparse file costs what reading it would cost; a file over ``file_bytes`` is
  left out unread; when the sum would pass ``total_bytes`` reading stops and
  :attr:`Gathered.over_budget` says so. Reads never ask for more than what is left of
  the budget (+1 byte to see growth), so a file growing while read is cut, not followed.
* **Counts**: at most ``files`` files are read and ``entries`` folder entries looked
  at (the rest is left out, counted); folders deeper than ``depth`` are not entered.
* **Names** (:func:`name_problem`): a path must be valid UTF-8, free of control
  characters, each component at most 255 bytes and the whole at most ``path_bytes``
  (far below ``PATH_MAX``, so whatever is gathered can be written again, into a
  grading box or on resume). Other names are left out and counted, never raised.
* Links, FIFOs, sockets and devices are never followed or read (:mod:`.fileio`).

What the caller does with an over-budget folder is its rule, and never a crash: a
submission or build output over budget is a violation of that worker (score 0, the
reason recorded); a checkpoint drops what is over budget from the live folder too
(the worker is told), so a resumed run has exactly the folder the interrupted one had;
a listing shows the first names and "and N more".
"""

from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from . import fileio

__all__ = ["BUILD_OUTPUT", "CHECKPOINT", "LISTING", "SUBMISSION", "Budget", "Gathered", "Shown", "gather",
           "listing", "name_problem", "remove"]

NOTES_KEPT = 20  # left-out notes kept verbatim (the rest are counted)


@dataclass(frozen=True)
class Budget:
    """What the harness may take out of one worker folder in one pass.

    total_bytes: bytes charged over all files (nominal sizes, so sparse files count).
    file_bytes: largest file read (larger ones are left out unread).
    files: files read at most. entries: folder entries looked at at most.
    depth: folder levels entered at most. path_bytes: longest relative path (bytes).
    """

    total_bytes: int
    file_bytes: int
    files: int
    entries: int = 20_000
    depth: int = 32
    path_bytes: int = 1024

    def __post_init__(self) -> None:
        for name in ("total_bytes", "file_bytes", "files", "entries", "depth", "path_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Budget.{name} must be an integer > 0, got {v!r}")
        if self.path_bytes > fileio.PATH_MAX:
            raise ValueError(f"Budget.path_bytes must be <= {fileio.PATH_MAX}, got {self.path_bytes}")


#: the submission collected for grading (grading then keeps at most 200 files, 2 MB of
#: sources; ELF files are read to be checked for the original's bytes)
SUBMISSION = Budget(total_bytes=64 << 20, file_bytes=8 << 20, files=800)
#: what the build left in the grading box (every new or changed file is checked)
BUILD_OUTPUT = Budget(total_bytes=128 << 20, file_bytes=64 << 20, files=800)
#: a worker's folder in a checkpoint (written at every commit, for every worker)
CHECKPOINT = Budget(total_bytes=16 << 20, file_bytes=8 << 20, files=2000)
#: names shown to a solver (prompt, ``list_files`` result, ``read_file``'s path enum)
LISTING = Budget(total_bytes=1, file_bytes=1, files=50, entries=20_000, depth=8, path_bytes=200)


def name_problem(rel: str, path_bytes: int = 1024) -> str | None:
    """Why the relative path ``rel`` (as ``os.listdir`` gives it: undecodable bytes as
    surrogates) may not cross into the harness, or ``None``."""
    try:
        raw = rel.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in rel):
        return "its name holds control characters"
    if len(raw) > path_bytes:
        return f"its path is {len(raw)} bytes long (limit {path_bytes})"
    if any(len(p.encode()) > fileio.NAME_MAX for p in rel.split("/")):
        return f"a component of its name is over {fileio.NAME_MAX} bytes"
    return None


def _safe(rel: str) -> str:
    """``rel`` for a note: printable ASCII escapes only, at most 80 characters."""
    return ascii(rel)[1:-1][:80]


@dataclass
class Gathered:
    """Files taken out of a folder: ``files`` (path -> bytes), ``meta`` (path -> (uid,
    mode, atime_ns, mtime_ns)), ``left_out`` (the first notes, names escaped),
    ``left_out_count`` (all of them), ``dropped`` (regular files left out for size,
    count, budget or name: the paths a checkpoint removes), ``over_budget`` (why
    reading stopped, or None), ``bytes_charged``."""

    files: dict[str, bytes] = field(default_factory=dict)
    meta: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    left_out_count: int = 0
    dropped: list[str] = field(default_factory=list)
    over_budget: str | None = None
    bytes_charged: int = 0

    def note(self, text: str) -> None:
        self.left_out_count += 1
        if len(self.left_out) < NOTES_KEPT:
            self.left_out.append(text)


def gather(root: str | Path, budget: Budget, *, skip_dot: bool = True, owner_only: bool = False,
           skip: tuple[str, ...] = ()) -> Gathered:
    """Read the regular files under ``root`` within ``budget`` (module docstring).

    skip_dot: leave out dot-files and dot-folders. owner_only: only files owned by the
    folder's owner (leaves out the root-owned execute-only original). skip: top-level
    names left out silently (e.g. ``.tmp``).

    Raises:
        fileio.ToolError: ``root`` itself is missing or not a folder (nothing else).
    """
    out = Gathered()
    notes: list[str] = []
    rootfd = fileio._open_root(root)
    try:
        owner = os.fstat(rootfd).st_uid
        for rel, dfd, name, st in fileio._scan(rootfd, max_depth=budget.depth, max_entries=budget.entries,
                                               skip=skip, skip_dot=skip_dot, notes=notes):
            if owner_only and st.st_uid != owner:
                continue
            bad = name_problem(rel, budget.path_bytes)
            if bad:
                out.note(f"{_safe(rel)}: {bad}")
                out.dropped.append(rel)
                continue
            if st.st_size > budget.file_bytes:
                out.note(f"{_safe(rel)}: {st.st_size} bytes is over {budget.file_bytes}")
                out.dropped.append(rel)
                continue
            if len(out.files) >= budget.files:
                out.note(f"{_safe(rel)}: more than {budget.files} files")
                out.dropped.append(rel)
                continue
            if out.over_budget or out.bytes_charged + st.st_size > budget.total_bytes:
                out.over_budget = out.over_budget or (
                    f"over the harness's read budget of {budget.total_bytes} bytes "
                    f"(at {_safe(rel)}: {out.bytes_charged} + {st.st_size} bytes; sparse files count "
                    "at their full size)")
                out.note(f"{_safe(rel)}: over the read budget")
                out.dropped.append(rel)
                continue
            limit = min(budget.file_bytes, budget.total_bytes - out.bytes_charged)
            data, fst = _read(dfd, name, limit)
            if data is None:
                out.note(f"{_safe(rel)}: vanished or replaced")
                continue
            out.bytes_charged += max(st.st_size, len(data))
            if len(data) > limit:
                out.note(f"{_safe(rel)}: grew while read")
                out.dropped.append(rel)
                continue
            out.files[rel] = data
            out.meta[rel] = (fst.st_uid, stat.S_IMODE(fst.st_mode), fst.st_atime_ns, fst.st_mtime_ns)
    finally:
        os.close(rootfd)
    for n in notes:
        out.note(_safe(n) if n.isascii() else ascii(n)[1:81])
    return out


def _read(dfd: int, name: str, limit: int) -> tuple[bytes | None, os.stat_result | None]:
    """At most ``limit + 1`` bytes of regular file ``name`` in ``dfd`` (never following
    a link), with its fstat; ``(None, None)`` when it vanished or is no regular file."""
    try:
        fd = os.open(name, os.O_RDONLY | fileio._FILE_FLAGS, dir_fd=dfd)
    except OSError:
        return None, None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            return None, None
        chunks, got = [], 0
        while got <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks), fst
    except OSError:
        return None, None
    finally:
        os.close(fd)


@dataclass
class Shown:
    """A bounded listing: ``names`` (sorted, at most ``budget.files``, each passing
    :func:`name_problem`), ``more`` (regular files not shown, bad names included),
    ``bad_names`` (how many of those have names that may not be shown)."""

    names: list[str] = field(default_factory=list)
    more: int = 0
    bad_names: int = 0

    def tail(self) -> str:
        """``"and N more"`` text for the names not shown ('' when none)."""
        if not self.more:
            return ""
        why = f"; {self.bad_names:,} with names that are not shown (not UTF-8, control characters or too long)" \
            if self.bad_names else ""
        return f"and {self.more:,} more{why}"


def listing(root: str | Path, budget: Budget = LISTING, *, skip: tuple[str, ...] = (".tmp",)) -> Shown:
    """The names of regular files under ``root`` a solver may be shown (module
    docstring): the first ``budget.files`` good names in sorted order, the rest counted.
    Never raises for what the worker made; a missing folder is an empty listing."""
    out = Shown()
    good: list[str] = []
    notes: list[str] = []
    try:
        rootfd = fileio._open_root(root)
    except fileio.ToolError:
        return out
    try:
        for rel, _dfd, _name, _st in fileio._scan(rootfd, max_depth=budget.depth, max_entries=budget.entries,
                                                  skip=skip, skip_dot=False, notes=notes):
            if name_problem(rel, budget.path_bytes):
                out.bad_names += 1
            else:
                good.append(rel)
    finally:
        os.close(rootfd)
    good.sort()
    out.names = good[:budget.files]
    out.more = len(good) - len(out.names) + out.bad_names
    return out


def remove(root: str | Path, rels: list[str]) -> int:
    """Unlink each regular file ``rels`` (relative paths from :func:`gather`) under
    ``root`` without following links; returns how many were removed. Never raises for
    what the worker made (a vanished or replaced file is skipped)."""
    n = 0
    try:
        rootfd = fileio._open_root(root)
    except fileio.ToolError:
        return 0
    try:
        for rel in rels:
            parts = rel.split("/")
            try:
                dfd = fileio._walk(rootfd, parts[:-1], rel)
            except fileio.ToolError:
                continue
            try:
                st = os.lstat(parts[-1], dir_fd=dfd)
                if stat.S_ISREG(st.st_mode):
                    os.unlink(parts[-1], dir_fd=dfd)
                    n += 1
            except OSError:
                pass
            finally:
                os.close(dfd)
    finally:
        os.close(rootfd)
    return n
