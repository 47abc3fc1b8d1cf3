"""PolyBench's atax and bicg kernels (matrix-vector products with a matrix
and its transpose), repeated, in plain NumPy.

Usage::

    python tools/programs/atax_bicg.py [m] [n] [repetitions]

    m, n         rows and columns of A (default 3000 x 3500: 84 MB of float64)
    repetitions  times each kernel is applied (default 20)

PolyBench's initialisation by integer index arithmetic: ``A[i, j] = ((i +
j) % n) / (5 m)`` (atax's) and ``x = 1 + i / n``, ``p = (i % n) / n``,
``r = (i % m) / m``.  Per repetition::

    y = A.T @ (A @ x)            # atax
    s = A.T @ r;  q = A @ p      # bicg

and, so that the repetitions are not identical, the vectors are
renormalised from the results (``x = y / np.linalg.norm(y)``, ``p = s /
np.abs(s).max()``, ``r = q / np.abs(q).max()``): the loop becomes power
iterations on A^T A and A A^T, with small (tens of KB) vectors between
products that each read the whole matrix.

Output: per five repetitions the norms of y, s and q (9 significant
digits).  When GRUMPY_AB_OUTDIR is set the last y, s and q are saved there
as y.npy, s.npy and q.npy.
"""

import os
import sys

import numpy as np


def init(m, n):
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    A = ((i + j) % n) / (5.0 * m)
    x = 1.0 + np.arange(n) / n
    p = (np.arange(n) % n) / n
    r = (np.arange(m) % m) / m
    return A, x, p, r


def main(argv):
    m = int(argv[1]) if len(argv) > 1 else 3000
    n = int(argv[2]) if len(argv) > 2 else 3500
    repetitions = int(argv[3]) if len(argv) > 3 else 20
    A, x, p, r = init(m, n)
    print(f"atax_bicg m={m} n={n} repetitions={repetitions}")
    y = s = q = None
    for rep in range(1, repetitions + 1):
        y = A.T @ (A @ x)
        s = A.T @ r
        q = A @ p
        x = y / np.linalg.norm(y)
        p = s / np.abs(s).max()
        r = q / np.abs(q).max()
        if rep % 5 == 0 or rep == repetitions:
            print(
                f"repetition {rep}: |y|={float(np.linalg.norm(y)):.9e} |s|={float(np.linalg.norm(s)):.9e} "
                f"|q|={float(np.linalg.norm(q)):.9e}"
            )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "y.npy"), y)
        np.save(os.path.join(out, "s.npy"), s)
        np.save(os.path.join(out, "q.npy"), q)


if __name__ == "__main__":
    main(sys.argv)
