"""Feature standardisation (log transform, per-column z-scores, clipping)
and histograms of the result, in plain NumPy.

Usage::

    python tools/programs/zscore_hist.py [n] [p] [passes]

    n       samples (default 400_000)
    p       features (default 16: a 51 MB float64 table)
    passes  times the table is re-drawn and processed (default 2)

A table of positive, skewed measurements (log-normal columns with
different scales and a few zeros), processed as in a data-cleaning
script::

    L = np.log1p(X)
    mu = L.mean(axis=0);  sd = L.std(axis=0)
    Z = (L - mu) / sd
    outliers = (np.abs(Z) > 3).sum(axis=0)
    Z = np.clip(Z, -4, 4)

then a 40-bin histogram of every column of Z over [-4, 4]
(``np.histogram``), the fraction of each column in its central bins, and
the column means of Z**3 (skewness after the transform).

Output: per pass the outlier counts and the histogram of the first
column (integers, exact), and the mean skewness after the transform (9
significant digits).  When GRUMPY_AB_OUTDIR is set the last Z and the
histograms are saved there as Z.npy and hist.npy.
"""

import os
import sys

import numpy as np


def table(rng, n, p):
    sigma = np.linspace(0.3, 1.5, p)
    scale = np.geomspace(1.0, 1e4, p)
    X = np.exp(rng.standard_normal((n, p)) * sigma) * scale
    X[rng.random((n, p)) < 0.01] = 0.0
    return X


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 400_000
    p = int(argv[2]) if len(argv) > 2 else 16
    passes = int(argv[3]) if len(argv) > 3 else 2
    rng = np.random.default_rng(4321)
    print(f"zscore_hist n={n} p={p} passes={passes}")
    Z = hist = None
    for k in range(passes):
        X = table(rng, n, p)
        L = np.log1p(X)
        mu = L.mean(axis=0)
        sd = L.std(axis=0)
        Z = (L - mu) / sd
        outliers = (np.abs(Z) > 3).sum(axis=0)
        Z = np.clip(Z, -4.0, 4.0)
        hist = np.array([np.histogram(Z[:, j], bins=40, range=(-4.0, 4.0))[0] for j in range(p)])
        skew = (Z**3).mean(axis=0)
        print(f"pass {k}: outliers={outliers.tolist()}")
        print(f"pass {k}: histogram of column 0: {hist[0].tolist()}")
        print(f"pass {k}: mean skewness={float(skew.mean()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "Z.npy"), Z)
        np.save(os.path.join(out, "hist.npy"), hist)


if __name__ == "__main__":
    main(sys.argv)
