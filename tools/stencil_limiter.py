"""A 3-D advection-diffusion step with slope limiters, in plain NumPy: the
pattern of finite-volume CFD codes (np.where limiters over views of a
pending Laplacian).

Usage::

    python tools/stencil_limiter.py [n] [steps]

    n      grid of n x n x (5n/4) float64 points (default 128: 128x128x160)
    steps  time steps (default 20)

Per step: a 2-D Laplacian over the first two axes (``4*f[1:-1,1:-1] -
(...)``), its differences along each axis, each limited to zero where it
has the sign of the field's own difference (``np.where(dx * df > 0, 0,
dx)``), and the interior updated in place from the limited fluxes.  Every
array is a view of another (slices of slices), which a fusing runtime must
plan without recomputing or failing.

Output: per step the field's sum and largest magnitude (9 significant
digits).  When GRUMPY_AB_OUTDIR is set the final field is saved there as
field.npy.
"""

import os
import sys

import numpy as np


def step(f, out, c=0.1):
    """One step from f into out's interior (out's border is left as is)."""
    lap = 4 * f[1:-1, 1:-1] - (f[:-2, 1:-1] + f[2:, 1:-1] + f[1:-1, :-2] + f[1:-1, 2:])
    dx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    fx = np.where(dx * (f[2:-1, 2:-2] - f[1:-2, 2:-2]) > 0, 0, dx)
    dy = lap[1:-1, 1:] - lap[1:-1, :-1]
    fy = np.where(dy * (f[2:-2, 2:-1] - f[2:-2, 1:-2]) > 0, 0, dy)
    out[2:-2, 2:-2] = f[2:-2, 2:-2] - c * (fx[1:] - fx[:-1] + fy[:, 1:] - fy[:, :-1])


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 128
    steps = int(argv[2]) if len(argv) > 2 else 20
    rng = np.random.default_rng(2024)
    f = rng.standard_normal((n, n, n * 5 // 4))
    g = np.copy(f)
    print(f"stencil_limiter n={n} steps={steps}")
    for s in range(steps):
        step(f, g)
        f, g = g, f
        print(f"step {s}: sum={float(f.sum()):.8e} max={float(np.abs(f).max()):.8e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "field.npy"), f)


if __name__ == "__main__":
    main(sys.argv)
