"""Nothing of a worker outlives the harness, and close_slot does not race run.
``bwrap --die-with-parent`` does not reach the command (setpriv's
credential change clears the parent-death signal, and the command is pid 1 of its
namespace); the sandbox's guardian (:class:`scarce_lab.sandbox.cgroups.Guardian`)
kills the sandbox's cgroups when the harness dies, even by SIGKILL.
Case: ../shared/cases/sandbox2/a14_close_slot_race.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from scarce_lab.sandbox import SlotNotActiveError

from .conftest import REPO, needs

HARNESS = r"""
import os, sys, threading, time
from scarce_lab.sandbox import make_sandbox, ResourceLimits
sb = make_sandbox(sys.argv[1])
sb.open_slot("w0", 600)
uid = sb.uid_of("w0")
cmd = "(setsid sleep 1001 </dev/null >/dev/null 2>&1 &); (nohup sleep 1002 >/dev/null 2>&1 &); sleep 1003"
threading.Thread(target=sb.run, args=("w0", cmd, ResourceLimits(wall_seconds=500, cpu_seconds=500)),
                 daemon=True).start()
def sleeps_of(uid):  # (a fixed 2 s wait: on a loaded machine they had not started yet)
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.stat(f"/proc/{p}").st_uid == uid:
                out += [p] if open(f"/proc/{p}/cmdline", "rb").read().startswith(b"sleep\x00100") else []
        except OSError:
            pass
    return out
end = time.monotonic() + 120
while len(sleeps_of(uid)) < 3 and time.monotonic() < end:  # the three sleeps run
    time.sleep(0.05)
print("ready", uid, flush=True)
time.sleep(600)
"""


def _procs_of(uid: int) -> list[int]:
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat(f"/proc/{p}").st_uid == uid:
                    out.append(int(p))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("kind", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_killing_the_harness_kills_every_process_of_its_workers(kind):
    needs(kind)
    h = subprocess.Popen([sys.executable, "-c", HARNESS, kind], cwd=REPO, stdout=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, text=True)
    try:
        line = h.stdout.readline().split()
        assert line and line[0] == "ready", line
        uid = int(line[1])
        assert len(_procs_of(uid)) >= 3, "the worker's command did not start"
        h.send_signal(signal.SIGKILL)
        h.wait()
        end = time.monotonic() + 10
        while _procs_of(uid) and time.monotonic() < end:
            time.sleep(0.1)
        left = _procs_of(uid)
        assert not left, f"processes of the worker outlived the harness: {left}"
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()


def test_close_slot_never_races_run(make_sb, rev):
    """A run() racing close_slot() either is refused or is killed: after close_slot
    returns nothing of the worker runs (a14: 34 of 40 commands ran their full length)."""
    from scarce_lab.tasks.workspace import prepare_worker

    sb = make_sb()
    prepare_worker(rev, sb, "w0")
    late, refused = [], 0
    for i in range(24):
        sb.open_slot("w0", 30)
        box: dict = {}
        go = threading.Event()

        def runner(box=box, go=go):
            go.wait()
            try:
                box["r"] = sb.run("w0", "sleep 3; echo still-running-after-close")
            except SlotNotActiveError:
                box["e"] = True

        th = threading.Thread(target=runner)
        th.start()
        go.set()
        time.sleep(0.0005 * (i % 8))
        sb.close_slot("w0")
        closed = time.monotonic()
        th.join()
        refused += "e" in box
        r = box.get("r")
        if r is not None and "still-running" in r.stdout:
            late.append(round(time.monotonic() - closed, 2))
    assert not late, f"{len(late)} commands ran to their end after close_slot returned: {late}"
    with pytest.raises(SlotNotActiveError):
        sb.run("w0", "true")
