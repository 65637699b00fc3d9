"""The harness's one way to write a run folder: every file is created, appended to,
replaced or removed under a descriptor of the folder itself, never through a link.

Rules (docs/threat_model.md, "A copied run folder"):

- The run folder's last path component must be a real folder: a symbolic link (or a
  file, a FIFO) planted where the run folder goes is refused (``O_NOFOLLOW |
  O_DIRECTORY``); the folders above it are the user's choice and may be links.
- Each file is opened relative to that descriptor with ``O_NOFOLLOW`` (and
  ``O_NONBLOCK``, so a FIFO cannot block the harness) and must be a regular file
  (``fstat``); a replacement is a temporary file created with ``O_EXCL`` and renamed
  over the name under the same descriptor, so a link planted at a run file's name is
  never followed: the harness (root, say) never appends to or truncates another file.
- :func:`check_run_folder` refuses a folder the harness would write into when a run
  file's name holds anything but a regular file (a link, a FIFO, a folder) and, for a
  folder that holds no run yet (no ``manifest.json``), when it holds anything that is
  no file of a run: the harness did not create it. The error names the path and what
  was found.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import weakref
from collections.abc import Iterable
from pathlib import Path

from .jsonl import describe, repair_fd, write_all

__all__ = ["RunFolder", "RunFolderError", "check_run_folder", "describe"]

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
#: a temporary file of :meth:`RunFolder.replace` (``.<name>.<pid>.tmp``), left by a killed writer
_TMP = re.compile(r"^\.[^/]+\.\d+\.tmp$")


class RunFolderError(FileExistsError):
    """A run folder (or a file in it) is not what the harness made: a link, a FIFO, a
    folder where a file should be, or files of something else. The message names the
    path and what was found there."""


def _found(name: str, dir_fd: int) -> str:
    st = os.lstat(name, dir_fd=dir_fd)
    target = os.readlink(name, dir_fd=dir_fd) if stat.S_ISLNK(st.st_mode) else None
    return describe(st.st_mode, target)


def check_run_folder(dir_fd: int, path: Path, run_files: Iterable[str], *, manifest: str) -> None:
    """Refuse the open run folder ``dir_fd`` (at ``path``) when a name in ``run_files``
    holds anything but a regular file, or, when ``manifest`` is absent (no run yet),
    when it holds an entry that is no run file (nor a temporary file of a killed
    writer).

    Raises:
        RunFolderError: naming the entry's path and what it is.
    """
    run_files = set(run_files)
    names = os.listdir(dir_fd)
    fresh = manifest not in names
    for name in sorted(names):
        st = os.lstat(name, dir_fd=dir_fd)
        if name in run_files or _TMP.match(name):
            if not stat.S_ISREG(st.st_mode):
                raise RunFolderError(f"{path / name}: found {_found(name, dir_fd)} where the run's file should be; "
                                     "the harness writes only regular files it created (remove it, or choose "
                                     "another output folder)")
        elif fresh:
            raise RunFolderError(f"{path}: holds {name!r} ({_found(name, dir_fd)}), which is no file of a run: the "
                                 "harness did not create this folder and will not write into it (choose an empty "
                                 "or new output folder)")


class RunFolder:
    """A run folder opened by descriptor (see the module docstring): the recorder's
    and the writer lock's only way to its files. Closed by :meth:`close` (or when
    collected)."""

    def __init__(self, path: Path, fd: int):
        self.path, self.fd = Path(path), fd
        self._closer = weakref.finalize(self, _close_quietly, fd)

    @classmethod
    def open(cls, path: str | Path, run_files: Iterable[str], *, manifest: str, create: bool) -> RunFolder:
        """Open (``create``: make it first if missing, and its parents) the run folder
        ``path`` without following a link at its last component, then
        :func:`check_run_folder` it.

        Raises:
            RunFolderError: ``path`` is a link or not a folder, or holds what a run does not.
            FileNotFoundError: it does not exist and ``create`` is false.
        """
        path = Path(path)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        pfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path.name, 0o755, dir_fd=pfd)
            try:
                fd = os.open(path.name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=pfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RunFolderError(f"{path}: found {_found(path.name, pfd)} where the run folder should be; "
                                         "the harness writes only into a folder it made") from None
                raise
        finally:
            os.close(pfd)
        folder = cls(path, fd)
        try:
            check_run_folder(fd, path, run_files, manifest=manifest)
        except BaseException:
            folder.close()
            raise
        return folder

    def close(self) -> None:
        self._closer()

    # -- files ----------------------------------------------------------------------
    def open_file(self, name: str, flags: int, mode: int = 0o644) -> int:
        """The one opener: ``name`` in this folder, never through a link, and only a
        regular file, which for writing has no other hard link (``O_NONBLOCK`` is
        cleared once that is known).

        Raises:
            RunFolderError: ``name`` is a link, a FIFO, a folder, a device, or a file
                to write with another hard link.
            FileNotFoundError: missing and ``flags`` lacks ``O_CREAT``.
        """
        try:
            fd = os.open(name, flags | _NOFOLLOW, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK):
                raise RunFolderError(f"{self.path / name}: found {_found(name, self.fd)} where the run's file "
                                     "should be; the harness writes only regular files it created") from None
            raise
        st = os.fstat(fd)
        linked = st.st_nlink > 1 and flags & (os.O_WRONLY | os.O_RDWR)  # a hard link: writing changes another name too
        if not stat.S_ISREG(st.st_mode) or linked:
            os.close(fd)
            what = f"a file with {st.st_nlink} hard links" if linked and stat.S_ISREG(st.st_mode) else describe(st.st_mode)
            raise RunFolderError(f"{self.path / name}: found {what} where the run's file should be; "
                                 "the harness writes only regular files it created")
        os.set_blocking(fd, True)
        return fd

    def exists(self, name: str) -> bool:
        try:
            os.lstat(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        return True

    def read(self, name: str) -> bytes | None:
        """The bytes of regular file ``name`` (``None`` when missing)."""
        try:
            fd = self.open_file(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def touch(self, name: str) -> None:
        os.close(self.open_file(name, os.O_WRONLY | os.O_CREAT))

    def unlink(self, name: str) -> None:
        """Remove ``name`` if present (a link is removed, never its target)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def append(self, name: str, blob: bytes) -> None:
        """Append ``blob`` (whole JSON lines) durably: a torn last line is repaired
        first (kept with its ``\\n`` when it is a complete JSON object, else dropped
        with a :class:`~.jsonl.TornLineWarning`), one ``O_APPEND`` write loop, ``fsync``."""
        fd = self.open_file(name, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            self._repair_tail(fd, name)
            write_all(fd, [blob])
        finally:
            os.close(fd)

    def replace(self, name: str, blob: bytes | Iterable[bytes]) -> None:
        """Replace ``name`` with ``blob`` (bytes, or chunks of them) atomically and
        durably: a new temporary file
        (``O_EXCL``), fsync, rename over ``name`` under this folder's descriptor (a
        rename replaces a link, never its target), fsync of the folder."""
        tmp = f".{name}.{os.getpid()}.tmp"
        self.unlink(tmp)
        fd = self.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            write_all(fd, [blob] if isinstance(blob, bytes) else blob)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        with contextlib.suppress(OSError):
            os.fsync(self.fd)

    def _repair_tail(self, fd: int, name: str) -> None:
        repair_fd(fd, self.path / name)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
