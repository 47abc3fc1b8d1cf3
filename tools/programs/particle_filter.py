"""Bootstrap particle filter for the univariate nonstationary growth
model, with systematic resampling, in plain NumPy.

Usage::

    python tools/programs/particle_filter.py [particles] [steps]

    particles  particles (default 200_000: 1.6 MB float64 arrays)
    steps      time steps filtered (default 50)

The benchmark model of the particle-filtering literature::

    x_k = x/2 + 25 x / (1 + x^2) + 8 cos(1.2 k) + v_k,   v_k ~ N(0, 10)
    y_k = x_k^2 / 20 + w_k,                             w_k ~ N(0, 1)

A seeded true trajectory and its observations are simulated first (in
Python floats).  Each filter step propagates every particle through the
model with seeded process noise, updates log-weights with the Gaussian
log-likelihood, normalises them stably (``w = np.exp(logw -
logw.max()); w /= w.sum()``), forms the posterior mean and the effective
sample size ``1 / sum(w^2)``, and when that falls below half the
particles resamples systematically: ``positions = (u + np.arange(N)) /
N``, ``idx = np.searchsorted(np.cumsum(w), positions)``, ``particles =
particles[idx]`` (clipped to N - 1 for the last cumulative weight's
rounding).

Output: every 10 steps the estimate, the truth and the effective sample
size (6 significant digits), the number of resampling steps (exact) and
the RMS error over the run (6 significant digits).  When GRUMPY_AB_OUTDIR
is set the estimates are saved there as estimates.npy.
"""

import math
import os
import sys

import numpy as np

Q, R = 10.0, 1.0


def transition(x, k):
    return 0.5 * x + 25.0 * x / (1.0 + x * x) + 8.0 * np.cos(1.2 * k)


def simulate(steps, rng):
    x = 0.1
    xs, ys = [], []
    for k in range(1, steps + 1):
        x = float(transition(x, k)) + math.sqrt(Q) * float(rng.standard_normal())
        xs.append(x)
        ys.append(x * x / 20.0 + math.sqrt(R) * float(rng.standard_normal()))
    return xs, ys


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200_000
    steps = int(argv[2]) if len(argv) > 2 else 50
    rng = np.random.default_rng(1993)
    truth, observations = simulate(steps, rng)
    particles = rng.normal(0.0, 2.0, n)
    logw = np.zeros(n)
    estimates = []
    resamplings = 0
    print(f"particle_filter particles={n} steps={steps}")
    for k in range(1, steps + 1):
        particles = transition(particles, k) + math.sqrt(Q) * rng.standard_normal(n)
        y = observations[k - 1]
        logw = logw - 0.5 * (y - particles**2 / 20.0) ** 2 / R
        w = np.exp(logw - logw.max())
        w /= w.sum()
        estimate = float(np.sum(w * particles))
        ess = float(1.0 / np.sum(w**2))
        estimates.append(estimate)
        if ess < n / 2:
            positions = (rng.random() + np.arange(n)) / n
            idx = np.minimum(np.searchsorted(np.cumsum(w), positions), n - 1)
            particles = particles[idx]
            logw = np.zeros(n)
            resamplings += 1
        if k % 10 == 0:
            print(f"step {k}: estimate={estimate:.5e} truth={truth[k - 1]:.5e} ess={ess:.5e}")
    rmse = math.sqrt(sum((e - t) ** 2 for e, t in zip(estimates, truth)) / steps)
    print(f"resampled {resamplings} times; RMS error={rmse:.5e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "estimates.npy"), np.array(estimates))


if __name__ == "__main__":
    main(sys.argv)
