"""Two-dimensional wave equation by leapfrog time stepping, in plain NumPy.

Usage::

    python tools/programs/wave2d.py [n] [steps]

    n      grid points per side of the square [-1, 1]^2 (default 1000)
    steps  time steps (default 100)

The membrane ``u_tt = c^2 (u_xx + u_yy)`` with fixed (zero) edges, started
from a Gaussian bump at rest.  Second-order central differences in space
and time (leapfrog) on three float64 grids that are rotated each step::

    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]
    u_next[1:-1, 1:-1] = 2 * u[1:-1, 1:-1] - u_prev[1:-1, 1:-1] + C2 * lap

with Courant number 0.5.  Every 20 steps (and at the end) the discrete
energy: kinetic ``0.5 * sum(((u - u_prev) / dt)**2) dx^2`` plus potential
``0.5 c^2 sum(|grad u|^2) dx^2`` (gradients by ``np.diff``).

Output: per report the energy and max |u| (9 significant digits).  When
GRUMPY_AB_OUTDIR is set the final displacement is saved there as u.npy.
"""

import os
import sys

import numpy as np


def initial(n):
    """A Gaussian bump off the centre of [-1, 1]^2, zero on the boundary."""
    x = np.linspace(-1.0, 1.0, n)
    X, Y = np.meshgrid(x, x, indexing="ij")
    u = np.exp(-((X - 0.3) ** 2 + (Y + 0.2) ** 2) / 0.01)
    u[0, :] = 0.0
    u[-1, :] = 0.0
    u[:, 0] = 0.0
    u[:, -1] = 0.0
    return u, x[1] - x[0]


def energy(u, u_prev, dt, dx, c):
    vel = (u - u_prev) / dt
    kinetic = 0.5 * np.sum(vel**2) * dx * dx
    gx = np.diff(u, axis=0) / dx
    gy = np.diff(u, axis=1) / dx
    potential = 0.5 * c * c * (np.sum(gx**2) + np.sum(gy**2)) * dx * dx
    return float(kinetic + potential)


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1000
    steps = int(argv[2]) if len(argv) > 2 else 100
    c = 1.0
    u, dx = initial(n)
    dt = 0.5 * dx / c
    C2 = (c * dt / dx) ** 2
    u_prev = u.copy()  # at rest
    u_next = np.zeros_like(u)
    print(f"wave2d n={n} steps={steps} dx={dx:.6g} dt={dt:.6g}")
    print(f"step 0: energy={energy(u, u_prev, dt, dx, c):.9e} max|u|={float(np.abs(u).max()):.9e}")
    for step in range(1, steps + 1):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u_next[1:-1, 1:-1] = 2.0 * u[1:-1, 1:-1] - u_prev[1:-1, 1:-1] + C2 * lap
        u_prev, u, u_next = u, u_next, u_prev
        if step % 20 == 0 or step == steps:
            print(f"step {step}: energy={energy(u, u_prev, dt, dx, c):.9e} max|u|={float(np.abs(u).max()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "u.npy"), u)


if __name__ == "__main__":
    main(sys.argv)
