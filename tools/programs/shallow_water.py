"""Two-dimensional shallow-water equations, Lax-Friedrichs scheme with
``np.roll`` on a periodic domain, in plain NumPy.

Usage::

    python tools/programs/shallow_water.py [n] [steps]

    n      grid cells per side of the periodic unit square (default 400)
    steps  time steps (default 60)

Conserved variables h (depth), hu, hv (momenta), float64, started from a
still lake with a Gaussian hump of water.  Each step takes the time step
from the CFL condition (a max-reduction: ``dt = 0.4 dx / max(|u|+|v| +
sqrt(g h))``), forms the fluxes ``F = (hu, hu u + g h^2/2, hu v)`` and
``G = (hv, hv u, hv v + g h^2/2)`` and updates each variable by the
Lax-Friedrichs formula: the average of its four neighbours (``np.roll``
along both axes) minus ``dt/(2 dx)`` times the centred flux differences.

Output: every 10 steps (and at the end) the simulated time, total mass
``sum(h) dx^2`` (conserved up to rounding), max depth and total energy
(9 significant digits).  When GRUMPY_AB_OUTDIR is set the final h, hu and
hv are saved there as h.npy, hu.npy and hv.npy.
"""

import os
import sys

import numpy as np

GRAVITY = 9.81


def initial(n):
    dx = 1.0 / n
    x = (np.arange(n) + 0.5) * dx
    X, Y = np.meshgrid(x, x, indexing="xy")  # axis 0 is y, axis 1 is x
    h = 1.0 + 0.4 * np.exp(-((X - 0.35) ** 2 + (Y - 0.5) ** 2) / 0.005)
    hu = np.zeros_like(h)
    hv = np.zeros_like(h)
    return h, hu, hv, dx


def neighbour_average(q):
    return 0.25 * (np.roll(q, 1, axis=0) + np.roll(q, -1, axis=0) + np.roll(q, 1, axis=1) + np.roll(q, -1, axis=1))


def lax_friedrichs(h, hu, hv, dt, dx):
    u = hu / h
    v = hv / h
    half_gh2 = 0.5 * GRAVITY * h * h
    fluxes = (
        (h, hu, hv),  # the variables
        (hu, hu * u + half_gh2, hu * v),  # F: flux along x (axis 1)
        (hv, hv * u, hv * v + half_gh2),  # G: flux along y (axis 0)
    )
    r = 0.5 * dt / dx
    new = []
    for q, f, g in zip(*fluxes):
        dfdx = np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1)
        dgdy = np.roll(g, -1, axis=0) - np.roll(g, 1, axis=0)
        new.append(neighbour_average(q) - r * (dfdx + dgdy))
    return new


def diagnostics(h, hu, hv, dx):
    mass = float(h.sum()) * dx * dx
    energy = float(np.sum(0.5 * (hu * hu + hv * hv) / h + 0.5 * GRAVITY * h * h)) * dx * dx
    return mass, float(h.max()), energy


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 400
    steps = int(argv[2]) if len(argv) > 2 else 60
    h, hu, hv, dx = initial(n)
    print(f"shallow_water n={n} steps={steps}")
    t = 0.0
    for step in range(1, steps + 1):
        speed = np.max(np.abs(hu / h) + np.abs(hv / h) + np.sqrt(GRAVITY * h))
        dt = 0.4 * dx / float(speed)
        h, hu, hv = lax_friedrichs(h, hu, hv, dt, dx)
        t += dt
        if step % 10 == 0 or step == steps:
            mass, hmax, e = diagnostics(h, hu, hv, dx)
            print(f"step {step}: t={t:.9e} mass={mass:.9e} max h={hmax:.9e} energy={e:.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        for name, arr in (("h", h), ("hu", hu), ("hv", hv)):
            np.save(os.path.join(out, f"{name}.npy"), arr)


if __name__ == "__main__":
    main(sys.argv)
