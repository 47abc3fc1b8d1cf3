"""Logistic regression by full-batch gradient descent, with the
log-likelihood through a numerically stable softplus, in plain NumPy.

Usage::

    python tools/programs/logreg.py [n] [d] [iterations]

    n           examples (default 200_000)
    d           features (default 32: a 51 MB float64 design matrix)
    iterations  gradient steps (default 40)

Seeded data: standardised Gaussian features, labels drawn from a true
logistic model with a sparse weight vector.  Each step, as in a course
notebook::

    z = X @ w + b
    p = 1 / (1 + np.exp(-z))
    loss = np.mean(np.maximum(z, 0) - y * z + np.log1p(np.exp(-np.abs(z))))
    grad_w = X.T @ (p - y) / n + lam * w
    grad_b = np.mean(p - y)
    w -= lr * grad_w;  b -= lr * grad_b

with learning rate 0.5 and L2 penalty 1e-4; every 10 steps the training
accuracy ``np.mean((p > 0.5) == (y > 0.5))``.

Output: the loss every 5 steps (9 significant digits), the accuracy every
10 steps and the final weights' norm (9 significant digits).  When
GRUMPY_AB_OUTDIR is set the final weights and probabilities are saved
there as w.npy and p.npy.
"""

import os
import sys

import numpy as np


def data(n, d):
    rng = np.random.default_rng(17)
    X = rng.standard_normal((n, d))
    w_true = np.where(rng.random(d) < 0.3, rng.normal(0.0, 2.0, d), 0.0)
    logits = X @ w_true - 0.5
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(np.float64)
    return X, y


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200_000
    d = int(argv[2]) if len(argv) > 2 else 32
    iterations = int(argv[3]) if len(argv) > 3 else 40
    lr, lam = 0.5, 1e-4
    X, y = data(n, d)
    w = np.zeros(d)
    b = 0.0
    p = None
    print(f"logreg n={n} d={d} iterations={iterations}")
    for it in range(1, iterations + 1):
        z = X @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        loss = np.mean(np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z))))
        grad_w = X.T @ (p - y) / n + lam * w
        grad_b = np.mean(p - y)
        w -= lr * grad_w
        b -= lr * grad_b
        if it % 5 == 0 or it == 1:
            print(f"step {it}: loss={float(loss):.9e}")
        if it % 10 == 0:
            accuracy = np.mean((p > 0.5) == (y > 0.5))
            print(f"step {it}: accuracy={float(accuracy):.6f}")
    print(f"|w|={float(np.linalg.norm(w)):.9e} b={float(b):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "w.npy"), w)
        np.save(os.path.join(out, "p.npy"), p)


if __name__ == "__main__":
    main(sys.argv)
