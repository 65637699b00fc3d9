"""The execute-only original behind a static launcher, so that it runs without the
worker's ``LD_PRELOAD`` (or other loader variables) and its real path stays unknown.

An unreadable (0711) executable cannot be read with ``cat``, ``ld.so`` or
``/proc/<pid>/exe``, and the kernel refuses ptrace memory access to it (it runs
non-dumpable). Non-dumpable is *not* untraceable: a tracer attached before the exec
(``PTRACE_TRACEME``) keeps register access through it, enough to make the process
write its own memory out; the sandbox's seccomp filter (:mod:`.seccomp`) therefore
refuses ``ptrace`` and ``process_vm_*`` to every worker process, on both backends.
And a dynamically linked program still loads whatever ``LD_PRELOAD``
names, and code loaded into the process can copy the program's own mapped pages.
So the worker never gets to execute the original directly:

* the original is copied, mode 0711, under its own name into a folder with a random
  32-hex name inside a root-owned 0711 folder bound at :data:`HIDDEN_DIR` in the
  sandbox (traversable, not listable, so the path cannot be found; the process's
  visible name in ``/proc/<pid>/comm`` is the program's own);
* what the worker sees as ``./<program>`` and ``/usr/bin/<program>`` is a *static*
  launcher (also 0711, so also non-dumpable and unreadable; static, so ``LD_PRELOAD``
  does not apply to it) that removes the loader's variables (``LD_*``, ``GCONV_PATH``,
  ``LOCPATH``, ``GLIBC_TUNABLES``...) and executes the hidden original with the same
  arguments (``argv[0]`` kept, so messages name the program as before);
* before that exec the launcher confines itself, and so the original, with Landlock
  (read files and folders anywhere but under ``/proc``): the original printing its own
  ``/proc/self/maps`` (``./rev /proc/self/maps``) named the hidden path, and executed
  from there without the launcher it loaded the worker's ``LD_PRELOAD`` library, which
  copied every mapped byte of it (both backends). Where the
  kernel has no Landlock the confinement is skipped (stated in ``docs/threat_model.md``);
  where Landlock is there but refuses (a worker that stacked the kernel's 16 layers
  itself, or left no file descriptor free), the original is not run (exit 126).

The launcher is compiled once per machine (``gcc -static``, about a second) with a
placeholder path that is patched per copy. Where it cannot be built (no compiler or
no static C library), :func:`make_launcher` returns ``None`` and callers fall back to
the plain execute-only copy, saying so (``launcher_problem``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["HIDDEN_DIR", "launcher_problem", "make_launcher"]

HIDDEN_DIR = "/run/scarce/orig"
STATE_DIR = Path("/run/scarce_lab")
PLACEHOLDER = b"@@SCARCE_LAUNCHER_TARGET@@"
SLOT = 160  # bytes reserved for the target path (NUL padded)

SOURCE = r'''
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
extern char **environ;
static const char target[%(slot)d] = "%(placeholder)s";
static const char *unsafe[] = {"LD_", "GCONV_PATH=", "GETCONF_DIR=", "HOSTALIASES=", "LOCALDOMAIN=",
    "LOCPATH=", "MALLOC_TRACE=", "NIS_PATH=", "NLSPATH=", "RESOLV_HOST_CONF=", "RES_OPTIONS=",
    "GLIBC_TUNABLES=", "TZDIR=", 0};
/* Landlock (linux/landlock.h; syscalls 444-446 on every architecture): the original may
   read files and folders anywhere but under /proc, so it cannot print its own
   /proc/self/maps (which names its hidden path). */
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
struct ll_ruleset { uint64_t handled_access_fs; };
struct ll_beneath { uint64_t allowed_access; int32_t parent_fd; } __attribute__((packed));
static int no_proc(void) {
    struct ll_ruleset ra = {LL_READ_FILE | LL_READ_DIR};
    /* LANDLOCK_CREATE_RULESET_VERSION: no Landlock here (stated in docs/threat_model.md) */
    if (syscall(444, 0, 0, 1UL) < 1) return 0;
    int rs = syscall(444, &ra, sizeof ra, 0);
    if (rs < 0) return 1;  /* there, but refused (e.g. no file descriptor left): not run */
    DIR *d = opendir("/");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "proc")) continue;
        char path[300];
        snprintf(path, sizeof path, "/%%s", e->d_name);
        int fd = open(path, O_PATH | O_CLOEXEC);
        struct stat st;
        if (fd < 0) continue;
        if (fstat(fd, &st) == 0) {
            struct ll_beneath pb = {S_ISDIR(st.st_mode) ? (LL_READ_FILE | LL_READ_DIR) : LL_READ_FILE, fd};
            syscall(445, rs, 1, &pb, 0);
        }
        close(fd);
    }
    if (d) closedir(d);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* Landlock is here but refuses (e.g. the worker stacked its 16 layers): not run */
    int bad = syscall(446, rs, 0) != 0;
    close(rs);
    return bad;
}
int main(int argc, char **argv) {
    static char *env[8192];
    int n = 0;
    (void)argc;
    for (char **e = environ; *e && n < 8191; e++) {
        int drop = 0;
        for (const char **u = unsafe; *u; u++)
            if (!strncmp(*e, *u, strlen(*u))) drop = 1;
        if (!drop) env[n++] = *e;
    }
    env[n] = 0;
    if (no_proc()) {
        fputs("launcher: cannot confine the program (Landlock refused); not run\n", stderr);
        return 126;
    }
    execve(target, argv, env);
    perror(argv[0]);
    return 126;
}
'''

_problem: list[str] = []


def _template() -> bytes | None:
    src = SOURCE % {"slot": SLOT, "placeholder": PLACEHOLDER.decode()}
    key = hashlib.sha256(src.encode()).hexdigest()[:12]
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    cached = STATE_DIR / f"launcher-{key}.bin"
    if cached.is_file():
        return cached.read_bytes()
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        _problem.append("no C compiler to build the static launcher")
        return None
    with open(STATE_DIR / "launcher.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached.is_file():
            return cached.read_bytes()
        d = Path(tempfile.mkdtemp(prefix="scarce-launcher-"))
        try:
            (d / "l.c").write_text(src)
            r = subprocess.run([cc, "-static", "-O2", "-s", "-o", str(d / "l"), str(d / "l.c")],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                _problem.append(f"building the static launcher failed: {r.stderr.strip()[-300:]}")
                return None
            data = (d / "l").read_bytes()
            if data.count(PLACEHOLDER) != 1:
                _problem.append("the launcher's placeholder is not unique in the binary")
                return None
            tmp = cached.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, cached)
            return data
        except (OSError, subprocess.SubprocessError) as exc:
            _problem.append(f"building the static launcher failed: {exc}")
            return None
        finally:
            shutil.rmtree(d, ignore_errors=True)


def launcher_problem() -> str:
    """Why launchers are not available ('' when they are)."""
    return "; ".join(dict.fromkeys(_problem))


def make_launcher(target: str) -> bytes | None:
    """The static launcher's bytes for ``target`` (a path inside the sandbox), or None
    when it cannot be built here (see :func:`launcher_problem`)."""
    raw = target.encode()
    if len(raw) >= SLOT:
        raise ValueError(f"launcher target {target!r} is longer than {SLOT - 1} bytes")
    data = _template()
    if data is None:
        return None
    i = data.index(PLACEHOLDER)
    if data[i + len(PLACEHOLDER): i + SLOT] != b"\0" * (SLOT - len(PLACEHOLDER)):
        raise ValueError("the launcher's target slot is not where it was compiled (unexpected layout)")
    return data[:i] + raw.ljust(SLOT, b"\0") + data[i + SLOT:]
