"""Peer of tools/kmeans.py written with Numba: the assignment step (squared
distances to every centroid, argmin, distance of the nearest) as one
``@njit(parallel=True)`` loop over the points with ``prange``; the centroid
update is the same NumPy code as tools/kmeans.py.

Usage::

    python tools/kmeans_numba.py [n] [k] [iterations]

Same arguments, inputs, work and output as tools/kmeans.py.  A point's
distance to a centroid is summed over the features in order and the first
of equal distances wins (as ``argmin``); the inertia is NumPy's sum of the
nearest distances.  ``cache=True`` keeps the compiled loop in
tools/__pycache__ between runs (as grumpy keeps its kernels), so only the
first run pays Numba's compile time.
"""

import sys

import numpy as np
from numba import njit, prange

import kmeans  # the main program: inputs, driver and output are shared


@njit(parallel=True, cache=True)
def assign_into(X, C, labels, nearest):
    n, d = X.shape
    k = C.shape[0]
    for i in prange(n):
        best = np.inf
        best_j = 0
        for j in range(k):
            s = 0.0
            for f in range(d):
                diff = X[i, f] - C[j, f]
                s += diff * diff
            if s < best:
                best = s
                best_j = j
        labels[i] = best_j
        nearest[i] = best


def assign(X, C):
    labels = np.empty(X.shape[0], dtype=np.intp)
    nearest = np.empty(X.shape[0], dtype=X.dtype)
    assign_into(X, C, labels, nearest)
    return labels, nearest.sum()


if __name__ == "__main__":
    kmeans.main(sys.argv, assign=assign)
