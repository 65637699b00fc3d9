"""One gate for what the harness reads of a worker's folder:
:mod:`scarce_lab.sandbox.gate`. Sparse files are charged at their nominal size, the
total is bounded, names that are not UTF-8 (or hold control characters, or are too
long) never cross, and over budget is the worker's recorded violation, never a crash.
Cases: ../shared/cases/sandbox2/a09_sparse_build_output.py (build output),
a10_checkpoint_sparse_bomb.py and a11_unresumable_run.py (checkpoints, in
test_one_worker_cannot_end_the_run.py)."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest

from scarce_lab.sandbox import gate
from scarce_lab.tasks.grading import grade

from .earned import write


def _sparse(folder: Path, n: int, size: int, prefix: str = "s") -> None:
    for i in range(n):
        with open(folder / f"{prefix}{i}", "wb") as f:
            f.truncate(size)


def test_sparse_files_are_charged_at_their_nominal_size(tmp_path):
    _sparse(tmp_path, 20, 4 << 20)
    b = gate.Budget(total_bytes=10 << 20, file_bytes=8 << 20, files=100)
    got = gate.gather(tmp_path, b, skip_dot=False)
    assert got.over_budget and "sparse files count" in got.over_budget
    assert got.bytes_charged <= b.total_bytes
    assert sum(map(len, got.files.values())) <= b.total_bytes
    assert len(got.files) == 2 and got.left_out_count == 18


def test_file_count_names_and_depth_are_bounded(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i:02d}").write_text("x")
    os.mkdir(os.fsencode(tmp_path) + b"/bad\xff")
    (tmp_path / "ctrl\nname").write_text("x")
    with open(os.fsencode(tmp_path) + b"/out\xff.txt", "wb") as f:
        f.write(b"x")
    d = tmp_path
    for _ in range(6):
        d = d / ("d" * 250)
        d.mkdir()
    (d / "deep.txt").write_text("x")
    got = gate.gather(tmp_path, gate.Budget(total_bytes=1 << 20, file_bytes=1 << 20, files=10), skip_dot=False)
    assert len(got.files) == 10 and all(gate.name_problem(k) is None for k in got.files)
    notes = " ".join(got.left_out)
    assert "not valid UTF-8" in notes and "control characters" in notes
    assert all(n.isascii() and "\n" not in n for n in got.left_out)
    assert "1514 bytes long (limit 1024)" in notes
    assert got.left_out_count == 5  # 2 more than 10 files, 2 bad names, 1 path too long


def test_listing_is_bounded_and_says_how_many_more(tmp_path):
    for i in range(3000):
        (tmp_path / f"fuzz_{i:05d}.txt").write_text("x")
    with open(os.fsencode(tmp_path) + b"/out\xff.txt", "wb") as f:
        f.write(b"x")
    shown = gate.listing(tmp_path)
    assert len(shown.names) == 50 and shown.more == 2951 and shown.bad_names == 1
    assert shown.tail().startswith("and 2,951 more")
    for n in shown.names:
        n.encode("utf-8")  # every shown name is valid UTF-8


def test_submission_of_sparse_files_is_a_violation_not_a_read(make_sb, rev, tmp_path):
    sub = write(tmp_path / "sub", {"compile.sh": "cp main.py executable\n", "main.py": "print(1)\n"})
    _sparse(sub, 100, 8 << 20, prefix="big")  # 800 MiB nominal, no blocks
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    g = grade(rev, sub, sandbox=make_sb())
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
    assert g.score == 0 and g.violation and "read budget" in g.violation, g
    assert grew < 200 << 20, f"the harness grew by {grew} bytes reading a sparse submission"


def test_sparse_build_output_is_a_violation_and_bounded(make_sb, rev, tmp_path):
    """a09: a compile.sh leaving 800 sparse 64 MiB files (50 GiB nominal)."""
    sub = write(tmp_path / "sub", {"compile.sh": "for i in $(seq 800); do truncate -s 64M .f$i || break; done\n"
                                   "echo '#!/bin/sh' > executable; chmod +x executable\n"})
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    g = grade(rev, sub, sandbox=make_sb())
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
    assert g.score == 0 and g.violation and "build's output" in g.violation, g
    assert grew < 300 << 20, f"the harness grew by {grew} bytes"
    assert time.perf_counter() - t0 < 120


def test_a_path_over_path_max_is_a_failed_build_not_a_crash(make_sb, rev, tmp_path):
    """17 nested 250-character folders with a file, then a submission."""
    sub = write(tmp_path / "sub", {"compile.sh": "cp main.py executable\n", "main.py": "print(1)\n"})
    fd = os.open(sub, os.O_RDONLY)
    try:
        for _ in range(17):
            os.mkdir("p" * 250, dir_fd=fd)
            nfd = os.open("p" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("compile.sh", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    g = grade(rev, sub, sandbox=make_sb())  # must not raise
    assert g.build_ok and g.violation is None and "path is" in g.build_log, g


@pytest.mark.parametrize("bad", ["budget", "type"])
def test_budget_validates_its_fields(bad):
    with pytest.raises(ValueError, match="Budget"):
        if bad == "budget":
            gate.Budget(total_bytes=0, file_bytes=1, files=1)
        else:
            gate.Budget(total_bytes=1, file_bytes=1, files=1, path_bytes=5000)
