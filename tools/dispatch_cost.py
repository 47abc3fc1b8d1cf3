"""What grumpy adds to a small operation NumPy computes (issue "never
slower": zero tax below the threshold), counted in instructions rather
than timed: wall-clock differences of a few hundred nanoseconds drown in
these machines' noise.

Usage::

    python tools/dispatch_cost.py [--iters N] [STATEMENT ...]

Each statement runs on ``v = A[3]`` and ``w = A[4]``, 16 KB rows of a
200 x 2000 float64 matrix ``A`` (3.2 MB: a computed grumpy array under
grumpy, a plain one under NumPy), in a loop of N and of 3N iterations
under ``valgrind --tool=callgrind`` (OpenBLAS single-threaded, so that no
spinning thread is counted); the difference over 2N is the instructions
per statement.  Prints one line per statement: NumPy's count, grumpy's
(``python -m grumpy.run``), and the ratio.  Needs valgrind (Debian's
``valgrind`` package); about 20 s a statement.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

STATEMENTS = ["v - w", "v * 2.0", "v > 0.5", "np.sqrt(v)", "np.maximum(v, w)", "v.sum()", "v.mean()",
              "np.mean(v)", "v.std()", "np.cumsum(v)", "v.copy()", "v[5]"]

CHILD = r"""
import sys
import numpy as np
A = np.copy(np.linspace(0.0, 1.0, 200 * 2000).reshape(200, 2000))
v, w = A[3], A[4]
f = eval("lambda: " + sys.argv[1])
f(); f()
for _ in range(int(sys.argv[2])):
    f()
"""


def instructions(cmd, script, stmt, n):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd, script, stmt, str(n)],
                       capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"valgrind failed for {stmt!r}: {r.stderr[-2000:]}")
    return int(m.group(1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("statements", nargs="*", default=STATEMENTS)
    args = ap.parse_args(argv)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
        script = f.name
    env_py = sys.executable
    try:
        print(f"{'statement':22s} {'NumPy':>8s} {'grumpy':>8s}  ratio   (instructions per statement)")
        for stmt in args.statements:
            counts = []
            for cmd in ([env_py], [env_py, "-m", "grumpy.run"]):
                a = instructions(cmd, script, stmt, args.iters)
                b = instructions(cmd, script, stmt, 3 * args.iters)
                counts.append((b - a) / (2 * args.iters))
            print(f"{stmt:22s} {counts[0]:8.0f} {counts[1]:8.0f}  {counts[1] / counts[0]:5.2f}", flush=True)
    finally:
        os.unlink(script)


if __name__ == "__main__":
    main()
