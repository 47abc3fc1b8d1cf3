"""Laplace equation on a plate by Jacobi iteration with ``np.roll`` and a
boundary mask, float32, in plain NumPy.

Usage::

    python tools/programs/laplace_roll.py [n] [iterations]

    n           grid points per side (default 1024)
    iterations  Jacobi iterations (default 80)

Steady-state temperature of a square plate: the top edge held at
``100 sin(pi x)``, the other edges at 0.  The grid is float32, as in many
teaching codes.  Each iteration averages the four neighbours (four
``np.roll`` calls) and keeps the boundary by a precomputed boolean mask::

    avg = 0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1))
    u_new = np.where(interior, avg, u)

Every 20 iterations the largest change ``np.max(np.abs(u_new - u))`` is
printed, as a convergence check would.

Output: the largest change every 20 iterations, then the mean temperature
and the temperature at ``u[n // 64, n // 2]`` (float32 values, printed to 6
significant digits).  When GRUMPY_AB_OUTDIR is set the final grid is saved
there as u.npy.
"""

import os
import sys

import numpy as np


def plate(n):
    u = np.zeros((n, n), dtype=np.float32)
    x = np.linspace(0.0, 1.0, n, dtype=np.float32)
    u[0, :] = 100.0 * np.sin(np.pi * x)
    interior = np.zeros((n, n), dtype=bool)
    interior[1:-1, 1:-1] = True
    return u, interior


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1024
    iterations = int(argv[2]) if len(argv) > 2 else 80
    u, interior = plate(n)
    print(f"laplace_roll n={n} iterations={iterations} dtype={u.dtype}")
    for it in range(1, iterations + 1):
        avg = 0.25 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1))
        u_new = np.where(interior, avg, u)
        if it % 20 == 0 or it == iterations:
            change = np.max(np.abs(u_new - u))
            print(f"iteration {it}: max change={float(change):.5e}")
        u = u_new
    probe = float(u[n // 64, n // 2])
    print(f"mean T={float(u.mean(dtype=np.float64)):.5e} T below the hot edge's middle={probe:.5e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "u.npy"), u)


if __name__ == "__main__":
    main(sys.argv)
