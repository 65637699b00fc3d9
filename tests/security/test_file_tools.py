"""Kind: making the harness (root) follow a worker-controlled link, block on a FIFO or
crash on a path: swapping a file for a symlink while the file tools work (rename
races), linked folders, FIFOs, hard links, deep and long paths, vanishing files.
Cases: ../shared/cases/sandbox/file_tool_link_race.py, deep_paths_crash_harness.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from scarce_lab.environments.scarce.agents import tools as ft
from scarce_lab.tasks import grade


@pytest.fixture
def victim(outside_dir):
    v = outside_dir / "victim"
    v.write_text("ROOT SECRET\n")
    v.chmod(0o600)
    return v


def test_link_swap_race_never_reaches_the_host(make_sb, victim):
    """While a process swaps ``x`` with a symlink to a root-only host file in a loop
    (what a worker process would do), read_file never returns the host file and
    write_file never changes it, while a plain open() of the same path does. (Inside
    the sandbox such a flipper dies with its command; this one models one that would not.)"""
    sb = make_sb()
    wd = sb.workdir("w0")
    sb.write_file("w0", "x", b"worker data\n")
    os.symlink(str(victim), wd / "y")
    flipper = subprocess.Popen([sys.executable, "-c", (
        "import ctypes,sys\nl=ctypes.CDLL(None)\nx,y=sys.argv[1].encode(),sys.argv[2].encode()\n"
        "while True: l.renameat2(-100,x,-100,y,2)\n"), str(wd / "x"), str(wd / "y")])
    end = time.monotonic() + 10
    while not (wd / "x").is_symlink() and time.monotonic() < end:  # the flipper is running
        time.sleep(0.01)
    leaked = naive = 0
    try:
        for _ in range(300):  # control: a plain open() of the same path does follow the link
            try:
                naive += "ROOT SECRET" in open(wd / "x").read()
            except OSError:
                pass
        for _ in range(300):
            try:
                leaked += "ROOT SECRET" in ft.read_file(wd, "x")
            except ft.ToolError:
                pass
            try:
                ft.write_file(wd, "x", "written by worker\n")
            except ft.ToolError:
                pass
    finally:
        flipper.kill()
        flipper.wait()
    assert naive > 0, "the race never happened: the check below could not fail"
    assert leaked == 0
    assert victim.read_text() == "ROOT SECRET\n"
    assert victim.stat().st_uid == 0 and (victim.stat().st_mode & 0o777) == 0o600


def test_the_flipper_does_not_outlive_its_command(make_sb, victim):
    """The script's instance: the flipper is started in a command; it is dead before
    any file tool runs, and the tools still refuse the link."""
    sb = make_sb()
    sb.open_slot("w0", 60)
    sb.write_file("w0", "r.c", (
        b'#define _GNU_SOURCE\n#include <stdio.h>\n#include <fcntl.h>\n#include <unistd.h>\n#include <time.h>\n'
        b'int main(int c,char**v){close(open("x",O_CREAT|O_WRONLY,0644));symlink(v[1],"y");if(fork())return 0;'
        b'setsid();time_t e=time(0)+8;while(time(0)<e)renameat2(AT_FDCWD,"x",AT_FDCWD,"y",RENAME_EXCHANGE);}\n'
    ))
    r = sb.run("w0", f"cc -o r r.c && ./r {victim} </dev/null >/dev/null 2>&1; sleep 0.3")
    assert r.exit_code == 0, r
    wd = sb.workdir("w0")
    kinds = sorted((p.name, p.is_symlink()) for p in wd.iterdir() if p.name in ("x", "y"))
    time.sleep(0.3)
    assert sorted((p.name, p.is_symlink()) for p in wd.iterdir() if p.name in ("x", "y")) == kinds  # frozen
    results = []
    for _ in range(20):
        for call in (lambda: ft.read_file(wd, "x"), lambda: ft.read_file(wd, "y"),
                     lambda: ft.write_file(wd, "y", "w\n")):
            try:
                results.append(call())
            except ft.ToolError as e:
                results.append(str(e))
    assert not any("ROOT SECRET" in str(x) for x in results)
    assert victim.read_text() == "ROOT SECRET\n"


def test_odd_files_are_tool_errors(make_sb, victim):
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", f"mkfifo fifo; ln -s {victim} link; ln -s {victim.parent} dirlink; mkdir d; "
                     "python3 -c \"import socket;s=socket.socket(socket.AF_UNIX);s.bind('sock')\"; "
                     f"ln {victim} hard 2>&1; echo done")
    assert "done" in r.stdout
    wd = sb.workdir("w0")
    for rel, why in (("fifo", "not a regular file"), ("link", "symbolic link"), ("dirlink/victim", "not a folder"),
                     ("d", "not a regular file"), ("sock", "regular file"), ("missing", "does not exist"),
                     ("../x", "outside"), ("/etc/passwd", "outside"), ("a" * 300, "too long"),
                     ("d/" * 2100 + "f", "too long")):
        with pytest.raises(ft.ToolError) as info:
            ft.read_file(wd, rel)
        assert why in str(info.value), (rel, str(info.value))
    for rel in ("fifo", "link", "dirlink/new", "sock", "d"):
        with pytest.raises(ft.ToolError):
            ft.write_file(wd, rel, "x")
    assert victim.read_text() == "ROOT SECRET\n" and not (victim.parent / "new").exists()
    listed = ft.list_files(wd)
    assert "fifo" not in listed and "link" not in listed and not any(x.startswith("dirlink") for x in listed)
    assert not (wd / "hard").exists() or (wd / "hard").stat().st_ino != victim.stat().st_ino


def test_deep_and_wide_trees_never_raise(make_sb, rev):
    """The deep_paths_crash_harness instance (25 levels of 200-character names, over
    PATH_MAX) and a 600-level tree: list_files answers, grading reports, nothing raises."""
    sb = make_sb()
    sb.open_slot("w0", 120)
    r = sb.run("w0", "n=$(printf %0200d 0); (for i in $(seq 25); do mkdir $n && cd $n || break; done; touch f); "
                     "(for i in $(seq 600); do mkdir d && cd d || break; done; touch g); echo ok")
    assert "ok" in r.stdout, r
    wd = sb.workdir("w0")
    listed = ft.list_files(wd)
    assert isinstance(listed, list)
    from scarce_lab.sandbox import fileio

    assert any("deeper than" in n for n in fileio.list_files(wd).notes)
    with pytest.raises(ft.ToolError):
        ft.read_file(wd, "/".join(["0" * 200] * 25) + "/f")
    g = grade(rev, wd, sandbox=sb)
    assert g.score == 0.0 and "compile.sh" in g.build_log


def test_vanishing_files_are_skipped(tmp_path):
    """A tree that changes while it is listed or collected (what a rm/mkdir loop does)."""
    from scarce_lab.sandbox import fileio, gate

    for i in range(200):
        (tmp_path / f"f{i}").write_text("x")
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            p = tmp_path / f"f{i % 200}"
            try:
                p.unlink()
                p.mkdir()
                p.rmdir()
                p.write_text("y")
            except OSError:
                pass
            i += 1

    th = threading.Thread(target=churn, daemon=True)
    th.start()
    try:
        for _ in range(50):
            fileio.list_files(tmp_path)
            gate.gather(tmp_path, gate.SUBMISSION)
    finally:
        stop.set()
        th.join()
