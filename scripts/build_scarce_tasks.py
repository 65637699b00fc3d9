#!/usr/bin/env python3
"""Build the shipped SCARCE task suite from real programs on this (Debian) machine.

For each program (rev, tac, nl, fold, wc, cut, tr, expand, seq, factor) it writes
``scarce_lab/tasks/suite/<id>/``:

* ``docs.txt``: the program's real manual page (``man -P cat``, rendered 80 columns,
  overstrikes removed with ``col -bx``); falls back to ``PROG --help`` if no manual;
  the source is recorded in ``task.json`` (``doc_source``).
* ``tests.json``: 30+ hidden tests (arguments + stdin), whose expected stdout, stderr
  and exit code come from RUNNING the real program now (``LC_ALL=C``), including error
  cases (bad options, bad operands: exit code 1). stderr is recorded but not compared
  (it names the program and the binary's path conventions).
* ``task.json``: id, name, program, program_path, doc_source, examples (4 documented
  examples, real runs on inputs distinct from the hidden tests), built_with.

Deterministic: inputs come from ``random.Random(f"{seed}:{program}")``.
The hand-written reference submissions (``reference/main.py`` + ``compile.sh``) are
not generated; ``--verify`` grades each against the new tests (must be 100 %).

Usage::

    .venv/bin/python scripts/build_scarce_tasks.py [--seed 7] [--only rev,tac] [--verify]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "scarce_lab" / "tasks" / "suite"
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "HOME": "/nonexistent"}
WORDS = ["alpha", "beta", "gamma", "delta", "pi", "x", "yy", "zed", "foo", "bar", "Baz",
         "QUUX", "a1", "b-2", "c_3", "42", "7", "hello", "world", "the", "of", "ok!", "a,b",
         "k:v", "tab", "end."]
NAMES = {
    "rev": "Reverse characters of lines", "tac": "Concatenate and print in reverse",
    "nl": "Number lines", "fold": "Wrap input lines", "wc": "Count lines, words, bytes",
    "cut": "Select parts of lines", "tr": "Translate or delete characters",
    "expand": "Convert tabs to spaces", "seq": "Print a sequence of numbers",
    "factor": "Factor numbers",
}


# ------------------------------------------------------------------ random inputs
def text(rng: random.Random, lines=(1, 6), words=(0, 8), tabs=False, seps=" ",
         final_newline: float = 0.85, blank: float = 0.15) -> str:
    out = []
    for _ in range(rng.randint(*lines)):
        if rng.random() < blank:
            out.append("")
            continue
        ws = [rng.choice(WORDS) for _ in range(rng.randint(*words))]
        line = ""
        for i, w in enumerate(ws):
            if i:
                line += "\t" if (tabs and rng.random() < 0.3) else rng.choice(seps)
            line += w
        if tabs and rng.random() < 0.3:
            line = "\t" + line
        out.append(line)
    s = "\n".join(out)
    return s + "\n" if (s and rng.random() < final_newline) else s


def csv_text(rng: random.Random, delim: str) -> str:
    rows = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.15:
            rows.append(rng.choice(WORDS))  # line without delimiter
        else:
            rows.append(delim.join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))))
    return "\n".join(rows) + ("\n" if rng.random() < 0.85 else "")


# ------------------------------------------------------------------ cases per program
def cases_rev(r):
    c = [([], ""), ([], "\n"), ([], "abc"), ([], "abc\n"), ([], "a b c\n\nxyz\n"),
         ([], "racecar\nlevel\n"), ([], "\t tab\n"), (["-x"], "a\n"), (["nofile"], ""),
         (["--bogus"], "x\n"), ([], "12345\n678\n"), (["-"], "from stdin\n")]
    while len(c) < 34:
        c.append(([], text(r, seps=" ,.", tabs=r.random() < 0.3)))
    return c


def cases_tac(r):
    c = [([], ""), ([], "a\nb\nc\n"), ([], "a\nb\nc"), ([], "\n\n"), (["-b"], "a\nb\nc\n"),
         (["-b"], "a\nb\nc"), (["-s", ","], "1,2,3"), (["-s", ","], "1,2,3,"),
         (["-s", "::"], "a::b::c"), (["-b", "-s", ","], "x,y,z"), (["--separator=;"], "p;q;r;"),
         (["-x"], "a\n"), (["nofile"], ""), (["-s"], "a\n"), (["--before"], "1\n2\n3")]
    while len(c) < 34:
        args = r.choice([[], [], ["-b"], ["-s", " "], ["-s", "a"], ["-b", "-s", " "]])
        c.append((args, text(r)))
    return c


def cases_nl(r):
    c = [([], ""), ([], "a\n\nb\n"), ([], "a\n\nb"), (["-b", "a"], "a\n\nb\n"),
         (["-b", "n"], "a\nb\n"), (["-n", "ln"], "x\ny\n"), (["-n", "rz"], "x\ny\n"),
         (["-w", "3"], "x\ny\n"), (["-s", ": "], "x\ny\n"), (["-v", "10"], "x\ny\n"),
         (["-i", "5"], "x\ny\nz\n"), (["-v", "0", "-i", "2", "-b", "a"], "a\n\nb\n"),
         (["-n", "rz", "-w", "2", "-v", "98"], "a\nb\nc\n"), (["-x"], "a\n"),
         (["-b", "x"], "a\n"), (["-n", "zz"], "a\n"), (["-w", "0"], "a\n"),
         (["-w", "1", "-v", "8"], "a\nb\nc\n"), (["--number-separator=--"], "q\n")]
    while len(c) < 34:
        args = []
        if r.random() < 0.5:
            args += ["-b", r.choice("atn")]
        if r.random() < 0.5:
            args += ["-n", r.choice(["ln", "rn", "rz"])]
        if r.random() < 0.4:
            args += ["-w", str(r.randint(1, 8))]
        if r.random() < 0.3:
            args += ["-s", r.choice([" ", ":", ". ", ""])]
        if r.random() < 0.3:
            args += ["-v", str(r.randint(-3, 20))]
        c.append((args, text(r)))
    return c


def cases_fold(r):
    long = "The quick brown fox jumps over the lazy dog and keeps running far away\n"
    c = [([], ""), ([], long * 2), (["-w", "10"], long), (["-w", "10", "-s"], long),
         (["-w", "1"], "abc\n"), (["-w", "5"], "a\tb\tc\n"), (["-b", "-w", "5"], "a\tb\tc\n"),
         (["-w", "4"], "ab\bcdefg\n"), (["-s", "-w", "6"], "aaaaaaaaaa bb\n"),
         (["-w", "0"], "x\n"), (["-w", "x"], "x\n"), (["-z"], "x\n"), (["-8"], long),
         (["--width=12", "--spaces"], long), (["-w", "3"], "abcdef"), (["-s", "-w", "4"], "a  b  c  d\n")]
    while len(c) < 34:
        args = ["-w", str(r.randint(2, 25))]
        if r.random() < 0.5:
            args.append("-s")
        if r.random() < 0.2:
            args.append("-b")
        c.append((args, text(r, words=(0, 14), tabs=r.random() < 0.3)))
    return c


def cases_wc(r):
    c = [([], ""), ([], "a b\nc\n"), (["-l"], "a\nb\n"), (["-w"], "  many   spaces\there \n"),
         (["-c"], "bytes\n"), (["-m"], "chars\n"), (["-L"], "short\nlongest line\n"),
         (["-lw"], "a b\nc"), (["-cl"], "x\n"), (["-lwcm"], "a b\nc"), (["-x"], "a\n"),
         (["nofile"], ""), (["--lines", "--words"], "a b\n"), (["-L"], "a\tb\n"),
         ([], "no newline"), (["-w"], "\v\f\r x\n")]
    while len(c) < 34:
        opts = "".join(x for x in "lwcmL" if r.random() < 0.35)
        c.append(((["-" + opts] if opts else []), text(r, tabs=r.random() < 0.4)))
    return c


def cases_cut(r):
    c = [(["-d:", "-f2"], "a:b:c\nxyz\n"), (["-d:", "-f2", "-s"], "a:b:c\nxyz\n"),
         (["-d", ",", "-f", "1,3"], "1,2,3,4\n"), (["-d,", "-f2-"], "1,2,3,4\n"),
         (["-d,", "-f-2"], "1,2,3,4\n"), (["-c", "1-3"], "abcdef\n"), (["-b", "2,4-5"], "abcdef\n"),
         (["-c", "3-"], "abcdef\nxy\n"), (["-f", "2"], "a\tb\tc\n"), (["-d:", "-f1,3", "--complement"], "a:b:c:d\n"),
         (["-c", "2-3", "--complement"], "abcdef\n"), (["-d:", "-f1,2", "--output-delimiter=|"], "a:b:c\n"),
         (["-d:", "-f", "5"], "a:b\n"), ([], "a\n"), (["-f"], "a\n"), (["-f", "0"], "a\n"),
         (["-c", "3-1"], "abc\n"), (["-c", "1", "-f", "2"], "a\n"), (["-d", "ab", "-f", "1"], "a\n"),
         (["-x"], "a\n"), (["-d:", "-c", "1"], "a\n"), (["-d:", "-f2"], "a:b:c")]
    while len(c) < 36:
        d = r.choice([",", ":", " ", ";"])
        kind = r.random()
        if kind < 0.6:
            lst = r.choice(["1", "2", "1,3", "2-3", "3-", "-2", "1,4-", "2,2"])
            args = ["-d" + d, "-f", lst] + (["-s"] if r.random() < 0.3 else []) + (
                ["--complement"] if r.random() < 0.2 else [])
            c.append((args, csv_text(r, d)))
        else:
            lst = r.choice(["1", "1-4", "2,5-", "-3", "3-6,1"])
            c.append(([r.choice(["-c", "-b"]), lst], text(r)))
    return c


def cases_tr(r):
    c = [(["a-z", "A-Z"], "hello World\n"), (["[:lower:]", "[:upper:]"], "mixed Case 123\n"),
         (["-d", "aeiou"], "education is fun\n"), (["-d", "[:digit:]"], "a1b22c333\n"),
         (["-s", " "], "too    many   spaces\n"), (["-s", "a-z"], "aaabbbccc  dd\n"),
         (["-c", "a-z\\n", "_"], "Hello, World!\n"), (["-cd", "[:alnum:]\\n"], "a-b_c!1 2\n"),
         (["abc", "xy"], "aabbcc\n"), (["-t", "abc", "xy"], "aabbcc\n"), (["\\n", " "], "l1\nl2\n"),
         (["-ds", "a", "b"], "abbbcabb\n"), (["a", ""], "x\n"), ([], "x\n"), (["a"], "x\n"),
         (["-d", "a", "b"], "x\n"), (["-x", "a", "b"], "x\n"), (["z-a", "x"], "x\n"),
         (["[:space:]", "\\t"], "a b\tc\n"), (["0-9", "#"], "tel 555-0199\n"),
         (["-s", "[:punct:]"], "wow!!! ok?? fine...\n"), (["\\101-\\103", "x"], "ABCD\n")]
    pairs = [("a-m", "n-z"), ("abc", "123"), ("[:upper:]", "[:lower:]"), ("aeiou", "*"),
             ("[:digit:]", "N"), (" ", "_"), (":,", ";;")]
    while len(c) < 36:
        k = r.random()
        if k < 0.5:
            a, b = r.choice(pairs)
            args = ([r.choice(["-s", "-c", "-t"])] if r.random() < 0.3 else []) + [a, b]
        elif k < 0.8:
            args = ["-d", r.choice(["aeiou", "[:space:]", "a-f", "[:punct:]", "x"])]
        else:
            args = ["-s", r.choice(["a-z", " ", "[:alpha:]", "o"])]
        c.append((args, text(r, seps=" ,:.")))
    return c


def cases_expand(r):
    c = [([], "a\tb\n"), ([], "\t\tx\n"), (["-t", "4"], "a\tbc\tdef\tg\n"),
         (["-t", "2,5"], "\ta\tb\tc\td\n"), (["-i"], "\ta\tb\n"), (["-i", "-t", "3"], "  \tx\ty\n"),
         (["-t", "0"], "a\n"), (["-t", "a"], "a\n"), (["-x"], "a\n"), (["-t", "5,3"], "a\n"),
         ([], "no tabs\n"), ([], "ab\b\tc\n"), (["-3"], "a\tb\n"), (["--tabs=1"], "a\t\tb\n"),
         ([], "x\ty"), ([], "")]
    while len(c) < 34:
        args = r.choice([[], ["-t", str(r.randint(1, 9))], ["-t", "3,7,12"], ["-i"],
                         ["-i", "-t", str(r.randint(1, 6))]])
        c.append((args, text(r, tabs=True)))
    return c


def cases_seq(r):
    c = [(["5"], ""), (["3", "7"], ""), (["1", "2", "10"], ""), (["10", "-3", "1"], ""),
         (["5", "1"], ""), (["0"], ""), (["-3", "3"], ""), (["1", "0.5", "3"], ""),
         (["0.1", "0.1", "0.5"], ""), (["-s", ",", "4"], ""), (["-s", " - ", "1", "3"], ""),
         (["-w", "8", "11"], ""), (["-w", "1", "3", "10"], ""), (["-w", "-5", "2", "5"], ""),
         (["-w", "0.5", "0.25", "1.5"], ""), ([], ""), (["a"], ""), (["1", "0", "5"], ""),
         (["1", "2", "3", "4"], ""), (["-x"], ""), (["2.50", "4"], ""), (["--separator=:", "3"], ""),
         (["-1.5", "1"], "")]
    while len(c) < 34:
        a = r.randint(-5, 10)
        step = r.choice([1, 2, 3, -1, -2, 5])
        b = a + step * r.randint(0, 8)
        args = [str(a), str(step), str(b)]
        if r.random() < 0.3:
            args = ["-s", r.choice([",", " ", "|"])] + args
        if r.random() < 0.2 and a >= 0 and step > 0:
            args = ["-w"] + args
        c.append((args, ""))
    return c


def cases_factor(r):
    c = [(["12"], ""), (["1"], ""), (["0"], ""), (["2", "3", "4"], ""), (["97"], ""),
         (["1001"], ""), (["65536"], ""), (["999999937"], ""), (["600851475143"], ""),
         ([], "10 20\n30\n"), ([], ""), (["a"], ""), (["12", "x", "9"], ""), (["--", "-5"], ""),
         (["-x"], ""), (["+14"], ""), ([], "7 bad 8\n"), (["4294967297"], "")]
    while len(c) < 34:
        if r.random() < 0.7:
            c.append(([str(r.randint(2, 10**6)) for _ in range(r.randint(1, 4))], ""))
        else:
            c.append(([], " ".join(str(r.randint(2, 10**7)) for _ in range(r.randint(1, 5))) + "\n"))
    return c


def examples(program: str) -> list[tuple[list[str], str, str]]:
    """Documented examples shown to agents (inputs distinct from the hidden tests)."""
    return {
        "rev": [([], "hello world\n", "reverse one line"), ([], "abc\ndef\n", "each line separately"),
                ([], "no newline", "last line without newline"), (["-q"], "x\n", "unknown option")],
        "tac": [([], "first\nsecond\nthird\n", "last line first"), (["-s", "+"], "1+2+3+", "custom separator"),
                (["-b"], "one\ntwo\n", "separator before"), ([], "x\ny", "missing final newline")],
        "nl": [([], "one\ntwo\n\nthree\n", "default: non-empty lines"), (["-b", "a", "-n", "ln"], "p\n\nq\n", "all lines, left"),
               (["-w", "2", "-s", ") "], "u\nv\n", "width and separator"), (["-b", "q"], "z\n", "bad style")],
        "fold": [(["-w", "8"], "abcdefghijklmnop\n", "hard wrap"), (["-s", "-w", "9"], "one two three four\n", "wrap at spaces"),
                 (["-w", "6"], "ab\tcd\n", "tabs count to the next multiple of 8"), (["-w", "-1"], "x\n", "bad width")],
        "wc": [([], "one two\nthree\n", "lines words bytes"), (["-w"], "a b  c\n", "words only"),
               (["-lc"], "xy\nz\n", "lines and bytes"), (["-q"], "", "unknown option")],
        "cut": [(["-d", ";", "-f", "2"], "a;b;c\n", "second field"), (["-c", "2-4"], "abcdefg\n", "characters 2 to 4"),
                (["-d", ";", "-f", "1", "-s"], "a;b\nnodelim\n", "only delimited lines"), (["-c"], "x\n", "missing list")],
        "tr": [(["lo", "01"], "hello\n", "translate"), (["-d", "l"], "hello\n", "delete"),
               (["-s", "l"], "hello\n", "squeeze"), (["x"], "x\n", "missing SET2")],
        "expand": [([], "a\tb\tc\n", "default stops every 8"), (["-t", "3"], "ab\tc\n", "every 3 columns"),
                   (["-t", "1,4"], "\ta\tb\tc\n", "explicit stops"), (["-t", "3,2"], "x\n", "stops must ascend")],
        "seq": [(["4"], "", "1 to LAST"), (["2", "3", "11"], "", "with increment"),
                (["-w", "9", "10"], "", "equal width"), (["0", "0", "1"], "", "zero increment")],
        "factor": [(["36"], "", "prime factors"), (["13", "14"], "", "several numbers"),
                   ([], "100\n", "numbers from stdin"), (["-3"], "", "negative number")],
    }[program]


CASES = {n: globals()[f"cases_{n}"] for n in NAMES}


# ------------------------------------------------------------------ runner
def run_real(path: str, args: list[str], stdin: str) -> tuple[str, str, int]:
    """Run the real program; text is UTF-8 (errors replaced) both ways, exactly as the
    sandbox and the grader encode stdin and decode outputs."""
    p = subprocess.run([path, *args], input=stdin.encode("utf-8"), capture_output=True,
                       env=ENV, cwd="/", timeout=20)
    dec = lambda b: b.decode("utf-8", errors="replace")  # noqa: E731
    return dec(p.stdout), dec(p.stderr), p.returncode


def documentation(program: str, path: str) -> tuple[str, str]:
    try:
        man = subprocess.run(["man", "-P", "cat", "1", program], capture_output=True,
                             env={**ENV, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"}, timeout=30)
        if man.returncode == 0 and man.stdout.strip():
            col = subprocess.run(["col", "-bx"], input=man.stdout, capture_output=True, timeout=30)
            return col.stdout.decode("utf-8", errors="replace"), f"man 1 {program} (col -bx, 80 columns)"
    except (OSError, subprocess.SubprocessError):
        pass
    h = subprocess.run([path, "--help"], capture_output=True, env=ENV, timeout=10)
    return (h.stdout or h.stderr).decode("utf-8", errors="replace"), f"{program} --help"


def package_of(path: str) -> str:
    try:
        r = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, timeout=10)
        pkg = r.stdout.split(":")[0].strip()
        v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                           text=True, timeout=10).stdout.strip()
        return f"{pkg} {v}".strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def build_task(program: str, seed: int) -> dict:
    path = shutil.which(program, path=ENV["PATH"])
    if path is None:
        raise SystemExit(f"program {program!r} not installed")
    rng = random.Random(f"{seed}:{program}")
    cases = CASES[program](rng)
    seen, tests = set(), []
    for args, stdin in cases:
        key = (tuple(args), stdin)
        if key in seen:
            continue
        seen.add(key)
        out, err, code = run_real(path, args, stdin)
        tests.append({"id": f"{program}-{len(tests) + 1:03d}", "args": list(args), "stdin": stdin,
                      "expected_stdout": out, "expected_stderr": err, "compare_stderr": False,
                      "expected_exit_code": code, "branch": "error" if code else "ok"})
    exs = []
    for args, stdin, note in examples(program):
        assert (tuple(args), stdin) not in seen, f"example {args} duplicates a hidden test"
        out, err, code = run_real(path, args, stdin)
        exs.append({"args": args, "stdin": stdin, "stdout": out, "stderr": err, "exit_code": code,
                    "note": note})
    docs, src = documentation(program, path)
    folder = SUITE / program
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"id": program, "name": NAMES[program], "program": program, "program_path": path,
            "doc_source": src, "examples": exs,
            "built_with": {"seed": seed, "package": package_of(path), "locale": "C",
                           "system": platform.platform(), "builder": "scripts/build_scarce_tasks.py"}}
    (folder / "task.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    (folder / "tests.json").write_text(json.dumps(tests, indent=0, ensure_ascii=False) + "\n")
    (folder / "docs.txt").write_text(docs)
    return {"program": program, "tests": len(tests), "errors": sum(t["expected_exit_code"] != 0 for t in tests)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated programs (default: all)")
    ap.add_argument("--verify", action="store_true", help="grade the reference solutions")
    a = ap.parse_args(argv)
    progs = [p for p in a.only.split(",") if p] or list(NAMES)
    for p in progs:
        info = build_task(p, a.seed)
        print(f"{p:8s} tests={info['tests']:3d} error-cases={info['errors']:2d}")
    size = sum(f.stat().st_size for f in SUITE.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    print(f"suite size: {size / 1024:.0f} KiB")
    if a.verify:
        sys.path.insert(0, str(ROOT))
        from scarce_lab.tasks import grade, load_task

        bad = 0
        for p in progs:
            t = load_task(p)
            g = grade(t, t.reference_dir)
            print(f"verify {p:8s} {g.passed}/{g.total} violation={g.violation} "
                  f"{[o.id for o in g.per_test if not o.passed][:8]} {g.build_log[:200] if not g.build_ok else ''}")
            bad += not g.resolved
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
