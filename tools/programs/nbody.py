"""Direct-summation gravitational N-body integration (pairwise distances by
broadcasting, leapfrog), in plain NumPy.

Usage::

    python tools/programs/nbody.py [n] [steps]

    n      bodies (default 500: (n, n, 3) float64 temporaries of 6 MB)
    steps  kick-drift-kick leapfrog steps (default 40)

A seeded Plummer-like cluster (G = 1, total mass 1) with Plummer
softening eps = 0.05.  The accelerations, as written in tutorials::

    d = pos[None, :, :] - pos[:, None, :]            # (n, n, 3)
    r2 = (d ** 2).sum(axis=2) + eps ** 2
    inv_r3 = r2 ** -1.5
    acc = (d * (inv_r3 * mass[None, :])[:, :, None]).sum(axis=1)

(the self term has d = 0 and adds nothing).  Energies every 10 steps:
kinetic ``0.5 sum(m v^2)`` and potential ``-sum_{i<j} m_i m_j /
sqrt(r2_ij)`` over the upper triangle (``np.triu(..., k=1)``).

Output: every 10 steps the total energy and its drift from the start
(energy to 9 significant digits, the relative drift to 2 -- it is the
difference of nearly equal numbers), and the centre of mass speed as
below a threshold.  When GRUMPY_AB_OUTDIR is set the final positions and
velocities are saved there as pos.npy and vel.npy.
"""

import os
import sys

import numpy as np

EPS = 0.05


def accelerations(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d**2).sum(axis=2) + EPS**2
    inv_r3 = r2**-1.5
    return (d * (inv_r3 * mass[None, :])[:, :, None]).sum(axis=1)


def energy(pos, vel, mass):
    kinetic = 0.5 * np.sum(mass * (vel**2).sum(axis=1))
    d = pos[None, :, :] - pos[:, None, :]
    r = np.sqrt((d**2).sum(axis=2) + EPS**2)
    potential = -np.sum(np.triu(mass[:, None] * mass[None, :] / r, k=1))
    return float(kinetic + potential)


def cluster(n):
    rng = np.random.default_rng(42)
    mass = np.full(n, 1.0 / n)
    radius = 1.0 / np.sqrt(rng.uniform(0.05, 1.0, n) ** (-2.0 / 3.0) - 1.0)
    direction = rng.standard_normal((n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    pos = radius[:, None] * direction
    vel = rng.standard_normal((n, 3)) * 0.3
    pos -= np.average(pos, axis=0, weights=mass)
    vel -= np.average(vel, axis=0, weights=mass)
    return pos, vel, mass


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 500
    steps = int(argv[2]) if len(argv) > 2 else 40
    dt = 0.002
    pos, vel, mass = cluster(n)
    e0 = energy(pos, vel, mass)
    print(f"nbody n={n} steps={steps} dt={dt}")
    print(f"step 0: energy={e0:.9e}")
    acc = accelerations(pos, mass)
    for step in range(1, steps + 1):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = accelerations(pos, mass)
        vel += 0.5 * dt * acc
        if step % 10 == 0 or step == steps:
            e = energy(pos, vel, mass)
            com_speed = float(np.linalg.norm((mass[:, None] * vel).sum(axis=0)))
            print(f"step {step}: energy={e:.9e} drift={(e - e0) / abs(e0):.1e} com speed < 1e-12: {com_speed < 1e-12}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "pos.npy"), pos)
        np.save(os.path.join(out, "vel.npy"), vel)


if __name__ == "__main__":
    main(sys.argv)
