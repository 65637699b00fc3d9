"""The seccomp filter every bubblewrap command runs under (``bwrap --seccomp FD``).

A small classic-BPF program, like the part of Docker's default profile that matters
here (the docker backend gets that profile from the engine):

- ``add_key``, ``request_key``, ``keyctl``: refused (EPERM). Kernel keyrings are not
  namespaced by bubblewrap: a key one worker makes world-readable would be a channel to
  another worker, and would outlive the sandbox.
- ``unshare`` and ``clone`` with ``CLONE_NEWUSER``: refused (EPERM); ``clone3``: ENOSYS
  (its flags cannot be inspected; libc then falls back to ``clone``). A user namespace
  would give the worker a full capability set of its own: the entry point of most
  kernel privilege escalations.
- a system call of another ABI (x32 on x86-64) or another architecture: refused.
- everything else: allowed.

The program is built with :mod:`struct` from the kernel's documented constants
(``linux/seccomp.h``, ``linux/filter.h``, ``linux/audit.h``); ``tests/security/``
checks each rule from inside a sandbox.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import struct

# classic BPF (linux/filter.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
# seccomp (linux/seccomp.h)
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_KILL_PROCESS = 0x80000000
# seccomp_data offsets
_NR, _ARCH, _ARG0 = 0, 4, 16
CLONE_NEWUSER = 0x10000000

#: machine -> (AUDIT_ARCH, syscall numbers)
_ARCHES = {
    "x86_64": (0xC000003E, {"add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "clone": 56,
                            "clone3": 435}),
    "aarch64": (0xC00000B7, {"add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97, "clone": 220,
                             "clone3": 435}),
}
_X32_BIT = 0x40000000


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None) -> bytes:
    """The BPF program for ``machine`` (default: this one) as bytes.

    Raises:
        RuntimeError: an architecture this module has no syscall table for.
    """
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise RuntimeError(f"no seccomp syscall table for {machine!r} (known: {sorted(_ARCHES)})")
    audit_arch, nr = _ARCHES[machine]
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    denied = [nr["add_key"], nr["request_key"], nr["keyctl"]]
    prog: list[bytes] = []
    # 0-1: the architecture must be ours
    prog.append(_ins(_LD_W_ABS, 0, 0, _ARCH))
    prog.append(_ins(_JEQ_K, 1, 0, audit_arch))
    prog.append(_ins(_RET_K, 0, 0, _KILL_PROCESS))
    # the syscall number; another ABI's numbers (x32) are refused
    prog.append(_ins(_LD_W_ABS, 0, 0, _NR))
    if machine == "x86_64":
        prog.append(_ins(_JGE_K, 0, 1, _X32_BIT))
        prog.append(_ins(_RET_K, 0, 0, eperm))
    for n in denied:
        prog.append(_ins(_JEQ_K, 0, 1, n))
        prog.append(_ins(_RET_K, 0, 0, eperm))
    prog.append(_ins(_JEQ_K, 0, 1, nr["clone3"]))
    prog.append(_ins(_RET_K, 0, 0, enosys))
    # unshare(flags) and clone(flags, ...): refuse CLONE_NEWUSER
    prog.append(_ins(_JEQ_K, 1, 0, nr["unshare"]))
    prog.append(_ins(_JEQ_K, 0, 3, nr["clone"]))
    prog.append(_ins(_LD_W_ABS, 0, 0, _ARG0))
    prog.append(_ins(_JSET_K, 0, 1, CLONE_NEWUSER))
    prog.append(_ins(_RET_K, 0, 0, eperm))
    prog.append(_ins(_RET_K, 0, 0, _ALLOW))
    return b"".join(prog)


def filter_fd() -> int:
    """A fresh readable file descriptor holding :func:`filter_program` (for
    ``bwrap --seccomp FD``; bwrap reads it once). The caller closes it."""
    fd = os.memfd_create("scarce_lab-seccomp", 0)
    data = filter_program()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
