"""Row softmax and log-sum-exp of an (n, k) array in plain NumPy.

Usage::

    python tools/softmax.py [n] [k] [dtype] [iterations]

    n, k        rows and columns of the logits (default 100_000 x 100)
    dtype       float64 or float32 (default float64)
    iterations  passes, each at another temperature (default 5)

The numerically stable form: subtract each row's max
(``.max(axis=1, keepdims=True)``), ``np.exp``, row sums
(``.sum(axis=1, keepdims=True)``), divide; log-sum-exp is
``max + log(sum)``.  Two partial reductions with broadcasting around
elementwise work.

Output: per iteration the mean log-sum-exp and the largest probability
(float64 accumulation; 9 significant digits for float64, 5 for float32).
When GRUMPY_AB_OUTDIR is set the last iteration's probabilities and
log-sum-exp are saved there as softmax.npy and logsumexp.npy.
"""

import os
import sys

import numpy as np


def softmax_logsumexp(logits):
    """Row softmax (n, k) and log-sum-exp (n,) of logits (n, k)."""
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    return e / s, (m + np.log(s))[:, 0]


def parse(argv):
    n = int(argv[1]) if len(argv) > 1 else 100_000
    k = int(argv[2]) if len(argv) > 2 else 100
    dtype = argv[3] if len(argv) > 3 else "float64"
    iterations = int(argv[4]) if len(argv) > 4 else 5
    if dtype not in ("float64", "float32"):
        raise SystemExit(f"softmax: dtype must be float64 or float32, not {dtype!r}")
    return n, k, np.dtype(dtype), iterations


def make_logits(n, k, dtype):
    rng = np.random.default_rng(1234)
    return (rng.standard_normal((n, k)) * 4.0).astype(dtype)


def temperature(i):
    return 1.0 + 0.25 * i


def report_iteration(i, p, lse):
    digits = 8 if p.dtype == np.float64 else 4
    print(
        f"iteration {i}: T={temperature(i):.2f} mean logsumexp={float(lse.mean(dtype=np.float64)):.{digits}e} "
        f"max p={float(p.max()):.{digits}e}"
    )


def save(p, lse):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "softmax.npy"), p)
        np.save(os.path.join(out, "logsumexp.npy"), lse)


def main(argv):
    n, k, dtype, iterations = parse(argv)
    logits = make_logits(n, k, dtype)
    print(f"softmax n={n} k={k} dtype={dtype} iterations={iterations}")
    p = lse = None
    for i in range(iterations):
        p, lse = softmax_logsumexp(logits / temperature(i))
        report_iteration(i, p, lse)
    save(p, lse)


if __name__ == "__main__":
    main(sys.argv)
