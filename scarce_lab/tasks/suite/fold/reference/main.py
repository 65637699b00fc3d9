#!/usr/bin/env python3
"""Reference re-implementation of fold (GNU coreutils) for the SCARCE task suite.
Covers -w WIDTH, -b (count bytes), -s (break at blanks)."""
import getopt
import sys

PROG = "fold"


def fail(msg, hint=True):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def adjust(col, c, count_bytes):
    if count_bytes:
        return col + 1
    if c == "\b":
        return col - 1 if col > 0 else 0
    if c == "\r":
        return 0
    if c == "\t":
        return col + 8 - col % 8
    return col + 1


def fold(text, width, count_bytes, spaces):
    out, buf, col = [], [], 0
    for c in text:
        if c == "\n":
            out.append("".join(buf) + "\n")
            buf, col = [], 0
            continue
        while True:
            col = adjust(col, c, count_bytes)
            if col > width:
                if spaces:
                    idx = -1
                    for k in range(len(buf) - 1, -1, -1):
                        if buf[k] in " \t":
                            idx = k
                            break
                    if idx >= 0:
                        out.append("".join(buf[: idx + 1]) + "\n")
                        buf = buf[idx + 1 :]
                        col = 0
                        for b in buf:
                            col = adjust(col, b, count_bytes)
                        continue
                if not buf:
                    buf.append(c)
                    break
                out.append("".join(buf) + "\n")
                buf, col = [], 0
                continue
            buf.append(c)
            break
    out.append("".join(buf))
    return "".join(out)


def main(argv):
    # GNU fold accepts -NUM as -w NUM
    argv = [("-w" + a[1:]) if len(a) > 1 and a[0] == "-" and a[1:].isdigit() else a for a in argv]
    try:
        opts, args = getopt.gnu_getopt(argv, "bsw:", ["bytes", "spaces", "width="])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    width, count_bytes, spaces = 80, False, False
    for o, v in opts:
        if o in ("-b", "--bytes"):
            count_bytes = True
        elif o in ("-s", "--spaces"):
            spaces = True
        else:
            try:
                width = int(v)
            except ValueError:
                fail(f"invalid number of columns: '{v}'", hint=False)
            if width < 1:
                fail(f"invalid number of columns: '{v}': Numerical result out of range", hint=False)
    text = sys.stdin.buffer.read().decode("latin-1")
    sys.stdout.buffer.write(fold(text, width, count_bytes, spaces).encode("latin-1"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
