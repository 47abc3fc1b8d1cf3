"""Covariance and correlation matrices computed by hand (centering, a
matrix product, normalisation), as in PolyBench's covariance and
correlation kernels, in plain NumPy.

Usage::

    python tools/programs/covariance.py [n] [p] [dtype] [batches]

    n        observations per batch (default 200_000)
    p        variables (default 48)
    dtype    float64 or float32 (default float64)
    batches  independent data sets (default 3)

Each batch is seeded correlated data: Gaussian scores (n, p) mixed by a
fixed random upper-triangular matrix, shifted by per-variable offsets and
scaled by per-variable units.  Then, as a statistician writes it::

    mean = X.mean(axis=0)
    Xc = X - mean
    cov = (Xc.T @ Xc) / (n - 1)
    std = np.sqrt(((X - mean) ** 2).sum(axis=0) / n)
    std = np.where(std <= eps, 1.0, std)            # PolyBench's guard
    Z = (X - mean) / (np.sqrt(n) * std)
    corr = Z.T @ Z

plus the largest absolute off-diagonal correlation and where it is.

Output: per batch the trace of the covariance, the mean of the
correlations, the largest |off-diagonal correlation| and its pair (7
significant digits for float64, 4 for float32).  When GRUMPY_AB_OUTDIR is
set the last covariance and correlation matrices are saved there as
cov.npy and corr.npy.
"""

import os
import sys

import numpy as np


def make_batch(rng, n, p, mixing, dtype):
    scores = rng.standard_normal((n, p))
    offsets = np.linspace(-50.0, 50.0, p)
    units = np.geomspace(0.1, 10.0, p)
    return ((scores @ mixing + offsets) * units).astype(dtype)


def cov_corr(X, eps=0.1):
    n = X.shape[0]
    mean = X.mean(axis=0)
    Xc = X - mean
    cov = (Xc.T @ Xc) / (n - 1)
    std = np.sqrt(((X - mean) ** 2).sum(axis=0) / n)
    std = np.where(std <= eps, 1.0, std)
    Z = (X - mean) / (np.sqrt(n) * std)
    corr = Z.T @ Z
    return cov, corr


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200_000
    p = int(argv[2]) if len(argv) > 2 else 48
    dtype = np.dtype(argv[3] if len(argv) > 3 else "float64")
    batches = int(argv[4]) if len(argv) > 4 else 3
    if dtype not in (np.float64, np.float32):
        raise SystemExit(f"covariance: dtype must be float64 or float32, not {dtype}")
    digits = 6 if dtype == np.float64 else 3
    rng = np.random.default_rng(2024)
    mixing = np.triu(rng.uniform(-0.5, 1.0, (p, p)))
    print(f"covariance n={n} p={p} dtype={dtype} batches={batches}")
    cov = corr = None
    for b in range(batches):
        X = make_batch(rng, n, p, mixing, dtype)
        cov, corr = cov_corr(X)
        off = np.abs(corr - np.diag(np.diag(corr)))
        i, j = np.unravel_index(np.argmax(off), off.shape)
        print(
            f"batch {b}: trace(cov)={float(np.trace(cov)):.{digits}e} mean(corr)={float(corr.mean()):.{digits}e} "
            f"max|corr|={float(off[i, j]):.{digits}e} at ({min(i, j)}, {max(i, j)})"
        )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "cov.npy"), cov)
        np.save(os.path.join(out, "corr.npy"), corr)


if __name__ == "__main__":
    main(sys.argv)
