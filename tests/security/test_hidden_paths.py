"""Kind: reading what lies outside the sandbox (hidden tests through the checkout or
its ``.git``, another checkout, caches, other runs' output folders).
Cases: ../shared/cases/sandbox/hidden_tests_via_git.py, budgets_readable_from_out_dir.py,
steal_code_from_live_run.py (the runner instances are in test_run_outputs.py)."""

from __future__ import annotations

import os
from pathlib import Path

from scarce_lab.tasks import SUITE_DIR, grade

from .conftest import REPO

SECRET = "expected_stdout-SECRET-MARKER"


def _probe(paths: list[str], broad: bool = True) -> str:
    """A shell script printing whatever it can read under ``paths`` (and, ``broad``,
    searching the whole visible tree: only inside a sandbox, where it is small)."""
    lines = [f"cat {p} 2>/dev/null; ls -A {p} 2>/dev/null; find {p} -maxdepth 3 2>/dev/null | head -5"
             for p in paths]
    lines.append(f"git --git-dir={REPO}/.git show HEAD:scarce_lab/tasks/suite/rev/tests.json 2>/dev/null | head -c 300")
    if not broad:
        return "\n".join(lines) + "\n"
    lines.append("find / -xdev \\( -path /proc -o -path /usr -o -path /sys \\) -prune -o -name 'tests.json' -print "
                 "2>/dev/null | head -5")
    lines.append("grep -rl SECRET-MARKER / --exclude-dir=proc --exclude-dir=usr --exclude-dir=sys 2>/dev/null | head -3")
    return "\n".join(lines) + "\n"


def _targets(outside: Path) -> list[str]:
    clone = outside / "clone" / "scarce_lab" / "tasks" / "suite" / "rev"
    clone.mkdir(parents=True)
    (clone / "tests.json").write_text(f'[{{"{SECRET}": 1}}]')
    runs = outside / "runs" / "scarce_x"
    runs.mkdir(parents=True)
    (runs / "events.jsonl").write_text(f'{{"budgets": {{"w1": 77}}, "m": "{SECRET}"}}\n')
    for p in (outside, outside / "clone", runs.parent, runs):
        os.chmod(p, 0o755)
    home_cache = Path.home() / ".cache"
    return [str(SUITE_DIR), f"{SUITE_DIR}/rev/tests.json", str(REPO), f"{REPO}/.git", str(outside),
            f"{outside}/clone/scarce_lab/tasks/suite/rev/tests.json", f"{runs}/events.jsonl",
            str(home_cache), "/var/cache", "/root", "/home", "/work", "/etc/shadow"]


def _control(probe: str, tmp: Path) -> None:
    """The probe does find the secrets when run on the host (so the checks can fail)."""
    from scarce_lab.sandbox import ResourceLimits
    from scarce_lab.sandbox.local import run_limited

    r = run_limited(probe, tmp, ResourceLimits(wall_seconds=60))  # probe built with broad=False
    assert "SECRET-MARKER" in r.stdout and "budgets" in r.stdout and "expected_stdout" in r.stdout, r.stdout[:500]


def test_nothing_outside_is_readable_from_a_worker(make_sb, outside_dir, tmp_path):
    targets = _targets(outside_dir)
    _control(_probe(targets, broad=False), tmp_path)
    probe = _probe(targets)
    sb = make_sb()
    sb.open_slot("w0", 120)
    r = sb.run("w0", probe)
    out = r.stdout + r.stderr
    assert "expected_stdout" not in out and "SECRET-MARKER" not in out and "budgets" not in out, out[:2000]
    assert "root:" not in out  # /etc/shadow


def test_nothing_outside_is_readable_during_grading(make_sb, outside_dir, rev, tmp_path):
    """The hidden_tests_via_git instance and more: the build log shows nothing."""
    targets = _targets(outside_dir)
    _control(_probe(targets, broad=False), outside_dir)
    probe = _probe(targets)
    (tmp_path / "compile.sh").write_text(probe + "exit 1\n")
    g = grade(rev, tmp_path, sandbox=make_sb())
    assert not g.build_ok and g.score == 0.0
    assert "expected_stdout" not in g.build_log and "SECRET-MARKER" not in g.build_log, g.build_log[:2000]


def test_suite_under_a_system_folder_is_covered(tmp_path):
    """When the package (with its suite) is installed under /usr, the suite folder is
    covered by an empty tmpfs inside the sandbox."""
    from scarce_lab.sandbox.bwrap import BwrapSpec, bwrap_argv

    spec = BwrapSpec(workdir="/run/x/w0", cwd="/run/x/w0", uid=1000001, env={}, etc_dir="/run/x/etc",
                     hidden=("/usr/lib/python3/dist-packages", "/work/not-bound"))
    argv = bwrap_argv(spec, ["true"])
    i = argv.index("/usr/lib/python3/dist-packages")
    assert argv[i - 1] == "--tmpfs" and "--remount-ro" in argv[i:i + 2]
    assert "/work/not-bound" not in argv  # not visible anyway: nothing to cover
    i = argv.index("/usr")
    assert argv[i - 1:i + 2] == ["--ro-bind", "/usr", "/usr"]  # system folders read-only
