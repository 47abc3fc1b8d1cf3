"""PolyBench's gemver kernel (rank-2 update and two matrix-vector
products), in plain NumPy.

Usage::

    python tools/programs/gemver.py [n] [repetitions]

    n            order of the matrix (default 3000: 72 MB of float64)
    repetitions  times the kernel is applied (default 5)

PolyBench's initialisation, with integer arithmetic on index grids where
the C code has it: ``A[i, j] = (i * j % n) / n``, ``u1 = i``, ``u2 = ((i +
1) / n) / 2``, ``v1 = ((i + 1) / n) / 4``, ``v2 = ((i + 1) / n) / 6``,
``y = ((i + 1) / n) / 8``, ``z = ((i + 1) / n) / 9``, ``x = w = 0``.
The kernel, each repetition::

    A = A + np.outer(u1, v1) + np.outer(u2, v2)
    x = x + beta * (A.T @ y) + z
    w = w + alpha * (A @ x)

with alpha = 1.5 and beta = 1.2 (A keeps growing, as repeated updates do).

Output: per repetition the sums of x and w and the Frobenius norm of A
(9 significant digits).  When GRUMPY_AB_OUTDIR is set the final A, x and
w are saved there as A.npy, x.npy and w.npy.
"""

import os
import sys

import numpy as np


def init(n):
    fn = float(n)
    i = np.arange(n)
    A = (np.outer(i, i) % n) / fn
    u1 = i.astype(np.float64)
    u2 = ((i + 1) / fn) / 2.0
    v1 = ((i + 1) / fn) / 4.0
    v2 = ((i + 1) / fn) / 6.0
    y = ((i + 1) / fn) / 8.0
    z = ((i + 1) / fn) / 9.0
    return A, u1, u2, v1, v2, y, z


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 3000
    repetitions = int(argv[2]) if len(argv) > 2 else 5
    alpha, beta = 1.5, 1.2
    A, u1, u2, v1, v2, y, z = init(n)
    x = np.zeros(n)
    w = np.zeros(n)
    print(f"gemver n={n} repetitions={repetitions}")
    for rep in range(repetitions):
        A = A + np.outer(u1, v1) + np.outer(u2, v2)
        x = x + beta * (A.T @ y) + z
        w = w + alpha * (A @ x)
        print(
            f"repetition {rep}: sum x={float(x.sum()):.9e} sum w={float(w.sum()):.9e} "
            f"|A|_F={float(np.linalg.norm(A)):.9e}"
        )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "A.npy"), A)
        np.save(os.path.join(out, "x.npy"), x)
        np.save(os.path.join(out, "w.npy"), w)


if __name__ == "__main__":
    main(sys.argv)
