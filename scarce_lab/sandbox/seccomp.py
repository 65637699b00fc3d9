"""The seccomp rules every worker command runs under, for both backends.

One table (:data:`DENIED`, :data:`DENIED_NEWUSER`, :data:`ENOSYS`) is the only place the
rules are written; :func:`filter_program` turns it into the classic-BPF program of the
local backend (``bwrap --seccomp FD``) and :func:`docker_profile` into the JSON profile
the docker backend passes as ``security_opt=["seccomp=..."]`` (Docker's own default
profile allows ``ptrace`` since engine 19.03, so the engine's default is not enough).

Refused with ``EPERM`` (:data:`DENIED`), and why:

- ``ptrace``, ``process_vm_readv``, ``process_vm_writev``: the original program runs
  execute-only, and the kernel refuses *memory* access to a non-dumpable process; but
  a tracer attached before the exec (``PTRACE_TRACEME`` in a child, then exec of the
  launcher) stays attached through the exec, and register access alone is enough to
  make the tracee write its own memory to a file. Refusing ``ptrace`` itself
  closes every ptrace route (seccomp user notification, the other tracer: below): ``PTRACE_TRACEME``, ``PTRACE_ATTACH``/``SEIZE``
  (``strace -p``, ``gdb -p``) and ``strace``/``gdb`` starting the program.
  Cost: a worker cannot use ``gdb``/``strace`` on its own programs either.
- ``kcmp``, ``pidfd_getfd``: compare or copy another process's file descriptors (ptrace
  access checks only); no build or test needs them.
- ``perf_event_open``, ``bpf``, ``userfaultfd``, ``io_uring_setup``/``_enter``/
  ``_register``: kernel attack surface and timing side channels that Docker's default
  profile also refuses; compilers, interpreters and JVMs run without them.
- ``add_key``, ``request_key``, ``keyctl``: kernel keyrings are not namespaced: a key
  one worker makes world-readable would be a channel to another, and outlive the slot.
- ``open_by_handle_at``: opens files by handle around mount boundaries (the "shocker"
  escape); needs ``CAP_DAC_READ_SEARCH``, which workers lack, refused anyway.

``seccomp`` with ``SECCOMP_FILTER_FLAG_NEW_LISTENER`` in its flags (:data:`DENIED_LISTENER`):
``EPERM``. A worker's own filter with a listener (seccomp user notification) stays on
the launcher and the original through their execs and is a tracer by another route:
its supervisor saw every system call of the original with its arguments, could fake
any result (seen in review: ``rev``'s ``write`` answered "done" with nothing written)
and, with ``SECCOMP_IOCTL_NOTIF_ADDFD``, could answer the loader's ``openat`` of
``libc.so.6`` with a file of its own, the ``LD_PRELOAD`` the launcher removes. Filters
without a listener stay allowed (their ``SECCOMP_RET_TRAP`` handlers do not survive
an exec, ``SECCOMP_RET_TRACE`` needs ``ptrace``).

``unshare`` and ``clone`` with ``CLONE_NEWUSER`` (:data:`DENIED_NEWUSER`): ``EPERM``; a user
namespace would give the worker a full capability set of its own, the entry point of
most kernel privilege escalations. ``clone3`` (:data:`ENOSYS`): ``ENOSYS`` (its flags
sit behind a pointer seccomp cannot read; libc then falls back to ``clone``).
``inotify_init``/``inotify_init1`` (:data:`ENOSYS`): ``/usr`` is the host's, shared by
every sandbox, and inotify watches an inode, not a mount: a watch on ``/usr/bin`` saw
which compilers, interpreters and programs another worker (or a grading box) opened.
Tools that use inotify fall back to polling (``tail -f``) or are not needed to build.
A system call of another ABI (x32 on x86-64) or another architecture: refused.
Everything else: allowed.

The program is built with :mod:`struct` from the kernel's documented constants
(``linux/seccomp.h``, ``linux/filter.h``, ``linux/audit.h``); syscall numbers from
``asm/unistd_64.h`` (x86-64) and ``asm-generic/unistd.h`` (aarch64).
``tests/security/test_tracing.py`` and ``test_kernel_surface.py`` check each rule
from inside a sandbox of each backend.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import platform
import struct

__all__ = ["DENIED", "DENIED_LISTENER", "DENIED_NEWUSER", "ENOSYS", "GRADING_ENOSYS", "docker_profile", "filter_fd",
           "filter_program"]

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
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # arguments: low 32 bits (little-endian machines)
CLONE_NEWUSER = 0x10000000
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3  # linux/seccomp.h

#: refused with EPERM (module docstring says why, one by one)
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "perf_event_open",
          "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "add_key",
          "request_key", "keyctl", "open_by_handle_at")
#: refused with EPERM when their first argument has CLONE_NEWUSER
DENIED_NEWUSER = ("unshare", "clone")
#: refused with EPERM when their second argument (flags) has SECCOMP_FILTER_FLAG_NEW_LISTENER
DENIED_LISTENER = ("seccomp",)
#: answered ENOSYS (callers fall back: libc to ``clone``, ``tail -f`` to polling)
ENOSYS = ("clone3", "inotify_init", "inotify_init1")
#: also answered ENOSYS in grading boxes: an anonymous file could be executed without
#: ever lying on a file system the grader watches (:class:`scarce_lab.tasks.anticheat.ExecGuard`)
GRADING_ENOSYS = ("memfd_create",)

#: machine -> (AUDIT_ARCH, syscall numbers, docker's architecture names)
_ARCHES = {
    "x86_64": (0xC000003E, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438,
        "perf_event_open": 298, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "add_key": 248, "request_key": 249, "keyctl": 250, "open_by_handle_at": 304,
        "unshare": 272, "clone": 56, "clone3": 435, "inotify_init": 253, "inotify_init1": 294,
        "memfd_create": 319, "seccomp": 317},
        ("SCMP_ARCH_X86_64",)),
    "aarch64": (0xC00000B7, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438,
        "perf_event_open": 241, "bpf": 280, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "add_key": 217, "request_key": 218, "keyctl": 219, "open_by_handle_at": 265,
        "unshare": 97, "clone": 220, "clone3": 435, "inotify_init1": 26, "memfd_create": 279, "seccomp": 277},
        ("SCMP_ARCH_AARCH64",)),
}
_X32_BIT = 0x40000000


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None, grading: bool = False) -> bytes:
    """The BPF program for ``machine`` (default: this one) as bytes; ``grading`` adds
    :data:`GRADING_ENOSYS` (grading boxes).

    Raises:
        RuntimeError: an architecture this module has no syscall table for.
    """
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise RuntimeError(f"no seccomp syscall table for {machine!r} (known: {sorted(_ARCHES)})")
    audit_arch, nr, _ = _ARCHES[machine]
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
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
    for name in DENIED:
        prog.append(_ins(_JEQ_K, 0, 1, nr[name]))
        prog.append(_ins(_RET_K, 0, 0, eperm))
    for name in (*ENOSYS, *(GRADING_ENOSYS if grading else ())):
        if name not in nr:  # e.g. aarch64 has no inotify_init (only inotify_init1)
            continue
        prog.append(_ins(_JEQ_K, 0, 1, nr[name]))
        prog.append(_ins(_RET_K, 0, 0, enosys))
    # seccomp(op, flags, args): refuse a filter with a user-notification listener
    prog.append(_ins(_JEQ_K, 0, 4, nr[DENIED_LISTENER[0]]))
    prog.append(_ins(_LD_W_ABS, 0, 0, _ARG1))
    prog.append(_ins(_JSET_K, 0, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER))
    prog.append(_ins(_RET_K, 0, 0, eperm))
    prog.append(_ins(_RET_K, 0, 0, _ALLOW))
    # unshare(flags) and clone(flags, ...): refuse CLONE_NEWUSER
    a, b = (nr[n] for n in DENIED_NEWUSER)
    prog.append(_ins(_JEQ_K, 1, 0, a))
    prog.append(_ins(_JEQ_K, 0, 3, b))
    prog.append(_ins(_LD_W_ABS, 0, 0, _ARG0))
    prog.append(_ins(_JSET_K, 0, 1, CLONE_NEWUSER))
    prog.append(_ins(_RET_K, 0, 0, eperm))
    prog.append(_ins(_RET_K, 0, 0, _ALLOW))
    return b"".join(prog)


def filter_fd(grading: bool = False) -> int:
    """A fresh readable file descriptor holding :func:`filter_program` (for
    ``bwrap --seccomp FD``; bwrap reads it once). The caller closes it."""
    fd = os.memfd_create("scarce_lab-seccomp", os.MFD_CLOEXEC)
    data = filter_program(grading=grading)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@functools.cache
def docker_profile(machine: str | None = None, grading: bool = False) -> str:
    """The same rules as a Docker seccomp profile (JSON text for
    ``security_opt=["seccomp=<text>"]``): default allow, :data:`DENIED` -> EPERM,
    :data:`ENOSYS` (and with ``grading`` :data:`GRADING_ENOSYS`) -> ENOSYS, ``seccomp`` with a
    listener flag and ``unshare``/``clone`` with ``CLONE_NEWUSER`` -> EPERM
    (``SCMP_CMP_MASKED_EQ`` on argument 0). Format: moby ``profiles/seccomp``.

    Raises:
        RuntimeError: an architecture this module has no syscall table for.
    """
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise RuntimeError(f"no seccomp syscall table for {machine!r} (known: {sorted(_ARCHES)})")
    arches = list(_ARCHES[machine][2])
    rules = [{"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM},
             {"names": [*ENOSYS, *(GRADING_ENOSYS if grading else ())], "action": "SCMP_ACT_ERRNO",
              "errnoRet": errno.ENOSYS}]
    rules.append({"names": list(DENIED_LISTENER), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                  "args": [{"index": 1, "value": SECCOMP_FILTER_FLAG_NEW_LISTENER,
                            "valueTwo": SECCOMP_FILTER_FLAG_NEW_LISTENER, "op": "SCMP_CMP_MASKED_EQ"}]})
    for name in DENIED_NEWUSER:
        rules.append({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                      "args": [{"index": 0, "value": CLONE_NEWUSER, "valueTwo": CLONE_NEWUSER,
                                "op": "SCMP_CMP_MASKED_EQ"}]})
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "architectures": arches, "syscalls": rules})
