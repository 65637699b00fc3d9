"""LocalSandbox: slot gating, timeouts and kills, resource limits, network and
filesystem isolation (issue 3, sections 2 and 7)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from scarce_lab.sandbox import ResourceLimits, SlotNotActiveError, make_sandbox
from scarce_lab.sandbox.local import LocalSandbox, detect_capabilities

CAPS = detect_capabilities()
needs_net_iso = pytest.mark.skipif(
    not CAPS.network_isolated, reason=f"no network namespaces here ({CAPS.reason})"
)
needs_uid = pytest.mark.skipif(
    not CAPS.uid_separation, reason=f"per-worker uids need root ({CAPS.mode}: {CAPS.reason})"
)
needs_mounts = pytest.mark.skipif(
    not CAPS.private_mounts, reason=f"no mount namespaces here ({CAPS.reason})"
)


@pytest.fixture
def sb():
    s = LocalSandbox(limits=ResourceLimits(wall_seconds=10, cpu_seconds=10))
    yield s
    s.close()


def test_make_sandbox_kinds():
    s = make_sandbox("local")
    try:
        assert isinstance(s, LocalSandbox)
    finally:
        s.close()
    with pytest.raises(ValueError, match="kind"):
        make_sandbox("vm")


def test_command_refused_outside_slot(sb):
    with pytest.raises(SlotNotActiveError, match="w0"):
        sb.run("w0", "echo hi")
    sb.open_slot("w0", 30)
    r = sb.run("w0", "echo hi")
    assert (r.exit_code, r.stdout) == (0, "hi\n")
    sb.close_slot("w0")
    with pytest.raises(SlotNotActiveError):
        sb.run("w0", "echo hi")
    # another worker's slot does not let w1 run
    sb.open_slot("w0", 30)
    with pytest.raises(SlotNotActiveError, match="w1"):
        sb.run("w1", "echo hi")


def test_expired_slot_refused_and_caps_wall_time(sb):
    sb.open_slot("w0", 0.6)
    r = sb.run("w0", "sleep 5")
    assert r.timed_out and r.exit_code is None
    assert r.duration_s < 3
    time.sleep(0.1)
    with pytest.raises(SlotNotActiveError, match="expired"):
        sb.run("w0", "true")


def test_timeout_kills_process_group(sb):
    sb.open_slot("w0", 30)
    marker = sb.workdir("w0") / "late"
    t0 = time.perf_counter()
    r = sb.run("w0", "(sleep 1.5; touch late) & sleep 20", ResourceLimits(wall_seconds=0.5))
    assert r.timed_out and r.exit_code is None
    assert time.perf_counter() - t0 < 5
    time.sleep(2.0)
    assert not marker.exists(), "background child survived the timeout kill"


def test_close_slot_kills_running_command(sb):
    sb.open_slot("w0", 60)
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("r", sb.run("w0", "sleep 30")))
    t0 = time.perf_counter()
    th.start()
    time.sleep(0.5)
    sb.close_slot("w0")
    th.join(timeout=10)
    assert not th.is_alive()
    assert time.perf_counter() - t0 < 8
    assert box["r"].exit_code != 0


@needs_uid
def test_close_slot_kills_escaped_processes(sb):
    """A process that left the process group (setsid) dies at slot close (uid kill)."""
    sb.open_slot("w0", 60)
    r = sb.run("w0", "setsid sh -c 'sleep 3; touch escaped' >/dev/null 2>&1 < /dev/null & echo ok")
    assert r.stdout == "ok\n"
    sb.close_slot("w0")
    time.sleep(3.5)
    assert not (sb.workdir("w0") / "escaped").exists()


def test_output_truncated(sb):
    sb.open_slot("w0", 30)
    s = LocalSandbox(output_limit=1000)
    try:
        s.open_slot("w0", 30)
        r = s.run("w0", "head -c 50000 /dev/zero | tr '\\0' a")
        assert r.truncated and len(r.stdout) == 1000 and r.exit_code == 0
    finally:
        s.close()


def test_cpu_limit_kills_busy_loop(sb):
    sb.open_slot("w0", 30)
    r = sb.run("w0", "while :; do :; done", ResourceLimits(wall_seconds=15, cpu_seconds=1))
    assert not r.timed_out
    assert r.exit_code != 0
    assert r.duration_s < 10


def test_memory_limit(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, memory_bytes=200 << 20)
    r = sb.run("w0", "/usr/bin/python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'", lim)
    assert r.exit_code != 0 and "MemoryError" in r.stderr


def test_file_size_limit(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, file_size_bytes=1 << 20)
    r = sb.run("w0", "head -c 3000000 /dev/zero > big; echo rc=$?; wc -c < big", lim)
    assert "rc=0" not in r.stdout
    assert int(r.stdout.strip().splitlines()[-1]) <= 1 << 20


@needs_uid
def test_process_limit(sb):
    sb.open_slot("w0", 30)
    lim = ResourceLimits(wall_seconds=15, max_processes=8)
    r = sb.run("w0", "n=0; for i in $(seq 30); do sleep 2 & n=$((n+1)); done; "
               "jobs -p | wc -l", lim)
    started = int(r.stdout.strip() or 0)
    assert started < 30 and ("fork" in r.stderr.lower() or "resource" in r.stderr.lower())


def test_environment_reset(sb):
    sb.open_slot("w0", 30)
    wd = sb.workdir("w0")
    r = sb.run("w0", "pwd; echo $HOME; echo $TMPDIR; echo $LC_ALL; echo ${SECRET_TOKEN:-unset}")
    lines = r.stdout.splitlines()
    assert Path(lines[0]).resolve() == wd.resolve()
    assert lines[1] == str(wd) and lines[2] == str(wd / ".tmp")
    assert lines[3:] == ["C", "unset"]


@needs_net_iso
def test_no_network():
    """A TCP server on the host loopback is reachable from the host, not from the sandbox."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # host: works
        with LocalSandbox() as s:
            assert s.network_isolated
            s.open_slot("w0", 30)
            code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                    " print('CONNECTED')\nexcept OSError as e:\n print('BLOCKED', e.errno)")
            r = s.run("w0", f"/usr/bin/python3 -c \"{code}\"")
            assert r.stdout.startswith("BLOCKED"), r.stdout + r.stderr
            r2 = s.run("w0", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
            assert r2.stdout.split() == ["lo"]
    finally:
        srv.close()


def _unmasked_dir() -> Path:
    """A fresh root-owned 0755 folder outside the masked scratch dirs (/tmp, /var/tmp)."""
    for parent in ("/run", "/var/lib"):
        if os.access(parent, os.W_OK):
            d = Path(tempfile.mkdtemp(prefix="scarce-test-", dir=parent))
            d.chmod(0o755)
            return d
    pytest.skip("no writable folder outside /tmp and /var/tmp")


@needs_uid
@pytest.mark.parametrize("root_outside_tmp", [True, False])
def test_no_writes_outside_work_folder(root_outside_tmp):
    """Writes to another worker's folder, the sandbox root and any other folder fail;
    another worker's files are unreadable. With the root outside /tmp the folders are
    visible and the per-worker uid blocks access (EACCES); under /tmp they are not even
    visible (private /tmp)."""
    base = _unmasked_dir()
    outside = base / "outside"
    outside.mkdir()
    outside.chmod(0o755)
    try:
        with LocalSandbox(root=base / "sbx" if root_outside_tmp else None) as s:
            s.open_slot("w0", 30)
            s.open_slot("w1", 30)
            w1 = s.workdir("w1")
            (w1 / "secret.txt").write_text("w1 private")
            s.chown_tree("w1")
            r = s.run("w0", f"echo pwned > {w1}/x; echo pwned > {outside}/x; "
                            f"echo pwned > {s.root}/x; cat {w1}/secret.txt; "
                            f"echo ok > mine; cat mine")
            assert r.stdout == "ok\n", r.stdout
            denied = r.stderr.count("Permission denied")
            assert denied == 4 if root_outside_tmp else denied >= 2, r.stderr
            assert not (w1 / "x").exists()
            assert not (outside / "x").exists()
            assert not (s.root / "x").exists()
            assert (s.workdir("w0") / "mine").read_text() == "ok\n"
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


@needs_mounts
def test_private_tmp_and_hidden_suite():
    """/tmp is private per command (no side channel), and the task suite is hidden."""
    from scarce_lab.tasks.suite import SUITE_DIR

    tag = f"scarce-leak-{os.getpid()}"
    with LocalSandbox() as s:
        s.open_slot("w0", 30)
        s.open_slot("w1", 30)
        r = s.run("w0", f"echo x > /tmp/{tag} && echo wrote")
        assert r.stdout == "wrote\n"
        assert not Path("/tmp", tag).exists()
        r = s.run("w1", f"cat /tmp/{tag} 2>/dev/null || echo absent")
        assert r.stdout == "absent\n"
        if SUITE_DIR.is_dir():
            r = s.run("w0", f"ls {SUITE_DIR} | wc -l; cat {SUITE_DIR}/rev/tests.json 2>&1 | head -c 40")
            assert r.stdout.splitlines()[0] == "0" and "expected_stdout" not in r.stdout
        repo = Path(__file__).resolve().parents[1]
        r = s.run("w0", f"ls -A {repo} | wc -l")
        assert r.stdout == "0\n"  # source checkout (runs/, caches) hidden too


@needs_mounts
def test_extra_hidden_path(tmp_path):
    runs = Path(tempfile.mkdtemp(prefix="scarce-runs-", dir="/var/lib" if os.access("/var/lib", os.W_OK) else None))
    try:
        (runs / "events.jsonl").write_text('{"budget": 1000}')
        runs.chmod(0o755)
        (runs / "events.jsonl").chmod(0o644)
        from scarce_lab.sandbox.local import default_hidden_paths

        with LocalSandbox(hidden_paths=(*default_hidden_paths(), runs)) as s:
            s.open_slot("w0", 30)
            r = s.run("w0", f"cat {runs}/events.jsonl 2>&1 || echo hidden")
            assert "budget" not in r.stdout and r.stdout.endswith("hidden\n")
    finally:
        import shutil

        shutil.rmtree(runs, ignore_errors=True)


def test_isolation_none_still_gates_and_times_out():
    with LocalSandbox(isolation="none") as s:
        assert s.capabilities.mode == "none" and not s.network_isolated
        with pytest.raises(SlotNotActiveError):
            s.run("w0", "true")
        s.open_slot("w0", 30)
        r = s.run("w0", "sleep 5", ResourceLimits(wall_seconds=0.3))
        assert r.timed_out


def test_bad_worker_name_rejected(sb):
    with pytest.raises(ValueError, match="worker"):
        sb.workdir("../etc")
    with pytest.raises(ValueError, match="duration_s"):
        sb.open_slot("w0", 0)


@needs_uid
def test_parallel_sandboxes_use_distinct_uids():
    """Two runs at once: same worker name, different uids; neither can touch the other."""
    import shutil

    base = _unmasked_dir()
    try:
        with LocalSandbox(root=base / "a") as a, LocalSandbox(root=base / "b") as b:
            wa, wb = a.workdir("w0"), b.workdir("w0")
            assert a.uid_of("w0") != b.uid_of("w0")
            a.open_slot("w0", 30)
            b.open_slot("w0", 30)
            r = a.run("w0", f"echo x > {wb}/f; ls {wb}")
            assert r.stderr.count("Permission denied") == 2
            assert not (wb / "f").exists()
            # closing a's slot kills a's processes only
            b_box = {}
            th = threading.Thread(target=lambda: b_box.setdefault("r", b.run("w0", "sleep 1; echo alive")))
            th.start()
            time.sleep(0.2)
            a.close_slot("w0")
            th.join(timeout=10)
            assert b_box["r"].stdout == "alive\n"
            assert wa.is_dir()
    finally:
        shutil.rmtree(base, ignore_errors=True)
