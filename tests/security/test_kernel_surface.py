"""Kernel surfaces bubblewrap does not namespace, closed by the seccomp filter
(:mod:`scarce_lab.sandbox.seccomp`; docker's default profile closes them the same way):
kernel keyrings (a key one worker makes world-readable is read by another worker and
outlives the sandbox) and new user namespaces (a full capability set inside, the entry
point of most kernel exploits). Found by the adversarial pass; run on both backends.
Controls: threads, fork, background jobs and a C build still work."""

from __future__ import annotations

import subprocess

from scarce_lab.sandbox.base import ResourceLimits

LIM = ResourceLimits(wall_seconds=30, cpu_seconds=30)
ADD_KEY = (
    "python3 -c \"import ctypes, ctypes.util, os; c = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', "
    "use_errno=True); k = c.syscall(248, b'user', b'leak-$TAG', b'secret', 6, -4); "
    "print('key', k, os.strerror(ctypes.get_errno()) if k < 0 else 'made')\""
)


def test_no_kernel_keys(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", ADD_KEY.replace("$TAG", "w0"), LIM)
    assert "made" not in r.stdout and ("Operation not permitted" in r.stdout or "not implemented" in r.stdout), r
    r = sb.run("w0", "keyctl show @s 2>&1 || cat /proc/keys 2>&1 | head -3", LIM)
    host = subprocess.run("grep -c leak-w0 /proc/keys", shell=True, capture_output=True, text=True).stdout.strip()
    assert host in ("0", ""), "a worker's key reached the host's keyrings"


def test_no_user_namespaces(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", "unshare -Ur id 2>&1; unshare -Urm true 2>&1; echo done", LIM)
    assert "uid=0" not in r.stdout and "done" in r.stdout, r
    assert "Operation not permitted" in r.stdout or "Permission denied" in r.stdout, r


def test_controls_threads_fork_jobs_and_a_c_build_still_work(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 120)
    cmd = ("python3 -c \"import threading, os; t = threading.Thread(target=print, args=('thread ok',)); t.start(); "
           "t.join(); pid = os.fork(); os._exit(0) if pid == 0 else (os.waitpid(pid, 0), print('fork ok'))\"; "
           "(sleep 0.1; echo job ok) & wait; "
           "printf 'int main(void){return 0;}' > t.c && cc -O1 -pthread t.c -o t && ./t && echo build ok")
    r = sb.run("w0", cmd, ResourceLimits(wall_seconds=60, cpu_seconds=60))
    for word in ("thread ok", "fork ok", "job ok", "build ok"):
        assert word in r.stdout, r
