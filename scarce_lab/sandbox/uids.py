"""Unprivileged uids for workers, never reused while a process of them lives.

Each worker (and each grading box) runs as its own uid from a range no account uses
(default 1,000,000 to 1,999,999; ``SCARCE_LAB_UID_BASE`` moves it). A uid is leased
with an exclusive ``flock`` on ``/run/scarce_lab/uids/<uid>`` held by the owning
process (the kernel releases it if that process dies), and only when no process on
the machine runs under it. The sandbox releases a lease only after the worker's
teardown was verified, so a uid is never handed out while one of its processes lives.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from dataclasses import dataclass

from .base import SandboxError

__all__ = ["UidLease", "lease_uid", "live_uids"]

UID_SPAN = 1_000_000
LOCK_DIR = "/run/scarce_lab/uids"
_lock = threading.Lock()
_cursor = [0]


def _base() -> int:
    raw = os.environ.get("SCARCE_LAB_UID_BASE", "1000000")
    try:
        base = int(raw)
    except ValueError:
        raise SandboxError(f"SCARCE_LAB_UID_BASE must be an integer, got {raw!r}") from None
    if not 65536 < base < 2**31 - UID_SPAN:
        raise SandboxError(f"SCARCE_LAB_UID_BASE must be in (65536, {2**31 - UID_SPAN}), got {base}")
    return base


def live_uids() -> set[int]:
    """Real, effective, saved and filesystem uids of every live process on the machine
    (zombies, which run nothing and are only waiting to be reaped, are left out)."""
    out: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                        break
                    if line.startswith("Uid:"):
                        out.update(int(x) for x in line.split()[1:])
                        break
        except (OSError, ValueError, IndexError):
            continue
    return out


@dataclass
class UidLease:
    """A leased uid (also used as its gid). :meth:`release` after verified teardown."""

    uid: int
    fd: int

    def release(self, timeout_s: float = 5.0) -> None:
        """Give the uid back once no process runs under it (processes killed a moment
        ago may still be exiting). Raises SandboxError, keeping the lease, if one still
        lives after ``timeout_s``."""
        if self.fd < 0:
            return
        end = time.monotonic() + timeout_s
        while self.uid in live_uids():
            if time.monotonic() > end:
                raise SandboxError(f"uid {self.uid} still has live processes after {timeout_s} s; not releasing it")
            time.sleep(0.01)
        os.close(self.fd)
        self.fd = -1


def lease_uid() -> UidLease:
    """Lease a fresh uid (see module docstring). Raises SandboxError if none is free."""
    base = _base()
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    busy = live_uids()
    with _lock:
        start = _cursor[0]
        for i in range(UID_SPAN):
            k = (start + i) % UID_SPAN
            uid = base + k
            if uid in busy:
                continue
            fd = os.open(os.path.join(LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _cursor[0] = k + 1
            return UidLease(uid, fd)
    raise SandboxError(f"no free uid in [{base}, {base + UID_SPAN})")
