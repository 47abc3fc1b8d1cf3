"""Bootstrap confidence intervals of a mean, a variance and a ratio with
integer index arrays, in plain NumPy.

Usage::

    python tools/programs/bootstrap.py [n] [resamples] [chunk]

    n          observations (default 50_000: a 400 KB sample)
    resamples  bootstrap resamples (default 1000)
    chunk      resamples drawn at once (default 50: index arrays of 20 MB)

A seeded sample of paired data (x log-normal, y = 2x + noise).  The
resamples are drawn ``chunk`` at a time as an integer index array
``idx = rng.integers(0, n, size=(chunk, n))``; ``x[idx]`` and ``y[idx]``
(fancy indexing) give (chunk, n) arrays whose row means, row variances
(``.var(axis=1, ddof=1)``) and the ratio of means are the bootstrap
replicates.  The intervals are percentile intervals
(``np.percentile(reps, [2.5, 97.5])``), and the bias-corrected estimate
``2 theta - mean(reps)``.

Output: the point estimates, the bootstrap standard errors and the 95%
intervals of the three statistics (7 significant digits).  When
GRUMPY_AB_OUTDIR is set the replicates are saved there as
replicates.npy.
"""

import os
import sys

import numpy as np


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 50_000
    resamples = int(argv[2]) if len(argv) > 2 else 1000
    chunk = int(argv[3]) if len(argv) > 3 else 50
    rng = np.random.default_rng(8)
    x = rng.lognormal(mean=1.0, sigma=0.8, size=n)
    y = 2.0 * x + rng.normal(0.0, 1.5, size=n)
    print(f"bootstrap n={n} resamples={resamples} chunk={chunk}")
    means, variances, ratios = [], [], []
    for start in range(0, resamples, chunk):
        m = min(chunk, resamples - start)
        idx = rng.integers(0, n, size=(m, n))
        xs = x[idx]
        ys = y[idx]
        means.append(xs.mean(axis=1))
        variances.append(xs.var(axis=1, ddof=1))
        ratios.append(ys.mean(axis=1) / xs.mean(axis=1))
    reps = np.stack([np.concatenate(means), np.concatenate(variances), np.concatenate(ratios)])
    estimates = [x.mean(), x.var(ddof=1), y.mean() / x.mean()]
    for name, theta, r in zip(["mean", "variance", "ratio"], estimates, reps):
        lo, hi = np.percentile(r, [2.5, 97.5])
        print(
            f"{name}: estimate={float(theta):.6e} bias-corrected={float(2 * theta - r.mean()):.6e} "
            f"se={float(r.std(ddof=1)):.6e} 95% CI=[{float(lo):.6e}, {float(hi):.6e}]"
        )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "replicates.npy"), reps)


if __name__ == "__main__":
    main(sys.argv)
