"""Poisson equation by red-black successive over-relaxation (SOR) on
strided slices, in plain NumPy.

Usage::

    python tools/programs/poisson_sor.py [n] [iterations]

    n           interior grid points per side of the unit square (default 1000)
    iterations  red-black SOR sweeps (default 60)

Solves ``-(u_xx + u_yy) = f`` with u = 0 on the boundary, f a sum of two
separable sine modes (built as outer products of 1-D vectors), on an
(n+2) x (n+2) float64 grid.  The red points (i+j even) and the black
points (i+j odd) are each two strided sub-lattices (``u[1:n+1:2,
1:n+1:2]`` and ``u[2:n+1:2, 2:n+1:2]`` are red); a sweep updates every
red sub-lattice from its four neighbours (other strided views of the same
grid) in place, then every black one::

    gs = 0.25 * (up + down + left + right + h^2 f)
    u[rows, cols] += omega * (gs - u[rows, cols])

with the optimal ``omega = 2 / (1 + sin(pi h))``.  Every 10 sweeps the
residual ``f + lap(u)`` is formed on the interior and its RMS printed.

Output: the RMS residual every 10 sweeps and at the end, then the sum and
max of the solution (9 significant digits).  When GRUMPY_AB_OUTDIR is set
the final grid is saved there as u.npy.
"""

import os
import sys

import numpy as np


def source(n):
    h = 1.0 / (n + 1)
    x = np.arange(n + 2) * h
    sx1, sx3 = np.sin(np.pi * x), np.sin(3 * np.pi * x)
    f = 2 * np.pi**2 * np.outer(sx1, sx1) + 50.0 * np.outer(sx3, np.sin(2 * np.pi * x))
    return f, h


def relax(u, f, h2, omega, a, b, n):
    """One SOR update of the sub-lattice of rows a, a+2, ... and columns b, b+2, ..."""
    rows, cols = slice(a, n + 1, 2), slice(b, n + 1, 2)
    up, down = slice(a - 1, n, 2), slice(a + 1, n + 2, 2)
    left, right = slice(b - 1, n, 2), slice(b + 1, n + 2, 2)
    gs = 0.25 * (u[up, cols] + u[down, cols] + u[rows, left] + u[rows, right] + h2 * f[rows, cols])
    u[rows, cols] += omega * (gs - u[rows, cols])


def residual_rms(u, f, h2):
    lap = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]) / h2
    r = f[1:-1, 1:-1] + lap
    return float(np.sqrt(np.mean(r * r)))


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1000
    iterations = int(argv[2]) if len(argv) > 2 else 60
    f, h = source(n)
    h2 = h * h
    omega = 2.0 / (1.0 + np.sin(np.pi * h))
    u = np.zeros((n + 2, n + 2))
    print(f"poisson_sor n={n} iterations={iterations} omega={omega:.9f}")
    print(f"sweep 0: residual rms={residual_rms(u, f, h2):.9e}")
    for it in range(1, iterations + 1):
        for a, b in ((1, 1), (2, 2)):  # red
            relax(u, f, h2, omega, a, b, n)
        for a, b in ((1, 2), (2, 1)):  # black
            relax(u, f, h2, omega, a, b, n)
        if it % 10 == 0 or it == iterations:
            print(f"sweep {it}: residual rms={residual_rms(u, f, h2):.9e}")
    print(f"solution: sum={float(u.sum()):.9e} max={float(u.max()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "u.npy"), u)


if __name__ == "__main__":
    main(sys.argv)
