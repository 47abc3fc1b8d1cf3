"""A NumPy program that mixes fusable work with operations a fusing runtime
hands back to NumPy (sorting, unique, percentiles, bincount, cumsum, fancy
and boolean indexing).

Usage::

    python tools/mixed.py [n] [iterations]

    n           samples (default 4_000_000)
    iterations  passes over the data (default 3)

Per iteration: an elementwise feature y of samples x with weights w
(exp, multiply, add), its 5/50/95th percentiles, y clipped to them (z),
the top-1000 values of z by ``argsort`` and fancy indexing, 16 bins from x
(cast to int64, clip), counts per bin by ``np.unique``, per-bin means by
``np.bincount`` with weights, the residual of z from its bin's mean (a
gather), its RMS (a reduction), the running total of z (``np.cumsum``)
and the mean of one bin through a boolean mask.

Output: per iteration the quantiles, bin counts and a few sums (float64;
9 significant digits; sums of non-negative values, so well conditioned).
When GRUMPY_AB_OUTDIR is set the last iteration's y, z, bin labels and
counts are saved there (y.npy, z.npy, labels.npy, counts.npy).  The
running total is printed, not saved: a parallel scan legitimately differs
from NumPy's sequential one by more than 4 ULP in places.
"""

import os
import sys

import numpy as np

BINS = 16


def parse(argv):
    n = int(argv[1]) if len(argv) > 1 else 4_000_000
    iterations = int(argv[2]) if len(argv) > 2 else 3
    return n, iterations


def make_inputs(n):
    np.random.seed(4242)
    x = np.random.standard_normal(n)
    w = np.random.uniform(0.5, 2.0, n)
    return x, w


def feature(x, w, i):
    """Elementwise feature of iteration i (non-negative)."""
    return np.exp(-0.5 * x * x) * w + 0.1 * x * x + 0.05 * i


def bin_labels(x):
    return np.clip(((x + 4.0) * 2.0).astype(np.int64), 0, BINS - 1)


def report(i, quantiles, top, counts, rms, total, bin8_mean):
    q = " ".join(f"{float(v):.8e}" for v in quantiles)
    print(f"iteration {i}: quantiles {q}")
    print(f"  top1000 sum={float(top.sum()):.8e} rms residual={float(rms):.8e}")
    print(f"  cumsum total={float(total):.8e} bin8 mean={float(bin8_mean):.8e}")
    print("  counts", " ".join(str(int(c)) for c in counts))


def save(y, z, labels, counts):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "y.npy"), y)
        np.save(os.path.join(out, "z.npy"), z)
        np.save(os.path.join(out, "labels.npy"), labels)
        np.save(os.path.join(out, "counts.npy"), counts)


def main(argv):
    n, iterations = parse(argv)
    x, w = make_inputs(n)
    print(f"mixed n={n} iterations={iterations}")
    for i in range(iterations):
        y = feature(x, w, i)
        quantiles = np.percentile(y, [5, 50, 95])
        z = np.clip(y, quantiles[0], quantiles[2])
        order = np.argsort(z, kind="stable")
        top = z[order[-1000:]]
        labels = bin_labels(x)
        present, present_counts = np.unique(labels, return_counts=True)
        counts = np.zeros(BINS, dtype=np.int64)
        counts[present] = present_counts
        means = np.bincount(labels, weights=z, minlength=BINS) / np.maximum(counts, 1)
        residual = z - means[labels]
        rms = np.sqrt(np.mean(residual * residual))
        running = np.cumsum(z)
        bin8_mean = z[labels == 8].mean()
        report(i, quantiles, top, counts, rms, running[-1], bin8_mean)
    save(y, z, labels, counts)


if __name__ == "__main__":
    main(sys.argv)
