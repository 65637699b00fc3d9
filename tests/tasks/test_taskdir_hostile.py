"""Hostile task directories (an adversarial review of ``--task dir:PATH``).

A task directory is input from elsewhere: every part this loader reads is checked at
:func:`scarce_lab.tasks.taskdir.load_task_dir` (task.toml via ``check_task_toml``),
and a verifier's ``reward.json`` at ``parse_reward``. Before these checks a
``verifier = 3`` crashed with ``AttributeError``, ``timeout_sec = -1`` or ``"60"``
silently became the cap, ``memory_mb = 1`` starved every verification, a deeply nested
task.toml raised ``RecursionError``, a 300 MB instruction.md was read whole, a FIFO in
environment/ was dropped without a word, and ``{"score": 0.5, "score": 1.0}`` scored 1.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from scarce_lab.tasks.taskdir import (
    MAX_INSTRUCTION_BYTES,
    MAX_TOML_BYTES,
    TaskDirError,
    load_task_dir,
    parse_reward,
)

TINY = Path(__file__).parents[1] / "taskdirs" / "tiny-target"


def _copy(tmp_path: Path, toml: str | None = None) -> Path:
    d = tmp_path / "task"
    shutil.copytree(TINY, d)
    if toml is not None:
        (d / "task.toml").write_text(toml)
    return d


@pytest.mark.parametrize(("toml", "match"), [
    ("verifier = 3\n", r"verifier = 3 must be a table"),
    ('environment = "x"\n', r"environment = 'x' must be a table"),
    ("scarce_lab = [1]\n", r"scarce_lab = \[1\] must be a table"),
    ("[verifier]\ntimeout_sec = -1\n", r"timeout_sec = -1 is not"),
    ("[verifier]\ntimeout_sec = 0\n", r"timeout_sec = 0 is not"),
    ("[verifier]\ntimeout_sec = nan\n", r"timeout_sec = nan is not"),
    ("[verifier]\ntimeout_sec = inf\n", r"timeout_sec = inf is not"),
    ('[verifier]\ntimeout_sec = "60"\n', r"timeout_sec = '60' is not"),
    ("[verifier]\ntimeout_sec = true\n", r"timeout_sec = True is not"),
    ("[environment]\nmemory_mb = 1\n", r"memory_mb = 1 is not a whole number >= 64"),
    ("[environment]\nmemory_mb = 1500.5\n", r"memory_mb = 1500.5 is not"),
    ('[environment]\nmemory_mb = "4G"\n', r"memory_mb = '4G' is not"),
    ("[scarce_lab]\nprogram = 3\n", r"program = 3 is not a file"),
])
def test_task_toml_values_are_checked_not_defaulted(tmp_path, toml, match):
    with pytest.raises(TaskDirError, match=match):
        load_task_dir(_copy(tmp_path, toml))


def test_task_toml_limits_that_are_fine_are_kept_and_capped(tmp_path):
    t = load_task_dir(_copy(tmp_path, "[verifier]\ntimeout_sec = 600.0\n[environment]\nmemory_mb = 4096.0\n"
                                      "[metadata]\nanything = [1, {a = 2}]\n"))
    assert (t.timeout_s(300), t.memory_bytes()) == (300, 4096 << 20)
    t = load_task_dir(_copy(tmp_path / "b", "[environment]\nmemory_mb = 99999999999999\n"))
    assert t.memory_bytes(cap=4 << 30) == 4 << 30


@pytest.mark.parametrize("toml", [
    "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n",     # nesting bomb under the size bound
    "a = " + "[" * 30000 + "]" * 30000 + "\n",             # over the size bound
    'a = "' + "x" * (MAX_TOML_BYTES + 1) + '"\n',
])
def test_a_toml_bomb_is_an_error_not_a_crash(tmp_path, toml):
    with pytest.raises(TaskDirError, match="task.toml"):
        load_task_dir(_copy(tmp_path, toml))


def test_instruction_is_bounded_and_must_be_a_regular_file(tmp_path):
    d = _copy(tmp_path)
    (d / "instruction.md").write_bytes(b"a" * (MAX_INSTRUCTION_BYTES + 1))
    with pytest.raises(TaskDirError, match="instruction.md is larger than"):
        load_task_dir(d)
    (d / "instruction.md").unlink()
    os.mkfifo(d / "instruction.md")                      # would block a plain open()
    with pytest.raises(TaskDirError, match="instruction.md"):
        load_task_dir(d)


@pytest.mark.parametrize("part", ["environment", "tests"])
def test_a_fifo_in_the_task_is_an_error_not_dropped(tmp_path, part):
    d = _copy(tmp_path)
    os.mkfifo(d / part / "pipe")
    with pytest.raises(TaskDirError, match="pipe is not a regular file"):
        load_task_dir(d)


def test_deeply_nested_or_countless_folders_are_an_error_not_a_recursion_error(tmp_path):
    """Before: the link check walked environment/ with ``os.walk`` (recursive): 1,500
    nested folders raised ``RecursionError`` (checked by hand: the walk is iterative now
    and stops at ``MAX_DEPTH``; 40 levels here, so that pytest's recursive clean-up of
    its temporary folders never meets such a chain); empty folders were not counted."""
    from scarce_lab.tasks.taskdir import MAX_DEPTH, MAX_FILES

    d = _copy(tmp_path)
    (d / "environment" / "/".join(["d"] * (MAX_DEPTH + 8))).mkdir(parents=True)
    with pytest.raises(TaskDirError, match=f"deeper than {MAX_DEPTH} folders"):
        load_task_dir(d)
    w = _copy(tmp_path / "wide")
    for i in range(20 * MAX_FILES + 1):
        (w / "environment" / f"d{i}").mkdir()
    with pytest.raises(TaskDirError, match="more than .* files and folders"):
        load_task_dir(w)


@pytest.mark.parametrize(("data", "why"), [
    (b'{"score": 0.5, "score": 1.0}', "appears twice"),    # which one counts is up to the reader
    (b"[" * 100_000, "not JSON"),
    (b'{"score": NaN}', "not a number in"),
    (b'{"score": 1e400}', "not a number in"),
])
def test_reward_json_that_is_ambiguous_or_hostile_is_no_score(data, why):
    score, reason = parse_reward(data)
    assert score is None and why in reason
    assert parse_reward(b'{"score": 0.25, "reason": "ok"}') == (0.25, "ok")


# -- the verifier inside the sandbox ------------------------------------------------------
def _bwrap():
    from scarce_lab.sandbox.local import detect_capabilities

    caps = detect_capabilities()
    return pytest.mark.skipif(caps.mode != "bwrap", reason=f"bubblewrap sandbox unavailable: {caps.reason}")


def _with_verifier(tmp_path: Path, code: str) -> Path:
    d = _copy(tmp_path)
    (d / "tests" / "compute_reward.py").write_text(code)
    return d


_HUGE_REWARD_VERIFIER = ("import sys\n"
                         "out = sys.argv[sys.argv.index('--output-dir') + 1]\n"
                         "import os\nos.makedirs(out, exist_ok=True)\n"
                         "open(out + '/reward.json', 'w').write('{\"score\": 0.75}' + ' ' * (3 << 20))\n")


@_bwrap()
def test_a_reward_json_over_the_limit_is_no_score_not_a_parsed_prefix(tmp_path):
    """Before: only the first MiB was read and parsed; a valid object followed by padding
    scored (and any other oversized file was reported as broken JSON). The program
    cannot write reward.json any more (it has a box of its own): the verifier does."""
    from scarce_lab.tasks.taskdir import MAX_REWARD_BYTES, SandboxVerifier

    v = SandboxVerifier(load_task_dir(_with_verifier(tmp_path, _HUGE_REWARD_VERIFIER)), sandbox="local", timeout_s=20)
    r = v("def value():\n    return 7\n")
    assert r.score is None and f"over {MAX_REWARD_BYTES}" in r.reason


@_bwrap()
def test_a_verifier_over_its_time_is_no_score(tmp_path):
    from scarce_lab.tasks.taskdir import SandboxVerifier

    d = _with_verifier(tmp_path, "import time\ntime.sleep(30)\n")
    r = SandboxVerifier(load_task_dir(d), sandbox="local", timeout_s=1.5)("def value():\n    return 7\n")
    assert r.score is None and "verifier timed out after 1.5 s" in r.reason


# -- the program under test cannot set its own score ---------------------------------------
# Each program below answers value() = 3 (an honest score of 1 - 4/7) and tries to reach
# the verifier another way. ``_REACHES_AN_IMPORTING_VERIFIER`` are those shown (by
# test_the_attacks_work_where_the_verifier_imports_the_program) to score 1.0 when the
# verifier imports the program into its own interpreter, as the task format does.
_THREE = "\ndef value():\n    return 3\n"
_REACHES_AN_IMPORTING_VERIFIER = {
    "json.dumps": ("import json\n_dumps = json.dumps\n"
                   "json.dumps = lambda o, *a, **k: _dumps({**o, 'score': 1.0} if isinstance(o, dict) else o, *a, **k)\n"
                   + _THREE),
    "globals of __main__": "import __main__\n__main__.TARGET = 3\n" + _THREE,
    "builtins": "import builtins\nbuiltins.abs = lambda x: 0\n" + _THREE,
    "sys.modules": ("import sys\n"
                    "for m in list(sys.modules.values()):\n"
                    "    if getattr(m, 'TARGET', None) == 7:\n"
                    "        m.TARGET = 3\n" + _THREE),
    "frames": ("import inspect, sys\n"
               "def value():\n"
               "    for f in inspect.stack():\n"
               "        f.frame.f_globals['TARGET'] = 3\n"
               "    sys._getframe(1).f_globals['TARGET'] = 3\n"
               "    return 3\n"),
    "atexit": ("import atexit, glob, os\n"
               "def _w():\n"
               "    for d in {'out', '../out', *glob.glob(os.environ.get('HOME', '.') + '/**/out', recursive=True)}:\n"
               "        try:\n"
               "            open(os.path.join(d, 'reward.json'), 'w').write('{\"score\": 1.0}')\n"
               "        except OSError:\n"
               "            pass\n"
               "atexit.register(_w)\n" + _THREE),
    "reading the verifier's answer": ("import glob, os, re\n"
                                      "def value():\n"
                                      "    for p in {'tests/compute_reward.py', '../tests/compute_reward.py',\n"
                                      "              *glob.glob(os.environ.get('HOME', '.') + '/**/compute_reward.py', recursive=True)}:\n"
                                      "        try:\n"
                                      "            return int(re.search(r'TARGET = (\\d+)', open(p).read()).group(1))\n"
                                      "        except (OSError, AttributeError):\n"
                                      "            pass\n"
                                      "    return 3\n"),
    "a value whose float lies": ("class V:\n    def __float__(self):\n        return 7.0\n"
                                 "def value():\n    return V()\n"),
}
_OTHER_WAYS = {
    "signals": ("import os, signal\n"
                "def value():\n"
                "    for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
                "        try:\n"
                "            os.kill(-1, sig)\n"
                "        except OSError:\n"
                "            pass\n"
                "    return 3\n"),
    "files the verifier reads": ("import os\n"
                                 "for p in ('out/reward.json', '../out/reward.json', '../tests/compute_reward.py'):\n"
                                 "    try:\n"
                                 "        os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                                 "        open(p, 'w').write('{\"score\": 1.0}' if p.endswith('json') else "
                                 "'import json, os; os.makedirs(\"out\", exist_ok=True); "
                                 "open(\"out/reward.json\", \"w\").write(json.dumps({\"score\": 1.0}))')\n"
                                 "    except OSError:\n"
                                 "        pass\n" + _THREE),
    "fake score lines on stdout": ("import sys\nprint('{\"score\": 1.0}')\nprint('score: 1.0', file=sys.stderr)\n"
                                   "def value():\n    print('{\"score\": 1.0}', flush=True)\n    return 3\n"),
    "forged answer lines": ("def value():\n    return '3\\n{\"ok\": 7}\\n'\n"),
}


def _score_of(program: str, **kw):
    from scarce_lab.tasks.taskdir import SandboxVerifier

    return SandboxVerifier(load_task_dir(TINY), sandbox="local", timeout_s=20, **kw)(program)


@_bwrap()
def test_a_program_cannot_set_its_own_score():
    """Before: the verifier imported the program; its json.dumps patch scored 1.0 (the
    honest score of value() = 3 is 1 - 4/7)."""
    r = _score_of(_REACHES_AN_IMPORTING_VERIFIER["json.dumps"])
    assert r.score == pytest.approx(1 - 4 / 7) and r.program == "" and r.calls == 3


@_bwrap()
@pytest.mark.parametrize("way", sorted(set(_REACHES_AN_IMPORTING_VERIFIER) | set(_OTHER_WAYS) - {"json.dumps"}))
def test_no_other_way_of_reaching_the_verifier_changes_the_score(way):
    program = {**_REACHES_AN_IMPORTING_VERIFIER, **_OTHER_WAYS}[way]
    r = _score_of(program)
    if way == "a value whose float lies":  # not JSON data: a failing program, as any other
        assert r.score == 0.0 and "not JSON data" in r.reason
    elif way == "forged answer lines":  # the string arrives as a string: float() of it fails
        assert r.score == 0.0 and "could not convert string to float" in r.reason
    else:
        assert r.score == pytest.approx(1 - 4 / 7), r
        assert r.exit_code == 0 and r.program == ""


def test_the_attacks_work_where_the_verifier_imports_the_program(tmp_path):
    """The control: the same verifier, run directly (no sandbox, no proxy) on each
    program of ``_REACHES_AN_IMPORTING_VERIFIER``, gives it 1.0. (Signals are not tried
    here: ``kill(-1)`` outside a sandbox reaches this machine's processes.)"""
    import json
    import subprocess
    import sys

    for way, program in _REACHES_AN_IMPORTING_VERIFIER.items():
        d = _copy(tmp_path / way.replace(" ", "_").replace(".", "_"))
        (d / "environment" / "program.py").write_text(program)
        subprocess.run([sys.executable, "-I", "tests/compute_reward.py", "--app-dir", "environment",
                        "--output-dir", "out"], cwd=d, check=True, timeout=30, capture_output=True,
                       env={**os.environ, "HOME": str(d)})
        assert json.loads((d / "out" / "reward.json").read_text())["score"] == 1.0, way


_FAILING = {  # program, SandboxVerifier options, what the reason holds, what Verification.program holds
    "an exception with crafted attributes": (
        "class E(Exception):\n    score = 1.0\n    def __str__(self):\n        return '{\"score\": 1.0}\\n'\n"
        "def value():\n    raise E()\n", {}, "program failed: ProgramError: E: ", ""),
    "an answer over the limit": ("def value():\n    return 'x' * 70000\n", {"answer_bytes": 1 << 16},
                                 "", "call value's answer is over 65536 bytes"),
    "a call that never returns": ("def value():\n    while True:\n        pass\n", {"call_timeout_s": 1.0},
                                  "", "call value gave no answer within 1 s"),
    "an import that never returns": ("import time\ntime.sleep(60)\n" + _THREE, {"call_timeout_s": 1.0},
                                     "", "import gave no answer within 1 s"),
    "a process that ends": ("import os\nos._exit(0)\n", {}, "", "the program's process ended during import"),
    "SystemExit in a call": ("def value():\n    raise SystemExit(3)\n", {}, "SystemExit: 3", ""),
    "an import error": ("raise ValueError('no')\n", {}, "ValueError: no", "the program failed to import"),
}


@_bwrap()
@pytest.mark.parametrize("case", sorted(_FAILING))
def test_a_program_that_fails_fails_alone_and_its_failure_is_recorded(case):
    """Exceptions (crafted attributes included) arrive as a message; an answer over the
    limit, a call or an import that never returns, a process that ends are failures
    of the program (its box killed), scored 0 by the verifier like any failing
    program, never a crash or a hang of the run."""
    program, kw, reason, failure = _FAILING[case]
    t0 = time.monotonic()
    r = _score_of(program, **kw)
    assert r.score == 0.0 and r.exit_code == 0 and reason in r.reason, r
    assert r.program.startswith(failure) and bool(r.program) == bool(failure), r
    assert time.monotonic() - t0 < 10


_IMPORTING_VERIFIER = '''import json, os, sys
app = sys.argv[sys.argv.index("--app-dir") + 1]
out = sys.argv[sys.argv.index("--output-dir") + 1]
sys.path.insert(0, app)
import program
from program import scale
got = [scale([1.5, 2], k=program.FACTOR), program.LABELS, hasattr(program, "missing"), "scale" in dir(program)]
try:
    scale({1, 2})
except Exception as exc:  # a set is not JSON data
    got.append(type(exc).__name__)
try:
    program.boom()
except Exception as exc:
    got.append(str(exc))
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "reward.json"), "w").write(json.dumps({"score": 0.5, "reason": json.dumps(got)}))
'''


@_bwrap()
def test_an_honest_verifier_keeps_its_import_calls_and_constants(tmp_path):
    """The format's contract through the proxy: ``import program`` from the app folder,
    ``from program import f``, keyword arguments, module constants, ``hasattr``/``dir``,
    the program's exceptions as ``ProgramError`` with their message."""
    import json

    from scarce_lab.tasks.taskdir import SandboxVerifier

    program = ("FACTOR = 3\nLABELS = {'a': (1, 2), 'b': None}\n"
               "def scale(xs, k=1):\n    return [x * k for x in xs]\n"
               "def boom():\n    raise KeyError('no such key')\n")
    r = SandboxVerifier(load_task_dir(_with_verifier(tmp_path, _IMPORTING_VERIFIER)), sandbox="local",
                        timeout_s=20)(program)
    assert r.score == 0.5 and r.program == "", r
    assert json.loads(r.reason) == [[4.5, 6], {"a": [1, 2], "b": None}, False, True, "ProgramError",
                                    "KeyError: 'no such key'"]


def test_the_relay_bounds_requests_and_answers_without_a_sandbox(tmp_path):
    """The relay alone (plain processes, no boxes): an honest call; a request of the
    verifier over the limit (its own error, the program not blamed; the relay's bound
    behind the proxy's); an answer over the limit (the program's failure, its process
    stopped, every later call refused)."""
    import subprocess
    import sys

    from scarce_lab.tasks.program_proxy import HOST, MAX_REQUEST_BYTES, PROXY, ProgramBridge

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "prog.py").write_text("def echo(x):\n    return x\n\n\ndef big(n):\n    return 'z' * n\n")
    client = ("import sys\nsys.path.insert(0, sys.argv[1])\nimport proxy as p\n"
              "print(p.echo([1, 'a', None]))\n"
              "for f, arg in ((p.echo, 'y' * (LIMIT + 1)), (p.big, 5000), (p.big, 1)):\n"
              "    try:\n        print(f(arg))\n    except Exception as exc:\n        print(type(exc).__name__, str(exc)[:60])\n")

    def run(proxy_limit: int, client_limit: int) -> tuple[list[str], ProgramBridge, int]:
        with ProgramBridge(call_timeout_s=5, answer_bytes=4096) as bridge:
            (tmp_path / "host.py").write_text(HOST.format(sock=str(bridge.folder / "program.sock"),
                                                          app=str(tmp_path / "app"), program="prog.py"))
            (tmp_path / "proxy.py").write_text(PROXY.format(sock=str(bridge.folder / "verifier.sock"),
                                                            limit=proxy_limit))
            host = subprocess.Popen([sys.executable, "-I", str(tmp_path / "host.py")])
            bridge.start(host.kill)
            out = subprocess.run([sys.executable, "-I", "-c", client.replace("LIMIT", str(client_limit)),
                                  str(tmp_path)], capture_output=True, text=True, timeout=30).stdout.splitlines()
        return out, bridge, host.wait(timeout=10)  # its connection closed with the relay, or killed

    out, bridge, code = run(MAX_REQUEST_BYTES * 2, MAX_REQUEST_BYTES)  # the relay's bound: it says so, then closes
    assert out == ["[1, 'a', None]", f"ProgramError ValueError: a request is over {MAX_REQUEST_BYTES} bytes",
                   "ProgramError the program's answer is not JSON data",
                   "ProgramError the program's answer is not JSON data"] and bridge.failure == "" and code == 0
    out, bridge, code = run(1000, 1000)
    assert out == ["[1, 'a', None]", "ValueError a request to the program is over 1000 bytes",
                   "ProgramError ProgramFailure: call big's answer is over 4096 bytes",
                   "ProgramError ProgramFailure: call big's answer is over 4096 bytes"]
    # hello, get echo, call echo, get big, call big, call big (the callable is kept)
    assert bridge.failure == "call big's answer is over 4096 bytes" and bridge.calls == 6 and code != 0
