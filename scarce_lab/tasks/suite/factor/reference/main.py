#!/usr/bin/env python3
"""Reference re-implementation of factor (GNU coreutils) for the SCARCE task suite.
Numbers from arguments or whitespace-separated standard input; trial division."""
import getopt
import sys

PROG = "factor"


def factors(n):
    out, d = [], 2
    while d * d <= n:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1 if d == 2 else 2
    if n > 1:
        out.append(n)
    return out


def one(tok, out):
    t = tok[1:] if tok.startswith("+") else tok
    if not t.isdigit() or not t.isascii():
        sys.stdout.write("".join(out))
        out.clear()
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: '{tok}' is not a valid positive integer\n")
        return False
    n = int(t)
    out.append(f"{n}:" + "".join(f" {p}" for p in (factors(n) if n > 1 else [])) + "\n")
    return True


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, "h", ["exponents", "help"])
    except getopt.GetoptError as e:
        sys.stderr.write(f"{PROG}: invalid option -- '{e.opt}'\nTry '{PROG} --help' for more information.\n")
        return 1
    toks = args if args else sys.stdin.read().split()
    ok, out = True, []
    for t in toks:
        ok = one(t, out) and ok
    sys.stdout.write("".join(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
