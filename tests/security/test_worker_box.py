"""Kind: the local backend's long-lived box per slot (sandbox/zygote.py): a worker
attacking the root zygote that forks its commands (signals, tracing, /proc, inherited
descriptors, its credentials), the zygote dying under the worker, and state passing
from one slot to the next. docs/threat_model.md, "The worker's box"."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from scarce_lab.sandbox import make_sandbox

from .conftest import needs, wait_for


@pytest.fixture
def sb():
    needs("local")
    s = make_sandbox("local")
    yield s
    s.close()


def test_the_worker_cannot_signal_trace_or_read_the_zygote(sb):
    sb.open_slot("w3", 60)
    sb.run("w3", "true")
    box = sb._workers["w3"].box
    r = sb.run("w3", "kill -KILL 1; echo kill=$?; kill -STOP 1; echo stop=$?; "
                     "cat /proc/1/environ >/dev/null 2>&1; echo environ=$?; ls /proc/1/fd >/dev/null 2>&1; echo fd=$?; "
                     "grep -E '^(Uid|CapEff|CapBnd|CapInh|CapAmb|NoNewPrivs)' /proc/1/status")
    out = r.stdout
    for probe in ("kill", "stop", "environ", "fd"):
        assert f"{probe}=0" not in out, r  # each refused
    assert "CapEff:\t00000000000000c0" in out and "CapBnd:\t0000000000000000" in out, out  # setuid/setgid only
    assert "CapInh:\t0000000000000000" in out and "CapAmb:\t0000000000000000" in out and "NoNewPrivs:\t1" in out
    assert sb.run("w3", "echo alive").stdout == "alive\n" and sb._workers["w3"].box is box  # untouched


def test_a_command_has_the_worker_credentials_and_no_descriptor_of_the_zygote(sb):
    sb.open_slot("w4", 60)
    uid = sb.uid_of("w4")
    r = sb.run("w4", "grep -E '^(Uid|Gid|Groups|CapPrm|CapEff|CapBnd|CapInh|CapAmb|NoNewPrivs|Seccomp):' "
                     "/proc/self/status; ls /proc/self/fd")
    lines = dict(x.split(":\t", 1) for x in r.stdout.splitlines() if ":\t" in x)
    assert lines["Uid"].split() == [str(uid)] * 4 and lines["Gid"].split() == [str(uid)] * 4, r
    assert lines["Groups"].strip() == "" and lines["NoNewPrivs"] == "1" and lines["Seccomp"] == "2"
    assert {lines[k] for k in ("CapPrm", "CapEff", "CapBnd", "CapInh", "CapAmb")} == {"0000000000000000"}
    fds = [x for x in r.stdout.splitlines() if x.isdigit()]
    assert fds == ["0", "1", "2", "3"], fds  # 3: ls's own listing of the folder


def test_a_dead_zygote_runs_nothing_and_the_next_command_gets_a_fresh_box(sb):
    sb.open_slot("w5", 60)
    assert sb.run("w5", "echo x > /tmp/mark; cat /tmp/mark").stdout == "x\n"
    assert sb.run("w5", "cat /tmp/mark").stdout == "x\n"  # one box for the slot
    box = sb._workers["w5"].box
    box_out: dict = {}
    th = threading.Thread(target=lambda: box_out.setdefault("r", sb.run("w5", "touch started; sleep 30; echo late")))
    th.start()
    wait_for(lambda: "started" in sb.list_files("w5"))
    uid = sb.uid_of("w5")
    for pid in box.keep:  # the zygote (and bubblewrap) die, as by a crash
        os.kill(pid, signal.SIGKILL)
    th.join(timeout=20)
    assert not th.is_alive()
    r = box_out["r"]
    assert r.exit_code == -9 and "late" not in r.stdout and "box ended" in r.stderr, r
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _uid(p) == uid], "a process outlived its box"
    r = sb.run("w5", "cat /tmp/mark 2>/dev/null; id -u")
    assert r.stdout == f"{uid}\n" and sb._workers["w5"].box is not box, r  # a new box, same isolation


def test_nothing_of_a_slot_passes_to_the_next(sb):
    sb.open_slot("w6", 60)
    r = sb.run("w6", "echo s1 > /tmp/t; echo s1 > /dev/shm/t; python3 -c \"import ctypes;l=ctypes.CDLL(None);"
                     "print(l.shmget(0x5EED, 4096, 0o1666))\"")
    assert r.exit_code == 0, r
    sb.close_slot("w6")
    sb.open_slot("w6", 60)
    r = sb.run("w6", "cat /tmp/t /dev/shm/t 2>&1; python3 -c \"import ctypes;l=ctypes.CDLL(None);"
                     "print(l.shmget(0x5EED, 4096, 0))\"")
    assert "s1" not in r.stdout and r.stdout.strip().endswith("-1"), r


def _uid(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def test_a_fork_the_kernel_refuses_is_the_command_failure_not_the_run(sb):
    """The zygote cannot fork (here: the process total leaves no room): exit 126 with
    the reason, the sandbox goes on (a SandboxError would end the whole run)."""
    sb.open_slot("w7", 60)
    assert sb.run("w7", "echo ok").stdout == "ok\n"
    cg = sb._workers["w7"].cgroup
    pids_max = cg.dirs.get("pids", cg.dirs.get("unified")) / "pids.max"
    pids_max.write_text("2")  # the box's two processes only
    r = sb.run("w7", "echo never")
    assert r.exit_code == 126 and "could not start" in r.stderr and "never" not in r.stdout, r
    pids_max.write_text("66")
    assert sb.run("w7", "echo again").stdout == "again\n"
