"""Monte Carlo estimates: pi by dart throwing, a 1-D integral and a 6-D
Gaussian-like integral, in batches, in plain NumPy.

Usage::

    python tools/programs/mc_pi.py [batch] [batches]

    batch    samples per batch (default 1_000_000)
    batches  batches (default 12)

Per batch, from a seeded ``default_rng``:

- pi: points ``u = rng.random((2, batch))`` and the count of
  ``u[0]**2 + u[1]**2 <= 1`` (``np.count_nonzero``);
- ``I1 = integral_0^2 exp(-x^2) cos(3x) dx`` as ``2 * mean(f(2 u))``,
  accumulated with its sum of squares for the standard error;
- ``I6 = integral over [0,1]^6 of exp(-sum(c_i x_i^2))`` from a (batch,
  6) float32 sample, a row reduction of squares weighted by c.

Output: the running estimates after every 4 batches (pi exact from the
integer count; the integrals to 9 significant digits, the standard errors
to 3).  When GRUMPY_AB_OUTDIR is set the per-batch estimates are saved
there as estimates.npy.
"""

import os
import sys

import numpy as np


def main(argv):
    batch = int(argv[1]) if len(argv) > 1 else 1_000_000
    batches = int(argv[2]) if len(argv) > 2 else 12
    rng = np.random.default_rng(314159)
    c = np.array([1.0, 0.5, 2.0, 0.25, 1.5, 0.75], dtype=np.float32)
    print(f"mc_pi batch={batch} batches={batches}")
    inside = 0
    s1 = s1sq = s6 = s6sq = 0.0
    per_batch = []
    for b in range(1, batches + 1):
        u = rng.random((2, batch))
        hits = np.count_nonzero(u[0] ** 2 + u[1] ** 2 <= 1.0)
        inside += hits
        x = 2.0 * rng.random(batch)
        f1 = 2.0 * np.exp(-x * x) * np.cos(3.0 * x)
        m1 = float(f1.mean())
        s1 += float(f1.sum())
        s1sq += float((f1 * f1).sum())
        y = rng.random((batch, 6), dtype=np.float32)
        f6 = np.exp(-(c * y * y).sum(axis=1, dtype=np.float64))
        m6 = float(f6.mean())
        s6 += float(f6.sum())
        s6sq += float((f6 * f6).sum())
        per_batch.append([4.0 * hits / batch, m1, m6])
        if b % 4 == 0 or b == batches:
            n = b * batch
            i1, i6 = s1 / n, s6 / n
            se1 = np.sqrt((s1sq / n - i1 * i1) / n)
            se6 = np.sqrt((s6sq / n - i6 * i6) / n)
            print(
                f"after {n} samples: pi~{4 * inside}/{n} = {4.0 * inside / n:.6f} "
                f"I1={i1:.9e} (se {se1:.2e}) I6={i6:.9e} (se {se6:.2e})"
            )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "estimates.npy"), np.array(per_batch))


if __name__ == "__main__":
    main(sys.argv)
