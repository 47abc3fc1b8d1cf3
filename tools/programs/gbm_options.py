"""Option pricing by Monte Carlo simulation of geometric Brownian motion
paths (cumulative sums and products along the time axis), in plain NumPy.

Usage::

    python tools/programs/gbm_options.py [paths] [steps] [batches]

    paths    simulated paths per batch (default 20_000)
    steps    time steps over one year (default 252: a 40 MB path array)
    batches  batches (default 3)

Per batch: standard normal shocks Z (paths, steps), seeded, with
antithetic pairs (the second half of the paths uses -Z).  Log-prices by
``np.cumsum`` along axis 1::

    increments = (r - 0.5 * sigma**2) * dt + sigma * np.sqrt(dt) * Z
    S = S0 * np.exp(np.cumsum(increments, axis=1))

and, as a cross-check written the other common way, the same paths by
``S0 * np.cumprod(np.exp(increments), axis=1)``.  Payoffs: European call
on ``S[:, -1]``, arithmetic Asian call on ``S.mean(axis=1)``, up-and-out
barrier call (alive while ``S.max(axis=1) < B``) and a floating-strike
lookback (``S[:, -1] - S.min(axis=1)``); each discounted by ``exp(-r T)``.

Output: per batch the four prices and the largest relative difference
between the cumsum and cumprod paths' terminal prices (printed as below a
threshold); at the end the prices averaged over batches (7 significant
digits) and the Black-Scholes price of the European call for reference.
When GRUMPY_AB_OUTDIR is set the last batch's terminal prices and
per-path averages are saved there as terminal.npy and average.npy.
"""

import math
import os
import sys

import numpy as np

S0, K, B, R, SIGMA, T = 100.0, 105.0, 140.0, 0.03, 0.25, 1.0


def black_scholes_call():
    d1 = (math.log(S0 / K) + (R + 0.5 * SIGMA**2) * T) / (SIGMA * math.sqrt(T))
    d2 = d1 - SIGMA * math.sqrt(T)
    cdf = lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0)))  # noqa: E731
    return S0 * cdf(d1) - K * math.exp(-R * T) * cdf(d2)


def simulate(rng, paths, steps):
    dt = T / steps
    half = rng.standard_normal((paths // 2, steps))
    Z = np.concatenate([half, -half])
    increments = (R - 0.5 * SIGMA**2) * dt + SIGMA * np.sqrt(dt) * Z
    S = S0 * np.exp(np.cumsum(increments, axis=1))
    S_prod = S0 * np.cumprod(np.exp(increments), axis=1)
    return S, S_prod


def main(argv):
    paths = int(argv[1]) if len(argv) > 1 else 20_000
    steps = int(argv[2]) if len(argv) > 2 else 252
    batches = int(argv[3]) if len(argv) > 3 else 3
    rng = np.random.default_rng(2718)
    disc = math.exp(-R * T)
    print(f"gbm_options paths={paths} steps={steps} batches={batches}")
    totals = np.zeros(4)
    terminal = average = None
    for b in range(batches):
        S, S_prod = simulate(rng, paths, steps)
        terminal = S[:, -1]
        average = S.mean(axis=1)
        european = disc * np.maximum(terminal - K, 0.0).mean()
        asian = disc * np.maximum(average - K, 0.0).mean()
        alive = S.max(axis=1) < B
        barrier = disc * np.mean(np.where(alive, np.maximum(terminal - K, 0.0), 0.0))
        lookback = disc * np.mean(terminal - S.min(axis=1))
        gap = float(np.max(np.abs(S_prod[:, -1] - terminal) / terminal))
        prices = np.array([european, asian, barrier, lookback])
        totals += prices
        print(
            f"batch {b}: european={prices[0]:.6e} asian={prices[1]:.6e} barrier={prices[2]:.6e} "
            f"lookback={prices[3]:.6e} cumprod vs cumsum paths agree to 1e-12: {gap < 1e-12}"
        )
    mean = totals / batches
    print(
        f"average: european={mean[0]:.6e} (Black-Scholes {black_scholes_call():.6e}) asian={mean[1]:.6e} "
        f"barrier={mean[2]:.6e} lookback={mean[3]:.6e}"
    )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "terminal.npy"), terminal)
        np.save(os.path.join(out, "average.npy"), average)


if __name__ == "__main__":
    main(sys.argv)
