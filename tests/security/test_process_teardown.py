"""Kind: processes outliving their command, slot or close() (daemons, setsid,
subreapers, pid hopping), also during grading; uid reuse.
Case: ../shared/cases/sandbox/processes_outlive_slot.py."""

from __future__ import annotations

import os
import threading
import time

import pytest

from scarce_lab.sandbox import uids
from scarce_lab.tasks import grade

from .conftest import UNTIL, wait_for

HOPPER = r'''#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
int up(int p){char b[64],s[256];sprintf(b,"/proc/%d/stat",p);int f=open(b,O_RDONLY);if(f<0)return 0;int n=read(f,s,255);close(f);s[n>0?n:0]=0;char*q=s;while(*q&&*q!=')')q++;return *q&&q[2]!='Z';}
int main(){time_t e=time(0)+20;long h=0;if(fork())return 0;setsid();
 for(;;){int S=getpid();prctl(PR_SET_CHILD_SUBREAPER,1);if(fork()>0){while(time(0)<e)if(waitpid(-1,0,0)<0)_exit(0);_exit(0);}
  while(up(S)){if(time(0)>e)_exit(0);int c=fork();if(c>0)_exit(0);if(++h%500==1)close(open("hb",O_CREAT|O_WRONLY|O_TRUNC,0644));}}}'''


def _marker_alive(marker: str) -> list[int]:
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                if marker.encode() in open(f"/proc/{e}/cmdline", "rb").read():
                    out.append(int(e))
            except OSError:
                pass
    return out


def test_subreaper_pid_hopper_dies_with_its_command(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 120)
    sb.write_file("w0", "s.c", HOPPER.encode())
    # the first heartbeat (at a hopper's first fork, then every 500) is waited for: a fixed
    # 0.5 s for 500 forks was not always enough on a loaded machine
    r = sb.run("w0", "cc -O2 -o s s.c && for i in 1 2 3 4; do ./s </dev/null >/dev/null 2>&1; done; "
                     f"{UNTIL % '-e hb'} stat -c %Y hb")
    assert r.exit_code == 0, r
    first = sb.read_file("w0", "hb")  # exists: the hoppers did run
    assert first == b""
    time.sleep(1.5)
    r = sb.run("w0", "echo $(( $(date +%s) - $(stat -c %Y hb) ))")
    assert int(r.stdout) >= 1, "heartbeat still fresh: a hopper survived its command"


@pytest.mark.parametrize("how", ["nohup sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' &",
                                 "setsid sh -c 'while :; do date +%s%N > beat; sleep 0.05; done' </dev/null >/dev/null 2>&1 &",
                                 "(trap '' HUP TERM; while :; do date +%s%N > beat; sleep 0.05; done) &"])
def test_daemons_die_with_their_command(make_sb, how):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", f"{how} {UNTIL % '-s beat'} echo started")  # (0.3 s was not always enough)
    assert "started" in r.stdout
    a = sb.read_file("w0", "beat")
    time.sleep(0.5)
    assert sb.read_file("w0", "beat") == a, "a background process kept writing after its command ended"


def test_close_slot_kills_a_running_command(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("r", sb.run("w0", "touch started; sleep 30; echo late")))
    th.start()
    wait_for(lambda: "started" in sb.list_files("w0"))  # running (a fixed 1 s: not always, under load)
    sb.close_slot("w0")
    th.join(timeout=25)  # (a command left running would take 30 s)
    assert not th.is_alive() and box["r"].exit_code != 0 and not box["r"].timed_out  # (not a time limit)
    assert "late" not in box["r"].stdout


def test_daemon_started_by_the_build_dies_with_grading(make_sb, rev, tmp_path):
    marker = f"7{os.getpid()}.25"
    (tmp_path / "compile.sh").write_text(
        f"(setsid nohup sleep {marker} </dev/null >/dev/null 2>&1 &)\n"
        "printf '#!/bin/sh\\ncat\\n' > executable; chmod +x executable\n")
    g = grade(rev, tmp_path, sandbox=make_sb())
    assert g.build_ok
    assert _marker_alive(marker) == [], "a process of the build outlived grading"


def test_uid_with_a_live_process_is_never_leased(monkeypatch):
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root to start a process under another uid")
    # a range of its own: the default one's first uid may be leased by a sandbox of another
    # test process on this machine, whose release would wait for this test's process
    monkeypatch.setenv("SCARCE_LAB_UID_BASE", str(1_500_000_000 + (os.getpid() % 100_000) * 4))
    base = uids._base()
    monkeypatch.setattr(uids, "_cursor", [0])
    p = subprocess.Popen(["setpriv", f"--reuid={base}", f"--regid={base}", "--clear-groups", "sleep", "20"])
    try:
        wait_for(lambda: base in uids.live_uids())  # (a fixed 0.2 s: not always, under load)
        lease = uids.lease_uid()
        try:
            assert lease.uid != base
        finally:
            lease.release()
    finally:
        p.kill()
        p.wait()
