"""PolyBench's 2mm and 3mm (chains of matrix products with scaling),
float32, in plain NumPy.

Usage::

    python tools/programs/mm_chain.py [n] [repetitions]

    n            base size: A is n x 1.1n, B 1.1n x 1.2n, C 1.2n x 1.3n,
                 D n x 1.3n, 3mm's E 1.3n x 1.4n (default 1200)
    repetitions  times both kernels run (default 3)

float32 matrices from PolyBench's index formulas (``A[i, k] = ((i * k + 1)
% ni) / ni`` and the like, integer arithmetic on index grids).  Per
repetition::

    D = alpha * (A @ B) @ C + beta * D                   # 2mm
    G = (A @ B) @ (C @ E)                                # 3mm

with alpha = 1.5, beta = 1.2; then the rows of G are scaled to unit
maximum (``G / np.abs(G).max(axis=1, keepdims=True)``), and A is replaced
by a blend ``0.5 * A + 0.5 * tanh(G[:, :nk])`` so that every repetition
computes something new.  Mostly matrix products: the element-wise work
around them is a few passes over 4-8 MB.

Output: per repetition sums of D and G (float64 accumulation, 5
significant digits: float32 products summed in another order differ in
the last bits).  When GRUMPY_AB_OUTDIR is set the final D and G are saved
there as D.npy and G.npy.
"""

import os
import sys

import numpy as np


def grid(rows, cols, mul, add, mod):
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    return (((i * (j + mul) + add) % mod) / np.float32(mod)).astype(np.float32)


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1200
    repetitions = int(argv[2]) if len(argv) > 2 else 3
    ni, nk, nj, nl, nm = n, int(1.1 * n), int(1.2 * n), int(1.3 * n), int(1.4 * n)
    alpha, beta = np.float32(1.5), np.float32(1.2)
    A = grid(ni, nk, 0, 1, ni)
    B = grid(nk, nj, 1, 0, nj)
    C = grid(nj, nl, 3, 1, nl)
    D = grid(ni, nl, 2, 0, nk)
    E = grid(nl, nm, 2, 2, nm)
    print(f"mm_chain n={n} repetitions={repetitions} dtype={A.dtype}")
    G = None
    for rep in range(repetitions):
        AB = A @ B
        D = alpha * AB @ C + beta * D
        G = AB @ (C @ E)
        G = G / np.abs(G).max(axis=1, keepdims=True)
        A = np.float32(0.5) * A + np.float32(0.5) * np.tanh(G[:, :nk])
        print(
            f"repetition {rep}: sum D={float(D.sum(dtype=np.float64)):.4e} "
            f"sum G={float(G.sum(dtype=np.float64)):.4e}"
        )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "D.npy"), D)
        np.save(os.path.join(out, "G.npy"), G)


if __name__ == "__main__":
    main(sys.argv)
