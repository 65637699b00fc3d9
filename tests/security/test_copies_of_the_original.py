"""Kind: getting the original program's bytes into a submission (encoded copies,
wrappers, calls by name or path). Case: ../shared/cases/sandbox/encoded_copy_scores.py.

By construction the original is execute-only in a worker's sandbox, absent (a
tripwire) during grading, and copies made by a build are caught by their bytes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from scarce_lab.tasks import grade
from scarce_lab.tasks.anticheat import contains_original
from scarce_lab.tasks.workspace import prepare_worker

from .conftest import RUNNING_ORIGINAL

READ_ATTEMPTS = [
    "cat ./rev > c1",
    "cat /usr/bin/rev > c2",
    "cp /bin/rev c3",
    "base64 ./rev > c4",
    "/lib64/ld-linux-x86-64.so.2 ./rev < /dev/null > c5",
    "python3 -c \"open('c6','wb').write(open('/usr/bin/rev','rb').read())\"",
    "dd if=./rev of=c7",
    # the hidden real path of the original is not listable
    "ls /run/scarce/orig > c11",
    # a running original: its /proc/<pid>/exe, maps and mem (non-dumpable process)
    RUNNING_ORIGINAL + "echo pid=$p; cat /proc/$p/exe > c8; cat /proc/$p/maps > c9; head -c 100000 /proc/$p/mem > c10",
]


def test_original_runs_but_cannot_be_read(make_sb, rev):
    sb = make_sb()
    prepare_worker(rev, sb, "w0")
    sb.open_slot("w0", 120)
    r = sb.run("w0", "printf 'abc\\nxy\\n' | ./rev; printf 'q\\n' | rev; printf 'z1\\n' | /usr/bin/rev")
    assert (r.exit_code, r.stdout) == (0, "cba\nyx\nq\n1z\n"), r
    for cmd in READ_ATTEMPTS:
        r = sb.run("w0", cmd)
        assert "Permission denied" in r.stderr or "Operation not permitted" in r.stderr, (cmd, r)
    from scarce_lab.sandbox import gate

    got = gate.gather(sb.workdir("w0"), gate.SUBMISSION, skip_dot=False)
    leaked = {k: contains_original(v, rev) for k, v in got.files.items()
              if k != "rev" and contains_original(v, rev)}
    assert not leaked, leaked
    assert "rev" not in sb.list_files("w0") or sb.read_file("w0", "rev", 10) is not None  # host may read


PRELOAD = r'''
#include <stdio.h>
#include <string.h>
__attribute__((constructor)) static void dump(void) {
    FILE *m = fopen("/proc/self/maps", "r"), *o = fopen("dump.bin", "ab");
    char line[512];
    while (m && o && fgets(line, sizeof line, m)) {
        unsigned long a, b; char perm[8], path[256] = {0};
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &a, &b, perm, path) >= 3 && perm[0] == 'r'
            && (strstr(path, "rev") || strstr(path, "orig"))) fwrite((void *)a, 1, b - a, o);
    }
}
'''


def test_preloaded_code_cannot_dump_the_running_original(make_sb, rev):
    """Code injected with LD_PRELOAD would run inside the original and could copy its
    mapped pages: the worker's ./rev and /usr/bin/rev are a static launcher that drops
    the loader's variables before running the hidden original. The same library does
    dump an ordinary program (the check can fail)."""
    sb = make_sb()
    prepare_worker(rev, sb, "w0")
    sb.open_slot("w0", 60)
    sb.write_file("w0", "p.c", PRELOAD.encode())
    r = sb.run("w0", "gcc -shared -fPIC -o p.so p.c && cp /usr/bin/tac ./rev-like && "
                     "echo x | LD_PRELOAD=./p.so ./rev-like >/dev/null && ls -la dump.bin && rm dump.bin && "
                     "echo ab | LD_PRELOAD=$PWD/p.so ./rev && echo ab | LD_PRELOAD=$PWD/p.so LD_LIBRARY_PATH=. rev; "
                     "ls dump.bin")
    assert "ba\nba\n" in r.stdout and "dump.bin" in r.stdout.split("\n")[0], r  # control dumped, then removed
    assert "No such file" in r.stderr, r
    from scarce_lab.sandbox import gate

    leaked = [k for k, v in gate.gather(sb.workdir("w0"), gate.SUBMISSION, skip_dot=False).files.items()
              if k != "rev" and contains_original(v, rev)]
    assert leaked == []


def _xor(data: bytes) -> bytes:
    return bytes(b ^ 0x5A for b in data)


@pytest.mark.parametrize("encoding", ["base64", "xor", "split"])
def test_encoded_copy_decoded_by_the_build_scores_0(make_sb, rev, tmp_path, encoding):
    """The script's instance (base64) and two more of the kind: the decoded copy is
    found among the files the build produced."""
    orig = Path(rev.program_path).read_bytes()
    if encoding == "base64":
        (tmp_path / "payload.b64").write_bytes(base64.b64encode(orig))
        decode = "base64 -d payload.b64 > helper"
    elif encoding == "xor":
        (tmp_path / "payload.bin").write_bytes(_xor(orig))
        decode = ("python3 -c \"import sys;d=open('payload.bin','rb').read();"
                  "open('helper','wb').write(bytes(b^0x5A for b in d))\"")
    else:
        half = len(orig) // 2
        (tmp_path / "a.part").write_bytes(base64.b64encode(orig[:half]))
        (tmp_path / "b.part").write_bytes(base64.b64encode(orig[half:]))
        decode = "{ base64 -d a.part; base64 -d b.part; } > lib/helper"
    (tmp_path / "compile.sh").write_text(
        f"mkdir -p lib; {decode}; chmod +x helper lib/helper 2>/dev/null\n"
        "printf '#!/bin/sh\\nd=$(dirname \"$0\"); exec \"$d/helper\" \"$@\" 2>/dev/null || exec \"$d/lib/helper\" \"$@\"\\n'"
        " > executable; chmod +x executable\n")
    g = grade(rev, tmp_path, sandbox=make_sb())
    assert g.score == 0.0 and g.passed == 0
    assert g.violation and "the build produced" in g.violation and "original" in g.violation, g


WRAPPERS = {
    "shell-by-name": {"main.sh": '#!/bin/sh\nexec rev "$@"\n',
                      "compile.sh": "cp main.sh executable; chmod +x executable\n"},
    "shell-obfuscated": {"main.sh": '#!/bin/sh\nexec $(printf r)ev "$@"\n',
                         "compile.sh": "cp main.sh executable; chmod +x executable\n"},
    "python-abs-path": {"main.py": "#!/usr/bin/env python3\nimport os, sys\n"
                                   "os.execv('/usr/' + 'bin/r' + 'ev', ['x'] + sys.argv[1:])\n",
                        "compile.sh": "cp main.py executable; chmod +x executable\n"},
    "c-system": {"main.c": '#include <stdlib.h>\nint main(){char c[]={114,101,118,0};return system(c)>>8;}\n',
                 "compile.sh": "cc -o executable main.c\n"},
    "copy-at-build": {"compile.sh": "p=$(command -v r''ev); cp \"$p\" executable\n"},
    "call-during-build": {"compile.sh": "printf 'olleh\\n' | rev > expected.txt; "
                                        "printf '#!/bin/sh\\ncat\\n' > executable; chmod +x executable\n"},
}


@pytest.mark.parametrize("kind", list(WRAPPERS))
@pytest.mark.slow
def test_calls_of_the_original_hit_the_tripwire(make_sb, rev, tmp_path, kind):
    for name, text in WRAPPERS[kind].items():
        (tmp_path / name).write_text(text)
    g = grade(rev, tmp_path, sandbox=make_sb())
    assert g.score == 0.0 and g.passed == 0
    assert g.violation and ("reached for the original" in g.violation or "the build produced" in g.violation), g
