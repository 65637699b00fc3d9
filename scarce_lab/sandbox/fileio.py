"""Host-side file I/O on a worker's folder that never follows a link the worker controls.

The worker owns its folder and may, from inside the sandbox, swap any file or folder
for a symbolic link, a FIFO or a deep chain of folders at any moment. The host (root)
therefore never resolves a path string in that folder. Every operation starts from a
directory fd opened on the folder itself and walks one component at a time with
``openat``: folders with ``O_DIRECTORY | O_NOFOLLOW``, the final file with
``O_NOFOLLOW | O_NONBLOCK`` and an ``fstat`` check that it is a regular file. A link,
a FIFO, a socket or a folder where a file should be is a :class:`ToolError`; so is a
path that is empty, absolute, leaves the folder, holds a NUL byte, has a component
over 255 bytes or is over 4096 bytes, and a file that vanishes midway. Nothing here
raises anything but :class:`ToolError` for a worker-made condition.

Files the host writes get the owner of the folder (the worker's uid) through
``fchown`` on the open fd, so no tree-wide ``chown`` is ever needed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FileData", "Listing", "ToolError", "copy_tree", "install_exec_only",
    "list_files", "read_file", "split_path", "write_file",
]

NAME_MAX = 255
PATH_MAX = 4096
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class ToolError(ValueError):
    """A file operation refused or failed for a reason the worker can cause (bad path,
    link, not a regular file, vanished, too large, no space). The message names the
    path; the runner returns it to the agent as the tool's result."""


@dataclass(frozen=True)
class FileData:
    """Bytes read (at most the limit asked for), the file's full size in bytes, its
    owner uid, mode bits and modification time (ns)."""

    data: bytes
    size: int
    uid: int
    mode: int
    mtime_ns: int


@dataclass
class Listing:
    """Regular files found (relative posix paths, sorted) and what was skipped
    (``notes``: too deep, too many entries, vanished entries)."""

    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _oserror(rel: str, exc: OSError) -> ToolError:
    why = {
        errno.ELOOP: "is a symbolic link (links are not followed)",
        errno.ENOTDIR: "goes through something that is not a folder",
        errno.ENOENT: "does not exist",
        errno.ENAMETOOLONG: "is too long",
        errno.ENXIO: "is not a regular file",
        errno.ENOSPC: "no space left in your folder (its size is limited)",
        errno.EDQUOT: "no space left in your folder (its size is limited)",
        errno.EISDIR: "is a folder",
        errno.EEXIST: "already exists",
        errno.EFBIG: "file too large",
    }.get(exc.errno, exc.strerror or str(exc))
    return ToolError(f"path: {rel!r} {why}")


def split_path(rel: str) -> list[str]:
    """Components of a path relative to the worker's folder.

    Raises:
        ToolError: empty, NUL byte, absolute, leaves the folder, a component over
            255 bytes or the whole over 4096 bytes.
    """
    if not isinstance(rel, str) or not rel.strip():
        raise ToolError(f"path: empty ({rel!r})")
    if "\x00" in rel:
        raise ToolError(f"path: {rel!r} contains a NUL byte")
    raw = rel.encode("utf-8", "surrogateescape")
    if len(raw) > PATH_MAX:
        raise ToolError(f"path: {rel[:80]!r}... is too long ({len(raw)} bytes, limit {PATH_MAX})")
    if rel.startswith("/"):
        raise ToolError(f"path: {rel!r} is outside your folder (absolute paths are not allowed)")
    norm = posixpath.normpath(rel)
    if norm == ".":
        raise ToolError(f"path: {rel!r} names your folder itself, not a file")
    parts = norm.split("/")
    if parts[0] == "..":
        raise ToolError(f"path: {rel!r} is outside your folder")
    for p in parts:
        if len(p.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise ToolError(f"path: {rel[:80]!r} has a component that is too long (limit {NAME_MAX} bytes)")
    return parts


def _open_root(root: str | Path) -> int:
    try:
        return os.open(str(root), _DIR_FLAGS)
    except OSError as exc:
        raise ToolError(f"your folder is not available: {exc.strerror}") from None


def _walk(rootfd: int, parts: list[str], rel: str, *, create: bool = False,
          owner: tuple[int, int] | None = None) -> int:
    """fd of the folder ``parts`` (relative to ``rootfd``); creates missing ones if asked."""
    fd = os.dup(rootfd)
    try:
        for p in parts:
            try:
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(p, 0o755, dir_fd=fd)
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
                if owner is not None:
                    os.fchown(nfd, *owner)
            os.close(fd)
            fd = nfd
        return fd
    except OSError as exc:
        os.close(fd)
        raise _oserror(rel, exc) from None


@contextmanager
def _regular_file(root: str | Path, rel: str, flags: int, *,
                  write: bool = False) -> Iterator[tuple[int, os.stat_result]]:
    """``rel`` under ``root`` walked without following a link and opened with ``flags``
    (and ``_FILE_FLAGS``): yields its fd and ``fstat``. With ``write`` missing folders
    are made and the file is given the folder's owner. An OSError in the block becomes
    a ToolError naming ``rel``.

    Raises:
        ToolError: bad path, link, not a regular file, missing, unreadable.
    """
    parts = split_path(rel)
    rootfd = _open_root(root)
    try:
        st_root = os.fstat(rootfd)
        owner = (st_root.st_uid, st_root.st_gid)
        dfd = _walk(rootfd, parts[:-1], rel, create=write, owner=owner if write else None)
        try:
            fd = os.open(parts[-1], flags | _FILE_FLAGS, 0o600, dir_fd=dfd)
        except OSError as exc:
            raise _oserror(rel, exc) from None
        finally:
            os.close(dfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"path: {rel!r} is not a regular file")
            if write:
                os.fchown(fd, *owner)
            yield fd, st
        except OSError as exc:
            raise _oserror(rel, exc) from None
        finally:
            os.close(fd)
    finally:
        os.close(rootfd)


def read_file(root: str | Path, rel: str, limit: int = 1 << 20) -> FileData:
    """Read at most ``limit`` bytes of the regular file ``rel`` (see module docstring).

    Raises:
        ToolError: bad path, link, not a regular file, missing, unreadable.
    """
    with _regular_file(root, rel, os.O_RDONLY) as (fd, st):
        chunks, got = [], 0
        while got < limit:
            b = os.read(fd, min(1 << 20, limit - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return FileData(b"".join(chunks), st.st_size, st.st_uid, stat.S_IMODE(st.st_mode), st.st_mtime_ns)


def write_file(root: str | Path, rel: str, data: bytes, *, executable: bool = False) -> int:
    """Write ``data`` to ``rel`` (missing folders created), owned by the folder's owner.

    An existing regular file is replaced in place; a link, FIFO or folder at ``rel``
    is refused. Mode 0755 when ``executable`` else 0644. Returns ``len(data)``.

    Raises:
        ToolError: bad path, link, not a regular file, no space left.
    """
    with _regular_file(root, rel, os.O_WRONLY | os.O_CREAT, write=True) as (fd, _st):
        os.fchmod(fd, 0o755 if executable else 0o644)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    return len(data)


def install_exec_only(root: str | Path, name: str, src: str | Path) -> None:
    """Put a root-owned, mode 0711 copy of the host file ``src`` at ``name`` in the
    folder: the worker can execute it but not read its bytes (an unreadable executable
    also runs non-dumpable, so ``/proc/<pid>/exe`` and ptrace *memory* reads are
    refused; non-dumpable does not stop a tracer attached before the exec from using
    registers, which is why the sandbox's seccomp filter refuses ``ptrace`` itself,
    :mod:`.seccomp`). Whatever the
    worker left under that name is removed first (unlinked, never followed).

    Raises:
        ToolError: ``name`` is not a plain file name; FileNotFoundError: ``src`` missing.
    """
    parts = split_path(name)
    if len(parts) != 1:
        raise ToolError(f"exec-only file name {name!r} must be a plain file name")
    payload = Path(src).read_bytes()
    rootfd = _open_root(root)
    try:
        try:
            os.unlink(name, dir_fd=rootfd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            raise ToolError(f"path: {name!r} is a folder") from None
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o700, dir_fd=rootfd)
        try:
            os.fchown(fd, 0, 0)
            os.write(fd, payload)
            os.fchmod(fd, 0o711)
        finally:
            os.close(fd)
    finally:
        os.close(rootfd)


def _scan(rootfd: int, *, max_depth: int, max_entries: int, skip: tuple[str, ...], skip_dot: bool,
          notes: list[str]):
    """Yield (relpath, dirfd, name, lstat) for regular files, depth first, walking fds
    only (at most ``max_depth`` folder fds open at once)."""

    def names_of(fd: int, prefix: str):
        try:
            return iter(sorted(os.listdir(fd)))
        except OSError as exc:
            notes.append(f"{prefix or '.'}: not listed ({exc.strerror})")
            return iter(())

    frames = [("", os.dup(rootfd), names_of(rootfd, ""))]
    seen = 0
    try:
        while frames:
            prefix, dfd, it = frames[-1]
            name = next(it, None)
            if name is None:
                os.close(dfd)
                frames.pop()
                continue
            seen += 1
            if seen > max_entries:
                notes.append(f"stopped after {max_entries} entries")
                return
            if (prefix == "" and name in skip) or (skip_dot and name.startswith(".")):
                continue
            rel = f"{prefix}{name}"
            try:
                st = os.lstat(name, dir_fd=dfd)
            except OSError:
                notes.append(f"{rel}: vanished")
                continue
            if stat.S_ISDIR(st.st_mode):
                if len(frames) >= max_depth:
                    notes.append(f"{rel}/: deeper than {max_depth} levels, not listed")
                    continue
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    notes.append(f"{rel}/: vanished or replaced")
                    continue
                frames.append((rel + "/", nfd, names_of(nfd, rel)))
            elif stat.S_ISREG(st.st_mode):
                yield rel, dfd, name, st
    finally:
        for _, fd, _ in frames:
            os.close(fd)


def list_files(root: str | Path, *, max_depth: int = 32, max_entries: int = 5000,
               skip: tuple[str, ...] = (".tmp",)) -> Listing:
    """Regular files under ``root`` (relative posix paths, sorted); links are listed
    neither as files nor followed. Never raises for what the worker made; a missing
    folder is a :class:`ToolError`."""
    out = Listing()
    rootfd = _open_root(root)
    try:
        for rel, _dfd, _name, _st in _scan(rootfd, max_depth=max_depth, max_entries=max_entries,
                                           skip=skip, skip_dot=False, notes=out.notes):
            out.files.append(rel)
    finally:
        os.close(rootfd)
    out.files.sort()
    return out


def copy_tree(src_root: str | Path, dest_root: str | Path, *, max_depth: int = 64) -> int:
    """Copy the folders and regular files of ``src_root`` into the (existing, trusted)
    folder ``dest_root``, keeping modification times; links, FIFOs and sockets are
    skipped, nothing is followed. Returns the number of files copied."""
    notes: list[str] = []
    n = 0
    rootfd = _open_root(src_root)
    try:
        for rel, dfd, name, st in _scan(rootfd, max_depth=max_depth, max_entries=1_000_000,
                                        skip=(), skip_dot=False, notes=notes):
            try:
                fd = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=dfd)
            except OSError:
                continue
            try:
                target = Path(dest_root, rel)
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with open(target, "wb") as out:
                        while chunk := os.read(fd, 1 << 20):
                            out.write(chunk)
                    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
                    os.chmod(target, stat.S_IMODE(st.st_mode) & 0o755)
                    n += 1
                except OSError:  # e.g. a path too long for the host to recreate
                    continue
            finally:
                os.close(fd)
    finally:
        os.close(rootfd)
    return n
