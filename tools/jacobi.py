"""The paper's Listing 6 (Jacobi stencil) and a 2-D heat equation, plain NumPy.

Usage::

    python tools/jacobi.py [n] [steps]

    n      grid points per side (default 2000)
    steps  time steps of each method (default 50)

Jacobi: ``center[:] = 0.2*(center+north+east+west+south)`` on views of one
grid (NumPy evaluates the right-hand side before it writes).  Heat:
``inner += alpha*lap`` with the 5-point Laplacian of views of u.
Output: checksums of both grids (exact: every operation is basic float
arithmetic, so a correct run reproduces NumPy's bits); with
GRUMPY_AB_OUTDIR set the grids are saved as jacobi.npy and heat.npy.
"""

import os
import sys

import numpy as np


def jacobi(n, steps):
    grid = np.zeros((n, n))
    grid[0, :] = 1.0
    grid[-1, :] = -1.0
    grid[:, 0] = 0.5
    center = grid[1:-1, 1:-1]
    north = grid[0:-2, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, 0:-2]
    south = grid[2:, 1:-1]
    for _ in range(steps):
        center[:] = 0.2 * (center + north + east + west + south)
    return grid


def heat(n, steps, alpha=0.1):
    u = np.zeros((n, n))
    u[n // 4: n // 2, n // 4: n // 2] = 1.0
    inner = u[1:-1, 1:-1]
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * inner
        inner += alpha * lap
    return u


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 2000
    steps = int(argv[2]) if len(argv) > 2 else 50
    g = jacobi(n, steps)
    u = heat(n, steps)
    print(f"jacobi n={n} steps={steps} sum={float(g.sum())!r} corner={float(g[1, 1])!r}")
    print(f"heat n={n} steps={steps} sum={float(u.sum())!r} max={float(u.max())!r}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "jacobi.npy"), g)
        np.save(os.path.join(out, "heat.npy"), u)


if __name__ == "__main__":
    main(sys.argv)
