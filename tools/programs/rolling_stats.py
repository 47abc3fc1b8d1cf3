"""Rolling mean and variance of a long series by cumulative sums, and
streaming (online) per-feature mean and variance over mini-batches, in
plain NumPy.

Usage::

    python tools/programs/rolling_stats.py [n] [window] [batches]

    n        length of the series (default 4_000_000: 32 MB of float64)
    window   rolling window (default 250)
    batches  mini-batches of the stream (default 300)

Part 1, a series: a seeded random walk plus a seasonal term and noise.
Rolling mean and standard deviation over ``window`` samples from the
cumulative sums of x and x^2 (``np.cumsum`` with a zero prepended by
``np.concatenate``)::

    mean = (c1[w:] - c1[:-w]) / w
    var = (c2[w:] - c2[:-w]) / w - mean**2
    std = np.sqrt(np.maximum(var, 0))

then the rolling z-score of each point and how many exceed 3.

Part 2, a stream: ``batches`` float32 mini-batches of 256 x 512 (512 KB
each, the mid-size that a fusing runtime leaves alone), each merged into
running float64 per-feature counts, means and sums of squared deviations
by Chan et al.'s parallel update (``delta = batch_mean - mean``, ``mean +=
delta * nb / total``, ``m2 += batch_m2 + delta**2 * count * nb / total``).

Output: the outlier count (exact) and sums of the rolling mean and std
(9 significant digits); the stream's mean of the per-feature means and
variances (9 significant digits).  When GRUMPY_AB_OUTDIR is set the
rolling mean and std and the stream's means and variances are saved there
as roll_mean.npy, roll_std.npy, stream_mean.npy and stream_var.npy.
"""

import os
import sys

import numpy as np


def series(rng, n):
    t = np.arange(n, dtype=np.float64)
    walk = np.cumsum(rng.standard_normal(n)) * 0.05
    return walk + 2.0 * np.sin(2 * np.pi * t / 10_000.0) + rng.standard_normal(n)


def rolling(x, w):
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    c2 = np.concatenate(([0.0], np.cumsum(x * x)))
    mean = (c1[w:] - c1[:-w]) / w
    var = (c2[w:] - c2[:-w]) / w - mean**2
    std = np.sqrt(np.maximum(var, 0.0))
    return mean, std


def stream(rng, batches, rows=256, features=512):
    count = 0
    mean = np.zeros(features)
    m2 = np.zeros(features)
    scale = np.linspace(0.5, 3.0, features)
    for b in range(batches):
        drift = 0.001 * b
        batch = (rng.standard_normal((rows, features)) * scale + drift).astype(np.float32)
        nb = batch.shape[0]
        b_mean = batch.mean(axis=0, dtype=np.float64)
        b_m2 = ((batch - b_mean) ** 2).sum(axis=0)
        total = count + nb
        delta = b_mean - mean
        mean += delta * (nb / total)
        m2 += b_m2 + delta**2 * (count * nb / total)
        count = total
    return mean, m2 / (count - 1)


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 4_000_000
    window = int(argv[2]) if len(argv) > 2 else 250
    batches = int(argv[3]) if len(argv) > 3 else 300
    rng = np.random.default_rng(99)
    x = series(rng, n)
    mean, std = rolling(x, window)
    z = (x[window - 1:] - mean) / std
    outliers = int(np.count_nonzero(np.abs(z) > 3.0))
    print(f"rolling_stats n={n} window={window} batches={batches}")
    print(f"rolling: outliers={outliers} sum mean={float(mean.sum()):.9e} sum std={float(std.sum()):.9e}")
    s_mean, s_var = stream(rng, batches)
    print(f"stream: mean of means={float(s_mean.mean()):.9e} mean of variances={float(s_var.mean()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "roll_mean.npy"), mean)
        np.save(os.path.join(out, "roll_std.npy"), std)
        np.save(os.path.join(out, "stream_mean.npy"), s_mean)
        np.save(os.path.join(out, "stream_var.npy"), s_var)


if __name__ == "__main__":
    main(sys.argv)
