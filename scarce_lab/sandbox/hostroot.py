"""The host side of a sandbox: a private root-owned folder, size-limited worker folders.

Layout of one sandbox root (mode 0700, owned by root, by default under
``/run/scarce_lab/sandboxes/``: never under a run's output folder or a checkout)::

    <root>/owner.lock      flock held by the owning process (stale roots are reaped)
    <root>/etc/<worker>/   generated passwd and group of one worker's sandboxes: root,
                           nobody and the worker itself, never the other
                           workers or grading boxes (who has submitted is strategic)
    <root>/programs/       execute-only (0711, root) launchers of original programs, and
                           hidden/ (0711) with the originals under random names
    <root>/<worker>/       one tmpfs per worker: size and inode limits, mode 0700,
                           owned by the worker's uid (bound into its sandbox)

A worker folder is its own tmpfs (``size=``, ``nr_inodes=``, ``strictatime`` so that
grading sees which files were read), so filling it ends at its size, hard links to
anything outside are impossible (another filesystem), and removing it is an
unmount, whatever the worker built inside (deep trees, millions of files).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import secrets
import shutil
import tempfile
import weakref
from pathlib import Path

from . import fileio
from .base import SandboxError
from .launcher import HIDDEN_DIR, launcher_problem, make_launcher

__all__ = ["HostRoot", "default_base_dir", "reap_stale_roots"]

_MS_NOSUID, _MS_NODEV, _MS_STRICTATIME = 2, 4, 1 << 24
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


def default_base_dir() -> Path:
    """Where sandbox roots go: ``/run/scarce_lab/sandboxes`` (0700) as root, else the
    system temp folder."""
    if os.geteuid() == 0:
        d = Path("/run/scarce_lab/sandboxes")
        d.mkdir(parents=True, exist_ok=True)
        os.chmod("/run/scarce_lab", 0o700)
        os.chmod(d, 0o700)
        return d
    return Path(tempfile.gettempdir())


def _mount_tmpfs(path: Path, *, size: int, inodes: int, uid: int, mode: int = 0o700) -> None:
    data = f"size={int(size)},nr_inodes={int(inodes)},mode={mode:o},uid={uid},gid={uid}"
    rc = _libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_STRICTATIME,
                     data.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"cannot mount a tmpfs on {path} ({data}): {os.strerror(err)}")


def _umount(path: Path) -> None:
    _libc.umount2(str(path).encode(), _MNT_DETACH)


def _mounts_under(root: Path) -> list[Path]:
    prefix = str(root).rstrip("/") + "/"
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(prefix):
                out.append(Path(mp))
    return sorted(out, key=lambda p: -len(str(p)))


def reap_stale_roots(base: Path) -> int:
    """Unmount and delete sandbox roots under ``base`` whose owner process is gone
    (their ``owner.lock`` is free). Returns how many were removed."""
    n = 0
    for d in base.glob("scarce-sbx-*"):
        lock = d / "owner.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            for mp in _mounts_under(d):
                _umount(mp)
            shutil.rmtree(d, ignore_errors=True)
            n += 1
        finally:
            os.close(fd)
    return n


def _unmount_all(path: Path, owned: bool) -> None:
    with contextlib.suppress(OSError):
        for mp in _mounts_under(path):
            _umount(mp)
    if owned:
        shutil.rmtree(path, ignore_errors=True)


class HostRoot:
    """A sandbox's private host folder (see module docstring).

    Args:
        root: use this folder (kept at :meth:`close`, worker folders copied back as
            plain files); default a fresh ``scarce-sbx-*`` under :func:`default_base_dir`.
        tmpfs: give each worker a size-limited tmpfs (needs root).
    """

    def __init__(self, root: str | Path | None = None, *, tmpfs: bool = True):
        self.owned = root is None
        self.tmpfs = tmpfs
        if root is None:
            base = default_base_dir()
            with contextlib.suppress(OSError):
                reap_stale_roots(base)
            self.path = Path(tempfile.mkdtemp(prefix="scarce-sbx-", dir=base))
        else:
            self.path = Path(root).resolve()
            self.path.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path, 0o700 if tmpfs else 0o711)
        self._lock_fd = os.open(self.path / "owner.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self.etc = self.path / "etc"
        self.etc.mkdir(exist_ok=True)
        self.programs = self.path / "programs"
        self.programs.mkdir(exist_ok=True)
        os.chmod(self.programs, 0o700)
        self.hidden = self.programs / "hidden"
        self.proc_masks = self._write_proc()
        self.launcher_note = ""
        self._users: dict[str, int] = {}
        self._mounted: set[Path] = set()
        self._copies: dict[str, str] = {}
        self.write_users()
        # a sandbox dropped without close() (or an interpreter exiting) unmounts anyway
        self._finalizer = weakref.finalize(self, _unmount_all, self.path, self.owned)

    def write_users(self, users: dict[str, int] | None = None) -> None:
        """Write ``etc/passwd`` and ``etc/group`` (root and nobody only) and, for each
        worker of ``users`` (name -> uid), ``etc/<name>/passwd`` and ``group`` holding
        root, nobody and that worker (a grading box ``grade-N`` as ``grader``: its number
        would count the gradings so far): a sandbox lists no other worker."""
        base_pw = ["root:x:0:0:root:/root:/bin/sh", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"]
        base_gr = ["root:x:0:", "nogroup:x:65534:"]
        todo = [(self.etc, base_pw, base_gr)]
        for name, uid in sorted((users or {}).items()):
            self._users[name] = uid
            d = self.etc / name
            d.mkdir(mode=0o755, exist_ok=True)
            shown = "grader" if name.startswith("grade-") else name  # a box's number counts gradings
            todo.append((d, [*base_pw, f"{shown}:x:{uid}:{uid}:{shown}:/nonexistent:/bin/sh"],
                         [*base_gr, f"{shown}:x:{uid}:"]))
        for d, pw, gr in todo:
            for fname, lines in (("passwd", pw), ("group", gr)):
                tmp = d / f".{fname}.new"
                tmp.write_text("\n".join(lines) + "\n")
                os.chmod(tmp, 0o644)
                os.replace(tmp, d / fname)

    def _write_proc(self) -> dict[str, str]:
        """Files bound over host-wide ``/proc`` entries in every sandbox: a boot id of
        this sandbox's own (the host's identifies the machine and its reboots), a
        constant load and uptime (the host's load shows what other workers and
        gradings are doing). Returns sandbox path -> host file."""
        import uuid

        d = self.path / "proc"
        d.mkdir(mode=0o755, exist_ok=True)
        os.chmod(d, 0o755)
        out = {}
        for name, dest, text in (("boot_id", "/proc/sys/kernel/random/boot_id", f"{uuid.uuid4()}\n"),
                                 ("loadavg", "/proc/loadavg", "0.00 0.00 0.00 1/1 1\n"),
                                 ("uptime", "/proc/uptime", "1000.00 1000.00\n")):
            (d / name).write_text(text)
            os.chmod(d / name, 0o444)
            out[dest] = str(d / name)
        return out

    def users_dir(self, name: str) -> Path:
        """The folder of ``name``'s generated ``passwd``/``group`` (:meth:`write_users`)."""
        return self.etc / name if name in self._users else self.etc

    def drop_users(self, name: str) -> None:
        """Forget ``name``'s generated files (the worker was dropped)."""
        if self._users.pop(name, None) is not None:
            shutil.rmtree(self.etc / name, ignore_errors=True)

    def make_folder(self, name: str, *, uid: int, size: int, inodes: int) -> Path:
        """A fresh folder ``<root>/<name>`` owned by ``uid`` (a tmpfs when enabled),
        with an empty ``.tmp`` inside."""
        d = self.path / name
        d.mkdir(mode=0o700)
        if self.tmpfs:
            _mount_tmpfs(d, size=size, inodes=inodes, uid=uid)
            self._mounted.add(d)
        else:
            os.chmod(d, 0o700)
        tmp = d / ".tmp"
        tmp.mkdir()
        if os.geteuid() == 0:
            os.chown(d, uid, uid)
            os.chown(tmp, uid, uid)
        return d

    def drop_folder(self, d: Path, *, keep: bool = False) -> None:
        """Remove a worker folder (unmount); with ``keep`` its files are first copied
        back as plain files into the folder underneath."""
        if d in self._mounted:
            saved = None
            if keep:
                saved = Path(tempfile.mkdtemp(prefix=".keep-", dir=self.path))
                with contextlib.suppress(fileio.ToolError, OSError):
                    fileio.copy_tree(d, saved)
            _umount(d)
            self._mounted.discard(d)
            if saved is not None:
                for child in saved.iterdir():
                    shutil.move(str(child), str(d / child.name))
                shutil.rmtree(saved, ignore_errors=True)
                return
        if not keep:
            shutil.rmtree(d, ignore_errors=True)

    def exec_only_copy(self, src: str | Path) -> str:
        """Host path of what a worker may run as the original ``src``: a static
        launcher of a hidden execute-only copy (:mod:`.launcher`), or, where no
        launcher can be built, a plain root-owned 0711 copy (``self.launcher_note``
        says so). Made once per real path. Sandboxes bind :attr:`hidden` at
        :data:`.launcher.HIDDEN_DIR`."""
        real = os.path.realpath(src)
        if real not in self._copies:
            hidden = self.hidden
            hidden.mkdir(exist_ok=True)
            os.chmod(hidden, 0o711)  # traversable, not listable: the name is the secret
            # a random folder name is the secret; the file keeps the program's name, so
            # the running process's visible name (/proc/<pid>/comm) is the program's
            token = secrets.token_hex(16)
            (hidden / token).mkdir(mode=0o711)
            os.chmod(hidden / token, 0o711)
            base = os.path.basename(real)
            shutil.copyfile(real, hidden / token / base)
            os.chmod(hidden / token / base, 0o711)
            d = self.programs / str(len(self._copies))
            d.mkdir()
            dst = d / base
            data = make_launcher(f"{HIDDEN_DIR}/{token}/{base}")
            if data is None:
                self.launcher_note = f"original runs unwrapped (LD_PRELOAD applies): {launcher_problem()}"
                shutil.copyfile(real, dst)
            else:
                dst.write_bytes(data)
            os.chown(dst, 0, 0)
            os.chmod(dst, 0o711)
            self._copies[real] = str(dst)
        return self._copies[real]

    def close(self) -> None:
        """Unmount what is left; delete the root when this object created it."""
        self._finalizer.detach()
        for mp in _mounts_under(self.path):
            _umount(mp)
        self._mounted.clear()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                (self.path / "owner.lock").unlink()
            shutil.rmtree(self.etc, ignore_errors=True)
            shutil.rmtree(self.programs, ignore_errors=True)
            shutil.rmtree(self.path / "proc", ignore_errors=True)
