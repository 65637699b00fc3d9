"""Kind: using more than the limits by spreading the use over processes (CPU seconds by
forking, memory by several processes, the disk, file descriptors) and seeing the host's
processes. Cases: ../shared/cases/sandbox/cpu_limit_by_forking.py, no_total_limits.py,
java_address_space.py."""

from __future__ import annotations

import pytest

from scarce_lab.sandbox import ResourceLimits

FORKER = ("perl -e 'while(1){ my @t=times; while(1){ for(1..20000){} my @u=times; "
          "last if $u[0]+$u[1]-$t[0]-$t[1]>=0.5 } "
          "open(F,\">>gen\"); print F \"$$\\n\"; close F; EXIT if fork() }'")


@pytest.mark.parametrize("parent", ["exit 0", "wait, exit 0"])
def test_cpu_seconds_are_a_total_over_all_processes(make_sb, parent):
    """Each generation burns 0.5 CPU s then forks the next; the parent exits (the
    script's instance: the command ends with it and everything else is killed) or
    waits (all stay alive: the cgroup total stops them at 1 s)."""
    sb = make_sb()
    sb.open_slot("w0", 120)
    # a generous wall limit: on a loaded machine 1 CPU second can take many real ones (8 s was not enough)
    r = sb.run("w0", FORKER.replace("EXIT", parent), ResourceLimits(wall_seconds=100, cpu_seconds=1))
    gens = len(sb.read_file("w0", "gen").split())
    assert not r.timed_out and r.cpu_s is not None and r.cpu_s < 1.5, r
    assert gens <= 2, f"{gens} generations of 0.5 CPU s each with cpu_seconds=1"
    if parent.startswith("wait"):
        assert r.killed_by == "cpu", r


@pytest.mark.slow
def test_parallel_busy_processes_share_one_cpu_budget(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", "for i in 1 2 3 4; do (while :; do :; done) & done; wait",
               ResourceLimits(wall_seconds=50, cpu_seconds=2))  # (generous: 2 CPU s on a loaded machine)
    assert r.killed_by == "cpu" and not r.timed_out and r.cpu_s < 2.6, r


def test_work_folder_has_a_size(make_sb):
    sb = make_sb(disk_bytes=64 << 20)
    sb.open_slot("w0", 60)
    r = sb.run("w0", "for i in $(seq 10); do head -c 20000000 /dev/zero > f$i || break; done; du -sk . | cut -f1")
    assert "No space left" in r.stderr, r
    assert int(r.stdout.split()[-1]) <= 64 * 1024 + 64, r.stdout
    r = sb.run("w0", "for i in $(seq 30000); do : > n$i || break; done 2>&1 | tail -1; ls | wc -l")
    assert int(r.stdout.split()[-1]) < 25000, "inode limit not enforced"


def test_open_files_are_limited(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", "python3 -c 'import os\nfs=[]\ntry:\n while len(fs)<19000: fs.append(os.open(\"/dev/null\",0))\n"
                     "except OSError as e: print(\"stopped\", len(fs), e.errno)'")
    words = r.stdout.split()
    assert words[0] == "stopped" and int(words[1]) < 1100 and words[2] == "24", r


def test_memory_is_a_total_over_all_processes(make_sb):
    """Four processes of 150 MB each under a 256 MiB total: the kernel kills inside the
    worker's cgroup; the worker's peak stays at the limit."""
    sb = make_sb()
    sb.open_slot("w0", 60)
    cmd = ("for i in 1 2 3 4; do python3 -c 'import time; b=bytearray(150<<20); time.sleep(3); print(\"alive\")' & done; "
           "wait")
    r = sb.run("w0", cmd, ResourceLimits(wall_seconds=30, memory_bytes=256 << 20))
    assert r.stdout.count("alive") < 4, r
    assert r.killed_by == "memory" or "Killed" in r.stderr or "MemoryError" in r.stderr, r


def test_host_processes_are_invisible(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", "ps -eo pid,user,args | wc -l; ls /proc | grep -c '^[0-9]'")
    n_ps, n_proc = (int(x) for x in r.stdout.split())
    assert n_ps <= 8 and n_proc <= 8, r.stdout  # the sandbox's own few processes only


def test_java_runs_under_the_default_limits(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    probe = sb.run("w0", "command -v java")
    if probe.exit_code != 0:
        pytest.skip("no java in this backend's root (the docker image is built without a JRE)")
    r = sb.run("w0", "java -Xmx64m -version")
    assert r.exit_code == 0 and "version" in r.stderr, r
    r = sb.run("w0", "java -version")  # default heap sizing, default 1 GiB memory total
    assert r.exit_code == 0, r
