#!/usr/bin/env python3
"""Reference re-implementation of tr (GNU coreutils, C locale) for the SCARCE task
suite. Covers ranges, backslash escapes, [:class:] names, -d, -s, -c/-C, -t."""
import getopt
import sys

PROG = "tr"
CLASSES = {
    "alpha": [c for c in range(256) if chr(c).isascii() and chr(c).isalpha()],
    "digit": list(range(48, 58)),
    "upper": list(range(65, 91)),
    "lower": list(range(97, 123)),
    "alnum": [c for c in range(256) if chr(c).isascii() and chr(c).isalnum()],
    "space": [9, 10, 11, 12, 13, 32],
    "blank": [9, 32],
    "punct": [c for c in range(33, 127) if not chr(c).isalnum()],
    "cntrl": list(range(32)) + [127],
    "print": list(range(32, 127)),
    "graph": list(range(33, 127)),
    "xdigit": list(range(48, 58)) + list(range(65, 71)) + list(range(97, 103)),
}
ESC = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92}


def fail(msg, hint=True):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def parse_set(s):
    """Expand a SET string into a list of byte values."""
    toks, i = [], 0
    while i < len(s):
        if s.startswith("[:", i):
            j = s.find(":]", i + 2)
            if j != -1:
                name = s[i + 2 : j]
                if name not in CLASSES:
                    fail(f"invalid character class '{name}'", hint=False)
                toks.append(("class", name))
                i = j + 2
                continue
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n in "01234567":
                j = i + 1
                while j < len(s) and j < i + 4 and s[j] in "01234567":
                    j += 1
                toks.append(("ch", int(s[i + 1 : j], 8) & 255))
                i = j
                continue
            toks.append(("ch", ESC.get(n, ord(n))))
            i += 2
            continue
        if c == "\\":
            toks.append(("ch", 92))
            i += 1
            continue
        toks.append(("ch", ord(c)))
        i += 1
    out, k = [], 0
    while k < len(toks):
        t = toks[k]
        if t[0] == "class":
            out.extend(CLASSES[t[1]])
            k += 1
            continue
        if k + 2 < len(toks) and toks[k + 1] == ("ch", 45) and toks[k + 2][0] == "ch":
            lo, hi = t[1], toks[k + 2][1]
            if hi < lo:
                fail(f"range-endpoints of '{chr(lo)}-{chr(hi)}' are in reverse collating sequence order", hint=False)
            out.extend(range(lo, hi + 1))
            k += 3
            continue
        out.append(t[1])
        k += 1
    return out


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(argv, "cCdst", ["complement", "delete", "squeeze-repeats", "truncate-set1"])
    except getopt.GetoptError as e:
        fail(f"invalid option -- '{e.opt}'")
    comp = delete = squeeze = trunc = False
    for o, _ in opts:
        if o in ("-c", "-C", "--complement"):
            comp = True
        elif o in ("-d", "--delete"):
            delete = True
        elif o in ("-s", "--squeeze-repeats"):
            squeeze = True
        else:
            trunc = True
    if not args:
        fail("missing operand")
    need2 = not delete and not squeeze or (delete and squeeze)
    if delete and not squeeze and len(args) > 1:
        fail(f"extra operand '{args[1]}'\nOnly one string may be given when deleting without squeezing repeats.")
    if need2 and len(args) < 2:
        if delete:
            fail(f"missing operand after '{args[0]}'\nTwo strings must be given when deleting and squeezing.")
        fail(f"missing operand after '{args[0]}'\nTwo strings must be given when translating.")
    if len(args) > 2:
        fail(f"extra operand '{args[2]}'")
    set1 = parse_set(args[0])
    if comp:
        s = set(set1)
        set1 = [c for c in range(256) if c not in s]
    set2 = parse_set(args[1]) if len(args) > 1 else None
    table = list(range(256))
    translating = not delete and set2 is not None
    if translating:
        if not set2:
            fail("when not truncating set1, string2 must be non-empty", hint=False)
        if trunc:
            set1 = set1[: len(set2)]
        else:
            set2 = set2 + [set2[-1]] * (len(set1) - len(set2))
        for a, b in zip(set1, set2, strict=False):
            table[a] = b
    dels = set(set1) if delete else set()
    sq = set()
    if squeeze:
        sq = set(set2) if (set2 is not None and (delete or translating)) else set(set1)
    data = sys.stdin.buffer.read()
    out = bytearray()
    prev = None
    for b in data:
        if b in dels:
            continue
        c = table[b]
        if c in sq and prev == c:
            continue
        out.append(c)
        prev = c
    sys.stdout.buffer.write(bytes(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
