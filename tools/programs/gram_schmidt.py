"""QR factorisation of a tall, skinny matrix by modified Gram-Schmidt, in
plain NumPy.

Usage::

    python tools/programs/gram_schmidt.py [m] [k] [repetitions]

    m            rows (default 300_000)
    k            columns (default 12; each column is 2.4 MB of float64)
    repetitions  matrices factorised (default 2)

The matrix is a seeded Gaussian (m, k) array with its columns made
increasingly collinear (each column plus 0.9 times the previous one), as
in a Krylov basis.  Modified Gram-Schmidt, column by column as in the
textbooks, on column views of a C-ordered array (strided by k elements)::

    v = Q[:, j].copy()
    for i in range(j):
        R[i, j] = Q[:, i] @ v
        v = v - R[i, j] * Q[:, i]
    R[j, j] = np.linalg.norm(v)
    Q[:, j] = v / R[j, j]

Then the factorisation is checked: ``|A - Q R| / |A|`` and the loss of
orthogonality ``max |Q^T Q - I|``, both compared against thresholds.

Output: per matrix the first four diagonal entries of R (9 significant
digits) and whether both checks pass.  When GRUMPY_AB_OUTDIR is set the
last Q and R are saved there as Q.npy and R.npy.
"""

import os
import sys

import numpy as np


def mgs(A):
    m, k = A.shape
    Q = A.copy()
    R = np.zeros((k, k))
    for j in range(k):
        v = Q[:, j].copy()
        for i in range(j):
            R[i, j] = Q[:, i] @ v
            v = v - R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def main(argv):
    m = int(argv[1]) if len(argv) > 1 else 300_000
    k = int(argv[2]) if len(argv) > 2 else 12
    repetitions = int(argv[3]) if len(argv) > 3 else 2
    rng = np.random.default_rng(31)
    print(f"gram_schmidt m={m} k={k} repetitions={repetitions}")
    Q = R = None
    for rep in range(repetitions):
        A = rng.standard_normal((m, k))
        for j in range(1, k):
            A[:, j] += 0.9 * A[:, j - 1]
        Q, R = mgs(A)
        rel_error = float(np.linalg.norm(A - Q @ R) / np.linalg.norm(A))
        orthogonality = float(np.abs(Q.T @ Q - np.eye(k)).max())
        diag = " ".join(f"{d:.9e}" for d in np.diag(R)[:4])
        print(f"matrix {rep}: diag(R)[:4]= {diag}")
        print(f"matrix {rep}: |A-QR|/|A| < 1e-14: {rel_error < 1e-14}, max|Q^TQ-I| < 1e-12: {orthogonality < 1e-12}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "Q.npy"), Q)
        np.save(os.path.join(out, "R.npy"), R)


if __name__ == "__main__":
    main(sys.argv)
