"""What leaks, and into where: hidden test input into the run's
record (the tripwire's violation text, per-test exit codes), rivals' existence through
``/etc/passwd``, the host's boot id and load through ``/proc``, other workers' activity
through inotify on the shared ``/usr`` (refused by the seccomp filter).
Cases: ../shared/cases/sandbox2/a17_inotify_shared_usr.py, a18_host_info_proc.py."""

from __future__ import annotations

import threading
import time

import pytest

from scarce_lab.sandbox.base import ResourceLimits
from scarce_lab.tasks.grading import grade
from scarce_lab.tasks.workspace import prepare_worker

from .earned import write

LIM = ResourceLimits(wall_seconds=30, cpu_seconds=30)


@pytest.mark.slow
def test_tripwire_records_no_argument_bytes(make_sb, rev, tmp_path):
    """A submission passes each test's stdin (gzipped, base64) to the original as an
    argument: the violation says that it called it, never what it passed."""
    exe = ("#!/bin/sh\nd=$(gzip -c | base64 -w0)\nrev \"LEAK-$d\" \"LEAK2-$d\" \"LEAK3-$d\" </dev/null\n"
           "exec /usr/bin/rev LEAK4-hidden </dev/null\n")
    sub = write(tmp_path / "sub", {"main.sh": exe, "compile.sh": "cp main.sh executable; chmod +x executable\n"})
    g = grade(rev, sub, sandbox=make_sb())
    assert g.score == 0 and g.violation and "reached for the original" in g.violation, g
    assert "LEAK" not in g.violation and "H4sI" not in g.violation, g.violation
    assert "sha256" in g.violation and "argument(s)" in g.violation, g.violation
    assert len(g.violation) < 600


@pytest.mark.slow
def test_failing_exit_codes_are_not_recorded(make_sb, rev, tmp_path):
    """Exit code = first stdin byte: the per-test outcome keeps no such code."""
    prog = "import sys\nb = sys.stdin.buffer.read(1)\nsys.exit(b[0] if b else 0)\n"
    sub = write(tmp_path / "sub", {"main.py": "#!/usr/bin/env python3\n" + prog,
                                   "compile.sh": "cp main.py executable; chmod +x executable\n"})
    g = grade(rev, sub, sandbox=make_sb())
    failing = [o for o in g.per_test if not o.passed]
    assert failing, g
    codes = {o.exit_code for o in failing}
    assert codes <= {None} | {t.expected_exit_code for t in rev.scored_tests()}, codes
    assert not any(any(ch.isdigit() for ch in o.reason.replace("expected 0", "").replace("expected 1", ""))
                   for o in failing), [o.reason for o in failing]


def test_passwd_lists_no_other_worker_or_grading_box(make_sb, rev, tmp_path):
    sb = make_sb()
    for w in ("w0", "w1", "w2"):
        prepare_worker(rev, sb, w)
    sub = write(tmp_path / "sub", {"compile.sh": "exit 1\n"})
    grade(rev, sub, sandbox=sb)  # a grading box existed
    sb.open_slot("w1", 60)
    r = sb.run("w1", "cat /etc/passwd /etc/group; id -un", LIM)
    assert "w0" not in r.stdout and "w2" not in r.stdout and "grade" not in r.stdout, r.stdout
    uids = {line.split(":")[2] for line in r.stdout.splitlines() if line.count(":") >= 3}
    assert not uids & {str(sb.uid_of("w0")), str(sb.uid_of("w2"))}, r.stdout  # docker: the image's own file


def test_proc_shows_no_host_boot_id_or_load(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", "cat /proc/loadavg /proc/uptime; cat /proc/sys/kernel/random/boot_id", LIM)
    host_load = open("/proc/loadavg").read().split()[:3]
    assert r.stdout.split()[:3] == ["0.00", "0.00", "0.00"] or r.stdout.split()[:3] != host_load, r.stdout
    host_boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    if getattr(sb, "kind", "") == "docker":
        return  # runc refuses a mount over the boot id: a residual risk (docs/threat_model.md)
    assert host_boot not in r.stdout, r.stdout


INOTIFY = ("python3 -c \"import ctypes, os; c = ctypes.CDLL('libc.so.6', use_errno=True); fd = c.inotify_init1(0); "
           "print('inotify', 'ALLOWED' if fd >= 0 else os.strerror(ctypes.get_errno()))\"")


def test_no_inotify_on_the_shared_usr(make_sb):
    """a17: one worker watching /usr/bin saw which tools another worker ran."""
    sb = make_sb()
    for w in ("w0", "w1"):
        sb.open_slot(w, 60)
    r = sb.run("w1", INOTIFY, LIM)
    assert "inotify Function not implemented" in r.stdout, r
    box: dict = {}
    watch = ("python3 -c \"import ctypes,os,select,time; c=ctypes.CDLL('libc.so.6',use_errno=True); "
             "fd=c.inotify_init1(os.O_NONBLOCK); print('fd', fd); "
             "fd>=0 and c.inotify_add_watch(fd, b'/usr/bin', 0x21); time.sleep(2); "
             "print('events', len(os.read(fd, 65536)) if fd>=0 and select.select([fd],[],[],0)[0] else 0)\"")
    th = threading.Thread(target=lambda: box.setdefault("r", sb.run("w1", watch, LIM)))
    th.start()
    time.sleep(0.5)
    sb.run("w0", "gcc --version >/dev/null; perl -e 1", LIM)
    th.join()
    assert "fd -1" in box["r"].stdout and "events 0" in box["r"].stdout, box["r"]
