"""LocalSandbox (bubblewrap): slot gating, wall/CPU/memory limits, output limits,
environment, per-worker uids and folders, the unisolated mode, bad input.
The attack suite is in tests/security/ (run against both backends)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from scarce_lab.sandbox import ResourceLimits, SandboxError, SlotNotActiveError, make_sandbox
from scarce_lab.sandbox.local import LocalSandbox, detect_capabilities

CAPS = detect_capabilities()
needs_bwrap = pytest.mark.skipif(CAPS.mode != "bwrap", reason=f"bubblewrap sandbox unavailable: {CAPS.reason}")


@pytest.fixture
def sb():
    if CAPS.mode != "bwrap":
        pytest.skip(f"bubblewrap sandbox unavailable: {CAPS.reason}")
    s = LocalSandbox(limits=ResourceLimits(wall_seconds=10, cpu_seconds=10))
    yield s
    s.close()


def test_make_sandbox_kinds():
    with pytest.raises(ValueError, match="kind"):
        make_sandbox("vm")
    if CAPS.mode == "bwrap":
        s = make_sandbox("local")
        try:
            assert isinstance(s, LocalSandbox) and s.capabilities.mode == "bwrap"
        finally:
            s.close()
    else:  # never a silent fallback to an unisolated sandbox
        with pytest.raises(SandboxError, match="cannot isolate"):
            make_sandbox("local")


def test_command_refused_outside_slot(sb):
    with pytest.raises(SlotNotActiveError, match="w0"):
        sb.run("w0", "echo hi")
    sb.open_slot("w0", 30)
    r = sb.run("w0", "echo hi")
    assert (r.exit_code, r.stdout) == (0, "hi\n")
    sb.close_slot("w0")
    with pytest.raises(SlotNotActiveError):
        sb.run("w0", "echo hi")
    sb.open_slot("w0", 30)
    with pytest.raises(SlotNotActiveError, match="w1"):
        sb.run("w1", "echo hi")


def test_expired_slot_refused_and_caps_wall_time(sb):
    sb.open_slot("w0", 0.8)
    # no other limit would stop it before its end (the time a loaded machine takes to
    # start and tear down a sandbox is not bounded: only a cap's effect is checked)
    r = sb.run("w0", "sleep 30", ResourceLimits(wall_seconds=60, cpu_seconds=10))
    assert r.timed_out and r.exit_code is None and r.killed_by == "timeout"
    assert r.duration_s < 30  # cut, long before its end
    time.sleep(0.1)
    with pytest.raises(SlotNotActiveError, match="expired"):
        sb.run("w0", "true")


def test_max_wall_s_caps_a_command(sb):
    sb.open_slot("w0", 60)
    r = sb.run("w0", "sleep 30", ResourceLimits(wall_seconds=50, cpu_seconds=10), max_wall_s=0.5)
    assert r.timed_out and 0.4 < r.duration_s < 30  # given its 0.5 s, cut long before its end


def test_timeout_kills_background_children(sb):
    sb.open_slot("w0", 30)
    r = sb.run("w0", "(sleep 1.5; touch late) & sleep 20", ResourceLimits(wall_seconds=0.5))
    assert r.timed_out and r.exit_code is None
    time.sleep(2.0)
    assert "late" not in sb.list_files("w0")


def test_output_truncated():
    if CAPS.mode != "bwrap":
        pytest.skip(CAPS.reason)
    with LocalSandbox(output_limit=1000) as s:
        s.open_slot("w0", 30)
        r = s.run("w0", "head -c 50000 /dev/zero | tr '\\0' a")
        assert r.truncated and len(r.stdout) == 1000 and r.exit_code == 0


def test_cpu_limit_kills_busy_loop(sb):
    # a generous wall limit: on a loaded machine 1 CPU second can take many real ones
    sb.open_slot("w0", 120)
    r = sb.run("w0", "while :; do :; done", ResourceLimits(wall_seconds=100, cpu_seconds=1))
    assert not r.timed_out and r.killed_by == "cpu" and r.exit_code != 0  # the CPU limit stopped it
    assert r.cpu_s is not None and 0.9 < r.cpu_s < 1.6


def test_memory_limit_is_the_cgroup_total(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, memory_bytes=200 << 20)
    r = sb.run("w0", "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'", lim)
    assert r.exit_code == 137 and r.killed_by == "memory" and r.notes["oom_kills"] == 1, r
    r = sb.run("w0", "python3 -c 'x = bytearray(100 * 1024 * 1024); print(len(x))'", lim)
    assert r.exit_code == 0 and r.stdout == f"{100 << 20}\n"


def test_file_size_limit(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, file_size_bytes=1 << 20)
    r = sb.run("w0", "head -c 3000000 /dev/zero > big; echo rc=$?; wc -c < big", lim)
    assert "rc=0" not in r.stdout
    assert int(r.stdout.strip().splitlines()[-1]) <= 1 << 20


def test_process_limit(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, max_processes=8)
    r = sb.run("w0", "n=0; for i in $(seq 30); do sleep 2 & n=$((n+1)); done; jobs -p | wc -l", lim)
    assert int(r.stdout.strip() or 0) < 30 and ("fork" in r.stderr.lower() or "resource" in r.stderr.lower())


def test_environment_reset(sb, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    sb.open_slot("w0", 30)
    wd = sb.workdir("w0")
    r = sb.run("w0", "pwd; echo $HOME; echo $TMPDIR; echo $LC_ALL; echo ${SECRET_TOKEN:-unset}; id -un")
    assert r.stdout.splitlines() == [str(wd), str(wd), str(wd / ".tmp"), "C", "unset", "w0"]


def test_stdin_is_passed(sb):
    sb.open_slot("w0", 30)
    assert sb.run("w0", "tr a-z A-Z", stdin="hello\n").stdout == "HELLO\n"


def test_workers_have_their_own_uids_and_folders(sb):
    sb.open_slot("w0", 30)
    sb.open_slot("w1", 30)
    u0, u1 = sb.uid_of("w0"), sb.uid_of("w1")
    assert u0 != u1 and min(u0, u1) >= 1_000_000
    assert os.stat(sb.workdir("w0")).st_uid == u0 and (os.stat(sb.workdir("w0")).st_mode & 0o777) == 0o700
    w1 = sb.workdir("w1")
    sb.write_file("w1", "secret.txt", b"w1 private")
    r = sb.run("w0", f"cat {w1}/secret.txt; echo x > {w1}/x; echo ok > mine; cat mine")
    assert r.stdout == "ok\n" and "secret" not in r.stdout
    assert sb.list_files("w1") == ["secret.txt"]
    assert sb.read_file("w0", "mine") == b"ok\n"


def test_no_network():
    """A TCP server on the host loopback is reachable from the host, not from the sandbox."""
    if CAPS.mode != "bwrap":
        pytest.skip(CAPS.reason)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        with LocalSandbox() as s:
            assert s.network_isolated
            s.open_slot("w0", 30)
            code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                    " print('CONNECTED')\nexcept OSError as e:\n print('BLOCKED', e.errno)")
            r = s.run("w0", f"python3 -c \"{code}\"")
            assert r.stdout.startswith("BLOCKED"), r.stdout + r.stderr
    finally:
        srv.close()


def _wait_for(condition, timeout_s=60.0):
    """Until ``condition()`` holds (a fixed sleep instead failed on a loaded machine); the
    deadline only bounds a hang."""
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, f"not within {timeout_s} s"
        time.sleep(0.05)


def test_close_slot_from_another_thread(sb):
    sb.open_slot("w0", 60)
    box = {}
    lim = ResourceLimits(wall_seconds=60, cpu_seconds=10)  # (the fixture's 10 s would end it too)
    th = threading.Thread(target=lambda: box.setdefault("r", sb.run("w0", "touch started; sleep 30; echo late", lim)))
    th.start()
    _wait_for(lambda: "started" in sb.list_files("w0"))  # the command runs
    sb.close_slot("w0")
    th.join(timeout=25)  # (the command left running would take 30 s)
    assert not th.is_alive() and box["r"].exit_code != 0 and "late" not in box["r"].stdout
    assert not box["r"].timed_out  # ended by close_slot, not by a time limit


def test_given_root_keeps_the_files(tmp_path):
    if CAPS.mode != "bwrap":
        pytest.skip(CAPS.reason)
    s = LocalSandbox(root=tmp_path / "sbx")
    s.open_slot("w0", 30)
    s.run("w0", "echo kept > out.txt")
    s.close()
    assert (tmp_path / "sbx" / "w0" / "out.txt").read_text() == "kept\n"
    owned = LocalSandbox()
    root = owned.root
    owned.workdir("w0")
    owned.close()
    assert not root.exists()
    assert root.parent == Path("/run/scarce_lab/sandboxes") and (root.parent.stat().st_mode & 0o777) == 0o700


def test_isolation_none_is_explicit_and_still_gates():
    with LocalSandbox(isolation="none") as s:
        assert s.capabilities.mode == "none" and not s.network_isolated
        with pytest.raises(SlotNotActiveError):
            s.run("w0", "true")
        s.open_slot("w0", 30)
        r = s.run("w0", "sleep 5", ResourceLimits(wall_seconds=0.3))
        assert r.timed_out


def test_bad_input_rejected():
    with pytest.raises(ValueError, match="worker"):
        LocalSandbox(isolation="none").workdir("../etc")
    with pytest.raises(ValueError, match="duration_s"):
        LocalSandbox(isolation="none").open_slot("w0", 0)
    with pytest.raises(ValueError, match="isolation"):
        LocalSandbox(isolation="weak")
    with pytest.raises(ValueError, match="disk_bytes"):
        LocalSandbox(isolation="none", disk_bytes=0)
    with pytest.raises(ValueError, match="cpu_seconds"):
        ResourceLimits(cpu_seconds=0)
    with pytest.raises(ValueError, match="network"):
        ResourceLimits(network=True)


@needs_bwrap
def test_parallel_sandboxes_use_distinct_uids():
    with LocalSandbox() as a, LocalSandbox() as b:
        a.open_slot("w0", 30)
        b.open_slot("w0", 30)
        assert a.uid_of("w0") != b.uid_of("w0")
        box = {}
        th = threading.Thread(target=lambda: box.setdefault("r", b.run("w0", "touch started; sleep 1; echo alive")))
        th.start()
        _wait_for(lambda: "started" in b.list_files("w0"))  # b's command runs while a's slot closes
        a.close_slot("w0")
        th.join(timeout=60)
        assert box["r"].stdout == "alive\n"
