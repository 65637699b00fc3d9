#!/usr/bin/env python3
"""Reference re-implementation of nl (GNU coreutils) for the SCARCE task suite.
Covers -b a|t|n, -n ln|rn|rz, -w, -s, -v, -i (body section only)."""
import getopt
import sys

PROG = "nl"


def fail(msg, hint=True):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def number(v, what):
    try:
        return int(v)
    except ValueError:
        fail(f"invalid {what}: '{v}'", hint=False)


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(
            argv, "b:n:w:s:v:i:",
            ["body-numbering=", "number-format=", "number-width=", "number-separator=",
             "starting-line-number=", "line-increment="])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    style, fmt, width, sep, start, incr = "t", "rn", 6, "\t", 1, 1
    for o, v in opts:
        if o in ("-b", "--body-numbering"):
            if v not in ("a", "t", "n"):
                fail(f"invalid body numbering style: '{v}'")
            style = v
        elif o in ("-n", "--number-format"):
            if v not in ("ln", "rn", "rz"):
                fail(f"invalid line numbering format: '{v}'")
            fmt = v
        elif o in ("-w", "--number-width"):
            width = number(v, "line number field width")
            if width < 1:
                fail(f"invalid line number field width: '{v}': Numerical result out of range", hint=False)
        elif o in ("-s", "--number-separator"):
            sep = v
        elif o in ("-v", "--starting-line-number"):
            start = number(v, "starting line number")
        elif o in ("-i", "--line-increment"):
            incr = number(v, "line number increment")
    data = sys.stdin.buffer.read().decode("latin-1")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = start
    out = []
    for line in lines:
        if style == "a" or (style == "t" and line != ""):
            s = str(n)
            if fmt == "ln":
                s = s.ljust(width)
            elif fmt == "rn":
                s = s.rjust(width)
            else:
                s = ("-" + s[1:].rjust(width - 1, "0")) if s.startswith("-") else s.rjust(width, "0")
            out.append(s + sep + line + "\n")
            n += incr
        else:
            out.append(" " * (width + len(sep)) + line + "\n")
    sys.stdout.buffer.write("".join(out).encode("latin-1"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
