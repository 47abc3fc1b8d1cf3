"""Per-statement cost of grumpy against NumPy, by statement kind and size
(issue "never slower"): the table of grumpy / NumPy time.

Usage::

    python tools/overhead.py [--sizes 16K,64K,...] [--kinds 1op,4op,...] [--rounds 3]
                             [--budget SECONDS] [--json] [--min-bytes 256K]

Each (kind, size) is timed in fresh processes, plain NumPy and under
``python -m grumpy.run``, interleaved, ``--rounds`` times each; a process
runs the statement in a loop (warm-up first, then enough repetitions for
about ``--budget`` seconds) and reports its median time per statement.
The table gives the medians over rounds and their ratio (grumpy / NumPy:
below 1 is faster).  Operands are float64 arrays of the given size each,
made by ``np.copy(np.linspace(...))`` (computed, in grumpy's memory).

Kinds::

    1op      c = a + b
    4op      c = (a*b + 2.0)*a - b
    reduce   s = float((a*b).sum())
    inplace  a += b; a *= 0.5
    slice    c[1:-1] = a[2:] - a[:-2]
    product  c = m @ m        (m: a square matrix of the given size)

After each statement the last element of its result is read (the value
is used), which computes it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

KINDS = {  # statement, and the array whose last element is read after it (the value used)
    "1op": ("c = a + b", "c"),
    "4op": ("c = (a*b + 2.0)*a - b", "c"),
    "reduce": ("s = float((a*b).sum())", None),
    "inplace": ("a += b; a *= 0.5", "a"),
    "slice": ("c[1:-1] = a[2:] - a[:-2]", "c"),
    "product": ("c = m @ m", "c"),
}

CHILD = r"""
import sys, time
import numpy as np
n, stmt, use, budget = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
a = np.copy(np.linspace(0.0, 1.0, n)); b = np.copy(np.linspace(1.0, 2.0, n)); c = np.copy(a)
k = max(int(n ** 0.5), 1)
m = np.copy(np.linspace(0.0, 1.0, k * k).reshape(k, k))
g = {"np": np, "a": a, "b": b, "c": c, "m": m, "s": 0.0}
code = compile(stmt + ("" if use == "-" else f"; _ = float(np.asarray({use}).ravel()[-1])"), "<stmt>", "exec")
for _ in range(3):
    exec(code, g)
t0 = time.perf_counter(); exec(code, g); one = max(time.perf_counter() - t0, 1e-6)
reps = max(5, min(20000, int(budget / one)))
times = []
for _ in range(reps):
    t0 = time.perf_counter(); exec(code, g); times.append(time.perf_counter() - t0)
times.sort()
print(times[len(times) // 2])
"""


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "KMG" else s) * mult)


def run_child(grumpy_on, n, kind, budget, min_bytes=None):
    stmt, use = KINDS[kind]
    env = {k: v for k, v in os.environ.items() if not (k.startswith("GRUMPY") and k != "GRUMPY_CACHE_DIR")}
    if min_bytes is not None:
        env["GRUMPY_MIN_BYTES"] = str(min_bytes)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    path = os.path.join(ROOT, "build", "overhead_child.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(CHILD)
    cmd = [sys.executable] + (["-m", "grumpy.run"] if grumpy_on else []) + [path, str(n), stmt, use or "-", str(budget)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"overhead: child failed ({'grumpy' if grumpy_on else 'numpy'} n={n} {stmt!r}):\n{r.stderr}")
    return float(r.stdout.split()[-1])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16K,64K,256K,1M,4M,16M,64M",
                    help="bytes per operand, comma-separated (K, M, G suffixes)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="statement kinds, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved processes per variant")
    ap.add_argument("--budget", type=float, default=0.4, help="seconds of timed loop per process")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--min-bytes", type=parse_size, default=None,
                    help="GRUMPY_MIN_BYTES for the grumpy processes (default: grumpy's own default)")
    args = ap.parse_args(argv[1:])
    rows = []
    for kind in args.kinds.split(","):
        stmt = KINDS[kind][0]
        for size in args.sizes.split(","):
            n = max(parse_size(size) // 8, 4)
            t_np, t_gp = [], []
            for _ in range(args.rounds):
                t_np.append(run_child(False, n, kind, args.budget))
                t_gp.append(run_child(True, n, kind, args.budget, args.min_bytes))
            m_np, m_gp = statistics.median(t_np), statistics.median(t_gp)
            rows.append({"kind": kind, "size": size, "numpy_us": m_np * 1e6, "grumpy_us": m_gp * 1e6,
                         "ratio": m_gp / m_np})
            if not args.json:
                print(f"| {kind} `{stmt}` | {size} | {m_np * 1e6:.1f} | {m_gp * 1e6:.1f} | {m_gp / m_np:.2f} |",
                      flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv)
