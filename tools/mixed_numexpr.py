"""Peer of tools/mixed.py with its elementwise statements in numexpr
(``ne.evaluate``); sorting, unique, percentiles, bincount, cumsum and
indexing stay NumPy, as a numexpr user would leave them.

Usage::

    python tools/mixed_numexpr.py [n] [iterations]

Same arguments, inputs, work and output as tools/mixed.py.
"""

import sys

import numexpr as ne
import numpy as np

from mixed import BINS, make_inputs, parse, report, save


def main(argv):
    n, iterations = parse(argv)
    x, w = make_inputs(n)
    print(f"mixed n={n} iterations={iterations}")
    top_label = BINS - 1
    for i in range(iterations):
        shift = 0.05 * i
        y = ne.evaluate("exp(-0.5 * x * x) * w + 0.1 * x * x + shift")
        quantiles = np.percentile(y, [5, 50, 95])
        lo, hi = quantiles[0], quantiles[2]
        z = ne.evaluate("where(y < lo, lo, where(y > hi, hi, y))")
        order = np.argsort(z, kind="stable")
        top = z[order[-1000:]]
        raw = ne.evaluate("(x + 4.0) * 2.0").astype(np.int64)
        labels = ne.evaluate("where(raw < 0, 0, where(raw > top_label, top_label, raw))")
        present, present_counts = np.unique(labels, return_counts=True)
        counts = np.zeros(BINS, dtype=np.int64)
        counts[present] = present_counts
        means = np.bincount(labels, weights=z, minlength=BINS) / np.maximum(counts, 1)
        gathered = means[labels]
        residual = ne.evaluate("z - gathered")
        rms = np.sqrt(ne.evaluate("sum(residual * residual)") / n)
        running = np.cumsum(z)
        bin8_mean = z[labels == 8].mean()
        report(i, quantiles, top, counts, rms, running[-1], bin8_mean)
    save(y, z, labels, counts)


if __name__ == "__main__":
    main(sys.argv)
