#!/usr/bin/env python3
"""Reference re-implementation of rev (util-linux) for the SCARCE task suite."""
import getopt
import sys

PROG = "rev"


def fail(msg):
    sys.stderr.write(f"{PROG}: {msg}\nTry '{PROG} --help' for more information.\n")
    sys.exit(1)


def rev_stream(data, out):
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if last and not line:
            break
        out.write(line[::-1] + (b"" if last else b"\n"))


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, "hV0", ["help", "version", "zero"])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    out = sys.stdout.buffer
    status = 0
    if not args:  # util-linux rev reads stdin only without file operands ("-" is a file name)
        rev_stream(sys.stdin.buffer.read(), out)
    for f in args:
        try:
            with open(f, "rb") as fh:
                rev_stream(fh.read(), out)
        except OSError as e:
            sys.stderr.write(f"{PROG}: cannot open {f}: {e.strerror}\n")
            status = 1
    out.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
