"""Classical fourth-order Runge-Kutta on many independent Van der Pol
oscillators at once (a parameter sweep), in plain NumPy.

Usage::

    python tools/programs/rk4_oscillators.py [n] [steps]

    n      oscillators (default 200_000: 1.6 MB float64 state arrays)
    steps  RK4 steps of dt = 0.01 (default 150)

``x'' - mu (1 - x^2) x' + x = 0`` written as the first-order system ``x'
= v``, ``v' = mu (1 - x^2) v - x``, with mu swept over [0.1, 4] and
seeded initial conditions.  Each step is the textbook RK4 on the state
arrays (a Python function for the right-hand side, four stages, the
weighted sum ``x + dt / 6 * (k1 + 2 k2 + 2 k3 + k4)``); every step also
counts the upward zero crossings of x of each oscillator (an int32
array, incremented by a bool mask).  Every operation is basic float arithmetic.

Output: every 20 steps the mean energy ``0.5 (x^2 + v^2)`` and max |x| (9
significant digits); at the end the total number of zero crossings
(exact) and the mean of x and v (9 significant digits).  When
GRUMPY_AB_OUTDIR is set the final x, v and crossing counts are saved
there as x.npy, v.npy and crossings.npy.
"""

import os
import sys

import numpy as np


def rhs(x, v, mu):
    return v, mu * (1.0 - x * x) * v - x


def rk4_step(x, v, mu, dt):
    k1x, k1v = rhs(x, v, mu)
    k2x, k2v = rhs(x + 0.5 * dt * k1x, v + 0.5 * dt * k1v, mu)
    k3x, k3v = rhs(x + 0.5 * dt * k2x, v + 0.5 * dt * k2v, mu)
    k4x, k4v = rhs(x + dt * k3x, v + dt * k3v, mu)
    x_new = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
    v_new = v + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return x_new, v_new


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200_000
    steps = int(argv[2]) if len(argv) > 2 else 150
    dt = 0.01
    rng = np.random.default_rng(1927)
    mu = np.linspace(0.1, 4.0, n)
    x = rng.uniform(-2.0, 2.0, n)
    v = rng.uniform(-2.0, 2.0, n)
    crossings = np.zeros(n, dtype=np.int32)
    print(f"rk4_oscillators n={n} steps={steps} dt={dt}")
    for step in range(1, steps + 1):
        x_new, v = rk4_step(x, v, mu, dt)
        crossings += (x < 0.0) & (x_new >= 0.0)
        x = x_new
        if step % 20 == 0 or step == steps:
            e = 0.5 * (x * x + v * v)
            print(f"step {step}: mean energy={float(e.mean()):.9e} max|x|={float(np.abs(x).max()):.9e}")
    print(f"zero crossings: {int(crossings.sum())}; mean x={float(x.mean()):.9e} mean v={float(v.mean()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "x.npy"), x)
        np.save(os.path.join(out, "v.npy"), v)
        np.save(os.path.join(out, "crossings.npy"), crossings)


if __name__ == "__main__":
    main(sys.argv)
