"""k-means clustering (Lloyd's algorithm) in plain NumPy.

Usage::

    python tools/kmeans.py [n] [k] [iterations]

    n           points (default 1_000_000)
    k           clusters (default 16)
    iterations  Lloyd iterations (default 10)

float64 points of 8 features, drawn (seeded) around k random centres in
[-10, 10]^8 with unit noise; the initial centroids are k distinct points
chosen at random.  Each iteration is written as a NumPy user writes it:
squared distances of every point to every centroid by broadcasting,
``d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)`` (an (n, k, 8)
temporary reduced over its innermost axis), ``labels = d2.argmin(axis=1)``,
the inertia ``d2.min(axis=1).sum()``, ``counts = np.bincount(labels,
minlength=k)``, the per-cluster sums of each feature by ``np.bincount(labels,
weights=X[:, j], minlength=k)`` and the new centroids as their means; an
empty cluster keeps its centroid.

Output: per iteration the inertia of its assignment (sum of squared
distances to the nearest centroid, printed to 6 significant digits), then
the cluster sizes of the last assignment (integers, exact).  When
GRUMPY_AB_OUTDIR is set the last assignment's labels and the centroids it
gave are saved there as labels.npy and centroids.npy.
"""

import os
import sys

import numpy as np

FEATURES = 8


def parse(argv):
    n = int(argv[1]) if len(argv) > 1 else 1_000_000
    k = int(argv[2]) if len(argv) > 2 else 16
    iterations = int(argv[3]) if len(argv) > 3 else 10
    if k < 1 or k > n or iterations < 1:
        raise SystemExit(f"kmeans: need 1 <= k <= n and iterations >= 1, not n={n} k={k} iterations={iterations}")
    return n, k, iterations


def make_inputs(n, k):
    """Points X (n, 8) around k centres and the initial centroids (k, 8)."""
    rng = np.random.default_rng(20180227)
    centres = rng.uniform(-10.0, 10.0, (k, FEATURES))
    truth = rng.integers(0, k, n)
    X = centres[truth] + rng.standard_normal((n, FEATURES))
    C = X[rng.choice(n, k, replace=False)]
    return X, C


def assign(X, C):
    """Nearest centroid of each point and the inertia of that assignment."""
    d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    labels = d2.argmin(axis=1)
    inertia = d2.min(axis=1).sum()
    return labels, inertia


def update(X, labels, C):
    """Cluster sizes and the new centroids (an empty cluster keeps its own)."""
    k = C.shape[0]
    counts = np.bincount(labels, minlength=k)
    sums = np.stack([np.bincount(labels, weights=X[:, j], minlength=k) for j in range(X.shape[1])], axis=1)
    new_C = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], C)
    return counts, new_C


def report_iteration(i, inertia):
    print(f"iteration {i}: inertia={float(inertia):.5e}")


def report_final(counts):
    print("counts", " ".join(str(int(c)) for c in counts))


def save(labels, C):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "labels.npy"), labels)
        np.save(os.path.join(out, "centroids.npy"), C)


def main(argv, assign=assign, update=update):
    """Runs the benchmark; peers pass their own assign/update."""
    n, k, iterations = parse(argv)
    X, C = make_inputs(n, k)
    print(f"kmeans n={n} d={FEATURES} k={k} dtype=float64 iterations={iterations}")
    labels = counts = None
    for i in range(iterations):
        labels, inertia = assign(X, C)
        counts, C = update(X, labels, C)
        report_iteration(i, inertia)
    report_final(counts)
    save(labels, C)


if __name__ == "__main__":
    main(sys.argv)
