"""The original program is untraceable: every tracing route is
refused by the seccomp filter of both backends (:mod:`scarce_lab.sandbox.seccomp`).

The escape these close: a child calls ``PTRACE_TRACEME`` and executes the 0711
launcher; the tracer stays attached through the exec of the launcher and of the hidden
original, and register access (memory reads are refused, the process is non-dumpable)
was enough to make the original write its own memory to a file. Each route has its own
test: TRACEME then exec, ``strace`` starting the program, ``strace -p``/``gdb -p``
attaching to it, ``process_vm_readv`` on it, and the fd-stealing neighbours
(``kcmp``, ``pidfd_getfd``) plus ``perf_event_open``, and seccomp user notification
(a worker's own filter with a listener: it saw and faked every system call of the
original, rev2 review). Control: the program still runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scarce_lab.sandbox.base import ResourceLimits
from scarce_lab.tasks.workspace import prepare_worker

from .conftest import RUNNING_ORIGINAL

LIM = ResourceLimits(wall_seconds=60, cpu_seconds=60)

TRACEME_C = r"""
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
int main(void) {
    pid_t c = fork();
    if (c == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) { printf("traceme refused: %s\n", strerror(errno)); fflush(stdout); _exit(3); }
        execl("./rev", "rev", (char *)0);
        _exit(4);
    }
    int st; waitpid(c, &st, 0);
    if (WIFSTOPPED(st)) { printf("TRACED stop signal %d\n", WSTOPSIG(st)); kill(c, 9); }
    else printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
"""

SYSCALL = ("python3 -c \"import ctypes, os, sys; c = ctypes.CDLL('libc.so.6', use_errno=True); "
           "r = c.syscall({nr}, {args}); e = ctypes.get_errno(); "
           "print('{name}', 'ALLOWED' if r >= 0 else os.strerror(e))\"")


@pytest.fixture
def traced(make_sb, rev):
    sb = make_sb()
    prepare_worker(rev, sb, "w0")
    sb.open_slot("w0", 300)
    return sb


def test_traceme_then_exec_of_the_launcher_is_refused(traced):
    traced.write_file("w0", "t.c", TRACEME_C.encode())
    r = traced.run("w0", "cc -O1 -o t t.c && ./t", LIM)
    assert "TRACED" not in r.stdout, r
    assert "traceme refused: Operation not permitted" in r.stdout, r


@pytest.mark.parametrize("how", ["strace_start", "strace_attach", "gdb_attach"])
def test_debuggers_cannot_trace_the_original(traced, how):
    cmd = {
        "strace_start": "command -v strace >/dev/null || { echo NO_TOOL; exit; }; "
                        "echo abc | strace -f -o trace.txt ./rev; echo rc=$?; wc -c < trace.txt 2>/dev/null",
        "strace_attach": "command -v strace >/dev/null || { echo NO_TOOL; exit; }; "
                         f"{RUNNING_ORIGINAL}"
                         "timeout 5 strace -p $p -o trace.txt 2>&1; echo rc=$?; wc -c < trace.txt 2>/dev/null",
        "gdb_attach": "command -v gdb >/dev/null || { echo NO_TOOL; exit; }; "
                      f"{RUNNING_ORIGINAL}"
                      "timeout 20 gdb -batch -p $p -ex 'info registers rip' 2>&1 | tail -5",
    }[how]
    r = traced.run("w0", cmd, LIM)
    if "NO_TOOL" in r.stdout:
        pytest.skip(f"{how}: the tool is not in this backend's image")
    out = r.stdout + r.stderr
    assert "Operation not permitted" in out or "ptrace" in out.lower(), r
    assert "rip " not in out and "rip\t" not in out, f"gdb read a register: {r}"
    if how == "strace_start":
        assert "execve(" not in out, r


def test_process_vm_readv_of_a_running_original_is_refused(traced):
    # process_vm_readv(pid, local_iov, 1, remote_iov, 1, 0) on a live ./rev: EPERM
    cmd = (f"{RUNNING_ORIGINAL}"
           "python3 -c \"import ctypes, os, sys; c = ctypes.CDLL('libc.so.6', use_errno=True); "
           "buf = ctypes.create_string_buffer(16); "
           "iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 16); "
           "rem = (ctypes.c_void_p * 2)(0x400000, 16); "
           "r = c.syscall(310, int(sys.argv[1]), iov, 1, rem, 1, 0); "
           "print('vm_readv', 'READ' if r > 0 else os.strerror(ctypes.get_errno()))\" $p")
    r = traced.run("w0", cmd, LIM)
    assert "vm_readv Operation not permitted" in r.stdout, r


@pytest.mark.parametrize("name,nr,args", [
    ("kcmp", 312, "os.getpid(), os.getpid(), 0, 0, 1"),
    ("pidfd_getfd", 438, "0, 0, 0"),
    ("perf_event_open", 298, "0, 0, -1, -1, 0"),
    ("ptrace_traceme", 101, "0, 0, 0, 0"),
])
def test_neighbouring_syscalls_are_refused(traced, name, nr, args):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall numbers of this test are x86-64's")
    r = traced.run("w0", SYSCALL.format(nr=nr, args=args, name=name), LIM)
    assert f"{name} Operation not permitted" in r.stdout, r


def test_control_the_original_still_runs(traced):
    r = traced.run("w0", "echo abc | ./rev; echo xyz | rev", LIM)
    assert r.stdout.split() == ["cba", "zyx"], r


def test_seccomp_user_notification_on_the_original_is_refused(traced):
    """A filter with ``SECCOMP_FILTER_FLAG_NEW_LISTENER``, installed by the worker before
    it executes the launcher, stays on the original: before the fix its supervisor was
    notified of ``rev``'s ``write`` and answered it (nothing reached stdout). Now the
    listener is refused, the program's output arrives, and a filter without a listener
    still installs (control)."""
    traced.write_file("w0", "n.c", (Path(__file__).parent / "seccomp_notify.c").read_bytes())
    r = traced.run("w0", "cc -O1 -o n n.c && printf 'abc\\ndef\\n' | ./n ./rev", LIM)
    assert "NOTIFIED" not in r.stderr, r
    assert "NEW_LISTENER refused: Operation not permitted" in r.stderr, r
    assert "plain filter installed" in r.stderr, r
    assert r.stdout == "cba\nfed\n", r


EVIL_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((constructor)) static void dump(void) {
  FILE *m = fopen("/proc/self/maps", "r"); char line[512]; unsigned long total = 0;
  FILE *o = fopen("dump.bin", "w");
  while (m && fgets(line, sizeof line, m)) {
    unsigned long a, b; char perm[8], path[400] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &a, &b, perm, path) >= 3 && strstr(path, "/run/scarce/orig/")) {
      fwrite((void *)a, 1, b - a, o); total += b - a; }
  }
  fclose(o); fprintf(stderr, "EVIL dumped %lu bytes\n", total); exit(0);
}
"""


def test_the_original_cannot_name_its_hidden_path(traced):
    """The original printing its own ``/proc/self/maps`` (``./rev /proc/self/maps``) named
    its hidden path; executed directly from there, without the launcher, it loaded the
    worker's ``LD_PRELOAD`` library, which copied every mapped byte of it (rev2 review:
    20,480 bytes of rev, both backends). The launcher now confines the original's reads
    away from ``/proc`` (Landlock) before the exec. Control: it still reads the worker's
    files and the system's."""
    traced.write_file("w0", "evil.c", EVIL_C.encode())
    r = traced.run("w0", "./rev /proc/self/maps; ./rev /dev/fd/0 < docs.txt | head -c 0; ln -s /proc/self/maps m; "
                         "./rev m; P=$(./rev /proc/self/maps 2>/dev/null | rev | awk '{print $6}' | grep orig | head -1); "
                         "cc -shared -fPIC -o evil.so evil.c && [ -n \"$P\" ] && LD_PRELOAD=$PWD/evil.so $P; "
                         "test -e dump.bin && echo DUMPED", LIM)
    assert "/run/scarce/orig" not in r.stdout and "DUMPED" not in r.stdout and "EVIL" not in r.stderr, r
    assert r.stderr.count("cannot open") >= 2 and "Permission denied" in r.stderr, r
    r = traced.run("w0", "printf 'ab\\n' > t.txt; ./rev t.txt; ./rev /etc/debian_version | head -c 0; echo rc=$?", LIM)
    assert r.stdout.startswith("ba\n") and "rc=0" in r.stdout, r


def test_exhausted_landlock_layers_do_not_run_the_original_unconfined(traced):
    """The worker stacks the kernel's 16 Landlock layers itself, then runs the launcher:
    its own confinement then fails, and the original must not run without it (before:
    it ran and printed its hidden path)."""
    traced.write_file("w0", "l.c", (Path(__file__).parent / "landlock_layers.c").read_bytes())
    r = traced.run("w0", "cc -O1 -o l l.c && ./l ./rev /proc/self/maps; echo rc=$?", LIM)
    assert "layers=16" in r.stderr, r
    assert "/run/scarce/orig" not in r.stdout and "rc=126" in r.stdout, r
    assert "cannot confine the program" in r.stderr, r
    # no file descriptor left for the launcher's ruleset: refused too, not run unconfined
    r = traced.run("w0", "python3 -c \"import resource, os; resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3)); "
                         "os.execv('./rev', ['rev', '/proc/self/maps'])\"; echo rc=$?", LIM)
    assert "/run/scarce/orig" not in r.stdout and "rc=126" in r.stdout, r
    assert "cannot confine the program" in r.stderr, r
