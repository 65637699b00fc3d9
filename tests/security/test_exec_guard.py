"""Defence in depth during grading: every file the submission
opens or executes on the box's writable file systems while the hidden tests run is
checked against the original (:class:`scarce_lab.tasks.anticheat.ExecGuard`), not only
files submitted or produced by the build. The submission here carries the original
xor-encoded (no sampled window matches: the static and build checks pass) and decodes
it only inside each test, into ``/tmp``, ``/dev/shm`` or its folder, runs it (directly
or through the dynamic loader, which opens rather than executes it) and deletes it.
Before the exec guard this scored 1.0 with no violation. The copy itself could not have been
made in a sandbox (execute-only, untraceable original): the test builds it on the host.
Control: an honest submission that writes and runs a helper in /tmp still scores 1.0."""

from __future__ import annotations

import shutil

import pytest

from scarce_lab.tasks.grading import grade

from .earned import write

DECODE = ("#!/usr/bin/env python3\nimport os, subprocess, sys\n"
          "data = bytes(b ^ 0x5A for b in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
          "'blob.bin'), 'rb').read())\n"
          "p = os.path.join({where}, 'helper-%d' % os.getpid())\n"
          "open(p, 'wb').write(data); os.chmod(p, 0o755)\n"
          "try:\n    r = subprocess.run({argv}, stdin=sys.stdin)\nfinally:\n    os.unlink(p)\n"
          "sys.exit(r.returncode)\n")


@pytest.mark.parametrize("where,how", [("'/tmp'", "exec"), ("'/dev/shm'", "exec"), ("'.'", "exec"),
                                       ("'/tmp'", "loader")])
@pytest.mark.slow
def test_original_decoded_only_during_the_tests_is_caught(backend, make_sb, rev, tmp_path, where, how):
    orig = open(shutil.which("rev"), "rb").read()
    argv = "[p, *sys.argv[1:]]" if how == "exec" else "['/lib64/ld-linux-x86-64.so.2', p, *sys.argv[1:]]"
    sub = write(tmp_path / "sub", {"blob.bin": bytes(b ^ 0x5A for b in orig),
                                   "main.py": DECODE.format(where=where, argv=argv),
                                   "compile.sh": "cp main.py executable; chmod +x executable\n"})
    g = grade(rev, sub, sandbox=make_sb())
    if backend == "docker" and where != "'.'" and how == "exec":
        # docker mounts a container's /tmp, /dev/shm and /run noexec: the copy cannot run there
        assert g.passed < g.total // 2 and not g.resolved, g
        return
    assert g.score == 0.0 and g.violation and "while the tests ran" in g.violation, g
    assert "helper" not in g.violation  # no worker-chosen names in the record


@pytest.mark.slow
def test_control_honest_helper_in_tmp_still_scores(make_sb, rev, tmp_path):
    rev_py = ("#!/usr/bin/env python3\nimport os, subprocess, sys\n"
              "h = '/tmp/h-%d.py' % os.getpid()\n"
              "open(h, 'w').write('import sys\\nfor line in sys.stdin.buffer.read().splitlines(keepends=True):\\n"
              "    e = line.endswith(b\"\\\\n\")\\n    sys.stdout.buffer.write(line.rstrip(b\"\\\\n\")[::-1] + "
              "(b\"\\\\n\" if e else b\"\"))\\n')\n"
              "r = subprocess.run([sys.executable, h], stdin=sys.stdin)\nos.unlink(h)\nsys.exit(r.returncode)\n")
    sub = write(tmp_path / "sub", {"main.py": rev_py, "compile.sh": "cp main.py executable; chmod +x executable\n"})
    g = grade(rev, sub, sandbox=make_sb())
    assert g.violation is None and g.build_ok, g
    assert g.score > 0.5, g
