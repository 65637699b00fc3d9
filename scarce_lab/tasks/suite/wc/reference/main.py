#!/usr/bin/env python3
"""Reference re-implementation of wc (GNU coreutils, C locale) for the SCARCE task
suite. Covers -l, -w, -c, -m, -L on standard input, and missing-file errors."""
import getopt
import sys

PROG = "wc"
SPACE = b" \t\n\v\f\r"


def fail(msg):
    sys.stderr.write(f"{PROG}: {msg}\nTry '{PROG} --help' for more information.\n")
    sys.exit(1)


def counts(data):
    lines = data.count(b"\n")
    words, inword = 0, False
    for b in data:
        if b in SPACE:
            inword = False
        elif not inword:
            inword = True
            words += 1
    maxlen = 0
    for line in data.split(b"\n"):
        col = 0
        for b in line:
            if b == 9:
                col += 8 - col % 8
            elif b in (12, 13):
                col = 0
            elif 32 <= b < 127:
                col += 1
        maxlen = max(maxlen, col)
    return {"l": lines, "w": words, "m": len(data), "c": len(data), "L": maxlen}


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, "clLmw", ["bytes", "chars", "lines", "words", "max-line-length"])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    longs = {"--bytes": "c", "--chars": "m", "--lines": "l", "--words": "w", "--max-line-length": "L"}
    want = {longs.get(o, o[-1]) for o, _ in opts}
    if not want:
        want = {"l", "w", "c"}
    order = [k for k in ("l", "w", "m", "c", "L") if k in want]
    inputs, status = [], 0
    for f in args or ["-"]:
        if f == "-":
            inputs.append((f, sys.stdin.buffer.read()))
            continue
        try:
            with open(f, "rb") as fh:
                inputs.append((f, fh.read()))
        except OSError as e:
            sys.stderr.write(f"{PROG}: {f}: {e.strerror}\n")
            status = 1
    width = 1 if (len(order) == 1 and len(args) <= 1) else 7
    out = []
    for name, data in inputs:
        c = counts(data)
        fields = [str(c[k]).rjust(width) for k in order]
        out.append(" ".join(fields) + ("" if name == "-" and not args else f" {name}") + "\n")
    sys.stdout.write("".join(out))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
