#!/usr/bin/env python3
"""Reference re-implementation of cut (GNU coreutils, C locale) for the SCARCE task
suite. Covers -b/-c/-f LIST, -d DELIM, -s, --complement, --output-delimiter."""
import getopt
import sys

PROG = "cut"


def fail(msg, hint=True):
    sys.stderr.write(f"{PROG}: {msg}\n" + (f"Try '{PROG} --help' for more information.\n" if hint else ""))
    sys.exit(1)


def parse_list(spec, fields):
    ranges = []
    for part in spec.replace(" ", ",").split(","):
        if part == "":
            fail("invalid byte, character or field list" if not fields else "fields are numbered from 1")
        if "-" in part:
            a, _, b = part.partition("-")
            if a == "" and b == "":
                fail("invalid range with no endpoint: -")
            lo = int(a) if a else 1
            hi = int(b) if b else None
            if not (a == "" or a.isdigit()) or not (b == "" or b.isdigit()):
                fail(f"invalid field value '{part}'")
            if lo == 0 or hi == 0:
                fail("fields are numbered from 1" if fields else "byte/character positions are numbered from 1")
            if hi is not None and hi < lo:
                fail("invalid decreasing range")
            ranges.append((lo, hi))
        else:
            if not part.isdigit():
                fail(f"invalid field value '{part}'" if fields else f"invalid byte/character position '{part}'")
            n = int(part)
            if n == 0:
                fail("fields are numbered from 1" if fields else "byte/character positions are numbered from 1")
            ranges.append((n, n))
    return ranges


def selected(i, ranges, complement):
    hit = any(lo <= i and (hi is None or i <= hi) for lo, hi in ranges)
    return hit != complement


def main(argv):
    try:
        opts, args = getopt.gnu_getopt(
            argv, "b:c:f:d:sn",
            ["bytes=", "characters=", "fields=", "delimiter=", "only-delimited", "complement",
             "output-delimiter="])
    except getopt.GetoptError as e:
        if "requires argument" in e.msg:
            fail(f"option requires an argument -- '{e.opt}'")
        fail(f"invalid option -- '{e.opt}'")
    mode = spec = None
    delim, only, comp, outdelim = None, False, False, None
    for o, v in opts:
        if o in ("-b", "-c", "-f", "--bytes", "--characters", "--fields"):
            if mode is not None:
                fail("only one list may be specified")
            mode = {"--bytes": "b", "--characters": "c", "--fields": "f"}.get(o, o[1])
            spec = v
        elif o in ("-d", "--delimiter"):
            if len(v) > 1:
                fail("the delimiter must be a single character")
            delim = v or "\n"
        elif o in ("-s", "--only-delimited"):
            only = True
        elif o == "--complement":
            comp = True
        elif o == "--output-delimiter":
            outdelim = v
    if mode is None:
        fail("you must specify a list of bytes, characters, or fields")
    if mode != "f" and delim is not None:
        fail("an input delimiter may be specified only when operating on fields")
    if mode != "f" and only:
        fail("suppressing non-delimited lines makes sense\n\tonly when operating on fields")
    ranges = parse_list(spec, mode == "f")
    data = sys.stdin.buffer.read().decode("latin-1")
    lines = data.split("\n")
    if lines[-1] == "":
        lines.pop()
    out = []
    if mode == "f":
        d = delim if delim is not None else "\t"
        od = outdelim if outdelim is not None else d
        for line in lines:
            if d not in line:
                if not only:
                    out.append(line + "\n")
                continue
            parts = line.split(d)
            keep = [p for i, p in enumerate(parts, 1) if selected(i, ranges, comp)]
            out.append(od.join(keep) + "\n")
    else:
        for line in lines:
            if outdelim is None:
                out.append("".join(ch for i, ch in enumerate(line, 1) if selected(i, ranges, comp)) + "\n")
            else:
                pieces, prev = [], False
                for i, ch in enumerate(line, 1):
                    s = selected(i, ranges, comp)
                    if s:
                        if not prev and pieces:
                            pieces.append(outdelim)
                        pieces.append(ch)
                    prev = s
                out.append("".join(pieces) + "\n")
    sys.stdout.buffer.write("".join(out).encode("latin-1"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
