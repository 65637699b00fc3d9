"""Task scoring: a reference solution scores 100 %, an
empty one 0 %, partial scores are passed/total, and submissions that wrap, copy or
call the original program score 0 with a recorded violation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scarce_lab.sandbox.local import detect_capabilities
from scarce_lab.tasks import check_submission, collect_submission, grade, load_task
from scarce_lab.tasks.suite import list_task_ids

CAPS = detect_capabilities()
needs_ns = pytest.mark.skipif(not CAPS.private_mounts,
                              reason=f"namespace grading unavailable here ({CAPS.reason})")
ALL = list_task_ids()


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


PY_BUILD = "cp main.py executable\nchmod +x executable\n"


@pytest.mark.parametrize(
    "task_id", [pytest.param(t, marks=() if t == "rev" else pytest.mark.slow) for t in ALL]
)
@pytest.mark.slow
def test_reference_scores_100(task_id):
    task = load_task(task_id)
    g = grade(task, task.reference_dir)
    assert g.violation is None and g.build_ok
    assert (g.passed, g.total) == (len(task.scored_tests()), len(task.scored_tests()))
    assert g.score == 1.0 and g.resolved and g.almost_resolved
    assert [o.id for o in g.per_test] == [t.id for t in task.scored_tests()]


def test_empty_submission_scores_0(tmp_path):
    task = load_task("rev")
    g = grade(task, tmp_path)
    assert (g.passed, g.score, g.build_ok, g.resolved, g.almost_resolved) == (0, 0.0, False, False, False)
    assert g.total == len(task.scored_tests()) and g.violation is None
    assert "compile.sh" in g.build_log


def test_build_without_executable_scores_0(tmp_path):
    g = grade(load_task("rev"), write(tmp_path, {"compile.sh": "echo building\n"}))
    assert not g.build_ok and g.score == 0.0
    assert "building" in g.build_log and "did not produce ./executable" in g.build_log


def test_partial_score_is_passed_over_total(tmp_path):
    """An executable that prints nothing and exits 1 passes exactly the tests whose
    expected stdout is empty and expected exit code is 1 (counted by hand below)."""
    task = load_task("rev")
    expect = sum(t.expected_stdout == "" and t.expected_exit_code == 1 for t in task.scored_tests())
    assert 0 < expect < len(task.scored_tests())
    sub = write(tmp_path, {"main.sh": "#!/bin/sh\nexit 1\n",
                           "compile.sh": "cp main.sh executable && chmod +x executable\n"})
    g = grade(task, sub)
    assert g.build_ok and g.violation is None
    assert g.passed == expect and g.score == pytest.approx(expect / g.total)
    assert not g.resolved and not g.almost_resolved
    failed = [o for o in g.per_test if not o.passed]
    assert all(o.reason for o in failed)


def test_almost_resolved_threshold(tmp_path):
    """Reference wrapped so that exactly the 'nofile' test fails: 30/31 = 96.8 %."""
    task = load_task("rev")
    assert [t.args for t in task.scored_tests()].count(["nofile"]) == 1
    ref = (task.reference_dir / "main.py").read_text()
    wrapper = '#!/bin/sh\nif [ "$1" = nofile ]; then exit 0; fi\nexec python3 "$(dirname "$0")/main.py" "$@"\n'
    sub = write(tmp_path, {"main.py": ref, "wrap.sh": wrapper,
                           "compile.sh": "cp wrap.sh executable && chmod +x executable\n"})
    g = grade(task, sub)
    assert (g.passed, g.total) == (30, 31)
    assert g.score == pytest.approx(30 / 31) and g.almost_resolved and not g.resolved
    assert [o.reason for o in g.per_test if not o.passed] == ["exit code differs from the expected 1"]


def test_workspace_files_and_original_copy_not_graded(tmp_path):
    """docs.txt, examples.json and the workspace copy of the original are left out."""
    task = load_task("rev")
    sub = shutil.copytree(task.reference_dir, tmp_path / "ws")
    from scarce_lab.tasks import prepare_workspace

    prepare_workspace(task, sub)
    files = collect_submission(task, sub)
    assert sorted(files) == ["compile.sh", "main.py"]
    assert grade(task, sub).resolved


def test_agent_view_hides_tests():
    task = load_task("tac")
    view = task.agent_view()
    assert "tests" not in view and view["examples"] and view["documentation"]
    hidden = {(tuple(t.args), t.stdin) for t in task.tests}
    assert not any((tuple(e["args"]), e["stdin"]) in hidden for e in view["examples"])


# ---------------------------------------------------------------- anti-cheat
WRAPPERS = [
    {"compile.sh": "printf '#!/bin/sh\\nexec rev \"$@\"\\n' > executable; chmod +x executable\n"},
    {"compile.sh": "cat > executable <<'EOF'\n#!/bin/sh\nrev\nEOF\nchmod +x executable\n"},
    {"compile.sh": "cp $(which rev) executable\n"},
    {"compile.sh": "cp /usr/bin/rev executable\n"},
    {"main.py": "import subprocess, sys\nsubprocess.run(['rev'] + sys.argv[1:])\n",
     "compile.sh": "printf '#!/bin/sh\\nexec python3 \"$(dirname \"$0\")/main.py\" \"$@\"\\n' > executable; "
                   "chmod +x executable\n"},
    {"main.c": '#include <stdlib.h>\nint main(){return system("rev");}\n', "compile.sh": "cc -o executable main.c\n"},
]


@needs_ns
@pytest.mark.parametrize("files", WRAPPERS)
@pytest.mark.slow
def test_wrappers_of_the_original_score_0(files, tmp_path):
    """Calling or copying the original during build or tests hits the tripwire (the
    static text checks are gone: they flagged honest code)."""
    task = load_task("rev")
    assert check_submission(task, {k: v.encode() for k, v in files.items()}) is None
    g = grade(task, write(tmp_path, files))
    assert g.score == 0.0 and g.passed == 0 and g.violation and "reached for the original" in g.violation


def test_static_anticheat_flags_copied_binary(tmp_path):
    task = load_task("rev")
    orig = Path(task.program_path).read_bytes()
    v = check_submission(task, {"bin/tool": orig, "compile.sh": b"cp bin/tool executable\n"})
    assert v and "byte-identical" in v
    v2 = check_submission(task, {"tool": orig + b"\0padding", "compile.sh": b"cp tool executable\n"})
    assert v2 and "embeds the original" in v2
    # another ELF (a build artifact, e.g. the agent's own compiled binary) is not flagged
    assert check_submission(task, {"a.out": Path("/usr/bin/tac").read_bytes()}) is None
    write(tmp_path, {"compile.sh": "cp bin/tool executable\n"})
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_bytes(orig)
    g = grade(task, tmp_path, isolation="path-shim")
    assert g.score == 0.0 and "byte-identical" in (g.violation or "")


@pytest.mark.slow
def test_build_artifacts_in_workspace_are_not_graded(tmp_path):
    """A workspace with the agent's own compiled binaries still grades from source."""
    task = load_task("rev")
    sub = shutil.copytree(task.reference_dir, tmp_path / "ws")
    (sub / "executable").write_bytes(Path("/usr/bin/tac").read_bytes())  # stale build output
    (sub / "x.o").write_bytes(b"\x7fELF junk")
    g = grade(task, sub, isolation="path-shim")
    assert g.violation is None and g.resolved


def test_static_anticheat_no_false_positives_on_clean_sources():
    """The references and every mention of the name or path are not flagged."""
    for tid in ALL:
        task = load_task(tid)
        assert check_submission(task, collect_submission(task, task.reference_dir)) is None
    task = load_task("rev")
    clean = {
        "main.py": b"import sys\nrev = lambda s: s[::-1]\nsys.stderr.write(\"/usr/bin/rev: bad\\nTry 'rev --help'\\n\")\n",
        "compile.sh": b"# build rev clone, unlike /usr/bin/rev\necho 'building rev clone'\ncp main.py executable\n",
        "unused.sh": b"#!/bin/sh\nexec rev \"$@\"\n",
    }
    assert check_submission(task, clean) is None


@pytest.mark.slow
def test_path_shim_fallback_catches_call_by_name(tmp_path):
    task = load_task("rev")
    files = {"main.sh": '#!/bin/sh\nexec $(printf r)ev "$@"\n', "compile.sh": "cp main.sh executable; chmod +x executable\n"}
    g = grade(task, write(tmp_path, files), isolation="path-shim")
    assert g.isolation == "path-shim"
    assert g.violation and "reached for the original" in g.violation and g.score == 0.0


@pytest.mark.slow
def test_reference_passes_in_path_shim_mode():
    task = load_task("tac")
    g = grade(task, task.reference_dir, isolation="path-shim")
    assert g.resolved and g.violation is None and g.isolation == "path-shim"


@needs_ns
def test_hidden_tests_unreadable_during_grading(tmp_path):
    from scarce_lab.tasks.suite import SUITE_DIR

    task = load_task("rev")
    files = {"compile.sh": f"ls {SUITE_DIR} 2>&1 | head -1; cat {SUITE_DIR}/rev/tests.json | head -c 30;"
                           f" echo END\n"}
    g = grade(task, write(tmp_path, files))
    assert "No such file or directory" in g.build_log.splitlines()[0]
    assert "expected_stdout" not in g.build_log


def test_build_timeout(tmp_path):
    g = grade(load_task("rev"), write(tmp_path, {"compile.sh": "sleep 30\n"}), build_timeout_s=0.5,
              isolation="auto" if CAPS.private_mounts else "path-shim")
    assert not g.build_ok and "timed out" in g.build_log and g.score == 0.0


def test_grade_of_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        grade(load_task("rev"), tmp_path / "missing")
