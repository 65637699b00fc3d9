#!/usr/bin/env python3
"""Reference re-implementation of seq (GNU coreutils) for the SCARCE task suite.
Covers FIRST/INCREMENT/LAST in plain decimal notation, -s SEP, -w."""
import getopt
import re
import sys
from decimal import Decimal

PROG = "seq"
NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")


def fail(msg, hint=True):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def split_opts(argv):
    """Stop option parsing at the first negative number (seq -3 3 is valid)."""
    for i, a in enumerate(argv):
        if re.match(r"^-\.?\d", a):
            return argv[:i], argv[i:]
        if a == "--":
            return argv[: i + 1], argv[i + 1 :]
    return argv, []


def frac_digits(s):
    return len(s.split(".", 1)[1]) if "." in s else 0


def main(argv):
    head, tail = split_opts(argv)
    try:
        opts, args = getopt.gnu_getopt(head, "s:w", ["separator=", "equal-width"])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    args = args + tail
    sep, equal = "\n", False
    for o, v in opts:
        if o in ("-s", "--separator"):
            sep = v
        else:
            equal = True
    if not args:
        fail("missing operand")
    if len(args) > 3:
        fail(f"extra operand '{args[3]}'")
    for a in args:
        if not NUM.match(a):
            fail(f"invalid floating point argument: '{a}'")
    first_s, step_s, last_s = ("1", "1", args[0]) if len(args) == 1 else (
        (args[0], "1", args[1]) if len(args) == 2 else tuple(args))
    first, step, last = Decimal(first_s), Decimal(step_s), Decimal(last_s)
    if step == 0:
        fail(f"invalid Zero increment value: '{step_s}'")
    prec = max(frac_digits(first_s), frac_digits(step_s))
    vals = []
    i = 0
    while True:
        v = first + step * i
        if (step > 0 and v > last) or (step < 0 and v < last):
            break
        vals.append(v)
        i += 1
    strs = [f"{v:.{prec}f}" for v in vals]
    strs = ["0" if s in ("-0",) else s for s in strs]
    if equal and strs:
        width = max([len(f"{first:.{prec}f}"), len(f"{last:.{prec}f}")] + [len(s) for s in strs])
        padded = []
        for s in strs:
            neg = s.startswith("-")
            body = s[1:] if neg else s
            padded.append(("-" if neg else "") + body.rjust(width - (1 if neg else 0), "0"))
        strs = padded
    if strs:
        sys.stdout.write(sep.join(strs) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
