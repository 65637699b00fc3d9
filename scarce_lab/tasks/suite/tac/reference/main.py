#!/usr/bin/env python3
"""Reference re-implementation of tac (GNU coreutils) for the SCARCE task suite.
Covers -b/--before and -s/--separator STRING (no -r regex)."""
import getopt
import sys

PROG = "tac"


def fail(msg):
    sys.stderr.write(f"{PROG}: {msg}\nTry '{PROG} --help' for more information.\n")
    sys.exit(1)


def records(data, sep, before):
    out, start, i = [], 0, 0
    if not data:
        return out
    if before:
        pos = []
        i = data.find(sep)
        while i != -1:
            pos.append(i)
            i = data.find(sep, i + len(sep))
        cuts = [0] + [p for p in pos if p != 0] + [len(data)]
        return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    while True:
        j = data.find(sep, start)
        if j == -1:
            if start < len(data):
                out.append(data[start:])
            return out
        out.append(data[start : j + len(sep)])
        start = j + len(sep)


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, "brs:", ["before", "regex", "separator="])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    sep, before = b"\n", False
    for o, v in opts:
        if o in ("-b", "--before"):
            before = True
        elif o in ("-s", "--separator"):
            if v == "":
                sys.stderr.write(f"{PROG}: separator cannot be empty\n")
                sys.exit(1)
            sep = v.encode()
    status = 0
    out = sys.stdout.buffer
    for f in args or ["-"]:
        try:
            data = sys.stdin.buffer.read() if f == "-" else open(f, "rb").read()
        except OSError as e:
            sys.stderr.write(f"{PROG}: failed to open '{f}' for reading: {e.strerror}\n")
            status = 1
            continue
        out.write(b"".join(reversed(records(data, sep, before))))
    out.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
