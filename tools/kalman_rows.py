"""A bank of scalar Kalman filters over rows of a large array, in plain
NumPy: the loop reads one row of a precomputed observation matrix per
time step, the pattern of filters, trackers and online statistics.

Usage::

    python tools/kalman_rows.py [filters] [steps]

    filters  independent filters, the length of each row (default 2000:
             16 KB rows, under GRUMPY_MIN_BYTES)
    steps    time steps, the rows of the observation matrix (default 3000)

The truth is a random walk per filter (``np.cumsum`` of Gaussian steps
along the time axis) and ``obs = truth + noise``, both (steps, filters)
float64, 48 MB each.  Per step::

    P = P + q;  K = P / (P + r);  x = x + K * (obs[t] - x);  P = (1 - K) * P
    ema = 0.9 * ema + 0.1 * obs[t]
    err += mean((x - truth[t]) ** 2)

With grumpy ``obs`` is a pending array when the loop starts: each small
operation on ``obs[t]`` computes it whole (as NumPy did when the program
made it) and NumPy does the operation; before, each was a kernel launch
that recomputed the row (about 12 us against NumPy's 1 us, 0.93x NumPy on
the whole program).

Output: the filter's and the moving average's mean squared errors and the
final variance (7 significant digits).  When GRUMPY_AB_OUTDIR is set the
final estimates are saved there as x.npy.
"""

import os
import sys

import numpy as np


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 2000
    steps = int(argv[2]) if len(argv) > 2 else 3000
    rng = np.random.default_rng(11)
    q, r = 0.01, 0.5
    x = np.zeros(n)
    P = np.ones(n)
    ema = np.zeros(n)
    truth = np.cumsum(rng.normal(0.0, 0.1, size=(steps, n)), axis=0)
    obs = truth + rng.normal(0.0, np.sqrt(r), size=(steps, n))
    print(f"kalman_rows filters={n} steps={steps}")
    err = 0.0
    for t in range(steps):
        P = P + q
        K = P / (P + r)
        x = x + K * (obs[t] - x)
        P = (1 - K) * P
        ema = 0.9 * ema + 0.1 * obs[t]
        err += float(np.mean((x - truth[t]) ** 2))
    print(f"kalman mse={err / steps:.6e} ema mse={float(np.mean((ema - truth[-1]) ** 2)):.6e} P={float(P.mean()):.6e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "x.npy"), x)


if __name__ == "__main__":
    main(sys.argv)
