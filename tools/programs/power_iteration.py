"""Largest eigenvalues of a symmetric matrix by power iteration with
deflation, in plain NumPy.

Usage::

    python tools/programs/power_iteration.py [n] [max_iterations]

    n               order of the matrix (default 3000: 72 MB of float64)
    max_iterations  cap on iterations per eigenvalue (default 300)

A symmetric test matrix: a random Gaussian B (seeded), symmetrised as
``(B + B.T) / (2 sqrt(n))`` (semicircle spectrum in [-sqrt 2, sqrt 2]),
plus two planted rank-one spikes ``6 u u^T`` and ``4 v v^T`` whose
eigenvalues stand out of the bulk.  Power iteration for the dominant
eigenpair::

    w = A @ v;  lam = v @ w;  v = w / np.linalg.norm(w)

stopping when ``|lam - lam_old| < 1e-10 |lam|`` or at the cap; then the
matrix is deflated (``A - lam * np.outer(v, v)``, a new 72 MB array) and
the second eigenpair is found the same way.  A matrix-vector product per
iteration, around it only work on vectors of n elements.

Output: per eigenvalue its value (9 significant digits), the iterations it
took and the residual ``|A v - lam v|`` (to 2 significant digits).  When
GRUMPY_AB_OUTDIR is set the eigenvectors are saved there as
vectors.npy.
"""

import os
import sys

import numpy as np


def test_matrix(n):
    rng = np.random.default_rng(7)
    B = rng.standard_normal((n, n))
    A = (B + B.T) / (2.0 * np.sqrt(n))
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    v = rng.standard_normal(n)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    A += 6.0 * np.outer(u, u) + 4.0 * np.outer(v, v)
    return A


def power_iteration(A, max_iterations, tol=1e-10):
    n = A.shape[0]
    v = np.ones(n) / np.sqrt(n)
    lam = 0.0
    for it in range(1, max_iterations + 1):
        w = A @ v
        lam_new = float(v @ w)
        v = w / np.linalg.norm(w)
        if abs(lam_new - lam) < tol * abs(lam_new):
            return lam_new, v, it
        lam = lam_new
    return lam, v, max_iterations


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 3000
    max_iterations = int(argv[2]) if len(argv) > 2 else 300
    A = test_matrix(n)
    print(f"power_iteration n={n} max_iterations={max_iterations}")
    vectors = []
    for k in range(2):
        lam, v, its = power_iteration(A, max_iterations)
        residual = float(np.linalg.norm(A @ v - lam * v))
        print(f"eigenvalue {k}: {lam:.9e} after {its} iterations, residual {residual:.1e}")
        vectors.append(v)
        A = A - lam * np.outer(v, v)
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "vectors.npy"), np.array(vectors))


if __name__ == "__main__":
    main(sys.argv)
