#!/usr/bin/env python3
"""Reference re-implementation of expand (GNU coreutils) for the SCARCE task suite.
Covers -t N, -t LIST (comma or blank separated), -i/--initial."""
import getopt
import sys

PROG = "expand"


def fail(msg, hint=False):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def parse_tabs(spec, stops):
    for part in spec.replace(" ", ",").split(","):
        if part == "":
            continue
        if not part.isdigit():
            fail(f"tab size contains invalid character(s): '{part.lstrip('0123456789')}'")
        n = int(part)
        if n == 0:
            fail("tab size cannot be 0")
        if stops and n <= stops[-1]:
            fail("tab sizes must be ascending")
        stops.append(n)


def next_stop(col, stops):
    if len(stops) <= 1:
        size = stops[0] if stops else 8
        return col + size - col % size
    for s in stops:
        if s > col:
            return s
    return col + 1


def main(argv):
    # -NUM is an obsolete form of -t NUM
    argv = [("-t" + a[1:]) if len(a) > 1 and a[0] == "-" and a[1:].replace(",", "").isdigit() else a for a in argv]
    try:
        opts, args = getopt.gnu_getopt(argv, "it:", ["initial", "tabs="])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'", hint=True)
    stops, initial = [], False
    for o, v in opts:
        if o in ("-i", "--initial"):
            initial = True
        else:
            parse_tabs(v, stops)
    data = sys.stdin.buffer.read().decode("latin-1")
    out = []
    for line in data.split("\n"):
        col, leading, buf = 0, True, []
        for ch in line:
            if ch == "\t" and (leading or not initial):
                nxt = next_stop(col, stops)
                buf.append(" " * (nxt - col))
                col = nxt
                continue
            if ch == "\b":
                col = col - 1 if col > 0 else 0
            else:
                col += 1
            if ch not in " \t":
                leading = False
            buf.append(ch)
        out.append("".join(buf))
    sys.stdout.buffer.write("\n".join(out).encode("latin-1"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
