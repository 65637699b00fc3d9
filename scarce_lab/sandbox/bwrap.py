"""The command line of one sandboxed command: bubblewrap namespaces + an unprivileged uid.

Every command runs as::

    bwrap --unshare-pid --unshare-ipc --unshare-net --unshare-uts --unshare-cgroup-try
          --die-with-parent --new-session  <root built from an allowlist>
          --cap-add CAP_SETUID --cap-add CAP_SETGID --
      setpriv --reuid U --regid U --clear-groups --inh-caps=-all --bounding-set=-all
              --no-new-privs -- <argv>

The root (see :func:`bwrap_argv`): ``/usr`` read-only (and the merged-``/usr``
links ``/bin``, ``/lib``...), a few read-only files of ``/etc`` (:data:`ETC_ALLOW`)
plus a generated ``passwd``/``group``, a fresh ``/proc`` of the new pid namespace,
a minimal ``/dev``, size-limited tmpfs on ``/tmp``, ``/var/tmp``, ``/run`` and
``/dev/shm``, and the worker's folder read-write. Nothing else of the host exists in
it: not the checkout, not ``.git``, not ``~/.cache``, not any run's output folder,
not ``/var/cache``. Hidden paths that lie under a bound folder (the shipped suite
when the package is installed under ``/usr``) are covered by an empty read-only tmpfs.
Execute-only copies of original programs are bound read-only over their paths.

bwrap runs as root without a user namespace, so the uid drop needs setpriv (bwrap's
``--uid`` needs a user namespace, which would make the worker's files root's on the
host). ``--die-with-parent`` ends bwrap's own outer process with the harness, but it
does *not* reach the command: the credential change of ``setpriv`` clears the
parent-death signal, and the command is pid 1 of its namespace, which a parent-death
SIGKILL cannot kill even when set again. What kills a worker's processes when the
harness dies is the sandbox's :class:`.cgroups.Guardian` (a cgroup kill). The pid
namespace dies with its first process, taking every process of the command with it. The
command itself is that first process (``--as-pid-1``): bwrap's own reaper process
leaves a pids-cgroup charge that the kernel releases only seconds later, which made
rapid commands (a grading's tests) fail to fork at the worker's process limit.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess

__all__ = ["ETC_ALLOW", "BwrapSpec", "bwrap_argv", "bwrap_problem"]

ETC_ALLOW = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
    "/etc/localtime", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/mime.types",
    "/etc/perl", "/etc/ssl", "/etc/timezone", "/etc/debian_version", "/etc/os-release",
    *sorted(glob.glob("/etc/java-*")), *sorted(glob.glob("/etc/python3*")),
)
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class BwrapSpec:
    """Everything that varies between commands (host paths unless said otherwise).

    workdir: the worker's folder (bound read-write at the same path).
    cwd: where the command starts (inside ``workdir``).
    uid: the worker's uid (also its gid).
    env: the complete environment of the command.
    etc_dir: folder with the generated ``passwd`` and ``group``.
    exec_only: sandbox path -> host file bound read-only over it (execute-only copies
        of the original program, or the grading tripwire).
    binds: sandbox path -> host path bound read-write (e.g. the tripwire's socket).
    hidden: folders covered by an empty read-only tmpfs where they are visible.
    tmp_bytes: size of each tmpfs (/tmp, /var/tmp, /run, /dev/shm).
    proc_masks: ``/proc`` path -> host file bound read-only over it (host-wide
        values such as the boot id and the load, :meth:`.hostroot.HostRoot._write_proc`).
    tmp_dir: a root-owned host folder holding ``tmp``, ``var_tmp``, ``shm`` and
        ``lock`` (mode 1777), bound at ``/tmp``, ``/var/tmp``, ``/dev/shm`` and
        ``/run/lock`` instead of bwrap's own tmpfs (grading boxes: the grader watches
        that file system for executions, :class:`scarce_lab.tasks.anticheat.ExecGuard`).
    """

    def __init__(self, *, workdir: str, cwd: str, uid: int, env: dict[str, str], etc_dir: str,
                 exec_only: dict[str, str] | None = None, binds: dict[str, str] | None = None,
                 hidden: tuple[str, ...] = (), tmp_bytes: int = 64 << 20,
                 proc_masks: dict[str, str] | None = None, tmp_dir: str | None = None):
        self.workdir, self.cwd, self.uid, self.env, self.etc_dir = workdir, cwd, uid, env, etc_dir
        self.exec_only = dict(exec_only or {})
        self.binds = dict(binds or {})
        self.hidden = tuple(hidden)
        self.tmp_bytes = int(tmp_bytes)
        self.proc_masks = dict(proc_masks or {})
        self.tmp_dir = tmp_dir


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@functools.cache
def _static_root() -> tuple[list[str], tuple[str, ...]]:
    """The part of the root that never changes: (args, bound folders)."""
    args = ["--ro-bind", "/usr", "/usr"]
    bound = ["/usr"]
    for d in MERGED_USR:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            bound.append(d)
    args += ["--perms", "0755", "--dir", "/etc"]
    for p in ETC_ALLOW:
        if os.path.exists(p):
            args += ["--ro-bind", p, p]
            bound.append(p)
    return args, tuple(bound)


def bwrap_argv(spec: BwrapSpec, argv: list[str], seccomp_fd: int | None = None, *, box: bool = False) -> list[str]:
    """The full command line for ``argv`` under ``spec`` (see module docstring);
    ``seccomp_fd`` holds the :mod:`.seccomp` filter the command runs under (the caller
    passes it to the child and closes it). ``box``: ``argv`` is a worker box's zygote
    (:mod:`.zygote`), which stays root (it keeps ``CAP_SETUID``/``CAP_SETGID`` only)
    and drops each command to the worker's uid itself; no ``--die-with-parent`` (that signal comes when
    the *thread* that started bwrap ends; the zygote ends with the harness's socket)."""
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin") or "bwrap"
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin") or "/usr/bin/setpriv"
    static, bound = _static_root()
    size = str(spec.tmp_bytes)
    out = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
           "--unshare-cgroup-try", "--hostname", "sandbox", *([] if box else ["--die-with-parent"]),
           "--new-session", "--as-pid-1",
           *static,
           "--ro-bind", os.path.join(spec.etc_dir, "passwd"), "/etc/passwd",
           "--ro-bind", os.path.join(spec.etc_dir, "group"), "/etc/group",
           "--proc", "/proc", "--dev", "/dev"]
    if spec.tmp_dir is None:
        out += ["--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
                "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                "--perms", "1777", "--size", size, "--tmpfs", "/var/tmp",
                "--perms", "0755", "--size", size, "--tmpfs", "/run",
                "--perms", "1777", "--dir", "/run/lock"]
    else:
        t = spec.tmp_dir
        out += ["--bind", f"{t}/shm", "/dev/shm", "--bind", f"{t}/tmp", "/tmp", "--bind", f"{t}/var_tmp", "/var/tmp",
                "--perms", "0755", "--size", size, "--tmpfs", "/run", "--bind", f"{t}/lock", "/run/lock"]
    made: set[str] = {"/run", "/tmp", "/dev", "/proc", "/etc"}
    for dest, src in sorted(spec.proc_masks.items()):
        out += ["--ro-bind", src, dest]

    def parents(dest: str) -> list[str]:
        """Create the missing parents of ``dest`` traversable (bwrap's default is 0700)."""
        todo, p = [], os.path.dirname(dest)
        while p not in ("/", "") and p not in made and not any(_under(p, b) for b in bound):
            todo.append(p)
            p = os.path.dirname(p)
        args = []
        for d in reversed(todo):
            made.add(d)
            args += ["--perms", "0755", "--dir", d]
        return args

    for h in spec.hidden:
        if any(_under(h, b) for b in bound) and os.path.isdir(h):
            out += ["--perms", "0755", "--size", "4096", "--tmpfs", h, "--remount-ro", h]
    for dest, src in sorted(spec.exec_only.items()):
        if any(_under(dest, b) for b in bound) and not os.path.exists(dest):
            continue  # nothing there to cover (bwrap cannot create files in read-only binds)
        out += [*parents(dest), "--ro-bind", src, dest]
    out += [*parents(spec.workdir), "--bind", spec.workdir, spec.workdir]
    for dest, src in sorted(spec.binds.items()):
        out += [*parents(dest), "--bind", src, dest]
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    out += ["--chdir", spec.cwd, "--clearenv"]
    for k, v in spec.env.items():
        out += ["--setenv", k, v]
    out += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
    if box:
        return out + argv
    return out + [setpriv, f"--reuid={spec.uid}", f"--regid={spec.uid}", "--clear-groups", "--inh-caps=-all",
                  "--bounding-set=-all", "--no-new-privs", "--", *argv]


@functools.cache
def bwrap_problem() -> str:
    """Why the bubblewrap backend cannot run here ('' when it can): needs root,
    ``bwrap`` and ``setpriv`` on the machine, and a probe command that works."""
    if os.geteuid() != 0:
        return ("the local sandbox runs workers as their own uids and needs root "
                f"(euid is {os.geteuid()})")
    if shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap, or run scripts/install.sh as root)"
    if shutil.which("setpriv", path="/usr/bin:/bin") is None:
        return "setpriv (util-linux) is not installed"
    import tempfile

    d = tempfile.mkdtemp(prefix="scarce-probe-")
    try:
        for name in ("passwd", "group"):
            with open(os.path.join(d, name), "w") as f:
                f.write("")
        os.chmod(d, 0o755)
        spec = BwrapSpec(workdir=d, cwd=d, uid=65534, env={"PATH": "/usr/bin:/bin"}, etc_dir=d)
        r = subprocess.run(bwrap_argv(spec, ["/bin/sh", "-c", "test -d /proc/self && id -u"]),
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or r.stdout.strip() != "65534":
            return f"bwrap probe failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[:300]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap probe failed: {exc}"
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return ""
