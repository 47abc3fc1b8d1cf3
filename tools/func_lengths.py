"""Lengths of the C functions of core/ and hooks/ (issue "one direction
through the core": every function except the op switch under ~100 lines).

    python tools/func_lengths.py [--max 100]

A function is a line at column 0 that ends a signature with ")" followed by
a line "{" and runs to the next line "}" at column 0 (the layout
.clang-format gives).  Prints functions longer than --max lines, longest
first; exits 1 when one is not in ALLOWED.
"""

import argparse
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the op switch: one case per row of ops.def, its length is the table's
ALLOWED = {"emit_op"}


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            j = i - 1
            while j > 0 and not re.match(r"^[A-Za-z_].*\(", lines[j]):
                j -= 1
            m = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\(", lines[j])
            end = next((k for k in range(i + 1, len(lines)) if lines[k] == "}"), len(lines))
            if m:
                out.append((m.group(1), end - j + 1, f"{os.path.relpath(path, ROOT)}:{j + 1}"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=100)
    args = ap.parse_args(argv)
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "core", "*.c")) + glob.glob(os.path.join(ROOT, "hooks", "*.c"))):
        found += [f for f in functions(path) if f[1] > args.max]
    found.sort(key=lambda f: -f[1])
    bad = [f for f in found if f[0] not in ALLOWED]
    for name, n, where in found:
        print(f"{n:5d} lines  {name}  {where}{'' if name in ALLOWED else '  (too long)'}")
    print(f"func_lengths: {len(bad)} function(s) over {args.max} lines besides {sorted(ALLOWED)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
